package plan_test

import (
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

func ExampleCompute() {
	pfx := netip.MustParsePrefix
	ip := netip.MustParseAddr
	current := &route.Table{
		Name: "kubernetes-routes",
		Etag: `W/"7"`,
		Tags: map[string]string{route.ClaimTag: "prod"},
		Routes: []route.Route{
			{Name: "to-firewall", AddressPrefix: "0.0.0.0/0", NextHopType: route.VirtualAppliance, NextHopIP: ip("10.240.1.4")},
			{Name: "worker-0____102000024", AddressPrefix: "10.200.0.0/24", NextHopType: route.VirtualAppliance, NextHopIP: ip("10.240.0.20")},
			{Name: "worker-1____102001024", AddressPrefix: "10.200.1.0/24", NextHopType: route.VirtualAppliance, NextHopIP: ip("10.240.0.21")},
		},
	}
	p := plan.Compute(plan.Input{
		Cluster:      "prod",
		ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")},
		Nodes: []source.Node{
			{Name: "worker-0", InternalIPs: []netip.Addr{ip("10.240.0.30")}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
			{Name: "worker-2", InternalIPs: []netip.Addr{ip("10.240.0.22")}, PodCIDRs: []netip.Prefix{pfx("10.200.2.0/24")}},
			{Name: "worker-3", InternalIPs: []netip.Addr{ip("10.240.0.23")}, PodCIDRs: []netip.Prefix{pfx("10.201.0.0/24")}},
		},
		Current: current,
	})
	fmt.Println(p)
	for _, c := range p.Changes {
		fmt.Printf("%s %s (%s)\n", c.Kind, c.Route.Name, c.Reason)
	}
	for _, c := range p.Conflicts {
		fmt.Printf("%s: %s\n", c.Reason, c.Message)
	}
	fmt.Println("PUT with If-Match", p.Desired.Etag, "routes:", len(p.Desired.Routes))
	// Output:
	// 1 to create, 1 to update, 1 to delete, 1 conflicts
	// create worker-2____102002024 (new route)
	// update worker-0____102000024 (next hop 10.240.0.20 -> 10.240.0.30)
	// delete worker-1____102001024 (node no longer exists)
	// OutsideClusterCIDR: pod CIDR 10.201.0.0/24 of node worker-3 is outside the cluster CIDRs 10.200.0.0/16
	// PUT with If-Match W/"7" routes: 3
}
