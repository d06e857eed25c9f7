package cli

import (
	"strings"
	"testing"
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
