package plan

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
)

// nodeNets are the subnets of a VNet 10.0.0.0/16 with two node subnets and
// a dual-stack one.
var nodeNets = []netip.Prefix{pfx("10.0.0.0/24"), pfx("10.0.1.0/24"), pfx("fd00:0:0:1::/64")}

func TestNextHopOutsideVNet(t *testing.T) {
	runCases(t, []planCase{
		{
			name: "a node outside every subnet is not routed; the others are",
			in: Input{
				Nodes: []source.Node{
					node("worker-0", "10.0.0.4", "10.244.0.0/24"),
					node("worker-1", "10.0.1.5", "10.244.1.0/24"),
					node("stray", "192.168.7.4", "10.244.2.0/24"),
				},
				Current:      table(cluster),
				NodeNetworks: nodeNets,
			},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"create worker-1____102441024 10.244.1.0/24 10.0.1.5",
			},
			conflicts: []string{"stray 10.244.2.0/24 NextHopOutsideVNet"},
			nodes:     map[string]string{"worker-0": "Pending", "worker-1": "Pending", "stray": "NotRouted/NextHopOutsideVNet"},
		},
		{
			name: "an IP in the VNet's address space but in no subnet is outside",
			in: Input{
				Nodes:        []source.Node{node("worker-9", "10.0.9.4", "10.244.9.0/24")},
				Current:      table(cluster),
				NodeNetworks: nodeNets,
			},
			conflicts: []string{"worker-9 10.244.9.0/24 NextHopOutsideVNet"},
			nodes:     map[string]string{"worker-9": "NotRouted/NextHopOutsideVNet"},
		},
		{
			name: "no node networks known: next hops are not checked",
			in: Input{
				Nodes:   []source.Node{node("stray", "192.168.7.4", "10.244.2.0/24")},
				Current: table(cluster),
			},
			changes: []string{"create stray____102442024 10.244.2.0/24 192.168.7.4"},
			nodes:   map[string]string{"stray": "Pending"},
		},
		{
			name: "an existing route to the outside IP is kept, not deleted, and the node is not routed",
			in: Input{
				Nodes:        []source.Node{node("stray", "192.168.7.4", "10.244.2.0/24")},
				Current:      table(cluster, ours("stray", "10.244.2.0/24", "192.168.7.4")),
				NodeNetworks: nodeNets,
			},
			conflicts: []string{"stray 10.244.2.0/24 NextHopOutsideVNet"},
			nodes:     map[string]string{"stray": "NotRouted/NextHopOutsideVNet"},
		},
		{
			name: "a node whose IP moved outside keeps its old route: no update to an address no NIC holds",
			in: Input{
				Nodes:        []source.Node{node("worker-0", "172.16.0.4", "10.244.0.0/24")},
				Current:      table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
				NodeNetworks: nodeNets,
			},
			conflicts: []string{"worker-0 10.244.0.0/24 NextHopOutsideVNet"},
			nodes:     map[string]string{"worker-0": "NotRouted/NextHopOutsideVNet"},
		},
		{
			name: "dual stack: the IPv4 route is written, the IPv6 next hop is outside",
			in: Input{
				Nodes:        []source.Node{node("ds", "10.0.0.4", "fd00:0:0:2::4", "10.244.0.0/24", "fd00:10:244::/64")},
				Current:      table(cluster),
				NodeNetworks: nodeNets,
			},
			changes:   []string{"create ds____102440024 10.244.0.0/24 10.0.0.4"},
			conflicts: []string{"ds fd00:10:244::/64 NextHopOutsideVNet"},
			nodes:     map[string]string{"ds": "NotRouted/NextHopOutsideVNet"},
		},
		{
			name: "dual stack inside both families",
			in: Input{
				Nodes:        []source.Node{node("ds", "10.0.1.4", "fd00:0:0:1::4", "10.244.0.0/24", "fd00:10:244::/64")},
				Current:      table(cluster),
				NodeNetworks: nodeNets,
			},
			changes: []string{
				"create ds____102440024 10.244.0.0/24 10.0.1.4",
				"create ds____fd001024464 fd00:10:244::/64 fd00:0:0:1::4",
			},
			nodes: map[string]string{"ds": "Pending"},
		},
		{
			name: "NoNodeIP wins over NextHopOutsideVNet",
			in: Input{
				Nodes:        []source.Node{node("v6only", "fd00:0:0:9::4", "10.244.0.0/24")},
				Current:      table(cluster),
				NodeNetworks: nodeNets,
			},
			conflicts: []string{"v6only 10.244.0.0/24 NoNodeIP"},
		},
		{
			name: "an invalid node network refuses the plan",
			in: Input{
				Nodes:        []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current:      table(cluster),
				NodeNetworks: []netip.Prefix{{}},
			},
			nodes:   map[string]string{"worker-0": "NotRouted/InvalidConfiguration"},
			refused: reason.InvalidConfiguration,
		},
	})
}

func TestNextHopOutsideVNetMessage(t *testing.T) {
	nets := []netip.Prefix{}
	for i := range 10 {
		nets = append(nets, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24))
	}
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: table(cluster), NodeNetworks: nets,
		Nodes: []source.Node{node("stray", "192.168.7.4", "10.244.2.0/24")}})
	msg := p.Nodes["stray"].Message
	for _, want := range []string{"stray", "192.168.7.4", "10.244.2.0/24", "10.0.0.0/24", "10.0.7.0/24", "and 2 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "10.0.9.0/24") {
		t.Errorf("message lists more than %d networks: %s", maxListedNetworks, msg)
	}
}

// A node in a network peered with the guarded one: the observer adds the
// peered network's subnets to NodeNetworks (Azure accepts a virtual
// appliance in a peered network), and the message of a node outside both
// says which networks were looked at.
func TestNextHopInPeeredNetwork(t *testing.T) {
	withHub := append([]netip.Prefix{pfx("10.250.1.0/24")}, nodeNets...)
	const note = " or of the networks peered with them (hub-vnet)"
	runCases(t, []planCase{
		{
			name: "a node in the peered hub's subnet is routed",
			in: Input{
				Nodes:            []source.Node{node("hub-node", "10.250.1.10", "10.244.3.0/24")},
				Current:          table(cluster),
				NodeNetworks:     withHub,
				NodeNetworksNote: note,
			},
			changes: []string{"create hub-node____102443024 10.244.3.0/24 10.250.1.10"},
			nodes:   map[string]string{"hub-node": "Pending"},
		},
		{
			name: "a node in the hub's address space but in no subnet of it is outside",
			in: Input{
				Nodes:            []source.Node{node("hub-stray", "10.250.9.10", "10.244.3.0/24")},
				Current:          table(cluster),
				NodeNetworks:     withHub,
				NodeNetworksNote: note,
			},
			conflicts: []string{"hub-stray 10.244.3.0/24 NextHopOutsideVNet"},
			nodes:     map[string]string{"hub-stray": "NotRouted/NextHopOutsideVNet"},
		},
	})
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: table(cluster), NodeNetworks: withHub, NodeNetworksNote: note,
		Nodes: []source.Node{node("hub-stray", "10.250.9.10", "10.244.3.0/24")}})
	if msg := p.Nodes["hub-stray"].Message; !strings.Contains(msg, "routekeeper guards or of the networks peered with them (hub-vnet) (10.250.1.0/24") {
		t.Errorf("message does not name the peered networks looked at: %s", msg)
	}
}
