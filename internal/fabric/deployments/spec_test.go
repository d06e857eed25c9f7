package deployments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// specExample is one of testdata/spec: the responses by status code.
type specExample struct {
	Responses map[string]struct {
		Headers map[string]string `json:"headers"`
		Body    map[string]any    `json:"body"`
	} `json:"responses"`
}

func loadSpec(t *testing.T, name string) specExample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spec", name))
	if err != nil {
		t.Fatal(err)
	}
	var ex specExample
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

// raw sends a request to the fabric as az would and decodes the answer.
func raw(t *testing.T, e *env, method, path string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	tok, err := fabric.Credential{}.GetToken(context.Background(), policy.TokenRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	url := path
	if !strings.HasPrefix(url, "http") {
		url = "https://management.fabric.invalid" + path
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: e.Server.RoundTripper()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, resp.Header, m
}

// keys lists an object's members, and those of its properties, as
// "name" and "properties.name".
func keys(m map[string]any) []string {
	var out []string
	for k, v := range m {
		out = append(out, k)
		if k == "properties" {
			if p, ok := v.(map[string]any); ok {
				for pk := range p {
					out = append(out, "properties."+pk)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// missing lists what want has and got does not, but for except.
func missing(want, got []string, except ...string) []string {
	var out []string
	for _, k := range want {
		if !slices.Contains(got, k) && !slices.Contains(except, k) {
			out = append(out, k)
		}
	}
	return out
}

const deployPath = "/subscriptions/" + fabrictest.Sub + "/resourcegroups/kubernetes/providers/Microsoft.Resources/deployments/"

// The fabric's deployment answers have the shapes of the REST API
// specification's examples (testdata/spec/README.md).
func TestSpecExamples(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW)
	body := map[string]any{"properties": map[string]any{"template": example(t, "route-table-inline-routes.json"), "parameters": map[string]any{}, "mode": "Incremental"}}

	put := loadSpec(t, "PutDeploymentResourceGroup.json")
	for _, want := range []string{"201", "200"} {
		status, h, got := raw(t, e, http.MethodPut, deployPath+"my-deployment?api-version=2021-04-01", body)
		if want == "201" && status != http.StatusCreated || want == "200" && status != http.StatusOK {
			t.Errorf("PUT: %d, want %s", status, want)
		}
		if h.Get("Azure-AsyncOperation") == "" {
			t.Errorf("PUT %s: no Azure-AsyncOperation", want)
		}
		// The PUT answers the deployment as accepted (the example's 201);
		// the example's 200 is the deployment at its end, as GET shows it.
		if m := missing(keys(put.Responses["201"].Body), keys(got), "properties.templateLink"); len(m) > 0 {
			t.Errorf("PUT %s lacks %v of the example: %v", want, m, got)
		}
		if got["properties"].(map[string]any)["provisioningState"] != "Accepted" {
			t.Errorf("PUT %s: provisioningState %v", want, got["properties"].(map[string]any)["provisioningState"])
		}
	}
	_, _, done := raw(t, e, http.MethodGet, deployPath+"my-deployment?api-version=2021-04-01", nil)
	if m := missing(keys(put.Responses["200"].Body), keys(done), "properties.templateLink"); len(m) > 0 {
		t.Errorf("GET lacks %v of the example's 200", m)
	}

	wi := loadSpec(t, "PostDeploymentWhatIfOnResourceGroup.json")
	status, h, _ := raw(t, e, http.MethodPost, deployPath+"my-deployment/whatIf?api-version=2021-04-01", body)
	if status != http.StatusAccepted || h.Get("Location") == "" {
		t.Fatalf("whatIf: %d, Location %q; want 202 with Location", status, h.Get("Location"))
	}
	status, _, res := raw(t, e, http.MethodGet, h.Get("Location"), nil)
	if status != http.StatusOK {
		t.Fatalf("what-if result: %d", status)
	}
	if m := missing(keys(wi.Responses["200"].Body), keys(res)); len(m) > 0 {
		t.Errorf("what-if result lacks %v of the example", m)
	}
	changeKeys := map[string][]string{}
	for _, c := range wi.Responses["200"].Body["properties"].(map[string]any)["changes"].([]any) {
		m := c.(map[string]any)
		changeKeys[m["changeType"].(string)] = keys(m)
	}
	valid := []string{"Create", "Delete", "Ignore", "Deploy", "NoChange", "Modify", "Unsupported"}
	for _, c := range res["properties"].(map[string]any)["changes"].([]any) {
		m := c.(map[string]any)
		ct, _ := m["changeType"].(string)
		if !slices.Contains(valid, ct) {
			t.Errorf("changeType %q is not one of the specification's", ct)
		}
		if want, ok := changeKeys[ct]; ok {
			if miss := missing(want, keys(m)); len(miss) > 0 {
				t.Errorf("a %s change lacks %v of the example's", ct, miss)
			}
		}
		for _, d := range asList(m["delta"]) {
			dm := d.(map[string]any)
			if dm["path"] == nil || !slices.Contains([]string{"Create", "Delete", "Modify", "Array", "NoEffect"}, dm["propertyChangeType"].(string)) {
				t.Errorf("a property change %v is not of the specification's shape", dm)
			}
		}
	}

	del := loadSpec(t, "DeleteDeployments.json")
	status, h, _ = raw(t, e, http.MethodDelete, deployPath+"my-deployment?api-version=2021-04-01", nil)
	if status != http.StatusAccepted || h.Get("Location") == "" {
		t.Errorf("DELETE: %d, Location %q; want 202 with Location", status, h.Get("Location"))
	}
	if _, ok := del.Responses["204"]; ok {
		if status, _, _ := raw(t, e, http.MethodGet, h.Get("Location"), nil); status != http.StatusNoContent {
			t.Errorf("DELETE's Location: %d, want 204", status)
		}
		if status, _, _ := raw(t, e, http.MethodDelete, deployPath+"my-deployment?api-version=2021-04-01", nil); status != http.StatusNoContent {
			t.Errorf("DELETE of what is gone: %d, want 204", status)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
