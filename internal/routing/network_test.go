package routing

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

const (
	sub       = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/"
	clusterID = sub + "virtualNetworks/kubernetes-vnet"
	hubID     = sub + "virtualNetworks/hub-vnet"
	poolID    = sub + "virtualNetworks/pool-vnet"
	strayID   = sub + "virtualNetworks/stray-vnet"
	hubTable  = sub + "routeTables/hub-routes"
	gwTable   = sub + "routeTables/gateway-routes"
	poolTable = sub + "routeTables/pool-routes"
)

// interconnectOpts vary the hub-and-spoke network of interconnectState.
type interconnectOpts struct {
	hubForwarded  bool // hub's peering to the cluster allows forwarded traffic
	poolForwarded bool // pool's peering to the cluster allows forwarded traffic
	toPoolFwd     bool // the cluster's peering to the pool allows forwarded traffic
	noTransit     bool // the hub does not allow gateway transit
	hubOneSided   bool // only the cluster's side of the hub peering exists
	disableBGP    bool // the cluster's table disables gateway route propagation
	noGatewayUDRs bool // the GatewaySubnet has no route table
}

// interconnectState is a cluster network (kubernetes-vnet 10.240/16,
// worker-0 and worker-1 with the pod routes) peered with a hub (hub-vnet
// 10.250/16: a shared subnet whose table routes the pod CIDRs to the nodes,
// and a VPN gateway that learned on-premises 10.9/16 and 192.168.50/24) and
// with a second node pool's network (pool-vnet 10.241/16, worker-9 with pod
// CIDR 10.200.9.0/24). stray-vnet (10.242/16, worker-x) is peered with
// nobody. The cluster uses the hub's gateway (useRemoteGateways).
func interconnectState(o interconnectOpts) State {
	nodes := append(kthwNodes(),
		source.Node{Name: "worker-9", InternalIPs: []netip.Addr{addr("10.241.0.9")}, PodCIDRs: []netip.Prefix{pfx("10.200.9.0/24")}},
		source.Node{Name: "worker-x", InternalIPs: []netip.Addr{addr("10.242.0.9")}, PodCIDRs: []netip.Prefix{pfx("10.200.10.0/24")}})
	podRoutes := func(id string) *route.Table {
		return kthwTable(id, udr("worker-9", "10.200.9.0/24", route.VirtualAppliance, "10.241.0.9"),
			udr("worker-x", "10.200.10.0/24", route.VirtualAppliance, "10.242.0.9"))
	}
	clusterTable := podRoutes(kthwTableID)
	clusterTable.DisableBGPRoutePropagation = o.disableBGP
	tables := []*route.Table{clusterTable, podRoutes(hubTable), podRoutes(gwTable),
		{ID: poolTable, Name: "pool-routes", Routes: []route.Route{udr("worker-0", "10.200.0.0/24", route.VirtualAppliance, "10.240.0.20")}}}
	gwSubnetTable := gwTable
	if o.noGatewayUDRs {
		gwSubnetTable = ""
	}
	subnet := func(vnetID, vnetName, name, prefix, table string) Subnet {
		return Subnet{ID: vnetID + "/subnets/" + name, Name: name, Prefixes: []netip.Prefix{pfx(prefix)},
			VNetName: vnetName, VNetID: vnetID, RouteTableID: table}
	}
	peer := func(name, remote string, space string, connected bool) Peering {
		p := Peering{Name: name, RemoteVNetID: remote, RemoteAddressSpace: []netip.Prefix{pfx(space)}, State: PeeringConnected, AllowVirtualNetworkAccess: true}
		if !connected {
			p.State = PeeringInitiated
		}
		return p
	}
	c2h := peer("to-hub", hubID, "10.250.0.0/16", true)
	c2h.UseRemoteGateways = true
	h2c := peer("to-cluster", clusterID, "10.240.0.0/16", true)
	h2c.AllowGatewayTransit, h2c.AllowForwardedTraffic = !o.noTransit, o.hubForwarded
	p2c := peer("to-cluster", clusterID, "10.240.0.0/16", true)
	p2c.AllowForwardedTraffic = o.poolForwarded
	cluster := VNet{ID: clusterID, Name: "kubernetes-vnet", AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")},
		Peerings: []Peering{c2h, peer("to-pool", poolID, "10.241.0.0/16", true)}}
	cluster.Peerings[1].AllowForwardedTraffic = o.toPoolFwd
	hub := VNet{ID: hubID, Name: "hub-vnet", AddressSpace: []netip.Prefix{pfx("10.250.0.0/16")},
		Peerings: []Peering{h2c},
		Gateways: []Gateway{{ID: sub + "virtualNetworkGateways/hub-gw", Name: "hub-gw", Type: GatewayVpn,
			SubnetID: hubID + "/subnets/GatewaySubnet", Learned: []netip.Prefix{pfx("10.9.0.0/16"), pfx("192.168.50.0/24")}}}}
	if o.hubOneSided {
		hub.Peerings = nil
		cluster.Peerings[0].State = PeeringInitiated
	}
	return State{
		Subnets: []Subnet{
			subnet(clusterID, "kubernetes-vnet", "kubernetes-subnet", "10.240.0.0/24", kthwTableID),
			subnet(hubID, "hub-vnet", "shared", "10.250.1.0/24", hubTable),
			subnet(hubID, "hub-vnet", "GatewaySubnet", "10.250.255.0/27", gwSubnetTable),
			subnet(poolID, "pool-vnet", "pool", "10.241.0.0/24", poolTable),
			subnet(strayID, "stray-vnet", "stray", "10.242.0.0/24", ""),
		},
		Tables:            tables,
		Nodes:             nodes,
		ConfiguredTableID: kthwTableID,
		VNets: []VNet{cluster, hub,
			{ID: poolID, Name: "pool-vnet", AddressSpace: []netip.Prefix{pfx("10.241.0.0/16")}, Peerings: []Peering{p2c}},
			{ID: strayID, Name: "stray-vnet", AddressSpace: []netip.Prefix{pfx("10.242.0.0/16")}}},
	}
}

