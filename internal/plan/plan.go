// Package plan is routekeeper's pure planner: from the desired state (the
// cluster's nodes), the current route table and the cluster configuration it
// computes the changes of one reconcile, the conflicts that are reported
// instead of written, each node's status, and the whole table to PUT. It does
// no I/O, so the rules that keep routekeeper safe — ownership, conflicts,
// limits — are decided and tested here.
//
// Ownership comes from route.Ownership: routekeeper changes or deletes only
// routes named in the cloud-provider-azure scheme (<node>____<mangled CIDR>)
// whose mangled CIDR matches their prefix, whose prefix lies inside the
// cluster CIDRs, in a table claimed by this cluster (tag
// routekeeper-cluster=<cluster>); in a table not claimed yet, only the
// routes of the cluster's own nodes (one of them may be another
// cluster's). Every other route is copied into the desired table bit for
// bit, except a route adopted with Input.Adopt matching.
//
// The cases, for one pod CIDR of one node ("ours" = owned by this cluster):
//
//	table / node state                                     plan
//	-----------------------------------------------------  ------------------------------------------
//	table claimed by another cluster                       refused: nothing written, every node TableClaimed
//	table unclaimed                                        used: routes of our nodes written, routes of unknown
//	                                                       nodes reported (Plan.Unclaimed), never deleted; the
//	                                                       claim is written only with Input.Claim
//	table missing (Current nil)                            plan against an empty table; Create and Claim set
//	table has two routes with one name                     refused: InvalidTable
//	node has no pod CIDR                                   NoPodCIDR
//	pod CIDR outside the cluster CIDRs                     OutsideClusterCIDR
//	two nodes (or one node twice) same name                DuplicateNode for both
//	no internal IP of the pod CIDR's family                NoNodeIP; its existing route is kept as it is
//	internal IP in none of Input.NodeNetworks (if given)   NextHopOutsideVNet; its existing route is kept as it is
//	scheme name not a valid Azure name (> 80 chars)        InvalidRouteName
//	two pod CIDRs map to one route name                    NameConflict for both
//	pod CIDRs overlap, one of them already routed          the routed one is kept (and updated if needed),
//	                                                       the others OverlappingPodCIDR
//	pod CIDRs overlap, none or several routed              all OverlappingPodCIDR; existing routes kept as they are
//	our route with exact name and prefix, right next hop   kept (Routed)
//	our route with exact name, next hop IP or type differ  update in place (the node's IP changed, or drift)
//	our route correct but provisioning state Failed        update in place (the write is retried)
//	our route with exact name, other prefix                update in place (pod CIDR changed; names of two
//	                                                       CIDRs can mangle alike: 10.24.4.0/24, 10.2.44.0/24)
//	non-owned route with the exact name                    NameConflict (the route is left alone)
//	non-owned route holds the prefix, same next hop        Adopt matching: renamed (delete it + create ours in
//	                                                       the same PUT); else RouteNotManaged, node Routed
//	non-owned route holds the prefix, other next hop       PrefixConflict, nothing written for the CIDR
//	our route of another name holds the prefix             that route is stale: delete it, create ours (the
//	                                                       pod CIDR moved between nodes), in the same PUT
//	legacy-named route of this node (LegacyNames)          renamed: delete legacy + create, in the same PUT
//	no route                                               create, if the table has room, else RouteLimit
//	our route, node gone                                   delete (deletion guard: more than MaxDeletes, or
//	                                                       no nodes without AllowEmptySource: none deleted,
//	                                                       Plan.HeldDeletes; creates and updates go on)
//	our route, node's pod CIDR changed                     delete (the new CIDR's route is created)
//	node with a source Problem (IPAM exhausted)            NotRouted with the problem's reason
//	non-owned route (custom, other cluster, service tag)   never changed or deleted
//	stand-down (Input.StandDown), not confirmed            nothing wanted: every owned route held
//	                                                       (StandDownUnconfirmed); nodes NotNeeded
//	stand-down, confirmed                                  every owned route deleted in the one write, no
//	                                                       cap, even with no nodes; nodes NotNeeded
//	nodes, none with a pod CIDR, not confirmed             NoPodCIDR; every deletion held (StandDownUnconfirmed)
//	nodes, none with a pod CIDR, ConfirmStandDown          stand-down, confirmed
//
// A route belongs to a node only when its whole name equals
// route.Name(node, podCIDR) for one of the node's current pod CIDRs
// (compared case-insensitively, as ARM compares names); nothing is ever
// matched or deleted by name prefix, so node-1 never touches node-10's
// routes.
//
// The route limit counts the whole table, custom routes included. Existing
// routes are always kept, even when the table is over the limit (after the
// limit was lowered). Deletes free room for creates in the same plan. New
// routes are added node by node in node-name order (case-insensitive); a
// node gets all of its new routes or none (a half-routed dual-stack node
// would only take room from the next node), and nodes that do not fit are
// reported with RouteLimit. A legacy rename needs no room: it frees the
// slot it takes.
//
// Each pod CIDR is planned on its own: a dual-stack node whose IPv6 route
// is blocked still gets its IPv4 route, and is reported NotRouted with the
// IPv6 reason. A route of a node that still has the pod CIDR is never
// deleted because of a transient problem of the node (no address, a name
// clash, an overlap): it is kept as it is until the node is fixed or gone.
// Azure forbids identical prefixes only; a custom route that is wider
// (10.0.0.0/8 to a firewall) or narrower than a pod CIDR is no conflict.
//
// The desired table never holds two routes with the same masked prefix or
// name that the current table did not already hold, never more routes than
// the limit unless the current table already did (and then no more than
// it), and only valid route names among the routes it adds.
//
// The plan is deterministic: the same input gives the same changes,
// conflicts and desired table, whatever the order of the input nodes.
package plan

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// action is what happens to a desired route (an entry).
type action uint8

