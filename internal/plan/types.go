package plan

import (
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// DefaultLimit is Azure's default limit of routes per route table (1,000
// since May 2026), used when Input.Limit is 0. routekeeper plans with the
// limit Azure states for the table's region (internal/routelimit).
const DefaultLimit = 1000

// Input is everything a plan is computed from.
type Input struct {
	// Cluster is this cluster's name: the value of the table's claim tag.
	Cluster string
	// ClusterCIDRs are the cluster's pod address ranges. Only routes inside
	// them can be owned, and every pod CIDR must lie inside one.
	ClusterCIDRs []netip.Prefix
	// Limit is the most routes the table may hold (the whole table,
	// custom routes included); 0 means DefaultLimit. LimitFrom says where
	// it came from, for the message of a node that does not fit
	// ("Azure's limit in westeurope of 1,000 routes per route table, read
	// from the usages API"); "" says routeTable.routeLimit.
	Limit     int
	LimitFrom string
	// Nodes are the desired state.
	Nodes []source.Node
	// Current is the table as read from ARM; nil when it does not exist
	// (the plan is then made against an empty table, with the claim). The
	// planner never modifies it.
	Current *route.Table
	// LegacyNames owns routes named by the node name alone (see
	// route.Ownership.LegacyNames) and renames them to the current scheme.
	LegacyNames bool
	// NodeNetworks are the address prefixes of the subnets a node's
	// internal IP may lie in: every subnet of the virtual networks whose
	// subnets routekeeper guards, and of the table's (see NodeNetworks).
	// When it is not empty, a pod CIDR whose next hop lies in none of them
	// is not routed (reason.NextHopOutsideVNet): no NIC can hold that
	// address, so Azure would deliver the pod traffic nowhere. Empty means
	// unknown: next hops are not checked.
	NodeNetworks []netip.Prefix
	// NodeNetworksNote is appended to a NextHopOutsideVNet message after
	// "the subnets of the virtual networks routekeeper guards": what
	// NodeNetworks covers beyond them (" or of the networks peered with
	// them (hub-vnet)"), or what could not be read.
	NodeNetworksNote string
	// Adopt says what happens to a route routekeeper does not own that
	// has exactly the prefix and next hop a node needs (Kubernetes the Hard
	// Way's kubernetes-route-10-200-0-0-24, cloud-provider-azure's legacy
	// <node> names, AKS routes of another node name in an unclaimed
	// table): AdoptNone (the default, "") leaves it alone and the node
	// counts as routed by it (reason.RouteNotManaged); AdoptMatching
	// replaces it with the node's route in the same PUT, a rename in which
	// the prefix never lacks its next hop.
	Adopt AdoptPolicy
	// Claim writes the claim tag to an unclaimed table with the next write
	// (alone, when nothing else changes). Without it the claim is written
	// only when the plan creates the table. Until the table is claimed,
	// scheme routes of nodes this cluster does not have may be another
	// cluster's: they are reported in Plan.Unclaimed, never deleted.
	Claim bool
	// MaxDeletes caps the routes one plan removes from the table: above
	// it nothing is deleted (Plan.HeldDeletes) while creates and updates
	// still go through. A route replaced in the same write by one of the
	// same prefix (a moved pod CIDR, a rename, an adoption) does not
	// count: its prefix never disappears. 0 means DefaultMaxDeletes of the
	// owned routes; a negative value turns the cap off.
	MaxDeletes int
	// AllowEmptySource lets a plan without nodes delete owned routes. By
	// default an empty source deletes nothing (a kube source pointed at an
	// empty or wrong cluster must not wipe the table).
	AllowEmptySource bool
	// StandDown: the cluster no longer uses host routes (routes:
	// standDown; it moved to an overlay CNI). No route is wanted, so every
	// route this cluster owns is stale: with ConfirmStandDown they are all
	// removed by this plan's one write, whatever MaxDeletes and
	// AllowEmptySource say (the stand-down is the mass deletion those
	// guards exist to stop, confirmed); without it every one is held
	// (HeldReason StandDownUnconfirmed). Routes routekeeper does not own
	// stay, no claim is written, and every node is NotNeeded.
	StandDown bool
	// ConfirmStandDown confirms the stand-down (controller.confirmStandDown).
	// It also confirms the one the nodes imply: when there are nodes and
	// none has a pod CIDR (PodCIDRsGone), the cluster looks like it moved
	// to an overlay — or like a new cluster whose IPAM has not assigned pod
	// CIDRs yet. Without the confirmation every deletion is then held
	// (StandDownUnconfirmed) and the nodes are NoPodCIDR; with it the plan
	// stands down.
	ConfirmStandDown bool
}

// StandsDown reports whether a plan of in stands down from host routes:
// the configuration says so, or it confirms what the nodes imply.
func (in Input) StandsDown() bool {
	return in.StandDown || in.ConfirmStandDown && PodCIDRsGone(in.Nodes)
}

// PodCIDRsGone reports whether nodes look like a cluster that stopped
// using host routes: at least one node, none with a pod CIDR, and none
// with a source problem (a node the built-in IPAM could not give a pod
// CIDR is IPAM's failure, not a stand-down).
func PodCIDRsGone(nodes []source.Node) bool {
	for _, n := range nodes {
		if len(n.PodCIDRs) > 0 || n.Problem != nil {
			return false
		}
	}
	return len(nodes) > 0
}

// AdoptPolicy is Input.Adopt.
type AdoptPolicy string

// The adoption policies.
const (
	AdoptNone     AdoptPolicy = "none"
	AdoptMatching AdoptPolicy = "matching"
)

// DefaultMaxDeletes is the deletion cap when Input.MaxDeletes is 0: the
// larger of 10 routes and 10 % of the routes the cluster owns in the table
// (rounded up), so a small cluster can lose a handful of nodes at once and a
// large one a tenth of them, but no source glitch empties a table in one
// pass.
func DefaultMaxDeletes(owned int) int { return max(10, (owned+9)/10) }

// Ownership returns the ownership rules the plan applies.
func (in Input) Ownership() route.Ownership {
	return route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs, LegacyNames: in.LegacyNames}
}

