package doctor

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
)

const (
	rSubnet = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
	rTable  = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
	rNIC1   = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/networkInterfaces/worker-1-nic"
)

func routingState(tableID string, routes ...route.Route) routing.State {
	mp, ma := netip.MustParsePrefix, netip.MustParseAddr
	return routing.State{
		Subnets: []routing.Subnet{{ID: rSubnet, Name: "kubernetes-subnet", Prefixes: []netip.Prefix{mp("10.240.0.0/24")},
			VNet: routing.Network{AddressSpace: []netip.Prefix{mp("10.240.0.0/16")}}, RouteTableID: tableID}},
		Tables: []*route.Table{{ID: rTable, Name: "kubernetes-routes", Routes: routes}},
		Nodes: []source.Node{
			{Name: "worker-0", InternalIPs: []netip.Addr{ma("10.240.0.20")}, PodCIDRs: []netip.Prefix{mp("10.200.0.0/24")}},
			{Name: "worker-1", InternalIPs: []netip.Addr{ma("10.240.0.21")}, PodCIDRs: []netip.Prefix{mp("10.200.1.0/24")}},
		},
		ConfiguredTableID: rTable,
	}
}

func podRoute(node, cidr, ip string) route.Route {
	p := netip.MustParsePrefix(cidr)
	return route.Route{Name: route.Name(node, p), AddressPrefix: cidr, Prefix: p, NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(ip)}
}

func TestCheckRouting(t *testing.T) {
	both := []route.Route{podRoute("worker-0", "10.200.0.0/24", "10.240.0.20"), podRoute("worker-1", "10.200.1.0/24", "10.240.0.21")}
	nics := func(fwd1 bool) []NIC {
		return []NIC{
			{ID: "nic0", Name: "worker-0-nic", IPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, IPForwarding: true},
			{ID: rNIC1, Name: "worker-1-nic", IPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, IPForwarding: fwd1},
		}
	}
	tests := []struct {
		name string
		in   RoutingInput
		want []string // check: message fragment, one per finding
	}{
		{name: "healthy", in: RoutingInput{State: routingState(rTable, both...), Subnets: []string{rSubnet}, NICs: nics(true), NICsRead: true}},
		{name: "detached: one finding for both nodes", in: RoutingInput{State: routingState("", both...), Subnets: []string{rSubnet}},
			want: []string{"pod-reachability: pod traffic from kubernetes-subnet to 2 node pod CIDR(s) is not delivered (dropped): worker-0 (10.200.0.0/24), worker-1 (10.200.1.0/24). Example 10.240.0.4 → 10.200.0.1: kubernetes-subnet has no route table: 10.200.0.0/24 matches the system route 10.0.0.0/8 → None; dropped: next hop None"}},
		{name: "missing route for one node", in: RoutingInput{State: routingState(rTable, both[0]), Subnets: []string{rSubnet}},
			want: []string{"pod-reachability: pod traffic from kubernetes-subnet to 1 node pod CIDR(s) is not delivered (dropped): worker-1 (10.200.1.0/24). Example 10.240.0.4 → 10.200.1.1: kubernetes-subnet uses kubernetes-routes, which has no route for 10.200.1.0/24"}},
		{name: "IP forwarding off", in: RoutingInput{State: routingState(rTable, both...), Subnets: []string{rSubnet}, NICs: nics(false), NICsRead: true},
			want: []string{"ip-forwarding: node worker-1's NIC worker-1-nic has IP forwarding disabled"}},
		{name: "NICs unreadable", in: RoutingInput{State: routingState(rTable, both...), Subnets: []string{rSubnet}, NICsError: "403 AuthorizationFailed"},
			want: []string{"ip-forwarding: the network interfaces could not be read"}},
		{name: "subnet not read is skipped", in: RoutingInput{State: routingState("", both...), Subnets: []string{rSubnet + "-other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckRouting(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("%d findings, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, f := range got {
				if s := f.Rule + ": " + f.Message; !strings.Contains(s, tt.want[i]) {
					t.Errorf("finding %d = %q, want it to contain %q", i, s, tt.want[i])
				}
			}
		})
	}
}