const (
	actNone   action = iota // not written (reason set)
	actKeep                 // already correct
	actUpdate               // update the route at entry.target
	actCreate               // append a new route
)

// fate is what happens to a current route.
type fate uint8

const (
	fateCarry     fate = iota // copied unchanged (not ours, or not settled yet)
	fateProtected             // ours, serving an entry: never deleted
	fateUpdate                // ours, replaced by an updated route
	fateDelete                // ours and stale
	fateRenamed               // a legacy or adopted route replaced by a create of the same prefix
	fateReplaced              // ours and stale, its prefix taken by a create in the same write
	fateHeld                  // ours and stale, its deletion held back by the guard
)

// current is the planner's compact view of one route of the current table
// (the full classification is recomputed for the rare messages that need
// it).
type current struct {
	prefix netip.Prefix // masked; invalid for service tags
	node   string       // the node named by the route
	owned  bool
	legacy bool
	// unclaimed: in the scheme for a node this cluster does not have, in
	// a table not claimed yet; it may be another cluster's, so it is
	// treated as not owned (never deleted, a prefix holder in the way).
	unclaimed bool
	// named: the route has the exact name of some desired route. It is
	// never adopted by another node, or it would free the name for the
	// next plan rather than this one.
	named bool
	fate  fate
	entry int32 // the entry it serves, is updated for or renamed to; -1
}

// entry is one desired route: one pod CIDR of one node.
type entry struct {
	cidr netip.Prefix
	hop  netip.Addr
	// name is the scheme name; when a route of that name exists, ARM's
	// spelling of it (names compare case-insensitively).
	name      string
	reason    Reason
	node      int32 // index into Input.Nodes
	exact     int32 // current route with exactly this name, -1
	incumbent int32 // current owned route already serving this CIDR for this node, -1
	target    int32 // actUpdate: the route updated; actCreate: a stale owned route holding the prefix; -1
	replaces  int32 // legacy or adopted route replaced by this create, -1
	detail    int32 // index into planner.details when reason is set, -1
	inCluster bool
	adopt     bool // replaces is a route not owned, adopted (Input.Adopt)
	act       action
}