// Validate checks the configuration part of the input; Compute refuses to
// plan (reason.InvalidConfiguration) when it fails.
func (in Input) Validate() error {
	if in.Cluster == "" {
		return fmt.Errorf("cluster name is empty: it is the value of the %s tag that claims the route table", route.ClaimTag)
	}
	if len(in.Cluster) > 256 {
		return fmt.Errorf("cluster name %q is %d characters long; an Azure tag value holds at most 256", in.Cluster, len(in.Cluster))
	}
	if len(in.ClusterCIDRs) == 0 {
		return fmt.Errorf("cluster CIDRs are empty: routekeeper owns only routes inside them")
	}
	for i, c := range in.ClusterCIDRs {
		if !c.IsValid() {
			return fmt.Errorf("cluster CIDR #%d is not a valid prefix", i+1)
		}
	}
	for i, p := range in.NodeNetworks {
		if !p.IsValid() {
			return fmt.Errorf("node network #%d is not a valid prefix", i+1)
		}
	}
	if in.Limit < 0 {
		return fmt.Errorf("route limit %d is negative (0 means %d)", in.Limit, DefaultLimit)
	}
	switch in.Adopt {
	case "", AdoptNone, AdoptMatching:
	default:
		return fmt.Errorf("adopt policy %q is not one of %s, %s", in.Adopt, AdoptNone, AdoptMatching)
	}
	return nil
}

// ChangeKind is what a change does to one route.
type ChangeKind int

// The kinds of change, in the order a plan lists them.
const (
	Create ChangeKind = iota
	Update
	Delete
)