func TestTraceInterconnect(t *testing.T) {
	tests := []struct {
		name    string
		o       interconnectOpts
		src     string
		dst     string
		verdict Verdict
		node    string
		peering string
		reasons []string // each must be in some line of the reasons
	}{
		{name: "hub VM to a pod, the hub accepts forwarded replies", o: interconnectOpts{hubForwarded: true}, src: "10.250.1.10", dst: "10.200.1.5",
			verdict: Delivered, node: "worker-1", peering: "hub-vnet/to-cluster", reasons: []string{
				"the next hop 10.240.0.21 is in kubernetes-vnet, peered with hub-vnet (peering to-cluster, Connected): Azure accepts a virtual appliance in a peered virtual network",
				"replies from 10.200.1.5 to 10.250.1.10 leave kubernetes-subnet by the system route 10.250.0.0/16 → VNetPeering",
				"they cross back into hub-vnet as traffic forwarded by the node; hub-vnet's peering to-cluster allows forwarded traffic"}},
		{name: "hub VM to a pod, the hub refuses forwarded replies", src: "10.250.1.10", dst: "10.200.1.5",
			verdict: NoReturn, node: "worker-1", peering: "hub-vnet/to-cluster", reasons: []string{
				"delivered to node worker-1 (10.240.0.21), whose pod CIDR 10.200.1.0/24 contains 10.200.1.5",
				"the replies are lost: their source 10.200.1.5 is outside kubernetes-vnet's address space (the node forwards them), and hub-vnet's peering to-cluster does not allow forwarded traffic"}},
		{name: "hub VM to a node", src: "10.250.1.10", dst: "10.240.0.21", verdict: Delivered, node: "worker-1", peering: "hub-vnet/to-cluster",
			reasons: []string{"10.240.0.21 is in kubernetes-vnet, peered with hub-vnet (peering to-cluster, Connected)"}},
		{name: "one-sided peering carries nothing", o: interconnectOpts{hubOneSided: true}, src: "10.250.1.10", dst: "10.200.1.5", verdict: Unreachable,
			reasons: []string{"the next hop 10.240.0.21 is in kubernetes-vnet, which is not peered with hub-vnet (both sides need a peering): Azure cannot reach it"}},
		{name: "on premises through the hub gateway", src: "10.9.1.1", dst: "10.200.1.5", verdict: Delivered, node: "worker-1", peering: "hub-vnet/to-cluster",
			reasons: []string{
				"10.9.1.1 is on premises: gateway hub-gw learned 10.9.0.0/16; it enters Azure through hub-gw in GatewaySubnet (10.250.255.0/27) of hub-vnet",
				"replies from 10.200.1.5 to 10.9.1.1 leave kubernetes-subnet by the BGP route 10.9.0.0/16 → VirtualNetworkGateway"}},
		{name: "on premises, the cluster's table drops the gateway's routes", o: interconnectOpts{disableBGP: true}, src: "10.9.1.1", dst: "10.200.1.5", verdict: NoReturn, node: "worker-1", peering: "hub-vnet/to-cluster",
			reasons: []string{"replies from 10.200.1.5 to 10.9.1.1 leave kubernetes-subnet by the system route 10.0.0.0/8 → None", "the replies are lost: that route does not lead back to 10.9.1.1"}},
		{name: "on premises, no gateway transit", o: interconnectOpts{noTransit: true}, src: "10.9.1.1", dst: "10.200.1.5", verdict: NoReturn, node: "worker-1", peering: "hub-vnet/to-cluster"},
		{name: "on premises, GatewaySubnet without pod routes", o: interconnectOpts{noGatewayUDRs: true}, src: "10.9.1.1", dst: "10.200.1.5", verdict: Dropped,
			reasons: []string{"GatewaySubnet has no route table: 10.200.1.0/24 matches the system route 10.0.0.0/8 → None"}},
		{name: "on premises, unknown prefix", src: "172.20.0.1", dst: "10.200.1.5", verdict: NoSubnet},
		{name: "pod to a node pool in a peered network that refuses forwarded traffic", src: "10.200.0.5", dst: "10.200.9.5", verdict: NotForwarded,
			reasons: []string{"dropped at the peering: its source 10.200.0.5 is outside kubernetes-vnet's address space (traffic forwarded by a node), and pool-vnet's peering to-cluster does not allow forwarded traffic (allowForwardedTraffic)"}},
		{name: "pod to a node pool in a peered network that accepts it", o: interconnectOpts{poolForwarded: true}, src: "10.200.0.5", dst: "10.200.9.5", verdict: Delivered, node: "worker-9",
			peering: "kubernetes-vnet/to-pool", reasons: []string{
				"its source 10.200.0.5 is outside kubernetes-vnet's address space (traffic forwarded by a node); pool-vnet's peering to-cluster allows forwarded traffic",
				"the trace does not follow the appliance 10.240.0.20 further"}},
		{name: "node to a pod in a peered network: the replies are forwarded", src: "10.240.0.20", dst: "10.200.9.5", verdict: NoReturn, node: "worker-9", peering: "kubernetes-vnet/to-pool",
			reasons: []string{"the replies are lost: their source 10.200.9.5 is outside pool-vnet's address space (the node forwards them), and kubernetes-vnet's peering to-pool does not allow forwarded traffic"}},
		{name: "node to a pod in a peered network that may reply", o: interconnectOpts{toPoolFwd: true}, src: "10.240.0.20", dst: "10.200.9.5", verdict: Delivered, node: "worker-9", peering: "kubernetes-vnet/to-pool",
			reasons: []string{"they cross back into kubernetes-vnet as traffic forwarded by the node; kubernetes-vnet's peering to-pool allows forwarded traffic"}},
		{name: "a next hop in a network nobody peered", src: "10.240.0.20", dst: "10.200.10.5", verdict: Unreachable,
			reasons: []string{"the next hop 10.242.0.9 is in stray-vnet, which is not peered with kubernetes-vnet"}},
		{name: "inside the cluster nothing changes", src: "10.200.0.5", dst: "10.200.1.5", verdict: Delivered, node: "worker-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Trace(interconnectState(tt.o), Endpoint{Addr: addr(tt.src)}, Endpoint{Addr: addr(tt.dst)})
			if r.Verdict != tt.verdict || r.Node != tt.node || r.Peering != tt.peering {
				t.Errorf("verdict %s node %q peering %q, want %s %q %q\n%s", r.Verdict, r.Node, r.Peering, tt.verdict, tt.node, tt.peering, strings.Join(r.Reasons, "\n"))
			}
			for _, want := range tt.reasons {
				if !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("no reason says %q:\n%s", want, strings.Join(r.Reasons, "\n"))
				}
			}
			if fast := NewTracer(interconnectState(tt.o)).Verdict(Endpoint{Addr: addr(tt.src)}, Endpoint{Addr: addr(tt.dst)}); fast.Verdict != r.Verdict {
				t.Errorf("Verdict says %s, Trace says %s", fast.Verdict, r.Verdict)
			}
		})
	}
}

