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
	run := wantExit(t, ExitFindings, "run", "--once", "--config", cfg)
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

// TestNextHopInPeeredNetwork: a node in a subnet of the hub peered with
// the cluster's network is a valid next hop (Azure accepts a virtual
// appliance in a peered network): run routes it, through the real SDK.
// The replies of its pods are lost (the spoke's peering does not allow the
// traffic the hub node forwards): trace and run --once, which observe the
// same interconnect, both say so. (What the hub costs a reconcile, one
// read while such a node exists, is observe's TestPeeredNextHopReads.)
func TestNextHopInPeeredNetwork(t *testing.T) {
	cfg := hubSpoke(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	mustRun(t, cfg)
	writeFile(t, nodes, `nodes:
  - name: worker-0
    internalIP: 10.240.0.20
    podCIDR: 10.200.0.0/24
  - name: worker-1
    internalIP: 10.240.0.21
    podCIDR: 10.200.1.0/24
  - name: hub-node
    internalIP: 10.250.1.10
    podCIDR: 10.200.2.0/24
`)
	first := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if got := tableRoutes(t, cfg); got["hub-node____102002024"] != "10.200.2.0/24" {
		t.Errorf("table = %v, want hub-node's route", got)
	}
	// A pass that writes nothing: the steady state with a node in the hub.
	again := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	for _, res := range []cliResult{first, again} {
		if res.code != ExitFindings || !strings.Contains(res.stderr, "pod-reachability=1") {
			t.Errorf("run --once with a node in the hub: exit %d, want 3 and the lost replies\n%s", res.code, res.stderr)
		}
	}
	// Reading what the hub's gateway learned is a POST that only reads:
	// the pass that writes nothing counts no write.
	if w := reconcileWrites(t, again.stderr); w != 0 {
		t.Errorf("the steady pass counts %d writes, want 0:\n%s", w, again.stderr)
	}
	// trace agrees the next hop is valid, and finds the replies lost.
	res := runCLI(t, nil, "", "trace", "--config", cfg, "worker-0", "hub-node")
	if res.code != ExitFindings || !strings.Contains(res.stdout, "Azure accepts a virtual appliance in a peered virtual network") ||
		!strings.Contains(res.stdout, "Node hub-node: routed (RouteCreated)") {
		t.Errorf("trace worker-0 hub-node: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
