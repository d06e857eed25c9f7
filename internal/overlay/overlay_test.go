package overlay

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/finding"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
	kthwnet "github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

const (
	rg       = kthwnet.Provider
	vnetID   = kthwnet.VNetID
	nodesID  = kthwnet.SubnetID
	appgwID  = vnetID + "/subnets/appgw-subnet"
	gwID     = vnetID + "/subnets/GatewaySubnet"
	tableID  = kthwnet.TableID
	appgwRT  = rg + "routeTables/appgw-routes"
	hubVNet  = "/subscriptions/s/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/hub-vnet"
	cluster  = "kthw"
	nodeHop0 = "10.240.0.20"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func va(name, prefix, hop string) route.Route {
	p := pfx(prefix)
	return route.Route{Name: name, AddressPrefix: prefix, Prefix: p, NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(hop), ProvisioningState: "Succeeded"}
}

func typed(name, prefix string, t route.NextHopType) route.Route {
	return route.Route{Name: name, AddressPrefix: prefix, Prefix: pfx(prefix), NextHopType: t, ProvisioningState: "Succeeded"}
}

// kthw is the Kubernetes-the-Hard-Way network after routekeeper's run:
// two nodes, their routes in kubernetes-routes, an App Gateway subnet with
// a table of its own (no pod route yet).
func kthw() Input {
	space := routing.Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}}
	main := &route.Table{ID: tableID, Name: "kubernetes-routes", Tags: map[string]string{route.ClaimTag: cluster},
		Routes:  []route.Route{va("worker-0____102000024", "10.200.0.0/24", nodeHop0), va("worker-1____102001024", "10.200.1.0/24", "10.240.0.21")},
		Subnets: []string{nodesID}}
	gw := &route.Table{ID: appgwRT, Name: "appgw-routes", Routes: []route.Route{typed("default-internet", "0.0.0.0/0", route.Internet)}, Subnets: []string{appgwID}}
	return Input{
		Cluster: cluster, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.32.0.0/24")},
		Subnets: []string{nodesID}, TableID: tableID, Table: main,
		Routing: routing.State{
			Subnets: []routing.Subnet{
				{ID: nodesID, Name: "kubernetes-subnet", VNetID: vnetID, VNetName: "kubernetes-vnet", VNet: space, RouteTableID: tableID, Prefixes: []netip.Prefix{pfx("10.240.0.0/24")}},
				{ID: appgwID, Name: "appgw-subnet", VNetID: vnetID, VNetName: "kubernetes-vnet", VNet: space, RouteTableID: appgwRT, Prefixes: []netip.Prefix{pfx("10.240.2.0/24")}},
			},
			Tables: []*route.Table{main, gw},
			Nodes: []source.Node{
				{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr(nodeHop0)}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
				{Name: "worker-1", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}},
			},
			ConfiguredTableID: tableID,
			VNets:             []routing.VNet{{ID: vnetID, Name: "kubernetes-vnet", AddressSpace: space.AddressSpace}},
		},
	}
}