// detail is the rest of a reason: kept aside, since few entries have one.
type detail struct {
	msg, other string
	forwarding bool
}

type span struct{ lo, hi int32 }

type planner struct {
	in    Input
	own   route.Ownership
	claim string // the claim ownership is decided against: "" or in.Cluster
	limit int
	cur   *route.Table
	table string // the table's name for messages

	routes  []current
	byName  map[string]int32       // lower-case route name -> route
	holders map[netip.Prefix]int32 // see findHolders; -1 = nobody

	lnames  []string // per node: lower-case name
	order   []int32  // node indices sorted by lower-case name, then name
	dup     []bool   // per node: name used more than once
	entries []entry  // in node order, then each node's pod CIDR order
	spans   []span   // per node: its entries
	details []detail

	p *Plan
}

// Compute plans one reconcile. It never modifies in.Current or in.Nodes.
func Compute(in Input) *Plan {
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	p := &Plan{Changes: []Change{}, Conflicts: []Conflict{}, Nodes: make(map[string]NodeStatus, len(in.Nodes)), Limit: limit}
	if err := in.Validate(); err != nil {
		return p.refuse(in.Nodes, ReasonInvalidInput, "invalid planner input: "+err.Error())
	}
	pl := &planner{in: in, own: in.Ownership(), limit: limit, cur: in.Current, p: p}
	if pl.cur == nil {
		pl.cur = &route.Table{}
		p.Create = true
	}
	pl.table = tableName(pl.cur, p.Create)

	claims := pl.cur.ClaimValues()
	switch {
	case len(claims) > 1:
		return p.refuse(in.Nodes, ReasonInvalidTable, fmt.Sprintf("%s has claim tags %s for several clusters (%s); remove all but one", pl.table, route.ClaimTag, strings.Join(claims, ", ")))
	case len(claims) == 1 && claims[0] != in.Cluster:
		return p.refuse(in.Nodes, ReasonTableClaimed, fmt.Sprintf("%s is claimed by cluster %q (tag %s), not by this cluster %q; routekeeper writes nothing to it%s", pl.table, claims[0], route.ClaimTag, in.Cluster, CIDROverlap(pl.cur, claims[0], in.ClusterCIDRs)))
	case len(claims) == 1:
		pl.claim = in.Cluster
	default:
		// Unclaimed: the claim is written when the plan creates the
		// table or the configuration says so, never as a side effect.
		p.Claim = p.Create || in.Claim
	}

	if in.StandsDown() {
		// No route is wanted, and the stand-down claims nothing.
		p.StandDown, p.Claim = true, false
	}
	if msg := pl.indexCurrent(); msg != "" {
		return p.refuse(in.Nodes, ReasonInvalidTable, msg)
	}
	pl.makeEntries()
	pl.unclaimedRoutes()
	pl.findHolders()
	pl.overlaps()
	pl.match()
	pl.stale()
	pl.guardDeletes()
	pl.applyLimit()
	pl.finish()
	return p
}

// CIDROverlap says, for a table claimed by cluster other, whether other's
// pod CIDRs (its route.ClusterCIDRsTag, written with its claim) overlap
// cidrs, this cluster's: the text is appended to a refusal ("" when the tag
// is absent or unreadable). Overlapping pod CIDRs are what makes two
// clusters' routes collide in one table.
func CIDROverlap(t *route.Table, other string, cidrs []netip.Prefix) string {
	theirs, err := route.ParseCIDRs(t.Tag(route.ClusterCIDRsTag))
	if err != nil || len(theirs) == 0 {
		return ""
	}
	if ov := route.OverlappingCIDRs(theirs, cidrs); len(ov) > 0 {
		return fmt.Sprintf("; the pod CIDRs of cluster %q (%s) overlap this cluster's (%s): both clusters' pod routes cannot live in one table", other, route.FormatCIDRs(theirs), route.FormatCIDRs(cidrs))
	}
	return fmt.Sprintf("; the pod CIDRs of cluster %q (%s) do not overlap this cluster's (%s), but a route table holds one cluster's pod routes: give each cluster its own table", other, route.FormatCIDRs(theirs), route.FormatCIDRs(cidrs))
}

