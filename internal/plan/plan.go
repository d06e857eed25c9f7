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

	"github.com/routekeeper/routekeeper/internal/reason"
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
	reason    reason.Reason
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
		return p.refuse(in.Nodes, reason.InvalidConfiguration, "invalid planner input: "+err.Error())
	}
	pl := &planner{in: in, own: in.Ownership(), limit: limit, cur: in.Current, p: p}
	if pl.cur == nil {
		pl.cur = &route.Table{}
		p.Create = true
	}
	pl.table = tableName(pl.cur, p.Create)

	switch why, msg := ClaimRefusal(pl.cur, pl.table, in.Cluster, in.ClusterCIDRs); {
	case why != "":
		return p.refuse(in.Nodes, why, msg)
	case len(pl.cur.ClaimValues()) == 1:
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
		return p.refuse(in.Nodes, reason.RouteTableInvalid, msg)
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

// ClaimRefusal is the claim rule: cluster may write table t (named name
// in the message) unless the table is claimed by another cluster
// (RouteTableClaimed) or by several (RouteTableInvalid); why is "" when it
// may. The planner refuses a plan by it, and a migration a table.
func ClaimRefusal(t *route.Table, name, cluster string, cidrs []netip.Prefix) (why reason.Reason, msg string) {
	claims := t.ClaimValues()
	switch {
	case len(claims) > 1:
		return reason.RouteTableInvalid, fmt.Sprintf("%s has claim tags %s for several clusters (%s); remove all but one", name, route.ClaimTag, strings.Join(claims, ", "))
	case len(claims) == 1 && claims[0] != cluster:
		return reason.RouteTableClaimed, fmt.Sprintf("%s is claimed by cluster %q (tag %s), not by this cluster %q; routekeeper writes nothing to it%s", name, claims[0], route.ClaimTag, cluster, CIDROverlap(t, claims[0], cidrs))
	}
	return "", ""
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
func (p *Plan) refuse(nodes []source.Node, why reason.Reason, msg string) *Plan {
	p.Refused, p.RefusedReason = msg, why
	p.Changes, p.Conflicts, p.Desired, p.Claim, p.Create = []Change{}, []Conflict{}, nil, false, false
	clear(p.Nodes)
	for _, n := range nodes {
		p.Nodes[n.Name] = NodeStatus{State: NotRouted, Reason: why, Message: msg}
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
				pl.fail(e, reason.NoPodCIDR, fmt.Sprintf("node %s has an invalid pod CIDR", n.Name), "")
				continue
			case !pl.own.Contains(cidr):
				pl.fail(e, reason.OutsideClusterCIDR, fmt.Sprintf("pod CIDR %s of node %s is outside the cluster CIDRs %s", cidr, n.Name, prefixList(pl.in.ClusterCIDRs)), "")
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
				pl.fail(e, reason.DuplicateNode, fmt.Sprintf("node name %s is used by more than one node (route names compare case-insensitively); none of them is routed", n.Name), "")
			case err != nil:
				pl.fail(e, reason.InvalidRouteName, fmt.Sprintf("the route for pod CIDR %s of node %s cannot be named: %v", cidr, n.Name, err), "")
			case !ok || !hop.IsValid() || hop.IsUnspecified():
				pl.fail(e, reason.NoNodeIP, fmt.Sprintf("node %s has no internal %s address for pod CIDR %s", n.Name, family(cidr), cidr), "")
			case len(pl.in.NodeNetworks) > 0 && !inAny(pl.in.NodeNetworks, hop):
				pl.fail(e, reason.NextHopOutsideVNet, pl.outsideMessage(n.Name, hop, cidr), "")
			default:
				e.hop = hop
			}
			// Two pod CIDRs of one node can mangle to one name
			// (10.24.4.0/24 and 10.2.44.0/24); distinct nodes never
			// collide, since the mangled CIDR holds no '_'.
			for j := lo; j < int32(len(pl.entries))-1; j++ {
				if o := &pl.entries[j]; o.inCluster && strings.EqualFold(o.name, e.name) && !pl.dup[ni] {
					msg := fmt.Sprintf("pod CIDRs %s and %s of node %s map to the same route name %s", o.cidr, cidr, n.Name, e.name)
					pl.fail(o, reason.NameConflict, msg, e.name)
					pl.fail(e, reason.NameConflict, msg, e.name)
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
func (pl *planner) fail(e *entry, r reason.Reason, msg, other string) {
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

// limitFrom says where the route limit came from (Input.LimitFrom).
func (pl *planner) limitFrom() string {
	if pl.in.LimitFrom != "" {
		return pl.in.LimitFrom
	}
	if pl.in.Limit == 0 {
		return fmt.Sprintf("Azure's default of %d routes per route table", DefaultLimit)
	}
	return "routeTable.routeLimit"
}
