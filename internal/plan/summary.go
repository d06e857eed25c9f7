package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Group is the nodes of one plan that share a reason: one log line, event
// or finding per kind instead of one per node (450 nodes over the route
// limit make one line, not 50).
type Group struct {
	Reason Reason `json:"reason"`
	// Routed is set for a note on routed nodes (ReasonRouteNotManaged).
	Routed bool `json:"routed,omitempty"`
	Count  int  `json:"count"`
	// Nodes are the first few node names, sorted.
	Nodes []string `json:"nodes"`
	// Message is the first node's message.
	Message string `json:"message"`
}

// Groups sums up the plan's NotRouted nodes (and routed nodes with a note)
// by reason, with at most maxNames names each, sorted by reason.
func (p *Plan) Groups(maxNames int) []Group {
	by := map[Reason][]string{}
	for name, st := range p.Nodes {
		if st.Reason != "" {
			by[st.Reason] = append(by[st.Reason], name)
		}
	}
	out := make([]Group, 0, len(by))
	for r, names := range by {
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
		})
		st := p.Nodes[names[0]]
		out = append(out, Group{Reason: r, Routed: st.State != NotRouted, Count: len(names), Nodes: names[:min(len(names), maxNames)], Message: st.Message})
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(string(a.Reason), string(b.Reason)) })
	return out
}

// String is the group's log line: "RouteLimit: 50 nodes not routed
// (worker-400, worker-401, worker-402 and 47 more); first: <message>".
func (g Group) String() string {
	what := "not routed"
	if g.Routed {
		what = "routed by a route routekeeper does not manage"
	}
	noun := "nodes"
	if g.Count == 1 {
		noun = "node"
	}
	names := strings.Join(g.Nodes, ", ")
	if more := g.Count - len(g.Nodes); more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%s: %d %s %s (%s); first: %s", g.Reason, g.Count, noun, what, names, g.Message)
}