func tableName(t *route.Table, create bool) string {
	switch {
	case create:
		return "the new route table"
	case t.Name != "":
		return "route table " + t.Name
	case t.ID != "":
		return "route table " + t.ID
	}
	return "the route table"
}

// refuse turns p into a plan that writes nothing, every node NotRouted.
func (p *Plan) refuse(nodes []source.Node, reason Reason, msg string) *Plan {
	p.Refused, p.RefusedReason = msg, reason
	p.Changes, p.Conflicts, p.Desired, p.Claim, p.Create = []Change{}, []Conflict{}, nil, false, false
	clear(p.Nodes)
	for _, n := range nodes {
		p.Nodes[n.Name] = NodeStatus{State: NotRouted, Reason: reason, Message: msg}
	}
	return p
}

// indexCurrent classifies the current routes and indexes them by name. It
// returns a message when the table is unusable.
func (pl *planner) indexCurrent() string {
	n := len(pl.cur.Routes)
	pl.routes = make([]current, n)
	pl.byName = make(map[string]int32, n)
	for i := range pl.cur.Routes {
		r := &pl.cur.Routes[i]
		cls := pl.own.ClassifyAt(r, pl.claim)
		pl.routes[i] = current{prefix: cls.Prefix, node: cls.Node, owned: cls.Owner == route.OwnerThisCluster, legacy: cls.Legacy, entry: -1}
		lname := strings.ToLower(r.Name)
		if j, dup := pl.byName[lname]; dup {
			return fmt.Sprintf("%s holds two routes named %q and %q (Azure names are case-insensitive); fix the table by hand", pl.table, pl.cur.Routes[j].Name, r.Name)
		}
		pl.byName[lname] = int32(i)
	}
	return ""
}

// classification is the full verdict on current route i, for messages.
func (pl *planner) classification(i int32) route.Classification {
	return pl.own.ClassifyAt(&pl.cur.Routes[i], pl.claim)
}

