package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/azcompat"
)

// TestFabricAzPrintsSteps: without --apply, fabric az prints the exports
// and az commands for the endpoint, in a private config directory; plain
// http is refused because az sends tokens over https only.
func TestFabricAzPrintsSteps(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/state"}
	res := runCLI(t, env, "", "fabric", "az", "--endpoint", "https://127.0.0.1:9443")
	if res.code != ExitOK {
		t.Fatalf("fabric az = %d %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"export AZURE_CONFIG_DIR=/state/routekeeper/az\n",
		"export REQUESTS_CA_BUNDLE=/state/routekeeper/tls/ca.pem\n",
		"export AZURE_CORE_COLLECT_TELEMETRY=no\n",
		"az cloud register -n RoutekeeperFabric --endpoint-resource-manager https://127.0.0.1:9443/ --endpoint-active-directory https://127.0.0.1:9443/adfs ",
		"az login --service-principal -u routekeeper-fabric -p fabric --tenant 00000000-0000-0000-0000-00000000fab1",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("fabric az output lacks %q:\n%s", want, res.stdout)
		}
	}
	for _, tc := range []struct{ name, endpoint string }{{"http", "http://127.0.0.1:8400"}, {"no scheme", "127.0.0.1:8400"}} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, env, "", "fabric", "az", "--endpoint", tc.endpoint)
			if res.code != ExitUsage || !strings.Contains(res.stderr, "https") {
				t.Errorf("fabric az --endpoint %s = %d %s, want a usage error about https", tc.endpoint, res.code, res.stderr)
			}
		})
	}
}

// TestFabricAzApplyWritesTheDebianShim: --apply runs the az steps (here a
// stand-in az that records them), writes azcompat's sitecustomize.py into
// the state directory and exports the PYTHONPATH that loads it, before any
// PYTHONPATH the shell had.
func TestFabricAzApplyWritesTheDebianShim(t *testing.T) {
	state := t.TempDir()
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$* PYTHONPATH=$PYTHONPATH\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "az"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.MkdirAll(filepath.Join(state, "routekeeper", "tls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "routekeeper", "tls", "ca.pem"), []byte("ca"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, map[string]string{"XDG_STATE_HOME": state, "PYTHONPATH": "/mine"}, "", "fabric", "az", "--apply", "--endpoint", "https://127.0.0.1:9443")
	if res.code != ExitOK {
		t.Fatalf("fabric az --apply = %d %s", res.code, res.stderr)
	}
	shim := filepath.Join(state, "routekeeper", "az-python")
	want := "export PYTHONPATH=" + shim + string(os.PathListSeparator) + "/mine\n"
	if !strings.Contains(res.stdout, want) {
		t.Errorf("fabric az --apply printed\n%s\nwant a line %q", res.stdout, want)
	}
	b, err := os.ReadFile(filepath.Join(shim, "sitecustomize.py"))
	if err != nil || string(b) != azcompat.SiteCustomize {
		t.Errorf("the sitecustomize.py written: %v", err)
	}
	log, _ := os.ReadFile(calls)
	if !strings.Contains(string(log), "login --service-principal") || !strings.Contains(string(log), "PYTHONPATH="+shim) {
		t.Errorf("the az steps ran as:\n%s", log)
	}
}