func TestNetworkOf(t *testing.T) {
	st := interconnectState(interconnectOpts{})
	tests := []struct {
		name string
		st   State
		id   string
		want Network
	}{
		{name: "cluster: peerings and the hub's gateway by transit", st: st, id: clusterID, want: Network{
			AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")},
			Peerings:     []netip.Prefix{pfx("10.250.0.0/16"), pfx("10.241.0.0/16")},
			Gateway:      []netip.Prefix{pfx("10.9.0.0/16"), pfx("192.168.50.0/24")}}},
		{name: "hub: its own gateway", st: st, id: hubID, want: Network{
			AddressSpace: []netip.Prefix{pfx("10.250.0.0/16")},
			Peerings:     []netip.Prefix{pfx("10.240.0.0/16")},
			Gateway:      []netip.Prefix{pfx("10.9.0.0/16"), pfx("192.168.50.0/24")}}},
		{name: "pool: no useRemoteGateways, no gateway routes", st: st, id: poolID, want: Network{
			AddressSpace: []netip.Prefix{pfx("10.241.0.0/16")}, Peerings: []netip.Prefix{pfx("10.240.0.0/16")}}},
		{name: "no transit allowed by the hub", st: interconnectState(interconnectOpts{noTransit: true}), id: clusterID, want: Network{
			AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}, Peerings: []netip.Prefix{pfx("10.250.0.0/16"), pfx("10.241.0.0/16")}}},
		{name: "an Initiated peering adds nothing", st: interconnectState(interconnectOpts{hubOneSided: true}), id: clusterID, want: Network{
			AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}, Peerings: []netip.Prefix{pfx("10.241.0.0/16")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NetworkOf(tt.st.VNets, tt.id)
			if !ok {
				t.Fatal("network not found")
			}
			if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
				t.Errorf("NetworkOf (-want +got):\n%s", d)
			}
		})
	}
	if _, ok := NetworkOf(st.VNets, sub+"virtualNetworks/nope"); ok {
		t.Error("NetworkOf found a network that is not there")
	}
	// A network with a gateway of its own does not use a remote one.
	own := interconnectState(interconnectOpts{})
	own.VNets[0].Gateways = []Gateway{{Name: "own", Learned: []netip.Prefix{pfx("172.20.0.0/16")}}}
	if n, _ := NetworkOf(own.VNets, clusterID); !slices.Equal(n.Gateway, []netip.Prefix{pfx("172.20.0.0/16")}) {
		t.Errorf("with its own gateway: %v, want only its own gateway's routes", n.Gateway)
	}
	if got := OnPremises(st.VNets); !slices.Equal(got, []netip.Prefix{pfx("10.9.0.0/16"), pfx("192.168.50.0/24")}) {
		t.Errorf("OnPremises = %v", got)
	}
}

