package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
)

// finish assembles the plan: changes, conflicts, node statuses and the
// desired table.
func (pl *planner) finish() {
	p := pl.p
	deletes, held, unclaimed := pl.routesByFate()
	writes, nupdates := pl.countWrites()
	p.Changes = make([]Change, 0, writes+len(deletes))
	updates := make([]Change, 0, nupdates)
	routeNames := make([]string, len(pl.entries))
	for _, ni := range pl.order {
		updates = pl.finishNode(ni, routeNames, updates)
	}
	// Creates first, in node order, then updates, then deletes.
	p.Changes = append(p.Changes, updates...)
	pl.finishRemovals(deletes, held, unclaimed)
	if len(p.Changes) > 0 || p.Claim {
		p.Desired = pl.desired()
	}
}

// countWrites counts the entries written (created or updated) and, of
// them, the updates.
func (pl *planner) countWrites() (writes, updates int) {
	for i := range pl.entries {
		switch pl.entries[i].act {
		case actCreate:
			writes++
		case actUpdate:
			writes++
			updates++
		}
	}
	return writes, updates
}

// routesByFate are the current routes deleted, held back by the guard,
// and left alone as possibly another cluster's (unclaimed).
func (pl *planner) routesByFate() (deletes, held, unclaimed []int32) {
	for i := range pl.routes {
		switch c := &pl.routes[i]; {
		case c.fate == fateDelete || c.fate == fateRenamed || c.fate == fateReplaced:
			deletes = append(deletes, int32(i))
		case c.fate == fateHeld:
			held = append(held, int32(i))
		case c.unclaimed && c.fate == fateCarry:
			unclaimed = append(unclaimed, int32(i))
		}
	}
	return deletes, held, unclaimed
}

// finishNode records node ni's status, conflicts and creates, and returns
// updates with its updates added; routeNames holds, per entry, the names
// of the node's routes once written.
func (pl *planner) finishNode(ni int32, routeNames []string, updates []Change) []Change {
	p := pl.p
	n := &pl.in.Nodes[ni]
	if p.StandDown {
		p.Nodes[n.Name] = NodeStatus{State: NotNeeded, Message: standDownNote}
		return updates
	}
	if len(n.PodCIDRs) == 0 {
		why, msg := reason.NoPodCIDR, fmt.Sprintf("node %s has no pod CIDR yet (spec.podCIDRs is empty)", n.Name)
		if n.Problem != nil {
			why, msg = n.Problem.Reason, n.Problem.Message
		}
		p.Conflicts = append(p.Conflicts, Conflict{Node: n.Name, Reason: why, Message: msg})
		p.Nodes[n.Name] = NodeStatus{State: NotRouted, Reason: why, Message: msg}
		return updates
	}
	st := NodeStatus{State: Routed}
	var note *detail // the first RouteNotManaged of the node
	s := pl.spans[ni]
	k := s.lo
	for i := s.lo; i < s.hi; i++ {
		e := &pl.entries[i]
		switch {
		case e.reason == reason.RouteNotManaged:
			d := pl.detailOf(e)
			p.Conflicts = append(p.Conflicts, Conflict{Node: n.Name, Prefix: e.cidr, Reason: e.reason, Message: d.msg, Route: d.other, Forwarding: true})
			if note == nil {
				note = d
			}
		case e.reason != "":
			d := pl.detailOf(e)
			p.Conflicts = append(p.Conflicts, Conflict{Node: n.Name, Prefix: e.cidr, Reason: e.reason, Message: d.msg, Route: d.other, Forwarding: d.forwarding})
			if st.Reason == "" {
				st.State, st.Reason, st.Message = NotRouted, e.reason, d.msg
			}
		case e.act == actCreate:
			p.Changes = append(p.Changes, pl.write(e, Create, nil))
		case e.act == actUpdate:
			old := pl.cur.Routes[e.target]
			updates = append(updates, pl.write(e, Update, &old))
		}
		if (e.act == actCreate || e.act == actUpdate) && st.State == Routed {
			st.State = Pending
		}
		switch {
		case e.act == actCreate || e.act == actUpdate:
			routeNames[k] = e.name
			k++
		case e.incumbent >= 0 && pl.routes[e.incumbent].fate == fateProtected:
			routeNames[k] = pl.cur.Routes[e.incumbent].Name
			k++
		}
	}
	if k > s.lo {
		st.Routes = routeNames[s.lo:k:k]
	}
	if note != nil && st.State != NotRouted {
		st.Reason, st.Message = reason.RouteNotManaged, note.msg
	}
	if n.Problem != nil && st.State != NotRouted {
		st.State, st.Reason, st.Message = NotRouted, n.Problem.Reason, n.Problem.Message
	}
	p.Nodes[n.Name] = st
	return updates
}

