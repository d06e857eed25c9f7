package controller

import (
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

// verify decides every node the planner did not report: routed when each of
// its pod CIDRs has its correct route in t, otherwise not routed with
// missingReason.
func verify(res *Result, nodes []source.Node, t *route.Table, missingReason string) {
	for _, n := range nodes {
		if res.Nodes[n.Name].planned {
			continue
		}
		if missing := missingRoutes(n, t); len(missing) > 0 {
			res.Nodes[n.Name] = NodeResult{Reason: missingReason, Message: "no correct route in route table for " + strings.Join(missing, ", ")}
			continue
		}
		res.Nodes[n.Name] = NodeResult{Routed: true, Reason: ReasonRouteCreated, Message: "routekeeper created a route"}
	}
}

// missingRoutes lists the node's pod CIDRs without a correct route in t:
// named by the naming scheme, with the same prefix, next hop
// VirtualAppliance to the node's address of that family, provisioned.
func missingRoutes(n source.Node, t *route.Table) []string {
	if len(n.PodCIDRs) == 0 {
		return []string{"(no pod CIDR)"}
	}
	var missing []string
	for _, cidr := range n.PodCIDRs {
		hop, ok := n.NextHop(cidr)
		if !ok || t == nil || !hasRoute(t, n.Name, cidr, hop) {
			missing = append(missing, cidr.String())
		}
	}
	return missing
}

func hasRoute(t *route.Table, node string, cidr netip.Prefix, hop netip.Addr) bool {
	name := route.Name(node, cidr)
	for _, r := range t.Routes {
		if strings.EqualFold(r.Name, name) {
			return r.Prefix == cidr.Masked() && r.NextHopType == route.VirtualAppliance && r.NextHopIP == hop &&
				(r.ProvisioningState == "" || r.ProvisioningState == "Succeeded")
		}
	}
	return false
}
