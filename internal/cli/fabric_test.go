package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

var etagPattern = regexp.MustCompile(`W/\\?"[0-9a-f-]{36}\\?"`)

// maskEtags replaces the random etags of a fabric's output.
func maskEtags(s string) string {
	return etagPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(m, `\"`) {
			return `W/\"<etag>\"` // inside a JSON string
		}
		return `W/"<etag>"`
	})
}

func TestFabricApplyAndShowGolden(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fabric.db")
	steps := []struct {
		name string
		args []string
	}{
		{"apply", []string{"fabric", "apply", "-f", "testdata/fabric/kthw.yaml", "--state", state}},
		{"apply-again", []string{"fabric", "apply", "-f", "testdata/fabric/kthw.yaml", "--state", state}},
		{"apply-again-json", []string{"fabric", "apply", "-o", "json", "-f", "testdata/fabric/kthw.yaml", "--state", state}},
		{"show", []string{"fabric", "show", "--state", state}},
		{"show-json", []string{"fabric", "show", "-o", "json", "--state", state}},
		{"show-yaml", []string{"fabric", "show", "-o", "yaml", "--state", state}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res := wantExit(t, ExitOK, s.args...)
			golden(t, filepath.Join("testdata", "fabric", s.name+".golden"), []byte(maskEtags(res.stdout)))
		})
	}
	// The facts behind the golden files, checked from JSON so that a
	// regenerated golden file cannot hide them.
	res := runCLI(t, nil, "", "fabric", "show", "-o", "json", "--state", state)
	var st network.State
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.RouteTables) != 1 || len(st.RouteTables[0].Routes) != 2 || len(st.RouteTables[0].Subnets) != 1 ||
		st.VirtualNetworks[0].Subnets[0].RouteTable != st.RouteTables[0].ID {
		t.Errorf("state = %+v", st)
	}
	res = runCLI(t, nil, "", "fabric", "apply", "-o", "json", "-f", "testdata/fabric/kthw.yaml", "--state", state)
	var ar topology.ApplyResult
	if err := json.Unmarshal([]byte(res.stdout), &ar); err != nil {
		t.Fatal(err)
	}
	if ar.Writes != 0 || ar.Count(topology.ActionUnchanged) != len(ar.Changes) {
		t.Errorf("re-apply = %+v", ar)
	}
}

func TestFabricShowEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	res := runCLI(t, nil, "", "fabric", "show", "--state", filepath.Join(dir, "none.db"))
	if res.code != ExitError || !strings.Contains(res.stderr, "none.db") {
		t.Errorf("show of a missing state: %d %s", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
		t.Error("show created a state file")
	}
	// The default state path comes from XDG_STATE_HOME.
	env := map[string]string{"XDG_STATE_HOME": dir}
	if res := runCLI(t, env, "", "fabric", "apply", "-f", "testdata/fabric/kthw.yaml"); res.code != ExitOK {
		t.Fatalf("apply to the default state: %d %s", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "routekeeper", "fabric.db")); err != nil {
		t.Errorf("default state file: %v", err)
	}
	if res := runCLI(t, env, "", "fabric", "show"); res.code != ExitOK || !strings.Contains(res.stdout, "kubernetes-routes") {
		t.Errorf("show of the default state: %d %s %s", res.code, res.stdout, res.stderr)
	}
}

func TestFabricApplyBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	doc, _ := os.ReadFile("testdata/fabric/kthw.yaml")
	os.WriteFile(bad, bytes.Replace(doc, []byte("addressPrefix: 10.240.0.0/24"), []byte("addressPrefix: 10.240.0.7/24"), 1), 0o644)
	state := filepath.Join(dir, "fabric.db")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad prefix", []string{"fabric", "apply", "-f", bad, "--state", state},
			[]string{bad, "resourceGroups[0].virtualNetworks[0].subnets[0].addressPrefix", "10.240.0.7/24", "10.240.0.0/24"}},
		{"missing file", []string{"fabric", "apply", "-f", filepath.Join(dir, "nope.yaml"), "--state", state}, []string{"nope.yaml"}},
		{"no file", []string{"fabric", "apply", "--state", state}, []string{"-f"}},
		{"state and endpoint", []string{"fabric", "apply", "-f", "testdata/fabric/kthw.yaml", "--state", state, "--endpoint", "http://127.0.0.1:1"}, []string{"--state", "--endpoint"}},
		{"bad endpoint", []string{"fabric", "show", "--endpoint", "127.0.0.1:8400"}, []string{"--endpoint", "127.0.0.1:8400"}},
		{"remote listen", []string{"fabric", "serve", "--memory", "--listen", "0.0.0.0:0"}, []string{"--listen", "0.0.0.0", "--allow-remote"}},
		{"every interface", []string{"fabric", "serve", "--memory", "--listen", ":8400"}, []string{"--listen", "every interface"}},
		{"bad listen", []string{"fabric", "serve", "--memory", "--listen", "localhost"}, []string{"--listen", "localhost"}},
		{"bad fault", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--error-rate", "1.5"}, []string{"--error-rate", "errorRate", "1.5"}},
		{"lose-answers above 1", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--lose-answers", "1.5"}, []string{"--lose-answers", "1.5", "probability"}},
		{"negative lose-answers", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--lose-answers", "-0.5"}, []string{"--lose-answers", "-0.5"}},
		{"NaN lose-answers", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--lose-answers", "NaN"}, []string{"--lose-answers", "NaN"}},
		{"lose-answers not a number", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--lose-answers", "half"}, []string{"--lose-answers", "half"}},
		{"negative write refill", []string{"fabric", "serve", "--memory", "--listen", "127.0.0.1:0", "--write-bucket", "5", "--write-refill", "-1"}, []string{"--write-refill", "-1"}},
		{"memory and state", []string{"fabric", "serve", "--memory", "--state", state}, []string{"--memory", "--state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, nil, "", tc.args...)
			if res.code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", res.code, ExitUsage, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr %q does not name %q", res.stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("a refused apply created the state file")
	}
}

// waitListening waits until a command running in process prints a line
// that re matches, and returns re's first group: it wakes at each write to
// out instead of polling. It fails the test when the command exits first
// (the code is put back into done for whoever waits on it) or after 10 s.
func waitListening(t *testing.T, re *regexp.Regexp, out, errOut *syncbuf.Buffer, done chan int) string {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		text, written := out.Next()
		if m := re.FindStringSubmatch(text); m != nil {
			return m[1]
		}
		select {
		case <-written:
		case code := <-done:
			done <- code
			t.Fatalf("exited %d before printing %s: %s", code, re, errOut.String())
		case <-timeout.C:
			t.Fatalf("no %s printed within 10s: %s %s", re, text, errOut.String())
		}
	}
}

var listeningRE = regexp.MustCompile(`routekeeper fabric listening on (http://\S+)`)

func TestFabricServe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fabric.db")
	var out, errOut syncbuf.Buffer
	serve := startCLI(&out, &errOut, nil, "fabric", "serve", "--state", state, "--listen", "127.0.0.1:0", "--operation-duration", "50ms")
	defer serve.cancel()
	endpoint := waitListening(t, listeningRE, &out, &errOut, serve.done)
	for _, want := range []string{"ROUTEKEEPER_ENDPOINT=" + endpoint, state, "50ms", "/_fabric/faults"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve output lacks %q:\n%s", want, out.String())
		}
	}
	resp, err := http.Get(endpoint + "/_fabric/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	// apply and show through the endpoint, and the SDK sees the result.
	wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw.yaml", "--endpoint", endpoint)
	if res := runCLI(t, map[string]string{"ROUTEKEEPER_ENDPOINT": endpoint}, "", "fabric", "show"); res.code != ExitOK || !strings.Contains(res.stdout, "kubernetes-route-10-200-1-0-24") {
		t.Errorf("show via ROUTEKEEPER_ENDPOINT: %d %s %s", res.code, res.stdout, res.stderr)
	}
	tables, err := armnetwork.NewRouteTablesClient(fabric.DefaultSubscription, identity.Credential{}, fabric.ClientOptions(nil, endpoint))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := tables.Get(t.Context(), "kubernetes", "kubernetes-routes", nil)
	if err != nil || len(rt.Properties.Routes) != 2 {
		t.Fatalf("SDK GET: %v", err)
	}
	serve.stop(t, 10*time.Second, "serve", &errOut)
	if _, err := http.Get(endpoint + "/_fabric/healthz"); err == nil {
		t.Error("the server still answers after stopping")
	}
	// The state survived the server.
	if res := runCLI(t, nil, "", "fabric", "show", "--state", state); res.code != ExitOK || !strings.Contains(res.stdout, "kubernetes-subnet") {
		t.Errorf("show after the server stopped: %d %s", res.code, res.stderr)
	}
}

// TestFaultFlags: every fault a flag sets is named by that flag when its
// value is refused, and the flag exists.
func TestFaultFlags(t *testing.T) {
	help := wantExit(t, ExitOK, "fabric", "serve", "--help").stdout
	for field, flag := range faultFlags {
		t.Run(field, func(t *testing.T) {
			if !strings.Contains(help, "--"+flag+" ") {
				t.Errorf("fabric serve has no flag --%s (for the fault %s):\n%s", flag, field, help)
			}
			err := faultFlagError(&fabric.InvalidFaultError{Field: field, Problem: "-1 must not be negative"})
			if !strings.Contains(err.Error(), "flag --"+flag+": -1") {
				t.Errorf("faultFlagError = %v, want it to name --%s", err, flag)
			}
		})
	}
}