// write is the change that writes entry e (a create, or an update of old).
func (pl *planner) write(e *entry, kind ChangeKind, old *route.Route) Change {
	ch := Change{Kind: kind, Route: e.route(), Old: old, Node: pl.nodeName(e), Reason: pl.changeWhy(e)}
	if e.adopt {
		ch.Adopts = pl.cur.Routes[e.replaces].Name
	}
	return ch
}

// finishRemovals records the deletes (after the creates and updates), the
// deletions held back and the unclaimed routes left alone, each in node
// order.
func (pl *planner) finishRemovals(deletes, held, unclaimed []int32) {
	p := pl.p
	byNode := func(a, b int32) int {
		ca, cb := &pl.routes[a], &pl.routes[b]
		return cmp.Or(strings.Compare(strings.ToLower(ca.node), strings.ToLower(cb.node)), strings.Compare(ca.node, cb.node),
			ca.prefix.Addr().Compare(cb.prefix.Addr()), cmp.Compare(ca.prefix.Bits(), cb.prefix.Bits()), strings.Compare(pl.cur.Routes[a].Name, pl.cur.Routes[b].Name))
	}
	slices.SortFunc(deletes, byNode)
	for _, i := range deletes {
		c := &pl.routes[i]
		ch := Change{Kind: Delete, Route: pl.cur.Routes[i], Node: c.node, Reason: pl.deleteWhy(c)}
		if c.fate == fateRenamed && pl.entries[c.entry].adopt {
			ch.AdoptedBy = pl.entries[c.entry].name
		}
		p.Changes = append(p.Changes, ch)
	}
	slices.SortFunc(held, byNode)
	for _, i := range held {
		c := &pl.routes[i]
		p.HeldDeletes = append(p.HeldDeletes, Change{Kind: Delete, Route: pl.cur.Routes[i], Node: c.node, Reason: pl.deleteWhy(c) + "; held back: " + string(p.HeldReason)})
	}
	slices.SortFunc(unclaimed, byNode)
	for _, i := range unclaimed {
		c, r := &pl.routes[i], &pl.cur.Routes[i]
		p.Unclaimed = append(p.Unclaimed, Change{Kind: Delete, Route: *r, Node: c.node, Reason: fmt.Sprintf(
			"node %s is not in this cluster and %s is not claimed (tag %s), so the route may be another cluster's and is left alone; if it is stale, remove it by hand (%s) or claim the table (routeTable.claim: true)",
			c.node, pl.table, route.ClaimTag, removeCommand(pl.cur, r.Name))})
	}
}

func (e *entry) route() route.Route {
	return route.Route{Name: e.name, AddressPrefix: e.cidr.String(), Prefix: e.cidr, NextHopType: route.VirtualAppliance, NextHopIP: e.hop}
}

// desired builds the table to PUT: a deep copy of the current table with
// the claim, the updates in place, the deletes dropped and the creates
// appended in plan order.
func (pl *planner) desired() *route.Table {
	t := *pl.cur
	t.Tags = make(map[string]string, len(pl.cur.Tags)+1)
	claimKey := route.ClaimTag
	for k, v := range pl.cur.Tags {
		t.Tags[k] = v
		if strings.EqualFold(k, route.ClaimTag) {
			claimKey = k // keep the spelling ARM already has
		}
	}
	if pl.p.Claim {
		t.Tags[claimKey] = pl.in.Cluster
	}
	// The claim carries the cluster's pod CIDRs, so that a cluster refused
	// by it can tell whether the two overlap. It is refreshed with every
	// write of a claimed table, never written on its own.
	if pl.p.Claim || pl.claim != "" {
		route.SetTag(t.Tags, route.ClusterCIDRsTag, route.FormatCIDRs(pl.in.ClusterCIDRs))
	}
	t.Subnets = slices.Clone(pl.cur.Subnets)
	creates, _, _ := pl.p.Counts()
	t.Routes = make([]route.Route, 0, len(pl.cur.Routes)+creates)
	for i, r := range pl.cur.Routes {
		switch c := &pl.routes[i]; c.fate {
		case fateDelete, fateRenamed, fateReplaced:
		case fateUpdate:
			t.Routes = append(t.Routes, pl.entries[c.entry].route())
		default:
			t.Routes = append(t.Routes, r)
		}
	}
	for _, ch := range pl.p.Changes {
		if ch.Kind == Create {
			t.Routes = append(t.Routes, ch.Route)
		}
	}
	return &t
}

// unionFind groups overlapping entries; it grows on demand, since overlaps
// are rare and most plans never need one.
type unionFind struct{ parent map[int32]int32 }

func (u *unionFind) find(x int32) int32 {
	if u.parent == nil {
		u.parent = map[int32]int32{}
	}
	p, ok := u.parent[x]
	if !ok {
		u.parent[x] = x
		return x
	}
	if p == x {
		return x
	}
	r := u.find(p)
	u.parent[x] = r
	return r
}

func (u *unionFind) union(a, b int32) {
	a, b = u.find(a), u.find(b)
	if a != b {
		u.parent[max(a, b)] = min(a, b)
	}
}
