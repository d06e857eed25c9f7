package controller

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
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
		} else if ok && st.State == plan.Routed && st.Reason == plan.ReasonRouteNotManaged {
			// issue 11: a route routekeeper does not own carries the
			// node's traffic; the write leaves it as it is.
			nr = NodeResult{Routed: true, Reason: string(st.Reason), Message: st.Message, planned: true}
		}
		out[n.Name] = nr
	}
	return out
}

// verify decides every node the planner did not report, from the content
// of its routes in t (DESIGN invariant 8): routed when each of its pod
// CIDRs has a route with the right name, prefix and next hop that is not
// Failed, otherwise not routed with missingReason; Pending (not confirmed,
// invariant 4) unless each such route reads Succeeded: another writer's operation in
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
		// The message stays the same while another writer's operation is
		// in progress, so that the node's condition is not rewritten.
		res.Nodes[n.Name] = NodeResult{Routed: true, Pending: len(pending) > 0, Reason: ReasonRouteCreated, Message: "routekeeper created a route"}
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

// unroutedLogLimit is how many newly unrouted nodes are logged one by one;
// beyond it, one line per reason with the count and the first names.
const unroutedLogLimit = 10

// logUnrouted logs each node's reason once, when it becomes unrouted (or
// its reason changes), and when it is routed again: not on every pass.
func (c *Controller) logUnrouted(res *Result) {
	if res.Plan == nil {
		return // the pass ended before planning: it says nothing of the nodes
	}
	c.mu.Lock()
	prev := c.unrouted
	next := make(map[string]string, len(prev))
	c.mu.Unlock()
	type item struct{ name, msg string }
	byReason := map[string][]item{}
	fresh := 0
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		if nr.Routed {
			if _, was := prev[name]; was {
				c.log.Info("node routed again", "node", name)
			}
			continue
		}
		next[name] = nr.Reason
		if prev[name] != nr.Reason {
			byReason[nr.Reason] = append(byReason[nr.Reason], item{name, nr.Message})
			fresh++
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		items := byReason[reason]
		if fresh <= unroutedLogLimit {
			for _, it := range items {
				c.log.Warn("node not routed", "node", it.name, "reason", reason, "message", it.msg)
			}
			continue
		}
		var first []string
		for _, it := range items[:min(len(items), 5)] {
			first = append(first, it.name)
		}
		c.log.Warn("nodes not routed", "reason", reason, "count", len(items), "first", strings.Join(first, ","), "message", items[0].msg)
	}
	c.mu.Lock()
	c.unrouted = next
	c.mu.Unlock()
}
