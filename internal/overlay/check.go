package overlay

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// maxListed is how many names a finding lists before "and N more".
const maxListed = 5

// Check runs the pre-flight of the move to an overlay. It fails only when
// the target cannot be planned at all (no pod CIDR).
func Check(in Input) (*Report, error) {
	if in.Deliver == nil {
		// Standalone (a test): the same route selection on in.Routing.
		in.Deliver = routing.NewTracer(in.Routing).Verdict
	}
	r := &Report{Table: in.TableID, Nodes: len(in.Routing.Nodes), Reachers: []Reacher{}, Routes: []RouteFate{}, Findings: []finding.Finding{}}
	r.Target = in.Target.PodCIDRs
	if len(r.Target) == 0 {
		r.Target, r.KeptPodCIDR = in.ClusterCIDRs, true
	}
	add := func(s finding.Severity, check, resource, fix, format string, args ...any) {
		r.Findings = append(r.Findings, finding.Finding{Severity: s, Rule: check, Resource: resource, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	sharedTable(in, add)
	reachability(in, r, add)
	mirrors(in, add)
	routeFates(in, r, add)
	if err := podCIDR(in, r, add); err != nil {
		return nil, err
	}
	dualStack(in, r.Target, add)
	masquerade(in, r.Target, add)
	names(in, add)
	for _, u := range in.Routing.Unread {
		add(finding.Info, RuleUnread, "", "", "not checked: %s could not be read, so who reaches pods from there and the ranges it holds are unknown to this pre-flight", u)
	}
	finding.Sort(r.Findings)
	return r, nil
}

type addFunc func(s finding.Severity, check, resource, fix, format string, args ...any)

// sharedTable: the cluster's route table is associated with a subnet that
// is not a node subnet (azure-aks-docs#334: an Application Gateway subnet
// on the kubenet route table makes `az aks update` fail).
func sharedTable(in Input, add addFunc) {
	if in.Table == nil {
		return
	}
	for _, sn := range in.Table.Subnets {
		if armid.Contains(in.Subnets, sn) {
			continue
		}
		why := "the stand-down removes the pod routes it uses today, and an overlay needs no route table there"
		if in.Platform {
			why = "AKS's move to Overlay fails while the cluster's route table serves another subnet (an Application Gateway subnet: azure-aks-docs#334), and the move deletes the pod routes that subnet uses today"
		}
		name := armid.Name(in.TableID)
		add(finding.Error, RuleSharedTable, sn,
			fmt.Sprintf("give %s a route table of its own, without pod routes, before the move: az network route-table create -g %s -n %s-routes; az network vnet subnet update --ids %s --route-table %s-routes",
				armid.Name(sn), resourceGroup(sn), armid.Name(sn), sn, armid.Name(sn)),
			"migration blocker: route table %s is associated with subnet %s as well as with the node subnets: %s", name, armid.Name(sn), why)
	}
}

// mirrors: a mirror keeps pod routes for other subnets; after the move
// they lead nowhere (Overlay pods are not reachable from outside the
// cluster; an Application Gateway reaches them only with Overlay support,
// which needs no route table: AGIC issue 1524).
func mirrors(in Input, add addFunc) {
	for i, m := range in.Mirrors {
		var subnets []string
		for _, s := range m.Subnets {
			subnets = append(subnets, armid.Name(s))
		}
		add(finding.Warning, RuleMirror, m.TableID, fmt.Sprintf("after the move: routes: standDown with --confirm-stand-down, then remove mirrors[%d]", i),
			"mirror route table %s keeps the pod routes for subnet(s) %s: in Overlay pod IPs are not reachable from outside the cluster, so those routes lead nowhere after the move. An Application Gateway there reaches pods only with Overlay support (AGIC detects an Overlay cluster and needs no route table; or Application Gateway for Containers); anything else must reach the pods through a Service",
			armid.Name(m.TableID), strings.Join(subnets, ", "))
	}
}

// routeFates sorts the table's routes into the cluster's (the move deletes
// them) and the others (kept), and says whether each kept one still makes
// sense in an overlay.
func routeFates(in Input, r *Report, add addFunc) {
	t := in.Table
	if t == nil {
		return
	}
	nodeIPs := map[netip.Addr]string{}
	for _, n := range in.Routing.Nodes {
		for _, ip := range n.InternalIPs {
			nodeIPs[ip] = n.Name
		}
	}
	own := route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs}
	var ours, kept []string
	for i, cl := range own.ClassifyTable(t) {
		rt := t.Routes[i]
		f := RouteFate{Name: rt.Name, AddressPrefix: rt.AddressPrefix, NextHop: hop(rt)}
		p, isCIDR := rt.CIDR()
		switch {
		case cl.Owner == route.OwnerThisCluster:
			f.Ours = true
			f.Why = "a pod route of this cluster: routekeeper's stand-down removes it (routes: standDown, --confirm-stand-down)"
			if in.Platform {
				f.Why = "a pod route of this cluster: AKS's move deletes it"
			}
			ours = append(ours, rt.Name)
		case isCIDR && p.Bits() == 0:
			f.Sense, f.Why = "yes", "default route: still applies, pods leave the cluster SNATed to their node's IP in an overlay as with kubenet"
			kept = append(kept, rt.Name)
		case isCIDR && rt.NextHopType == route.VirtualAppliance && nodeIPs[rt.NextHopIP] != "" && (coveredBy(p, in.ClusterCIDRs) || coveredBy(p, r.Target)):
			f.Sense, f.Why = "no", fmt.Sprintf("sends pod addresses to node %s but is not the cluster's: the move keeps it, yet pods are not reached through route tables in an overlay", nodeIPs[rt.NextHopIP])
			add(finding.Warning, RuleForeignRoute, rt.Name, fmt.Sprintf("after the move: az network route-table route delete --ids %s/routes/%s", in.TableID, rt.Name),
				"route %s (%s → %s) %s: remove it after the move", rt.Name, rt.AddressPrefix, hop(rt), f.Why)
		case isCIDR && coveredBy(p, r.Target):
			f.Sense, f.Why = "no", "covers part of the target pod CIDR: an overlay's pod traffic needs no route and must not be steered by one"
			add(finding.Warning, RuleForeignRoute, rt.Name, "remove it, or choose a --pod-cidr it does not cover",
				"route %s (%s → %s) is kept by the move but %s", rt.Name, rt.AddressPrefix, hop(rt), f.Why)
		case isCIDR && coveredBy(p, in.ClusterCIDRs):
			f.Sense, f.Why = "no", "sends the old pod range somewhere: no pod uses that range after the move to the new pod CIDR"
			add(finding.Warning, RuleForeignRoute, rt.Name, fmt.Sprintf("after the move: az network route-table route delete --ids %s/routes/%s", in.TableID, rt.Name),
				"route %s (%s → %s) is kept by the move but %s", rt.Name, rt.AddressPrefix, hop(rt), f.Why)
		default:
			f.Sense, f.Why = "yes", "not about pods: the move does not change it"
			kept = append(kept, rt.Name)
		}
		r.Routes = append(r.Routes, f)
	}
	if len(ours) > 0 {
		what := "routekeeper's stand-down removes them in one write (routes: standDown, then --confirm-stand-down once every node runs the overlay)"
		if in.Platform {
			what = "AKS's move deletes them (\"the routes which were being used to direct pod traffic to the correct node will automatically be deleted\"); set routes: standDown afterwards"
		}
		add(finding.Info, RuleClusterRoutes, in.TableID, "", "route table %s holds %d route(s) of this cluster (%s): %s", armid.Name(in.TableID), len(ours), list(ours), what)
	}
	if len(kept) > 0 {
		add(finding.Info, RuleForeignRoute, in.TableID, "", "route table %s keeps %d route(s) that are not the cluster's and still make sense after the move (%s)", armid.Name(in.TableID), len(kept), list(kept))
	}
}

// podCIDR checks the target pod CIDR with internal/ipplan: its overlaps
// with the cluster's networks and their interconnect (peered networks,
// on-premises prefixes), and the plan's capacity.
func podCIDR(in Input, r *Report, add addFunc) error {
	t := ipplan.OverlayTarget{PodCIDRs: r.Target, ServiceCIDRs: in.ServiceCIDRs, Nodes: len(in.Routing.Nodes), MaxPods: in.Target.MaxPods}
	seenVNet := map[string]bool{}
	for _, id := range in.Subnets {
		s := findSubnet(in.Routing.Subnets, id)
		if s == nil {
			continue
		}
		t.NodeSubnets = append(t.NodeSubnets, ipplan.NamedRange{Name: s.Name, Prefixes: s.Prefixes})
		if !seenVNet[armid.Key(s.VNetID)] {
			seenVNet[armid.Key(s.VNetID)] = true
			t.VNet = append(t.VNet, s.VNet.AddressSpace...)
		}
	}
	for _, v := range in.Routing.VNets {
		if !seenVNet[armid.Key(v.ID)] {
			continue
		}
		for _, p := range v.Peerings {
			t.Peered = append(t.Peered, ipplan.NamedRange{Name: armid.Name(p.RemoteVNetID), Prefixes: p.RemoteAddressSpace})
		}
	}
	for _, v := range in.Routing.VNets {
		for _, g := range v.Gateways {
			if len(g.Learned) > 0 {
				t.OnPrem = append(t.OnPrem, ipplan.NamedRange{Name: "learned by gateway " + g.Name, Prefixes: g.Learned})
			}
		}
	}
	t.OnPrem = append(t.OnPrem, remoteRoutes(in, t)...)
	chk, err := ipplan.CheckOverlayTarget(t)
	if err != nil {
		return fmt.Errorf("checking the target pod CIDR: %w", err)
	}
	r.Capacity = &chk.Capacity
	for _, c := range chk.Conflicts {
		what := map[ipplan.Kind]string{
			ipplan.KindVNet: "the node virtual network's address space", ipplan.KindSubnet: "node subnet " + c.Name,
			ipplan.KindPeered: "peered virtual network " + c.Name, ipplan.KindService: "the cluster's service range",
			ipplan.KindOnPrem: "the remote range " + c.Name,
		}[c.Kind]
		if what == "" {
			what = string(c.Kind) + " " + c.Name
		}
		fix := "--pod-cidr: a private range clear of the network"
		if s, ok := suggest(r.Target, chk.Report.Ranges, c.PodCIDR); ok {
			fix = "--pod-cidr " + s.String() + " (clear of every range read)"
		}
		add(finding.Error, RulePodCIDR, c.PodCIDR.String(), fix,
			"target pod CIDR %s overlaps %s %s (shared %s): an overlay's pod CIDR must not overlap the cluster's virtual network, directly connected networks (peering, ExpressRoute, VPN) or the service range, or traffic for those addresses goes to the wrong place",
			c.PodCIDR, what, c.Prefix, c.Shared)
	}
	for _, f := range chk.Findings {
		if f.Rule == ipplan.RuleOverlap || f.Rule == ipplan.RuleIPFamiliesMismatch && !in.Platform {
			continue // the conflicts above; AKS's rule of one service range per family
		}
		sev := finding.Warning
		if f.Severity == finding.Error {
			sev = finding.Error
		}
		add(sev, RuleCapacity, strings.Join(prefixStrings(r.Target), ","), "", "%s (%s)", f.Message, f.Rule)
	}
	add(finding.Info, RuleCapacity, strings.Join(prefixStrings(r.Target), ","), "", "%s", capacityLine(r, chk.Capacity))
	return nil
}

// remoteRoutes are the ranges route tables send somewhere outside the
// networks read: on premises through a gateway or an appliance. The
// default route, routes into a network read and the cluster's own are
// left out.
func remoteRoutes(in Input, t ipplan.OverlayTarget) []ipplan.NamedRange {
	var known []netip.Prefix
	known = append(known, t.VNet...)
	for _, p := range t.Peered {
		known = append(known, p.Prefixes...)
	}
	for _, v := range in.Routing.VNets {
		known = append(known, v.AddressSpace...)
	}
	own := route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs}
	var out []ipplan.NamedRange
	seen := map[netip.Prefix]bool{}
	for _, tb := range in.Routing.Tables {
		for i, cl := range own.ClassifyTable(tb) {
			rt := tb.Routes[i]
			p, ok := rt.CIDR()
			if !ok || p.Bits() == 0 || cl.Owner == route.OwnerThisCluster || seen[p] || coveredBy(p, known) || overlapsAny(p, in.ClusterCIDRs) {
				continue
			}
			if rt.NextHopType != route.VirtualAppliance && rt.NextHopType != route.VirtualNetworkGateway {
				continue
			}
			seen[p] = true
			out = append(out, ipplan.NamedRange{Name: fmt.Sprintf("sent by route %s/%s", tb.Name, rt.Name), Prefixes: []netip.Prefix{p}})
		}
	}
	return out
}

func capacityLine(r *Report, c ipplan.PluginCapacity) string {
	var b strings.Builder
	which := "the target pod CIDR"
	if r.KeptPodCIDR {
		which = "the target pod CIDR (the cluster's current one: AKS keeps it when az aks update gets no --pod-cidr)"
	}
	fmt.Fprintf(&b, "%s %s gives each node a /24 of up to %d pods", which, strings.Join(prefixStrings(r.Target), ", "), c.MaxPodsPerNode)
	if c.MaxNodes != nil {
		fmt.Fprintf(&b, "; the plan holds %d nodes (bounded by the %s)", *c.MaxNodes, strings.ReplaceAll(c.LimitedBy, "-", " "))
	}
	if c.MaxPods != nil {
		fmt.Fprintf(&b, ", %d pods", *c.MaxPods)
	}
	if c.NodesWithSurge > 0 {
		fits := "fit"
		if c.Fits != nil && !*c.Fits {
			fits = "do NOT fit"
		}
		fmt.Fprintf(&b, "; the cluster's %d nodes and an upgrade's surge (%d) %s", r.Nodes, c.NodesWithSurge, fits)
	}
	return b.String()
}

// suggest is a private range of the target's size (at least /16) that
// overlaps none of the ranges read, for the fix of an overlap.
func suggest(target []netip.Prefix, ranges []ipplan.Range, bad netip.Prefix) (netip.Prefix, bool) {
	if !bad.Addr().Is4() {
		return netip.Prefix{}, false
	}
	bits := min(bad.Bits(), 16)
	for _, base := range []string{"10.244.0.0", "192.168.0.0", "172.16.0.0", "172.20.0.0", "100.64.0.0", "10.100.0.0", "10.128.0.0"} {
		c := netip.PrefixFrom(netip.MustParseAddr(base), bits).Masked()
		clear := !overlapsAny(c, target)
		for _, rg := range ranges {
			if rg.Kind != ipplan.KindPod && rg.Kind != ipplan.KindForbidden && rg.Prefix.Overlaps(c) {
				clear = false
			}
		}
		if clear {
			return c, true
		}
	}
	return netip.Prefix{}, false
}

// dualStack: an IPv6 pod CIDR moves with the cluster; AKS's move breaks
// IPv6 pod traffic until every node is reimaged (Azure/AKS#5120).
func dualStack(in Input, target []netip.Prefix, add addFunc) {
	v6 := slices.ContainsFunc(append(slices.Clone(in.ClusterCIDRs), target...), func(p netip.Prefix) bool { return p.Addr().Is6() })
	for _, n := range in.Routing.Nodes {
		v6 = v6 || slices.ContainsFunc(n.PodCIDRs, func(p netip.Prefix) bool { return p.Addr().Is6() })
	}
	if !v6 {
		return
	}
	if in.Platform {
		add(finding.Warning, RuleDualStack, "", "plan the move in a maintenance window",
			"the cluster is dual-stack: while AKS moves it to Overlay, IPv6 pod traffic breaks (the overlay's IPv6 node ranges do not match kubenet's routes in the table) until every node is reimaged (Azure/AKS#5120)")
		return
	}
	add(finding.Warning, RuleDualStack, "", "", "the cluster is dual-stack: configure the overlay CNI for both families before the stand-down removes the IPv6 pod routes with the IPv4 ones")
}

// masquerade: a custom ip-masq-agent configuration lets pods reach ranges
// with their own address; overlay pod IPs are not reachable outside the
// cluster nodes, so those ranges are lost (Upgrade Azure CNI, warning).
func masquerade(in Input, target []netip.Prefix, add addFunc) {
	if in.MasqNote != "" {
		add(finding.Info, RuleMasquerade, "", "", "ip-masq-agent not (fully) checked: %s", in.MasqNote)
	}
	if in.Masq == nil {
		return
	}
	var inside []netip.Prefix
	inside = append(inside, in.ClusterCIDRs...)
	inside = append(inside, target...)
	for _, id := range in.Subnets {
		if s := findSubnet(in.Routing.Subnets, id); s != nil {
			inside = append(inside, s.VNet.AddressSpace...)
		}
	}
	for _, c := range in.Masq.ConfigMaps {
		if !c.Custom {
			continue
		}
		var beyond []string
		for _, p := range c.NonMasqueradeCIDRs {
			if !coveredBy(p, inside) {
				beyond = append(beyond, p.String())
			}
		}
		switch {
		case len(beyond) > 0 && in.Platform:
			add(finding.Error, RuleMasquerade, "kube-system/"+c.Name, "remove those ranges from nonMasqueradeCIDRs before az aks update (pods then reach them SNATed to their node's IP)",
				"the custom ip-masq-agent config %s lets pods reach %s with their own IPs: after the move connectivity to these ranges breaks, since Overlay pod IPs are not reachable by anything outside the cluster nodes", c.Name, strings.Join(beyond, ", "))
		case len(beyond) > 0:
			add(finding.Warning, RuleMasquerade, "kube-system/"+c.Name, "let the overlay CNI masquerade traffic to them, or remove them from nonMasqueradeCIDRs",
				"the ip-masq-agent config %s lets pods reach %s with their own IPs, which the pod routes carry back today: after the stand-down nothing routes replies to pod IPs", c.Name, strings.Join(beyond, ", "))
		case in.Platform && c.Name == "azure-ip-masq-agent-config":
			add(finding.Warning, RuleMasquerade, "kube-system/"+c.Name, "kubectl -n kube-system delete configmap azure-ip-masq-agent-config (unless it is meant to be there)",
				"ConfigMap %s is left from an older azure-ip-masq-agent: delete it before az aks update unless it is intentionally in place", c.Name)
		}
	}
}

// names: AKS labels Overlay nodes with the names of their subnet, VNet and
// resource group, so each must be at most 63 characters (Azure CNI
// Overlay overview, limitations).
func names(in Input, add addFunc) {
	if !in.Platform {
		return
	}
	for _, id := range in.Subnets {
		for what, name := range map[string]string{"subnet": armid.Name(id), "virtual network": armid.Name(strings.TrimSuffix(id, "/subnets/"+armid.Name(id))), "resource group": resourceGroup(id)} {
			if len(name) > 63 {
				add(finding.Error, RuleNames, id, "", "the %s name %s is %d characters long: Overlay labels the nodes with it, and a label value holds at most 63", what, name, len(name))
			}
		}
	}
}

func findSubnet(subnets []routing.Subnet, id string) *routing.Subnet {
	i := slices.IndexFunc(subnets, func(s routing.Subnet) bool { return armid.Same(s.ID, id) })
	if i < 0 {
		return nil
	}
	return &subnets[i]
}

func resourceGroup(id string) string {
	parts := strings.Split(id, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "resourceGroups") {
			return parts[i+1]
		}
	}
	return "<group>"
}

func overlapsAny(p netip.Prefix, ps []netip.Prefix) bool {
	return slices.ContainsFunc(ps, func(q netip.Prefix) bool { return q.Overlaps(p) })
}

func coveredBy(p netip.Prefix, ps []netip.Prefix) bool {
	return slices.ContainsFunc(ps, func(q netip.Prefix) bool { return q.Bits() <= p.Bits() && q.Contains(p.Addr()) })
}

func hop(r route.Route) string {
	if r.NextHopIP.IsValid() {
		return r.NextHopIP.String()
	}
	return string(r.NextHopType)
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// list is names, the first maxListed of them and how many more.
func list(names []string) string {
	s := strings.Join(names[:min(len(names), maxListed)], ", ")
	if len(names) > maxListed {
		s += fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return s
}
