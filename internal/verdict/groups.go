package verdict

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/reason"
)

// Group is the nodes of one verdict that share a reason: one log line,
// event or finding per kind instead of one per node (450 nodes over the
// route limit make one line, not 50).
type Group struct {
	Reason reason.Reason `json:"reason"`
	// Routed is set for a note on routed nodes (RouteNotManaged).
	Routed bool `json:"routed,omitempty"`
	Count  int  `json:"count"`
	// Nodes are the first few node names, sorted.
	Nodes []string `json:"nodes"`
	// Message is the first node's message.
	Message string `json:"message"`
}

// Groups sums up the unrouted nodes (and the routed ones with a note) by
// reason, with at most maxNames names each, sorted by reason.
func (v *Verdict) Groups(maxNames int) []Group {
	by := map[reason.Reason][]string{}
	for name, nv := range v.Nodes {
		if !nv.Routed || nv.Reason == reason.RouteNotManaged {
			by[nv.Reason] = append(by[nv.Reason], name)
		}
	}
	out := make([]Group, 0, len(by))
	for _, r := range slices.Sorted(maps.Keys(by)) {
		names := by[r]
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
		})
		nv := v.Nodes[names[0]]
		out = append(out, Group{Reason: r, Routed: nv.Routed, Count: len(names), Nodes: names[:min(len(names), maxNames)], Message: nv.Message})
	}
	return out
}

// String is the group's log line: "RouteTableFull: 50 nodes not routed
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