// makeEntries turns the nodes into desired routes, in node order, settles
// the reasons that depend on one node alone and finds the route of each
// entry's name.
func (pl *planner) makeEntries() {
	nodes := pl.in.Nodes
	pl.lnames = make([]string, len(nodes))
	pl.order = make([]int32, len(nodes))
	cidrs := 0
	for i := range nodes {
		pl.lnames[i] = strings.ToLower(nodes[i].Name)
		pl.order[i] = int32(i)
		cidrs += len(nodes[i].PodCIDRs)
	}
	slices.SortFunc(pl.order, func(a, b int32) int {
		return cmp.Or(strings.Compare(pl.lnames[a], pl.lnames[b]), strings.Compare(nodes[a].Name, nodes[b].Name), cmp.Compare(a, b))
	})
	pl.dup = make([]bool, len(nodes))
	for k := 1; k < len(pl.order); k++ {
		if a, b := pl.order[k-1], pl.order[k]; pl.lnames[a] == pl.lnames[b] {
			pl.dup[a], pl.dup[b] = true, true
		}
	}
	pl.spans = make([]span, len(nodes))
	pl.entries = make([]entry, 0, cidrs)
	var buf [96]byte
	for _, ni := range pl.order {
		n := &nodes[ni]
		lo := int32(len(pl.entries))
		cidrs := n.PodCIDRs
		if pl.p.StandDown {
			cidrs = nil // no route is wanted
		}
		for ci, cidr := range cidrs {
			cidr = cidr.Masked()
			if cidr.IsValid() && slices.ContainsFunc(n.PodCIDRs[:ci], func(p netip.Prefix) bool { return p.Masked() == cidr }) {
				continue // listed twice
			}
			pl.entries = append(pl.entries, entry{node: ni, cidr: cidr, exact: -1, incumbent: -1, target: -1, replaces: -1, detail: -1})
			e := &pl.entries[len(pl.entries)-1]
			switch {
			case !cidr.IsValid():
				pl.fail(e, ReasonNoPodCIDR, fmt.Sprintf("node %s has an invalid pod CIDR", n.Name), "")
				continue
			case !pl.own.Contains(cidr):
				pl.fail(e, ReasonOutsideClusterCIDR, fmt.Sprintf("pod CIDR %s of node %s is outside the cluster CIDRs %s", cidr, n.Name, prefixList(pl.in.ClusterCIDRs)), "")
				continue
			}
			e.inCluster = true
			// Look the name up before allocating it: in a steady state
			// every name exists and ARM's string is reused.
			// The node name is in lower case already, and netip prints
			// hex digits in lower case: this is the name in lower case.
			lname := appendName(buf[:0], pl.lnames[ni], cidr)
			if j, ok := pl.byName[string(lname)]; ok {
				e.exact, e.name = j, pl.cur.Routes[j].Name
				pl.routes[j].named = true
				if c := &pl.routes[j]; c.owned && !c.legacy && c.prefix == cidr {
					e.incumbent = j
					c.fate, c.entry = fateProtected, int32(len(pl.entries)-1)
				}
			} else {
				e.name = schemeName(n.Name, cidr)
			}
			hop, ok := n.NextHop(cidr)
			switch err := route.ValidateName(e.name); {
			case pl.dup[ni]:
				pl.fail(e, ReasonDuplicateNode, fmt.Sprintf("node name %s is used by more than one node (route names compare case-insensitively); none of them is routed", n.Name), "")
			case err != nil:
				pl.fail(e, ReasonInvalidRouteName, fmt.Sprintf("the route for pod CIDR %s of node %s cannot be named: %v", cidr, n.Name, err), "")
			case !ok || !hop.IsValid() || hop.IsUnspecified():
				pl.fail(e, ReasonNoNodeIP, fmt.Sprintf("node %s has no internal %s address for pod CIDR %s", n.Name, family(cidr), cidr), "")
			case len(pl.in.NodeNetworks) > 0 && !inAny(pl.in.NodeNetworks, hop):
				pl.fail(e, ReasonNextHopOutsideVNet, pl.outsideMessage(n.Name, hop, cidr), "")
			default:
				e.hop = hop
			}
			// Two pod CIDRs of one node can mangle to one name
			// (10.24.4.0/24 and 10.2.44.0/24); distinct nodes never
			// collide, since the mangled CIDR holds no '_'.
			for j := lo; j < int32(len(pl.entries))-1; j++ {
				if o := &pl.entries[j]; o.inCluster && strings.EqualFold(o.name, e.name) && !pl.dup[ni] {
					msg := fmt.Sprintf("pod CIDRs %s and %s of node %s map to the same route name %s", o.cidr, cidr, n.Name, e.name)
					pl.fail(o, ReasonNameConflict, msg, e.name)
					pl.fail(e, ReasonNameConflict, msg, e.name)
				}
			}
		}
		pl.spans[ni] = span{lo, int32(len(pl.entries))}
	}
}

// inAny reports whether a lies in one of ps.
func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxListedNetworks is how many node networks a NextHopOutsideVNet message
// lists before it says how many more there are.
const maxListedNetworks = 8

func (pl *planner) outsideMessage(node string, hop netip.Addr, cidr netip.Prefix) string {
	nets := pl.in.NodeNetworks
	list := prefixList(nets[:min(len(nets), maxListedNetworks)])
	if len(nets) > maxListedNetworks {
		list += fmt.Sprintf(" and %d more", len(nets)-maxListedNetworks)
	}
	return fmt.Sprintf("internal IP %s of node %s (the next hop of pod CIDR %s) is in none of the subnets of the virtual networks routekeeper guards%s (%s); no NIC can hold it, so Azure would deliver the pod traffic nowhere: fix the node's address, or add its subnet to the configuration", hop, node, cidr, pl.in.NodeNetworksNote, list)
}