func (k ChangeKind) String() string {
	switch k {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// MarshalText makes JSON and YAML output carry the String form.
func (k ChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Change is one route created, updated or deleted by the plan. All changes
// of a plan are carried by one PUT of Plan.Desired.
type Change struct {
	Kind ChangeKind `json:"kind"`
	// Route is the route after the change; for Delete, the route deleted.
	Route route.Route `json:"route"`
	// Old is the route before an Update.
	Old *route.Route `json:"old,omitempty"`
	// Node is the node the route is (or was) for, "" when unknown.
	Node string `json:"node,omitempty"`
	// Reason says why, for people: "new route", "next hop 10.0.0.4 -> 10.0.0.5",
	// "node worker-3 no longer exists".
	Reason string `json:"reason"`
	// Adopts is set on the Create of an adoption (or, rarely, the Update
	// that moves the node's route onto the prefix): the name of the route
	// not owned by routekeeper, with the same prefix and next hop, that
	// the same write removes (its Delete is in the plan too). diff shows
	// the pair as one rename.
	Adopts string `json:"adopts,omitempty"`
	// AdoptedBy is set on the Delete half of an adoption: the name of the
	// node route that replaces the adopted route in the same write. Such a
	// delete is a rename, not a stale route.
	AdoptedBy string `json:"adoptedBy,omitempty"`
}

// Stale reports whether the change deletes a route that no node asks for
// any more (not the old half of an adoption).
func (c Change) Stale() bool { return c.Kind == Delete && c.AdoptedBy == "" }

// Conflict is one desired route that the plan does not write, with why.
// Besides conflicts proper (prefix, name, overlap, outside the cluster
// CIDRs) it covers every other reason a node's route is not written (route
// limit, no pod CIDR, no node IP, invalid name), so callers report them all
// the same way.
type Conflict struct {
	Node string `json:"node"`
	// Prefix is the pod CIDR; invalid (omitted) for reason.NoPodCIDR.
	Prefix  netip.Prefix  `json:"prefix,omitzero"`
	Reason  reason.Reason `json:"reason"`
	Message string        `json:"message"`
	// Route names the other party: the route holding the prefix or name,
	// or the other node of an overlap.
	Route string `json:"route,omitempty"`
	// Forwarding is set when the route in the way already sends the
	// prefix to this node's address: traffic flows, routekeeper just does
	// not manage the route (a hand-made route of Kubernetes the Hard Way,
	// for example). The reason is then reason.RouteNotManaged, and the
	// node is not NotRouted for it.
	Forwarding bool `json:"forwarding,omitempty"`
}

// NodeState is where a node's routes stand after the plan.
type NodeState string

// The node states.
const (
	// Routed: every pod CIDR of the node has its correct route in the table
	// already; the plan changes none of them.
	Routed NodeState = "Routed"
	// Pending: every pod CIDR will have its correct route once this plan's
	// write succeeds.
	Pending NodeState = "Pending"
	// NotRouted: at least one pod CIDR will have no correct route; Reason
	// says why (the first failing pod CIDR in the node's order).
	NotRouted NodeState = "NotRouted"
	// NotNeeded: the plan stands down from host routes (Plan.StandDown):
	// the node needs no route.
	NotNeeded NodeState = "NotNeeded"
)

// NodeStatus is one node's outcome.
type NodeStatus struct {
	State NodeState `json:"state"`
	// Reason and Message say why a NotRouted node is not routed. On a
	// Routed or Pending node they are a note: reason.RouteNotManaged (a
	// route routekeeper does not own carries the node's traffic).
	Reason  reason.Reason `json:"reason,omitempty"`
	Message string        `json:"message,omitempty"`
	// Routes are the names of the node's routes in the table after the
	// plan (kept, updated or created), in the node's pod CIDR order.
	Routes []string `json:"routes,omitempty"`
}

// Plan is the outcome of Compute.
type Plan struct {
	// Changes are the route creates, updates and deletes: creates first,
	// then updates, each in node order (node names compared
	// case-insensitively) and then in the order of the node's pod CIDRs;
	// then deletes, sorted by the node named in the route, prefix and name.
	Changes []Change `json:"changes"`
	// Conflicts are the desired routes not written, in node order and then
	// in the order of the node's pod CIDRs.
	Conflicts []Conflict `json:"conflicts"`
	// Nodes has one status per input node, keyed by the node's name.
	Nodes map[string]NodeStatus `json:"nodes"`
	// Claim is set when the write adds the claim tag (adoption or
	// creation).
	Claim bool `json:"claim"`
	// Create is set when Current was nil: Desired is a new table that the
	// caller creates (filling in ID, name and location).
	Create bool `json:"create,omitempty"`
	// Desired is the whole table to PUT: a copy of Current with the changes
	// and the claim applied, carrying Current's etag for If-Match. It is nil
	// when nothing needs writing or the plan is refused.
	Desired *route.Table `json:"desired,omitempty"`
	// Refused is set when the plan writes nothing at all (table claimed by
	// another cluster, invalid input or table); RefusedReason is its reason
	// and every node is NotRouted with it.
	Refused       string        `json:"refused,omitempty"`
	RefusedReason reason.Reason `json:"refusedReason,omitempty"`
	// StandDown: the plan stands down from host routes (Input.StandsDown):
	// no route is wanted, every node is NotNeeded, and every route this
	// cluster owns is deleted (confirmed) or held.
	StandDown bool `json:"standDown,omitempty"`
	// Limit is the route limit the plan applied.
	Limit int `json:"limit"`
	// MaxDeletes is the deletion cap the plan applied (negative: none).
	MaxDeletes int `json:"maxDeletes"`
	// HeldDeletes are the deletions the guard held back (Input.MaxDeletes,
	// Input.AllowEmptySource): Kind Delete, in the order Changes would
	// list them. None of them is in Changes or missing from Desired.
	// HeldReason is reason.TooManyDeletes or reason.EmptySource and
	// HeldMessage says the number and the override.
	HeldDeletes []Change      `json:"heldDeletes,omitempty"`
	HeldReason  reason.Reason `json:"heldReason,omitempty"`
	HeldMessage string        `json:"heldMessage,omitempty"`
	// Unclaimed are routes in the naming scheme for nodes this cluster
	// does not have, in a table not claimed yet: they may be another
	// cluster's, so they are reported (Kind Delete, Reason with the
	// command to remove one by hand), never deleted, until the claim
	// exists (Input.Claim).
	Unclaimed []Change `json:"unclaimed,omitempty"`
}

// Stale are the routes of this cluster no node asks for: the deletes (not
// the old half of an adoption), the deletions held back and the routes of
// unknown nodes left in an unclaimed table.
func (p *Plan) Stale() []Change {
	if p == nil {
		return nil
	}
	var out []Change
	for _, c := range p.Changes {
		if c.Stale() {
			out = append(out, c)
		}
	}
	return append(append(out, p.HeldDeletes...), p.Unclaimed...)
}

// NeedsWrite reports whether the plan has anything to write.
func (p *Plan) NeedsWrite() bool { return p != nil && p.Desired != nil }

// Counts returns the number of creates, updates and deletes.
func (p *Plan) Counts() (creates, updates, deletes int) {
	for _, c := range p.Changes {
		switch c.Kind {
		case Create:
			creates++
		case Update:
			updates++
		case Delete:
			deletes++
		}
	}
	return creates, updates, deletes
}

// String summarizes the plan for logs.
func (p *Plan) String() string {
	if p.Refused != "" {
		return fmt.Sprintf("refused (%s): %s", p.RefusedReason, p.Refused)
	}
	c, u, d := p.Counts()
	s := fmt.Sprintf("%d to create, %d to update, %d to delete, %d conflicts", c, u, d, len(p.Conflicts))
	if p.Claim {
		s += ", claim table"
	}
	if len(p.HeldDeletes) > 0 {
		s += fmt.Sprintf(", %d deletes held (%s)", len(p.HeldDeletes), p.HeldReason)
	}
	if len(p.Unclaimed) > 0 {
		s += fmt.Sprintf(", %d routes of unknown nodes left in the unclaimed table", len(p.Unclaimed))
	}
	return s
}
