package verdict

// reach.go judges whether pod traffic really reaches the nodes, by Azure's
// route selection (internal/routing: system routes and the user routes of
// the table a subnet really uses, longest prefix, peerings, gateways,
// provisioning state), beyond the node's own route:
//
//	reason                   severity  when
//	PodTrafficNotDelivered   error     traced from a guarded subnet, the first address of a node's
//	                                   pod CIDR is not delivered to the node (the network was read)
//	PodCIDRShadowed          warning   a route routekeeper does not own, more specific than a pod
//	                                   CIDR, takes part of it elsewhere (longest prefix wins)
//	IPForwardingDisabled     error     the NIC that holds a node's address has IP forwarding off: Azure
//	                                   drops what a VirtualAppliance route sends it (the NICs were read)
//
// A node's Routed says whether its route is in effect in the table its
// subnet uses; these say what else stops its pod traffic. They are judged
// only when the observation read what they need (observe.Scope.Routing,
// Scope.NICs): every command that gives an exit code reads it, the
// daemon's passes do not.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// Reach is one thing that stops pod traffic to nodes whose route exists.
type Reach struct {
	Reason reason.Reason `json:"reason"`
	// Resource is where to look: the subnet the traffic leaves from, the
	// route that shadows, the NIC.
	Resource string `json:"resource"`
	// Nodes are the nodes it stops, with the pod CIDR:
	// "worker-0 (10.200.0.0/24)".
	Nodes   []string `json:"nodes"`
	Message string   `json:"message"`
	Fix     string   `json:"fix,omitempty"`
}

// maxNamed is how many nodes a grouped message names.
const maxNamed = 5

// reach judges the nodes' reachability (see the table above) and records
// what could not be checked.
func (j *judge) reach() {
	v := j.v
	judged := !j.standingDown() && len(j.want.Nodes) > 0 // no host route is wanted: nothing to judge
	if t := v.Current; t != nil && judged {
		v.Reach = append(v.Reach, shadowing(t, j.want)...)
	}
	if !j.o.Scope().Routing {
		return
	}
	st, err := j.o.RoutingState(j.want.Nodes)
	if err != nil {
		v.ReachUnknown = "pod traffic was not traced: " + err.Error()
		return
	}
	st.ConfiguredTableID = v.Table
	ourWrites(&st, v)
	v.routing = &st
	v.tracer = routing.NewTracer(st)
	if !judged {
		return
	}
	for _, s := range v.Subnets {
		v.Reach = append(v.Reach, j.delivery(s.Subnet)...)
	}
	nics, read, err := j.o.NICs()
	switch {
	case read:
		v.Reach = append(v.Reach, forwarding(j.want, nics)...)
	case err != nil:
		v.ReachUnknown = "the network interfaces could not be read, so IP forwarding of the nodes' NICs was not checked (optional permission Microsoft.Network/networkInterfaces/read): " + err.Error()
	}
}

// delivery traces the routed nodes' pod CIDRs from a guarded subnet and
// groups what is not delivered by cause (verdict, node, route); a node not
// routed is its own verdict's finding.
func (j *judge) delivery(subnetID string) []Reach {
	t := j.v.tracer
	i := slices.IndexFunc(j.v.routing.Subnets, func(s routing.Subnet) bool { return armid.Same(s.ID, subnetID) })
	if i < 0 {
		return nil // the association verdict reports a subnet that is missing
	}
	sn := &j.v.routing.Subnets[i]
	type group struct {
		example *routing.Result
		nodes   []string
	}
	var order []string
	groups := map[string]*group{}
	for _, n := range j.want.Nodes {
		if !j.v.Nodes[n.Name].Routed {
			continue // its own verdict says why: one finding per cause
		}
		for _, pod := range n.PodCIDRs {
			src, ok := sn.FirstAddr(pod.Addr().Is4())
			if !ok {
				continue
			}
			r := t.Verdict(routing.Endpoint{Addr: src}, routing.Endpoint{Addr: routing.PodAddr(pod), Node: n.Name})
			if r.OK() {
				continue
			}
			k := string(r.Verdict) + " " + r.Node
			if r.Route != nil {
				k += " " + r.Route.Prefix.String() + " " + r.Route.Source
			}
			g := groups[k]
			if g == nil {
				t.Explain(r)
				g = &group{example: r}
				groups[k] = g
				order = append(order, k)
			}
			g.nodes = append(g.nodes, fmt.Sprintf("%s (%s)", n.Name, pod))
		}
	}
	out := make([]Reach, 0, len(order))
	for _, k := range order {
		g := groups[k]
		out = append(out, Reach{Reason: reason.PodTrafficNotDelivered, Resource: subnetID, Nodes: g.nodes,
			Message: deliveryMessage(sn.Name, g.example, g.nodes),
			Fix:     fmt.Sprintf("routekeeper trace %s %s", g.example.Source.Addr, g.example.Destination.Addr)})
	}
	return out
}

func deliveryMessage(subnet string, r *routing.Result, nodes []string) string {
	// The first reasons say where the packet starts and what the
	// destination is; the rest is the route and the verdict.
	why := r.Reasons
	if len(why) > 2 {
		why = why[2:]
	}
	return fmt.Sprintf("pod traffic from %s to %d node pod CIDR(s) is not delivered (%s): %s. Example %s → %s: %s",
		subnet, len(nodes), r.Verdict, names(nodes), r.Source.Addr, r.Destination.Addr, strings.Join(why, "; "))
}

// names lists the first few of nodes.
func names(nodes []string) string {
	who := strings.Join(nodes[:min(len(nodes), maxNamed)], ", ")
	if len(nodes) > maxNamed {
		who += fmt.Sprintf(" and %d more", len(nodes)-maxNamed)
	}
	return who
}

// shadowing finds the routes routekeeper does not own that are more
// specific than a node's pod CIDR: longest prefix match sends that part
// of the node's pods somewhere else. Azure accepts it; it is rarely meant.
//
// Only the routes this cluster does not own can shadow, and they are few
// next to a node's routes: they are parsed once, so a full table of 1,000
// node routes costs one pass over it, not one per node.
func shadowing(t *route.Table, want Desired) []Reach {
	own := route.Ownership{Cluster: want.Cluster, ClusterCIDRs: want.ClusterCIDRs}
	cls := own.ClassifyTable(t)
	type foreign struct {
		p netip.Prefix
		r *route.Route
	}
	var others []foreign
	for i := range t.Routes {
		if cls[i].Owner == route.OwnerThisCluster {
			continue
		}
		if p, ok := t.Routes[i].CIDR(); ok {
			others = append(others, foreign{p, &t.Routes[i]})
		}
	}
	if len(others) == 0 {
		return nil
	}
	var out []Reach
	for _, n := range want.Nodes {
		for _, pod := range n.PodCIDRs {
			for _, o := range others {
				p, r := o.p, *o.r
				if p.Bits() <= pod.Bits() || !pod.Contains(p.Addr()) {
					continue
				}
				out = append(out, Reach{Reason: reason.PodCIDRShadowed, Resource: r.Name, Nodes: []string{fmt.Sprintf("%s (%s)", n.Name, pod)},
					Message: fmt.Sprintf("route %s (%s -> %s) is more specific than node %s's pod CIDR %s: traffic to those pods follows it, not the node route",
						r.Name, r.AddressPrefix, hopText(r), n.Name, pod)})
			}
		}
	}
	return out
}

// forwarding finds the nodes whose NIC has IP forwarding off.
func forwarding(want Desired, nics []observe.NetworkInterface) []Reach {
	byIP := map[netip.Addr]*observe.NetworkInterface{}
	for i := range nics {
		for _, ip := range nics[i].IPs {
			byIP[ip] = &nics[i]
		}
	}
	var out []Reach
	seen := map[string]bool{}
	for _, n := range want.Nodes {
		if len(n.PodCIDRs) == 0 {
			continue // no pod route points to it
		}
		for _, ip := range n.InternalIPs {
			nic := byIP[ip]
			if nic == nil || nic.IPForwarding || seen[armid.Key(nic.ID)] {
				continue
			}
			seen[armid.Key(nic.ID)] = true
			out = append(out, Reach{Reason: reason.IPForwardingDisabled, Resource: nic.ID, Nodes: []string{n.Name},
				Message: fmt.Sprintf("node %s's NIC %s has IP forwarding disabled: Azure drops the pod traffic the route table sends to %s (next hop VirtualAppliance)",
					n.Name, nic.Name, ip),
				Fix: fmt.Sprintf("az network nic update --ids %s --ip-forwarding true", nic.ID)})
		}
	}
	return out
}

// reportReach reports what stops pod traffic, and what could not be
// checked.
func (v *Verdict) reportReach(add addFunc) {
	for _, r := range v.Reach {
		switch r.Reason {
		case reason.PodCIDRShadowed:
			add(finding.Warning, RuleShadow, r.Resource, r.Fix, "%s", r.Message)
		case reason.IPForwardingDisabled:
			add(finding.Error, RuleIPForwarding, r.Resource, r.Fix, "%s", r.Message)
		default:
			add(finding.Error, RuleReachability, r.Resource, r.Fix, "%s", r.Message)
		}
	}
	if v.ReachUnknown != "" {
		add(finding.Info, RuleReachability, "", "", "%s", v.ReachUnknown)
	}
}

// Network is the network this verdict judged pod traffic on (with its
// own writes applied); ok is false when the observation did not read it.
func (v *Verdict) Network() (routing.State, bool) {
	if v.routing == nil {
		return routing.State{}, false
	}
	return *v.routing, true
}

// Deliver is where a packet from src to dst goes on the network this
// verdict judged (without the explanation: what all-pairs checks need);
// nil when the observation did not read the network.
func (v *Verdict) Deliver(src, dst routing.Endpoint) *routing.Result {
	if v.tracer == nil {
		return nil
	}
	return v.tracer.Verdict(src, dst)
}

// Trace follows a packet from src to dst the way Azure routes it, on the
// network this verdict judged (with the explanation); ok is false when the
// verdict's observation did not read the network.
func (v *Verdict) Trace(src, dst routing.Endpoint) (*routing.Result, bool) {
	if v.tracer == nil {
		return nil, false
	}
	return v.tracer.Trace(src, dst), true
}

// ourWrites makes st, read before this pass's writes, what they left: our
// table as read back, and the subnets the pass associated with it.
func ourWrites(st *routing.State, v *Verdict) {
	if !v.acted {
		return
	}
	if v.Current != nil {
		i := slices.IndexFunc(st.Tables, func(t *route.Table) bool { return armid.Same(t.ID, v.Table) })
		if i < 0 {
			st.Tables = append(st.Tables, v.Current)
		} else {
			st.Tables[i] = v.Current
		}
	}
	for _, s := range v.Subnets {
		// Repaired, or associated with the table this pass created: on
		// the table now (an already associated subnet is on it anyway).
		if !s.Repaired && s.State != assoc.Associated {
			continue
		}
		for i := range st.Subnets {
			if armid.Same(st.Subnets[i].ID, s.Subnet) {
				st.Subnets[i].RouteTableID = v.Table
			}
		}
	}
}
