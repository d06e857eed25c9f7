package plan

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
)

// findHolders indexes the current routes holding the prefixes the plan may
// write — those of entries without a route of their name and of owned
// routes whose prefix changes — and links legacy-named routes to their
// node's entry. Only those prefixes are indexed, so a plan with a handful
// of changes in a large table does not hash the whole table.
func (pl *planner) findHolders() {
	var need []netip.Prefix
	for i := range pl.entries {
		e := &pl.entries[i]
		if !e.inCluster || e.incumbent >= 0 || e.exact >= 0 && !pl.routes[e.exact].owned {
			continue
		}
		need = append(need, e.cidr)
	}
	if len(need) == 0 {
		return
	}
	pl.holders = make(map[netip.Prefix]int32, len(need))
	for _, p := range need {
		pl.holders[p] = -1
	}
	for i := range pl.routes {
		c := &pl.routes[i]
		// With duplicate prefixes (which ARM itself forbids) a route we do
		// not own wins, so that nothing is created on top of it.
		if h, ok := pl.holders[c.prefix]; ok && (h < 0 || pl.routes[h].owned && !c.owned) {
			pl.holders[c.prefix] = int32(i)
		}
	}
	if !pl.in.LegacyNames {
		return
	}
	for i := range pl.entries {
		e := &pl.entries[i]
		if !e.inCluster || e.exact >= 0 {
			continue
		}
		if j, ok := pl.holder(e.cidr); ok {
			if c := &pl.routes[j]; c.owned && c.legacy && strings.EqualFold(c.node, pl.nodeName(e)) {
				e.incumbent = j
				c.fate, c.entry = fateProtected, int32(i)
			}
		}
	}
}

// holder returns the current route holding prefix p, for the prefixes
// findHolders indexed.
func (pl *planner) holder(p netip.Prefix) (int32, bool) {
	h, ok := pl.holders[p]
	return h, ok && h >= 0
}

// overlaps finds entries whose pod CIDRs overlap, in O(n log n): sorted by
// address then prefix length, each prefix either lies inside the innermost
// enclosing prefix still open (a stack) or starts a new chain.
func (pl *planner) overlaps() {
	type key struct {
		p netip.Prefix
		i int32
	}
	keys := make([]key, 0, len(pl.entries))
	for i := range pl.entries {
		if pl.entries[i].inCluster {
			keys = append(keys, key{pl.entries[i].cidr, int32(i)})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(a.p.Addr().Compare(b.p.Addr()), cmp.Compare(a.p.Bits(), b.p.Bits()))
	})
	var stack []key
	var pairs [][2]int32
	for _, k := range keys {
		for len(stack) > 0 && !stack[len(stack)-1].p.Contains(k.p.Addr()) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			pairs = append(pairs, [2]int32{stack[len(stack)-1].i, k.i})
		}
		stack = append(stack, k)
	}
	if len(pairs) == 0 {
		return
	}
	// Group the overlapping entries (a chain of nested prefixes is one
	// group) and settle each group.
	uf := unionFind{}
	for _, pr := range pairs {
		uf.union(pr[0], pr[1])
	}
	groups := map[int32][]int32{}
	for x := range uf.parent {
		r := uf.find(x)
		groups[r] = append(groups[r], x)
	}
	roots := make([]int32, 0, len(groups))
	for r := range groups {
		roots = append(roots, r)
	}
	slices.Sort(roots)
	for _, root := range roots {
		g := groups[root]
		slices.Sort(g) // entry order: node, then pod CIDR order
		var inc []int32
		for _, i := range g {
			if pl.entries[i].incumbent >= 0 {
				inc = append(inc, i)
			}
		}
		if len(inc) == 1 {
			k := &pl.entries[inc[0]]
			for _, i := range g {
				if i == inc[0] {
					continue
				}
				e := &pl.entries[i]
				pl.fail(e, reason.OverlappingPodCIDR, fmt.Sprintf("pod CIDR %s of node %s overlaps pod CIDR %s of node %s, which keeps its route; give node %s a pod CIDR of its own", e.cidr, pl.nodeName(e), k.cidr, pl.nodeName(k), pl.nodeName(e)), pl.nodeName(k))
			}
			continue
		}
		for _, i := range g {
			e := &pl.entries[i]
			o := &pl.entries[g[0]]
			if i == g[0] {
				o = &pl.entries[g[1]]
			}
			pl.fail(e, reason.OverlappingPodCIDR, fmt.Sprintf("pod CIDR %s of node %s overlaps pod CIDR %s of node %s; no route is written for either until one of them changes", e.cidr, pl.nodeName(e), o.cidr, pl.nodeName(o)), pl.nodeName(o))
		}
	}
}