// want is a finding a case expects: its check, severity and words.
type want struct {
	check string
	sev   finding.Severity
	words []string
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		in     func(in *Input)
		errors int
		wants  []want
		none   []string // checks that must not appear
	}{
		{
			name: "kthw with the default target: clear",
			in:   func(*Input) {},
			wants: []want{
				{RuleClusterRoutes, finding.Info, []string{"2 route(s) of this cluster", "stand-down removes them"}},
				{RuleCapacity, finding.Info, []string{"the cluster's current one", "10.200.0.0/16", "/24 of up to 250 pods", "fit"}},
			},
			none: []string{RuleReachability, RuleSharedTable, RulePodCIDR, RuleDualStack, RuleMasquerade, RuleNames},
		},
		{
			name: "the App Gateway subnet on the node table: a migration blocker, and it reaches the pods",
			in: func(in *Input) {
				in.Table.Subnets = append(in.Table.Subnets, appgwID)
				in.Routing.Subnets[1].RouteTableID = tableID
			},
			errors: 2,
			wants: []want{
				{RuleSharedTable, finding.Error, []string{"migration blocker", "kubernetes-routes", "appgw-subnet", "stand-down removes the pod routes"}},
				{RuleReachability, finding.Error, []string{"appgw-subnet", "2 of 2", "route table kubernetes-routes"}},
			},
		},
		{
			name: "AKS: the shared table makes az aks update fail",
			in: func(in *Input) {
				in.Platform = true
				in.Table.Subnets = append(in.Table.Subnets, appgwID)
			},
			errors: 1,
			wants: []want{
				{RuleSharedTable, finding.Error, []string{"AKS's move to Overlay fails", "azure-aks-docs#334", "az network route-table create -g kubernetes -n appgw-subnet-routes"}},
				{RuleClusterRoutes, finding.Info, []string{"AKS's move deletes them"}},
			},
		},
		{
			name: "a mirror keeps the gateway's pod routes",
			in: func(in *Input) {
				gw := in.Routing.Tables[1]
				gw.Routes = append(gw.Routes, va("worker-0____102000024", "10.200.0.0/24", nodeHop0))
				in.Mirrors = []Mirror{{TableID: appgwRT, Subnets: []string{appgwID}, Table: gw}}
			},
			errors: 1,
			wants: []want{
				{RuleReachability, finding.Error, []string{"subnet appgw-subnet (10.240.2.0/24, in kubernetes-vnet)", "1 of 2", "route table appgw-routes", "Service"}},
				{RuleMirror, finding.Warning, []string{"appgw-routes", "appgw-subnet", "Overlay support"}},
			},
		},
		{
			name:   "a target inside the VNet",
			in:     func(in *Input) { in.Target.PodCIDRs = []netip.Prefix{pfx("10.240.128.0/17")} },
			errors: 1,
			wants:  []want{{RulePodCIDR, finding.Error, []string{"10.240.128.0/17 overlaps the node virtual network's address space 10.240.0.0/16", "--pod-cidr 10.244.0.0/16"}}},
		},
		{
			name: "a target over a peered VNet",
			in: func(in *Input) {
				in.Routing.VNets[0].Peerings = []routing.Peering{{Name: "to-hub", RemoteVNetID: hubVNet, State: routing.PeeringConnected, RemoteAddressSpace: []netip.Prefix{pfx("10.250.0.0/16")}}}
				in.Target.PodCIDRs = []netip.Prefix{pfx("10.250.0.0/16")}
			},
			errors: 1,
			wants:  []want{{RulePodCIDR, finding.Error, []string{"peered virtual network hub-vnet 10.250.0.0/16"}}},
		},
		{
			name: "a target over a range a gateway learned",
			in: func(in *Input) {
				in.Routing.VNets[0].Gateways = []routing.Gateway{{Name: "vpn", Learned: []netip.Prefix{pfx("192.168.50.0/24")}}}
				in.Target.PodCIDRs = []netip.Prefix{pfx("192.168.0.0/16")}
			},
			errors: 1,
			wants:  []want{{RulePodCIDR, finding.Error, []string{"learned by gateway vpn", "192.168.50.0/24"}}},
		},
		{
			name: "a target over a range a route table sends on premises",
			in: func(in *Input) {
				in.Routing.Tables[1].Routes = append(in.Routing.Tables[1].Routes, va("to-onprem", "192.168.0.0/16", "10.240.0.4"))
				in.Target.PodCIDRs = []netip.Prefix{pfx("192.168.0.0/16")}
			},
			errors: 1,
			wants:  []want{{RulePodCIDR, finding.Error, []string{"sent by route appgw-routes/to-onprem"}}},
		},
		{
			name:   "a target over the service range",
			in:     func(in *Input) { in.Target.PodCIDRs = []netip.Prefix{pfx("10.32.0.0/16")} },
			errors: 1,
			wants:  []want{{RulePodCIDR, finding.Error, []string{"the cluster's service range 10.32.0.0/24"}}},
		},
		{
			name:   "a target too small for the nodes",
			in:     func(in *Input) { in.Target.PodCIDRs = []netip.Prefix{pfx("192.168.0.0/24")} },
			errors: 1,
			wants:  []want{{RuleCapacity, finding.Error, []string{"pod-cidr"}}, {RuleCapacity, finding.Info, []string{"do NOT fit"}}},
		},
		{
			name: "foreign routes: a hand-made pod route makes no sense any more, a default route does",
			in: func(in *Input) {
				in.Table.Routes = append(in.Table.Routes, va("kubernetes-route-10-200-2-0-24", "10.200.2.0/24", "10.240.0.21"), va("default-to-firewall", "0.0.0.0/0", "10.240.0.4"))
			},
			wants: []want{
				{RuleForeignRoute, finding.Warning, []string{"kubernetes-route-10-200-2-0-24", "to node worker-1", "remove it after the move"}},
				{RuleForeignRoute, finding.Info, []string{"1 route(s) that are not the cluster's and still make sense", "default-to-firewall"}},
			},
		},
		{
			name: "a foreign route over the new target",
			in: func(in *Input) {
				in.Table.Routes = append(in.Table.Routes, va("to-lab", "192.168.10.0/24", "10.240.0.4"))
				in.Target.PodCIDRs = []netip.Prefix{pfx("192.168.0.0/16")}
			},
			errors: 1, // the remote range the route sends
			wants:  []want{{RuleForeignRoute, finding.Warning, []string{"to-lab", "covers part of the target pod CIDR"}}},
		},
		{
			name: "dual-stack, self-managed",
			in: func(in *Input) {
				in.ClusterCIDRs = append(in.ClusterCIDRs, pfx("fd00:10:200::/56"))
				dualStackVNet(in)
			},
			wants: []want{{RuleDualStack, finding.Warning, []string{"both families"}}},
		},
		{
			name:   "dual-stack on a VNet without IPv6: the target plan says so",
			in:     func(in *Input) { in.ClusterCIDRs = append(in.ClusterCIDRs, pfx("fd00:10:200::/56")) },
			errors: 2,
			wants:  []want{{RuleCapacity, finding.Error, []string{"dual-stack-vnet"}}, {RuleCapacity, finding.Error, []string{"dual-stack-subnet"}}},
		},
		{
			name: "dual-stack on AKS",
			in: func(in *Input) {
				in.Platform = true
				in.Routing.Nodes[0].PodCIDRs = append(in.Routing.Nodes[0].PodCIDRs, pfx("fd00:10:200::/64"))
			},
			wants: []want{{RuleDualStack, finding.Warning, []string{"IPv6 pod traffic breaks", "Azure/AKS#5120"}}},
		},
		{
			name: "AKS: a custom ip-masq-agent range outside the cluster breaks",
			in: func(in *Input) {
				in.Platform = true
				in.Masq = &Masq{ConfigMaps: []MasqConfig{
					{Name: "azure-ip-masq-agent-config", Custom: true, NonMasqueradeCIDRs: []netip.Prefix{pfx("10.240.0.0/16"), pfx("172.16.0.0/12")}},
					{Name: "azure-ip-masq-agent-config-reconciled", NonMasqueradeCIDRs: []netip.Prefix{pfx("10.0.0.0/8")}},
				}}
			},
			errors: 1,
			wants:  []want{{RuleMasquerade, finding.Error, []string{"172.16.0.0/12", "connectivity to these ranges breaks"}}},
		},
		{
			name: "AKS: a leftover azure-ip-masq-agent-config",
			in: func(in *Input) {
				in.Platform = true
				in.Masq = &Masq{ConfigMaps: []MasqConfig{{Name: "azure-ip-masq-agent-config", Custom: true, NonMasqueradeCIDRs: []netip.Prefix{pfx("10.240.0.0/16")}}}}
			},
			wants: []want{{RuleMasquerade, finding.Warning, []string{"left from an older azure-ip-masq-agent", "delete configmap"}}},
		},
		{
			name: "self-managed: the ip-masq-agent range is a warning",
			in: func(in *Input) {
				in.Masq = &Masq{ConfigMaps: []MasqConfig{{Name: "ip-masq-agent", Custom: true, NonMasqueradeCIDRs: []netip.Prefix{pfx("172.16.0.0/12")}}}}
			},
			wants: []want{{RuleMasquerade, finding.Warning, []string{"172.16.0.0/12", "after the stand-down"}}},
		},
		{
			name:  "ip-masq-agent not read",
			in:    func(in *Input) { in.MasqNote = "the nodes come from an inventory" },
			wants: []want{{RuleMasquerade, finding.Info, []string{"not (fully) checked", "inventory"}}},
		},
		{
			name: "AKS: a node subnet name over 63 characters",
			in: func(in *Input) {
				in.Platform = true
				longName(in)
			},
			errors: 1,
			wants:  []want{{RuleNames, finding.Error, []string{"subnet name", "64 characters"}}},
		},
		{
			name:  "self-managed: long names do not matter",
			in:    longName,
			none:  []string{RuleNames},
			wants: []want{},
		},
		{
			name:  "part of the network could not be read",
			in:    func(in *Input) { in.Routing.Unread = []string{"the peerings of kubernetes-vnet"} },
			wants: []want{{RuleUnread, finding.Info, []string{"not checked: the peerings of kubernetes-vnet could not be read"}}},
		},
		{
			name: "on premises reaches the pods through the gateway",
			in: func(in *Input) {
				gwt := &route.Table{ID: rg + "routeTables/gateway-routes", Name: "gateway-routes", Routes: []route.Route{va("pods-0", "10.200.0.0/24", nodeHop0)}}
				in.Routing.Tables = append(in.Routing.Tables, gwt)
				in.Routing.Subnets = append(in.Routing.Subnets, routing.Subnet{ID: gwID, Name: "GatewaySubnet", VNetID: vnetID, VNetName: "kubernetes-vnet",
					VNet: in.Routing.Subnets[0].VNet, RouteTableID: gwt.ID, Prefixes: []netip.Prefix{pfx("10.240.255.0/27")}})
				in.Routing.VNets[0].Gateways = []routing.Gateway{{Name: "vpn", SubnetID: gwID, Learned: []netip.Prefix{pfx("10.9.0.0/16")}}}
			},
			errors: 1,
			wants:  []want{{RuleReachability, finding.Error, []string{"on premises 10.9.0.0/16 reaches 1 of 2", "gateway-routes"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := kthw()
			tt.in(&in)
			rep, err := Check(in)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Errors() != tt.errors {
				t.Errorf("%d errors, want %d:\n%s", rep.Errors(), tt.errors, dump(rep.Findings))
			}
			for _, w := range tt.wants {
				if !slices.ContainsFunc(rep.Findings, func(f finding.Finding) bool {
					return f.Rule == w.check && f.Severity == w.sev && containsAll(f.Message+" "+f.Fix, w.words)
				}) {
					t.Errorf("no %s %s finding with %q in:\n%s", w.sev, w.check, w.words, dump(rep.Findings))
				}
			}
			for _, c := range tt.none {
				if slices.ContainsFunc(rep.Findings, func(f finding.Finding) bool { return f.Rule == c }) {
					t.Errorf("unexpected %s finding:\n%s", c, dump(rep.Findings))
				}
			}
			for i := 1; i < len(rep.Findings); i++ {
				if rep.Findings[i].Severity.Rank() < rep.Findings[i-1].Severity.Rank() {
					t.Errorf("findings not sorted errors first:\n%s", dump(rep.Findings))
				}
			}
		})
	}
}

// The report says who reaches pods and what the move does to each route.
func TestReportFacts(t *testing.T) {
	in := kthw()
	in.Table.Subnets = append(in.Table.Subnets, appgwID)
	in.Routing.Subnets[1].RouteTableID = tableID
	in.Table.Routes = append(in.Table.Routes, va("default-to-firewall", "0.0.0.0/0", "10.240.0.4"))
	rep, err := Check(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reachers) != 1 || rep.Reachers[0].Source != "appgw-subnet" || rep.Reachers[0].RouteTable != tableID || len(rep.Reachers[0].Reached) != 2 || rep.Reachers[0].Total != 2 {
		t.Errorf("reachers %+v", rep.Reachers)
	}
	var fates []string
	for _, f := range rep.Routes {
		fates = append(fates, f.Name+":"+map[bool]string{true: "ours", false: f.Sense}[f.Ours])
	}
	if got := strings.Join(fates, " "); got != "worker-0____102000024:ours worker-1____102001024:ours default-to-firewall:yes" {
		t.Errorf("route fates %s", got)
	}
	if !rep.KeptPodCIDR || rep.Capacity == nil || rep.Nodes != 2 {
		t.Errorf("target %v kept %v capacity %v nodes %d", rep.Target, rep.KeptPodCIDR, rep.Capacity, rep.Nodes)
	}
}

func TestLeftovers(t *testing.T) {
	tests := []struct {
		name  string
		in    func(in *Input)
		wants []string // one message substring per finding, in order
	}{
		{
			name:  "an empty table still associated",
			in:    func(in *Input) { in.Table.Routes = nil },
			wants: []string{"route table kubernetes-routes holds no route at all and is still associated with kubernetes-subnet"},
		},
		{
			name:  "foreign routes kept, still associated",
			in:    func(in *Input) { in.Table.Routes = []route.Route{va("default-to-firewall", "0.0.0.0/0", "10.240.0.4")} },
			wants: []string{"holds no route of this cluster any more (it keeps routes that are not the cluster's: default-to-firewall) and is still associated"},
		},
		{
			name:  "nothing associated any more",
			in:    func(in *Input) { in.Table.Routes, in.Table.Subnets = nil, nil },
			wants: []string{"holds no route of this cluster and no subnet uses it"},
		},
		{
			name:  "the table is gone",
			in:    func(in *Input) { in.Table = nil },
			wants: []string{"route table kubernetes-routes no longer exists"},
		},
		{
			name:  "routes still held: left to the deletion guard's finding",
			in:    func(*Input) {},
			wants: nil,
		},
		{
			name: "a mirror still configured, and one still holding routes",
			in: func(in *Input) {
				in.Table.Routes = nil
				in.Mirrors = []Mirror{
					{TableID: appgwRT, Subnets: []string{appgwID}, Table: &route.Table{ID: appgwRT, Routes: []route.Route{typed("default-internet", "0.0.0.0/0", route.Internet)}}},
					{TableID: rg + "routeTables/hub-routes", Table: &route.Table{ID: rg + "routeTables/hub-routes", Tags: map[string]string{route.ClaimTag: cluster},
						Routes: []route.Route{va("worker-0____102000024", "10.200.0.0/24", nodeHop0)}}},
				}
			},
			wants: []string{"holds no route at all", "mirror route table appgw-routes holds no route of this cluster any more and is still configured"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := kthw()
			tt.in(&in)
			got := Leftovers(in)
			if len(got) != len(tt.wants) {
				t.Fatalf("%d findings, want %d:\n%s", len(got), len(tt.wants), dump(got))
			}
			for i, w := range tt.wants {
				if !strings.Contains(got[i].Message, w) || got[i].Rule != RuleStandDown || got[i].Severity == finding.Error {
					t.Errorf("finding %d: %+v, want a %s remark with %q", i, got[i], RuleStandDown, w)
				}
			}
		})
	}
}

// dualStackVNet gives the network and the node subnet IPv6 prefixes.
func dualStackVNet(in *Input) {
	v6 := pfx("fd00:10:240::/48")
	in.Routing.VNets[0].AddressSpace = append(in.Routing.VNets[0].AddressSpace, v6)
	for i := range in.Routing.Subnets {
		in.Routing.Subnets[i].VNet.AddressSpace = append(slices.Clone(in.Routing.Subnets[i].VNet.AddressSpace), v6)
	}
	in.Routing.Subnets[0].Prefixes = append(in.Routing.Subnets[0].Prefixes, pfx("fd00:10:240::/64"))
}

// longName renames the node subnet to 64 characters.
func longName(in *Input) {
	long := vnetID + "/subnets/" + strings.Repeat("n", 64)
	in.Subnets, in.Table.Subnets = []string{long}, []string{long}
	in.Routing.Subnets[0].ID, in.Routing.Subnets[0].Name = long, strings.Repeat("n", 64)
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func dump(fs []finding.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Severity) + " " + f.Rule + " " + f.Resource + ": " + f.Message + " [fix: " + f.Fix + "]\n")
	}
	return b.String()
}