// Azure prefers the system routes of the virtual network and its peerings
// over more specific BGP routes (virtual-networks-udr-overview, how Azure
// selects a route).
func TestBGPRouteInsideTheVirtualNetwork(t *testing.T) {
	n := Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}, Peerings: []netip.Prefix{pfx("10.250.0.0/16")},
		Gateway: []netip.Prefix{pfx("10.240.5.0/24"), pfx("10.250.0.0/16"), pfx("10.9.0.0/16")}}
	states := map[netip.Prefix]string{}
	for _, r := range Effective(n, nil) {
		if r.Source == SourceBGP {
			states[r.Prefix] = r.State
		}
	}
	want := map[netip.Prefix]string{pfx("10.240.5.0/24"): StateInvalid, pfx("10.250.0.0/16"): StateInvalid, pfx("10.9.0.0/16"): StateActive}
	if d := cmp.Diff(want, states, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("BGP route states (-want +got):\n%s", d)
	}
	sel := NewSelector(Effective(n, nil))
	for dst, hop := range map[string]NextHopType{"10.240.5.9": VnetLocal, "10.250.0.9": VNetPeering, "10.9.0.9": VirtualNetworkGateway} {
		if r, _ := sel.Lookup(addr(dst)); r.NextHopType != hop {
			t.Errorf("%s: %s, want %s", dst, r.NextHopType, hop)
		}
	}
}