// match decides, for every entry still without a reason, whether its route
// is kept, updated or created, or which conflict stops it.
func (pl *planner) match() {
	for i := range pl.entries {
		e := &pl.entries[i]
		if e.reason != "" {
			continue
		}
		if e.exact >= 0 {
			r, c := &pl.cur.Routes[e.exact], &pl.routes[e.exact]
			if !c.owned {
				cls := pl.classification(e.exact)
				pl.fail(e, reason.NameConflict, fmt.Sprintf("route %s already exists in %s with prefix %s and next hop %s, and routekeeper does not own it (%s: %s); rename or delete it to let routekeeper route node %s",
					r.Name, pl.table, r.AddressPrefix, hopText(r), cls.Owner, cls.Why, pl.nodeName(e)), r.Name)
				pl.detailOf(e).forwarding = c.prefix == e.cidr && r.NextHopType == route.VirtualAppliance && r.NextHopIP == e.hop
				continue
			}
			if c.prefix == e.cidr && r.NextHopType == route.VirtualAppliance && r.NextHopIP == e.hop && !strings.EqualFold(r.ProvisioningState, "Failed") {
				e.act = actKeep
				continue
			}
			if c.prefix != e.cidr {
				if h, ok := pl.holder(e.cidr); ok && h != e.exact {
					hc := &pl.routes[h]
					if !hc.owned && pl.in.Adopt == AdoptMatching && hc.fate == fateCarry && !hc.named && pl.forwards(h, e) {
						// Our route moves onto the prefix another route
						// already sends to the node: that one goes.
						e.act, e.target, e.replaces, e.adopt = actUpdate, e.exact, h, true
						c.fate, c.entry = fateUpdate, int32(i)
						hc.fate, hc.entry = fateRenamed, int32(i)
						continue
					}
					if !hc.owned {
						pl.prefixConflict(e, h)
						continue
					}
					// A stale route of ours holds the new prefix: it
					// goes in the same write, whatever the guard says.
					if hc.fate == fateCarry {
						hc.fate, hc.entry = fateReplaced, int32(i)
					}
				}
			}
			e.act, e.target = actUpdate, e.exact
			c.fate, c.entry = fateUpdate, int32(i)
			continue
		}
		if e.incumbent >= 0 { // a legacy-named route of this node
			e.act, e.replaces = actCreate, e.incumbent
			continue
		}
		if h, ok := pl.holder(e.cidr); ok {
			c := &pl.routes[h]
			if !c.owned {
				if pl.in.Adopt == AdoptMatching && c.fate == fateCarry && !c.named && pl.forwards(h, e) {
					// Same prefix, same next hop: replace it in the
					// same PUT, the prefix never lacks its next hop.
					e.act, e.replaces, e.adopt = actCreate, h, true
					c.fate, c.entry = fateProtected, int32(i)
					continue
				}
				pl.prefixConflict(e, h)
				continue
			}
			// An owned route of another name holds the prefix: it is
			// stale (the pod CIDR moved to this node, or its node is
			// gone) and is deleted in the same write.
			e.target = h
			if c.fate == fateCarry {
				c.fate, c.entry = fateReplaced, int32(i)
			}
		}
		e.act = actCreate
	}
}

