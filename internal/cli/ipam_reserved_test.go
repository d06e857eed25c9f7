package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// TestIPAMAvoidsForeignRoutes: IPAM never hands an inventory node a pod
// CIDR that a route routekeeper does not own already holds (it used to, and
// the node was PrefixConflict on every run), and an allocation that such a
// route takes later is released and re-allocated. The foreign routes are
// written with the real SDK against the fabric state, as another tool would.
func TestIPAMAvoidsForeignRoutes(t *testing.T) {
	cfg := kthw(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	ctx := context.Background()
	// A first run creates the table, with one node of an explicit pod CIDR.
	writeFile(t, nodes, "nodes:\n  - {name: worker-7, internalIP: 10.240.0.27, podCIDR: 10.200.7.0/24}\n")
	mustRun(t, cfg)
	routes, _ := sdkRoutes(t, cfg)
	put := func(name, prefix string) {
		t.Helper()
		p := armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr(prefix),
			NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.100")}}
		poller, err := routes.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", name, p, nil)
		if err != nil {
			t.Fatalf("adding %s out of band: %v", name, err)
		}
		if _, err := poller.PollUntilDone(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	hopOf := func(name string) string {
		t.Helper()
		r, err := routes.Get(ctx, "kubernetes", "kubernetes-routes", name, nil)
		if err != nil {
			t.Fatalf("route %s: %v", name, err)
		}
		return *r.Properties.AddressPrefix + " -> " + *r.Properties.NextHopIPAddress
	}

	// A custom route to a firewall holds the first node CIDR.
	put("to-firewall", "10.200.0.0/24")
	writeFile(t, nodes, "nodes:\n  - {name: worker-7, internalIP: 10.240.0.27, podCIDR: 10.200.7.0/24}\n  - {name: worker-0, internalIP: 10.240.0.20}\n")
	res := mustRun(t, cfg)
	if got, want := hopOf("worker-0____102001024"), "10.200.1.0/24 -> 10.240.0.20"; got != want {
		t.Errorf("worker-0's route = %s, want %s", got, want)
	}
	if got, want := hopOf("to-firewall"), "10.200.0.0/24 -> 10.240.0.100"; got != want {
		t.Errorf("the custom route changed: %s, want %s", got, want)
	}

	// Someone replaces worker-0's route by one of their own: the
	// allocation is unroutable now, so it is released and re-allocated.
	poller, err := routes.BeginDelete(ctx, "kubernetes", "kubernetes-routes", "worker-0____102001024", nil)
	fabrictest.MustPoll(t, poller, err)
	put("appliance", "10.200.1.0/24")
	res = mustRun(t, cfg)
	for _, s := range []string{"released pod CIDR that became unroutable", "node=worker-0", "podCIDR=10.200.1.0/24", "route appliance"} {
		if !strings.Contains(res.stderr, s) {
			t.Errorf("log lacks %q:\n%s", s, res.stderr)
		}
	}
	if got, want := hopOf("worker-0____102002024"), "10.200.2.0/24 -> 10.240.0.20"; got != want {
		t.Errorf("worker-0's new route = %s, want %s", got, want)
	}
	for name, want := range map[string]string{"to-firewall": "10.200.0.0/24 -> 10.240.0.100", "appliance": "10.200.1.0/24 -> 10.240.0.100", "worker-7____102007024": "10.200.7.0/24 -> 10.240.0.27"} {
		if got := hopOf(name); got != want {
			t.Errorf("route %s = %s, want %s", name, got, want)
		}
	}
	if res := runCLI(t, nil, "", "diff", "--config", cfg); res.code != ExitOK {
		t.Errorf("diff after the run: exit %d, want 0:\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestIPAMAfterAFollowedSwap: after the subnet moved to another table (a
// swap routekeeper follows), IPAM reserves against the table the subnet
// really uses, not the configured one. The new table holds a firewall's
// route for 10.200.2.0/24, free in the configured table: IPAM used to hand
// that prefix to a new node, which then got PrefixConflict in the table in
// use on every run.
func TestIPAMAfterAFollowedSwap(t *testing.T) {
	cfg := kthw(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	writeFile(t, nodes, "nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n")
	mustRun(t, cfg)
	f, _ := sdkFactory(t, cfg)
	va := func(name, prefix, hop string) *armnetwork.Route {
		return &armnetwork.Route{Name: to.Ptr(name), Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr(prefix),
			NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr(hop)}}
	}
	// The new table carries the node routes (so following it breaks
	// nothing) and a route to a firewall for the next free /24.
	associateNewTable(t, f, "rt-new", va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20"),
		va("worker-1____102001024", "10.200.1.0/24", "10.240.0.21"), va("to-firewall", "10.200.2.0/24", "10.240.0.100"))

	writeFile(t, nodes, "nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n  - {name: worker-2, internalIP: 10.240.0.22}\n")
	res := runCLI(t, nil, "", "run", "--once", "--config", cfg, "--association-policy", "follow")
	if res.code != ExitOK {
		t.Fatalf("run --once after the swap: exit %d, want 0 (worker-2 routed in the table in use)\n%s%s", res.code, res.stdout, res.stderr)
	}
	routes := f.NewRoutesClient()
	ctx := context.Background()
	r, err := routes.Get(ctx, "kubernetes", "rt-new", "to-firewall", nil)
	if err != nil || *r.Properties.AddressPrefix != "10.200.2.0/24" {
		t.Fatalf("the firewall route: %v %v", r, err)
	}
	pager := routes.NewListPager("kubernetes", "rt-new", nil)
	var worker2 string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range page.Value {
			if strings.HasPrefix(*rt.Name, "worker-2____") {
				worker2 = *rt.Properties.AddressPrefix
			}
		}
	}
	if worker2 == "" || worker2 == "10.200.2.0/24" {
		t.Errorf("worker-2's route in the table in use: %q, want one that avoids the firewall's 10.200.2.0/24", worker2)
	}
}
