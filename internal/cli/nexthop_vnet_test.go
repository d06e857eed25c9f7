package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNextHopOutsideVNet: a node whose internal IP lies in no subnet of
// the guarded subnets' virtual network gets no route (Azure would deliver
// its pods' traffic to no NIC), and run, diff and doctor all say so with
// the same reason while the other node is served.
func TestNextHopOutsideVNet(t *testing.T) {
	cfg := kthw(t)
	writeFile(t, filepath.Join(filepath.Dir(cfg), "nodes.yaml"), `nodes:
  - name: worker-0
    internalIP: 10.240.0.20
    podCIDR: 10.200.0.0/24
  - name: stray
    internalIP: 10.250.0.5
    podCIDR: 10.200.1.0/24
`)
	run := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if run.code != ExitFindings {
		t.Fatalf("run --once: exit %d, want 3\n%s", run.code, run.stderr)
	}
	got := tableRoutes(t, cfg)
	if len(got) != 1 || got["worker-0____102000024"] != "10.200.0.0/24" {
		t.Errorf("table = %v, want worker-0's route only", got)
	}
	if l := linesWith(run.stderr, "NextHopOutsideVNet"); len(l) == 0 || !strings.Contains(strings.Join(l, "\n"), "10.250.0.5") {
		t.Errorf("run's log does not name the reason and the IP:\n%s", run.stderr)
	}
	for _, cmd := range []string{"diff", "doctor"} {
		res := runCLI(t, nil, "", cmd, "--config", cfg, "-o", "json")
		if res.code != ExitFindings {
			t.Errorf("%s: exit %d, want 3\n%s%s", cmd, res.code, res.stdout, res.stderr)
		}
		if !strings.Contains(res.stdout, "NextHopOutsideVNet") || !strings.Contains(res.stdout, "stray") {
			t.Errorf("%s does not report stray as NextHopOutsideVNet:\n%s", cmd, res.stdout)
		}
	}
}