func (pl *planner) prefixConflict(e *entry, h int32) {
	r, cls := &pl.cur.Routes[h], pl.classification(h)
	why := cls.Owner.String() + ": " + cls.Why
	if pl.routes[h].unclaimed {
		why = "named for node " + cls.Node + ", which this cluster does not have, in a table not claimed yet"
	}
	forwarding := pl.forwards(h, e)
	if forwarding {
		pl.fail(e, reason.RouteNotManaged, fmt.Sprintf("pod CIDR %s of node %s is routed to %s by route %s, which routekeeper does not own (%s): traffic flows, route not managed; `--adopt matching` takes it over with no outage (renames it to %s in one write)",
			e.cidr, pl.nodeName(e), e.hop, r.Name, why, schemeName(pl.nodeName(e), e.cidr)), r.Name)
	} else {
		pl.fail(e, reason.PrefixConflict, fmt.Sprintf("pod CIDR %s of node %s is held by route %s (next hop %s), which routekeeper does not own (%s); Azure allows one route per prefix: delete that route to let routekeeper route node %s",
			e.cidr, pl.nodeName(e), r.Name, hopText(r), why, pl.nodeName(e)), r.Name)
	}
	pl.detailOf(e).forwarding = forwarding
}

func hopText(r *route.Route) string {
	if r.NextHopType == route.VirtualAppliance {
		if r.NextHopIP.IsValid() {
			return r.NextHopIP.String()
		}
		return "VirtualAppliance (no address)"
	}
	if r.NextHopType == "" {
		return "(none)"
	}
	return string(r.NextHopType)
}

// stale marks for deletion every owned route that serves no current pod
// CIDR of its node. Legacy routes being renamed are settled by applyLimit.
func (pl *planner) stale() {
	for i := range pl.routes {
		if c := &pl.routes[i]; c.owned && c.fate == fateCarry {
			c.fate = fateDelete
		}
	}
}

// applyLimit accepts creates node by node while the table has room.
func (pl *planner) applyLimit() {
	// One message per number of routes a node needs, shared by every
	// node that does not fit: a cluster of 5,000 nodes on a table of
	// 1,000 routes would otherwise hold 4,000 copies of it.
	fullMsg := map[int]string{}
	full := func(need int) string {
		if m, ok := fullMsg[need]; ok {
			return m
		}
		m := fmt.Sprintf("%s is full: it may hold %d routes (%s) and the node needs %d more; free room or give the cluster another table", pl.table, pl.limit, pl.limitFrom(), need)
		fullMsg[need] = m
		return m
	}
	used := len(pl.cur.Routes)
	for i := range pl.routes {
		switch c := &pl.routes[i]; c.fate {
		case fateDelete:
			used--
		case fateReplaced, fateRenamed:
			// Replaced by an update in place: its slot is free. (One
			// replaced by a create gives that create its slot.)
			if pl.entries[c.entry].act == actUpdate {
				used--
			}
		}
	}
	room := pl.limit - used
	for _, ni := range pl.order {
		s := pl.spans[ni]
		need, renames := 0, 0
		for i := s.lo; i < s.hi; i++ {
			switch e := &pl.entries[i]; {
			case e.act != actCreate:
			case e.replaces >= 0:
				renames++
			case e.target < 0 || pl.routes[e.target].fate != fateReplaced:
				need++
			}
		}
		if need == 0 && renames == 0 {
			continue
		}
		fits := need == 0 || need <= room
		if fits {
			room -= need
		}
		for i := s.lo; i < s.hi; i++ {
			e := &pl.entries[i]
			switch {
			case e.act != actCreate:
			case e.replaces >= 0: // a rename frees the slot it takes
				c := &pl.routes[e.replaces]
				c.fate, c.entry = fateRenamed, i
			case e.target >= 0 && pl.routes[e.target].fate == fateReplaced:
				// Takes the slot of the stale route it replaces.
			case !fits:
				e.act = actNone
				pl.fail(e, reason.RouteTableFull, full(need), "")
			}
		}
	}
}
