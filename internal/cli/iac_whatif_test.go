package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func iacWhatIf(name string) string {
	return filepath.Join("..", "iac", "testdata", "whatif", name+".json")
}

// TestIacCheckWhatIf: the what-ifs recorded from the real az runs, checked
// against the cloud as it stands (the example after routekeeper run) and
// offline, like plans: the hazards exit 3 naming the ARM resource, the
// subnet, the table and the nodes, with the fix in ARM JSON; the fixes exit
// 0; SARIF and YAML as for plans; a broken or failed what-if exits 2.
func TestIacCheckWhatIf(t *testing.T) {
	cfg := ranKTHW(t)
	for _, tc := range []struct {
		whatIf string
		code   int
		has    []string
	}{
		{"detach-inline-subnet", ExitFindings, []string{"vnet-inline-subnet-detaches", "virtualNetworks/kubernetes-vnet", "kubernetes-subnet", "2: worker-0, worker-1", "RouteTableDetached", "routeTableId"}},
		{"inline-routes", ExitFindings, []string{"inline-routes-delete-pod-routes", "routeTables/kubernetes-routes", "worker-0____102000024", "Microsoft.Network/routeTables/routes"}},
		{"complete-mode", ExitFindings, []string{"route-table-destroyed", "vnet-inline-subnet-detaches", "Incremental mode"}},
		{"fix-route-table-parameter", ExitOK, []string{"No findings"}},
		{"fix-nested-reference", ExitOK, []string{"No findings"}},
		{"fix-route-child-resource", ExitOK, []string{"No findings"}},
	} {
		goldenFile := ""
		if tc.whatIf == "detach-inline-subnet" {
			goldenFile = "whatif-detach.golden"
		}
		checkIacLiveAndOffline(t, tc.whatIf, iacWhatIf(tc.whatIf), cfg, tc.code, tc.has, goldenFile)
	}
	for _, format := range []string{"sarif", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			res := runCLI(t, nil, "", "iac", "check", iacWhatIf("detach-inline-subnet"), "--config", cfg, "-o", format)
			if res.code != ExitFindings || !strings.Contains(res.stdout, "vnet-inline-subnet-detaches") {
				t.Fatalf("-o %s: exit %d\n%s%s", format, res.code, res.stdout, res.stderr)
			}
			if format != "yaml" && !json.Valid([]byte(res.stdout)) {
				t.Errorf("-o %s is not JSON:\n%s", format, res.stdout)
			}
		})
	}
	t.Run("broken", func(t *testing.T) {
		for name, body := range map[string]string{
			"failed":  `{"status": "Failed", "error": {"code": "InvalidTemplate", "message": "Deployment template validation failed"}, "changes": []}`,
			"foreign": `{"value": []}`,
			"cut off": `{"changes": [{"resourceId": "/subscriptions/x`,
		} {
			f := filepath.Join(t.TempDir(), name+".json")
			writeFile(t, f, body)
			res := runCLI(t, nil, "", "iac", "check", f, "--config", cfg)
			if res.code != ExitUsage || !strings.Contains(res.stderr, filepath.Base(f)) {
				t.Errorf("%s: exit %d, want 2 naming the file\n%s", name, res.code, res.stderr)
			}
		}
	})
}
