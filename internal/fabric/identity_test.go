package fabric

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// TestIdentitySurface: the paths az login and az cloud register read,
// without a bearer token.
func TestIdentitySurface(t *testing.T) {
	e := newEnv(t, "loopback", Options{})
	get := func(path string) map[string]any {
		t.Helper()
		resp, err := e.hc.Get(e.endpoint + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&m) != nil {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		return m
	}
	md := get("/metadata/endpoints?api-version=2015-01-01")
	if login := md["authentication"].(map[string]any)["loginEndpoint"]; login != e.endpoint+"/adfs" {
		t.Errorf("loginEndpoint = %v, want %s/adfs", login, e.endpoint)
	}
	oidc := get("/adfs/.well-known/openid-configuration")
	tokenURL, _ := oidc["token_endpoint"].(string)
	if tokenURL != e.endpoint+"/adfs/oauth2/token" || oidc["issuer"] != e.endpoint+"/adfs" {
		t.Fatalf("openid-configuration = %v", oidc)
	}
	resp, err := e.hc.PostForm(tokenURL, url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"anyone"}, "client_secret": {"x"},
		"scope": {"https://management.core.windows.net//.default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token = %d %v", resp.StatusCode, err)
	}
	parts := strings.Split(tok["access_token"].(string), ".")
	if len(parts) != 3 || parts[2] != "" || tok["token_type"] != "Bearer" {
		t.Fatalf("access_token %v is not an unsigned JWT", tok["access_token"])
	}
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["aud"] != "https://management.core.windows.net/" || claims["tid"] != DefaultTenant || claims["appid"] != "anyone" {
		t.Errorf("claims = %v", claims)
	}
}

// TestARMMetadata: subscriptions (the default one even on an empty
// fabric, with its tenant), locations, providers and generic resources.
func TestARMMetadata(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "inprocess", Options{})
	armGet := func(path string) map[string]any {
		t.Helper()
		resp, body := e.do("GET", path, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		return decodeJSON(t, body)
	}
	values := func(m map[string]any) []map[string]any {
		var out []map[string]any
		for _, v := range m["value"].([]any) {
			out = append(out, v.(map[string]any))
		}
		return out
	}
	subs := values(armGet("/subscriptions"))
	if len(subs) != 1 || subs[0]["subscriptionId"] != api.DefaultSubscription || subs[0]["tenantId"] != DefaultTenant {
		t.Fatalf("subscriptions of an empty fabric = %v, want the default one with its tenant", subs)
	}
	if ts := values(armGet("/tenants")); len(ts) != 1 || ts[0]["tenantId"] != DefaultTenant {
		t.Errorf("tenants = %v", ts)
	}
	e.createRG(testRG)
	if subs := values(armGet("/subscriptions")); len(subs) != 2 {
		t.Errorf("subscriptions = %v, want the default and %s", subs, testSub)
	}
	found := false
	for _, l := range values(armGet("/subscriptions/" + testSub + "/locations")) {
		if l["displayName"] == "East US" && l["name"] == "eastus" {
			found = true
		}
	}
	if !found {
		t.Error("locations lack East US → eastus")
	}
	prov := armGet("/subscriptions/" + testSub + "/providers/microsoft.network")
	if prov["namespace"] != "Microsoft.Network" || prov["registrationState"] != "Registered" || !strings.Contains(mustJSON(t, prov), `"routeTables"`) {
		t.Errorf("provider = %v", prov)
	}
	if resp, _ := e.do("GET", "/subscriptions/"+testSub+"/providers/Contoso.Nothing", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown provider = %d, want 404", resp.StatusCode)
	}

	e.mustPutTable(ctx, testRG, "kubernetes-routes", table())
	e.seedVNet(ctx, testRG)
	e.createRG("other")
	e.mustPutTable(ctx, "other", "elsewhere", table())
	tests := []struct {
		name, path string
		want       []string
	}{
		{"resource group", "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/resources", []string{"kubernetes-routes", "kubernetes-vnet"}},
		{"subscription", "/subscriptions/" + testSub + "/resources", []string{"elsewhere", "kubernetes-routes", "kubernetes-vnet"}},
		{"filtered", "/subscriptions/" + testSub + "/resources?$filter=" + url.QueryEscape("resourceType eq 'Microsoft.Network/routeTables' and name eq 'elsewhere'"), []string{"elsewhere"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range values(armGet(tc.path)) {
				if r["id"] == "" || r["type"] == "" || r["location"] != testLoc {
					t.Errorf("resource %v lacks id, type or location", r)
				}
				got = append(got, r["name"].(string))
			}
			if strings.Join(sortedCopy(got), ",") != strings.Join(tc.want, ",") {
				t.Errorf("resources = %v, want %v", got, tc.want)
			}
		})
	}
	if resp, _ := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/missing/resources", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resources of a missing group = %d, want 404", resp.StatusCode)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }
