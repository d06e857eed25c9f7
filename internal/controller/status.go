package controller

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Node reasons the controller adds to the planner's. RouteCreated is the
// Kubernetes route controller's reason for a routed node.
const (
	ReasonRouteCreated = "RouteCreated"
	ReasonTableMissing = "RouteTableMissing"
	ReasonWriteFailed  = "RouteWriteFailed"
	ReasonNotReadBack  = "RouteNotReadBack"
	ReasonRouteMissing = "RouteMissing"
	// ReasonSubnetTable: the node's subnet uses a table without its route.
	ReasonSubnetTable = "SubnetRouteTableLacksRoute"
)

// nodeResults starts each node's result from the plan: nodes the planner
// reported (conflict, limit, no pod CIDR...) keep its reason; the others
// are left for verify to decide against the table.
func nodeResults(p *plan.Plan, nodes []source.Node) map[string]NodeResult {
	out := make(map[string]NodeResult, len(nodes))
	for _, n := range nodes {
		nr := NodeResult{}
		if st, ok := p.Nodes[n.Name]; ok && st.State == plan.NotRouted {
			nr = NodeResult{Reason: string(st.Reason), Message: st.Message, planned: true}
		}
		out[n.Name] = nr
	}
	return out
}

// verify decides every node the planner did not report, from the content
// of its routes in t (DESIGN invariant 8): routed when each of its pod
// CIDRs has a route with the right name, prefix and next hop that is not
// Failed, otherwise not routed with missingReason. Confirmed (invariant 4)
// only when each such route reads Succeeded: another writer's operation in
// progress (Updating) does not withdraw a node's routed state, but does not
// make a node routed for the first time either. wrote is the plan of the
// write t was read back after (nil when nothing was written): a route that
// write carried must read Succeeded.
func (c *Controller) verify(res *Result, nodes []source.Node, t *route.Table, missingReason string, wrote *plan.Plan) {
	carried := map[string]bool{}
	if wrote != nil {
		for _, ch := range wrote.Changes {
			if ch.Kind != plan.Delete {
				carried[strings.ToLower(ch.Route.Name)] = true
			}
		}
	}
	for _, n := range nodes {
		if res.Nodes[n.Name].planned {
			continue
		}
		missing, pending := routeState(n, t, carried)
		if len(missing) > 0 {
			res.Nodes[n.Name] = NodeResult{Reason: missingReason, Message: "no correct route in route table for " + strings.Join(missing, ", ")}
			continue
		}
		nr := NodeResult{Routed: true, Confirmed: len(pending) == 0, Reason: ReasonRouteCreated, Message: "routekeeper created a route"}
		if len(pending) > 0 {
			nr.Message = "the route is in the table; another operation on the table is in progress (" + strings.Join(pending, ", ") + ")"
		}
		res.Nodes[n.Name] = nr
	}
}

// routeState lists the node's pod CIDRs without a correct route in t
// (missing), and those whose route is correct but not (yet) Succeeded
// (pending). A route this pass wrote (carried) counts only Succeeded.
func routeState(n source.Node, t *route.Table, carried map[string]bool) (missing, pending []string) {
	if len(n.PodCIDRs) == 0 {
		return []string{"(no pod CIDR)"}, nil
	}
	for _, cidr := range n.PodCIDRs {
		hop, ok := n.NextHop(cidr)
		var r *route.Route
		if ok && t != nil {
			r = findRoute(t, route.Name(n.Name, cidr))
		}
		switch {
		case r == nil || r.Prefix != cidr.Masked() || r.NextHopType != route.VirtualAppliance || r.NextHopIP != hop || r.ProvisioningState == "Failed":
			missing = append(missing, cidr.String())
		case r.ProvisioningState == "" || r.ProvisioningState == "Succeeded":
		case carried[strings.ToLower(r.Name)]:
			missing = append(missing, cidr.String())
		default:
			pending = append(pending, cidr.String()+" "+r.ProvisioningState)
		}
	}
	return missing, pending
}

func findRoute(t *route.Table, name string) *route.Route {
	for i := range t.Routes {
		if strings.EqualFold(t.Routes[i].Name, name) {
			return &t.Routes[i]
		}
	}
	return nil
}

// subnetTruth makes a node unrouted when a guarded subnet holding its
// address uses, after the pass, a table other than ours that lacks its
// route: the route in our table does not reach it.
func (c *Controller) subnetTruth(res *Result, o *observation, nodes []source.Node) {
	for i, a := range res.Associations {
		switch a.State {
		case AssocOK, AssocRepaired, AssocFollowed, AssocMissing, AssocError:
			continue
		}
		sn := o.input.Subnets[i]
		var t *route.Table
		if a.Table != "" {
			t = o.table(a.Table)
		}
		for _, n := range nodes {
			nr := res.Nodes[n.Name]
			if !nr.Routed || !inPrefixes(n, sn.AddressPrefixes) {
				continue
			}
			if missing, _ := routeState(n, t, nil); len(missing) > 0 {
				res.Nodes[n.Name] = NodeResult{Reason: ReasonSubnetTable, Message: fmt.Sprintf(
					"the node's subnet %s uses route table %s, which lacks its route for %s", a.Subnet, orNone(a.Table), strings.Join(missing, ", "))}
			}
		}
	}
}

// inPrefixes reports whether one of the node's addresses is in prefixes.
func inPrefixes(n source.Node, prefixes []netip.Prefix) bool {
	for _, ip := range n.InternalIPs {
		for _, p := range prefixes {
			if p.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// setNodes remembers the nodes the source returned.
func (c *Controller) setNodes(nodes []source.Node) {
	c.mu.Lock()
	c.nodes, c.sourceErr = nodes, nil
	c.mu.Unlock()
}

// setSourceErr records that the source could not be read.
func (c *Controller) setSourceErr(err error) {
	c.mu.Lock()
	c.sourceErr = err
	c.mu.Unlock()
}

// lastNodes are the last nodes the source returned.
func (c *Controller) lastNodes() []source.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes
}

// SourceErr is the node source's last error, nil once it answered again.
func (c *Controller) SourceErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sourceErr
}