// fail gives e a reason, unless it has one already.
func (pl *planner) fail(e *entry, r Reason, msg, other string) {
	if e.reason != "" {
		return
	}
	e.reason, e.detail = r, int32(len(pl.details))
	pl.details = append(pl.details, detail{msg: msg, other: other})
}

func (pl *planner) detailOf(e *entry) *detail { return &pl.details[e.detail] }

// schemeName is route.Name with one allocation.
func schemeName(node string, p netip.Prefix) string {
	var buf [96]byte
	return string(appendName(buf[:0], node, p))
}

func appendName(b []byte, node string, p netip.Prefix) []byte {
	var pb [48]byte
	b = append(b, node...)
	b = append(b, "____"...)
	for _, c := range p.Masked().AppendTo(pb[:0]) {
		if c != '.' && c != ':' && c != '/' {
			b = append(b, c)
		}
	}
	return b
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func prefixList(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

func (pl *planner) nodeName(e *entry) string { return pl.in.Nodes[e.node].Name }

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
				pl.fail(e, ReasonOverlappingPodCIDR, fmt.Sprintf("pod CIDR %s of node %s overlaps pod CIDR %s of node %s, which keeps its route; give node %s a pod CIDR of its own", e.cidr, pl.nodeName(e), k.cidr, pl.nodeName(k), pl.nodeName(e)), pl.nodeName(k))
			}
			continue
		}
		for _, i := range g {
			e := &pl.entries[i]
			o := &pl.entries[g[0]]
			if i == g[0] {
				o = &pl.entries[g[1]]
			}
			pl.fail(e, ReasonOverlappingPodCIDR, fmt.Sprintf("pod CIDR %s of node %s overlaps pod CIDR %s of node %s; no route is written for either until one of them changes", e.cidr, pl.nodeName(e), o.cidr, pl.nodeName(o)), pl.nodeName(o))
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
				pl.fail(e, ReasonNameConflict, fmt.Sprintf("route %s already exists in %s with prefix %s and next hop %s, and routekeeper does not own it (%s: %s); rename or delete it to let routekeeper route node %s",
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
		pl.fail(e, ReasonRouteNotManaged, fmt.Sprintf("pod CIDR %s of node %s is routed to %s by route %s, which routekeeper does not own (%s): traffic flows, route not managed; `--adopt matching` takes it over with no outage (renames it to %s in one write)",
			e.cidr, pl.nodeName(e), e.hop, r.Name, why, schemeName(pl.nodeName(e), e.cidr)), r.Name)
	} else {
		pl.fail(e, ReasonPrefixConflict, fmt.Sprintf("pod CIDR %s of node %s is held by route %s (next hop %s), which routekeeper does not own (%s); Azure allows one route per prefix: delete that route to let routekeeper route node %s",
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
				pl.fail(e, ReasonRouteLimit, fmt.Sprintf("%s is full: it may hold %d routes (routeTable.routeLimit) and node %s needs %d more; free room, give the cluster another table, or raise routeTable.routeLimit if it is below Azure's limit of 400 routes per route table", pl.table, pl.limit, pl.nodeName(e), need), "")
			}
		}
	}
}

// changeWhy says why an entry's route is created or updated.
func (pl *planner) changeWhy(e *entry) string {
	switch {
	case e.adopt:
		r := &pl.cur.Routes[e.replaces]
		return fmt.Sprintf("adopts route %s (same prefix and next hop), renamed in the same write", r.Name)
	case e.act == actCreate && e.replaces >= 0:
		return "replaces legacy route " + pl.cur.Routes[e.replaces].Name
	case e.act == actCreate && e.target >= 0:
		return "pod CIDR moved from route " + pl.cur.Routes[e.target].Name
	case e.act == actCreate:
		return "new route"
	}
	r := &pl.cur.Routes[e.target]
	switch {
	case pl.routes[e.target].prefix != e.cidr:
		return fmt.Sprintf("pod CIDR changed: %s -> %s", r.AddressPrefix, e.cidr)
	case r.NextHopType != route.VirtualAppliance || r.NextHopIP != e.hop:
		return fmt.Sprintf("next hop %s -> %s", hopText(r), e.hop)
	}
	return "provisioning state Failed: written again"
}

// deleteWhy says why an owned route is deleted.
func (pl *planner) deleteWhy(c *current) string {
	switch {
	case c.fate == fateRenamed && pl.entries[c.entry].adopt:
		return "adopted, renamed to " + pl.entries[c.entry].name
	case c.fate == fateRenamed:
		return "legacy name, renamed to " + pl.entries[c.entry].name
	case c.fate == fateReplaced:
		return "pod CIDR moved to node " + pl.nodeName(&pl.entries[c.entry])
	case pl.p.StandDown:
		return "the cluster stands down from host routes"
	}
	if pl.known(c.node) {
		return "pod CIDR no longer assigned to the node"
	}
	return "node no longer exists"
}

// finish assembles the plan: changes, conflicts, node statuses and the
// desired table.
func (pl *planner) finish() {
	p := pl.p
	routeNames := make([]string, len(pl.entries))
	changes, nupdates := 0, 0
	for i := range pl.entries {
		switch pl.entries[i].act {
		case actCreate:
			changes++
		case actUpdate:
			changes++
			nupdates++
		}
	}
	var deletes, held, unclaimed []int32
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
	p.Changes = make([]Change, 0, changes+len(deletes))
	updates := make([]Change, 0, nupdates)
	for _, ni := range pl.order {
		n := &pl.in.Nodes[ni]
		if p.StandDown {
			p.Nodes[n.Name] = NodeStatus{State: NotNeeded, Message: standDownNote}
			continue
		}
		if len(n.PodCIDRs) == 0 {
			reason, msg := ReasonNoPodCIDR, fmt.Sprintf("node %s has no pod CIDR yet (spec.podCIDRs is empty)", n.Name)
			if n.Problem != nil {
				reason, msg = n.Problem.Reason, n.Problem.Message
			}
			p.Conflicts = append(p.Conflicts, Conflict{Node: n.Name, Reason: reason, Message: msg})
			p.Nodes[n.Name] = NodeStatus{State: NotRouted, Reason: reason, Message: msg}
			continue
		}
		st := NodeStatus{State: Routed}
		var note *detail // the first RouteNotManaged of the node
		s := pl.spans[ni]
		k := s.lo
		for i := s.lo; i < s.hi; i++ {
			e := &pl.entries[i]
			switch {
			case e.reason == ReasonRouteNotManaged:
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
				ch := Change{Kind: Create, Route: e.route(), Node: n.Name, Reason: pl.changeWhy(e)}
				if e.adopt {
					ch.Adopts = pl.cur.Routes[e.replaces].Name
				}
				p.Changes = append(p.Changes, ch)
			case e.act == actUpdate:
				old := pl.cur.Routes[e.target]
				ch := Change{Kind: Update, Route: e.route(), Old: &old, Node: n.Name, Reason: pl.changeWhy(e)}
				if e.adopt {
					ch.Adopts = pl.cur.Routes[e.replaces].Name
				}
				updates = append(updates, ch)
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
			st.Reason, st.Message = ReasonRouteNotManaged, note.msg
		}
		if n.Problem != nil && st.State != NotRouted {
			st.State, st.Reason, st.Message = NotRouted, n.Problem.Reason, n.Problem.Message
		}
		p.Nodes[n.Name] = st
	}
	p.Changes = append(p.Changes, updates...)
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
	if len(p.Changes) > 0 || p.Claim {
		p.Desired = pl.desired()
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
