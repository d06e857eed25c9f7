package routing

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

const (
	kthwSubnetID = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
	kthwTableID  = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
	rtNewID      = "/subscriptions/s/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/rt-new"
)

func kthwNodes() []source.Node {
	return []source.Node{
		{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.240.0.20")}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
		{Name: "worker-1", InternalIPs: []netip.Addr{addr("10.240.0.21")}, PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}},
	}
}

func kthwState(tableID string, tables ...*route.Table) State {
	return State{
		Subnets: []Subnet{{ID: kthwSubnetID, Name: "kubernetes-subnet", Prefixes: []netip.Prefix{pfx("10.240.0.0/24")},
			VNetName: "kubernetes-vnet", VNet: Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}}, RouteTableID: tableID}},
		Tables:            tables,
		Nodes:             kthwNodes(),
		ConfiguredTableID: kthwTableID,
	}
}

func kthwTable(id string, extra ...route.Route) *route.Table {
	return &route.Table{ID: id, Name: armid.Name(id), Routes: append([]route.Route{
		udr("worker-0____102000024", "10.200.0.0/24", route.VirtualAppliance, "10.240.0.20"),
		udr("worker-1____102001024", "10.200.1.0/24", route.VirtualAppliance, "10.240.0.21"),
	}, extra...)}
}

func TestTrace(t *testing.T) {
	tests := []struct {
		name    string
		st      State
		src     Endpoint
		dst     Endpoint
		verdict Verdict
		node    string
		hop     NextHopType
		reason  string // one line of the reasons must say this
	}{
		{name: "healthy", st: kthwState(kthwTableID, kthwTable(kthwTableID)), src: Endpoint{Addr: addr("10.200.0.5")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: Delivered, node: "worker-1", hop: VirtualAppliance, reason: "delivered to node worker-1 (10.240.0.21), whose pod CIDR 10.200.1.0/24 contains 10.200.1.5"},
		{name: "detached subnet", st: kthwState("", kthwTable(kthwTableID)), src: Endpoint{Addr: addr("10.240.0.20")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: Dropped, hop: None, reason: "kubernetes-subnet has no route table: 10.200.1.0/24 matches the system route 10.0.0.0/8 → None"},
		{name: "swapped table", st: kthwState(rtNewID, kthwTable(kthwTableID), &route.Table{ID: rtNewID, Name: "rt-new"}), src: Endpoint{Addr: addr("10.240.0.20")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: Dropped, hop: None, reason: "kubernetes-subnet uses rt-new, which has no route for 10.200.1.0/24: it matches the system route 10.0.0.0/8 → None"},
		{name: "firewall default route", st: kthwState(kthwTableID, &route.Table{ID: kthwTableID, Routes: []route.Route{udr("to-fw", "0.0.0.0/0", route.VirtualAppliance, "10.240.1.4")}}),
			src: Endpoint{Addr: addr("10.240.0.20")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: ToAppliance, hop: VirtualAppliance, reason: "sent to the virtual appliance 10.240.1.4, which is not a node of the cluster"},
		{name: "route to the wrong node", st: kthwState(kthwTableID, &route.Table{ID: kthwTableID, Routes: []route.Route{udr("w1", "10.200.1.0/24", route.VirtualAppliance, "10.240.0.20")}}),
			src: Endpoint{Addr: addr("10.240.0.21")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: WrongNode, node: "worker-0", hop: VirtualAppliance, reason: "do not contain 10.200.1.5"},
		{name: "node to node", st: kthwState("", nil), src: Endpoint{Addr: addr("10.240.0.20")}, dst: Endpoint{Addr: addr("10.240.0.21")},
			verdict: Delivered, node: "worker-1", hop: VnetLocal, reason: "delivered to node worker-1 (10.240.0.21) in the virtual network"},
		{name: "source outside every subnet", st: kthwState(kthwTableID, kthwTable(kthwTableID)), src: Endpoint{Addr: addr("192.0.2.1")}, dst: Endpoint{Addr: addr("10.200.1.5")},
			verdict: NoSubnet, reason: "192.0.2.1 is in none of the subnets kubernetes-subnet (10.240.0.0/24)"},
		{name: "internet", st: kthwState(kthwTableID, kthwTable(kthwTableID)), src: Endpoint{Addr: addr("10.240.0.20")}, dst: Endpoint{Addr: addr("1.1.1.1")},
			verdict: ToInternet, hop: Internet, reason: "1.1.1.1 is outside every node's pod CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Trace(tt.st, tt.src, tt.dst)
			if r.Verdict != tt.verdict || r.Node != tt.node || r.NextHopType != tt.hop && tt.verdict != NoSubnet {
				t.Errorf("Trace = verdict %s node %q hop %s, want %s %q %s\n%s", r.Verdict, r.Node, r.NextHopType, tt.verdict, tt.node, tt.hop, strings.Join(r.Reasons, "\n"))
			}
			if !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, tt.reason) }) {
				t.Errorf("no reason says %q:\n%s", tt.reason, strings.Join(r.Reasons, "\n"))
			}
			if r.OK() != (tt.verdict == Delivered) {
				t.Errorf("OK() = %v for verdict %s", r.OK(), r.Verdict)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	nodes := kthwNodes()
	tests := []struct {
		arg     string
		dst     bool
		want    Endpoint
		wantErr string
	}{
		{arg: "10.200.1.5", want: Endpoint{Addr: addr("10.200.1.5")}},
		{arg: "worker-1", want: Endpoint{Addr: addr("10.240.0.21"), Node: "worker-1"}},
		{arg: "worker-1", dst: true, want: Endpoint{Addr: addr("10.200.1.1"), Node: "worker-1"}},
		{arg: "worker-1/10.200.1.9", dst: true, want: Endpoint{Addr: addr("10.200.1.9"), Node: "worker-1"}},
		{arg: "worker-9/10.200.1.9", wantErr: `no node named "worker-9"`},
		{arg: "nonsense", wantErr: `"nonsense" is neither an IP address, a node name nor node/pod-ip`},
		{arg: "fd00::1", want: Endpoint{Addr: addr("fd00::1")}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s dst=%v", tt.arg, tt.dst), func(t *testing.T) {
			got, err := Resolve(nodes, tt.arg, tt.dst, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v, want %q", tt.arg, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%q) = %+v, %v; want %+v", tt.arg, got, err, tt.want)
			}
		})
	}
}
