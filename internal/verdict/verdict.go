// Package verdict is where routekeeper decides, in one pure function,
// whether each node is routed and why not. Judge takes what one pass
// observed (internal/observe), what is wanted (the configuration, the
// nodes, what the controller remembers of earlier passes) and the outcome
// of the writes the pass made, and returns the Verdict: for the route table
// (which one routekeeper keeps, whether it is created, claimed or refused),
// for every guarded subnet (its association state after the writes, the
// action to take, the fix), for every node (routed or not, with one reason
// of the closed vocabulary in internal/reason), whether pod traffic really
// reaches the routed nodes (reach.go), the actions to take, and what a
// person must do about it all: Findings (findings.go), the one list every
// exit code comes from.
//
// It does no I/O, reads no clock and logs nothing, and its dependencies
// hold no cloud package (the observation's types are internal/observe's,
// ARM's errors internal/armerr's). The controller (run and its guard),
// diff, doctor, routes list, trace, iac check, the overlay pre-flight, the
// node conditions, events and metrics all read a Verdict; none of them
// derives any part of it again. The sub-decisions it is made of are pure
// too: the association decision (internal/assoc), the route plan
// (internal/plan) and Azure's route selection (internal/routing). A pass
// judges twice: before it acts (the actions), and with the outcome of its
// writes (what is true now).
//
// The rules for a node, in order:
//
//	the table could not be read                       unknown: no node verdict (the last one stands)
//	the table is missing and is not created           RouteTableMissing
//	the plan is refused (claimed, invalid...)         the plan's reason, for every node
//	the planner cannot route one of its pod CIDRs     the planner's reason (RouteTableFull, PrefixConflict...)
//	a pod CIDR lacks its route in the table           after a write that succeeded: RouteNotReadBack;
//	                                                  that failed: RouteWriteFailed, or RouteWriteDenied
//	                                                  when ARM refused it (permission, lock, policy);
//	                                                  else NoRouteCreated
//	every pod CIDR has its route (by content)         routed: RouteCreated, or RouteNotManaged when a
//	                                                  route routekeeper does not own carries one
//	...but the node's subnet has no table             RouteTableDetached
//	...but its subnet uses a table without the route  SubnetRouteTableLacksRoute
//
// A route counts when its prefix and next hop are right and it is not
// Failed (invariant 8: another writer's operation in progress does not
// withdraw it). A node is made routed for the first time only by a route
// read Succeeded (Node.Pending otherwise), and a route this pass's write
// carried must read back Succeeded (invariant 4).
package verdict

import (
	"errors"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Mode says whether routekeeper writes routes.
type Mode string

// The route modes.
const (
	// Manage: routekeeper writes the routes.
	Manage Mode = "manage"
	// Observe: the platform (AKS) writes routes; routekeeper only reports
	// missing, stale and conflicting routes and never writes a route.
	Observe Mode = "observe"
	// StandDown: the cluster no longer uses host routes (it moved to an
	// overlay CNI): routekeeper removes its own routes once the stand-down
	// is confirmed (Desired.ConfirmStandDown), and nothing else
	// (standdown.go).
	StandDown Mode = "standDown"
)

// Errors a verdict ends a pass with when it writes nothing to the table.
var (
	// ErrTableMissing: the route table does not exist and may not be
	// created (not allowed, or nothing would use it).
	ErrTableMissing = errors.New("route table does not exist")
	// ErrRefused: the plan refused to write (for example the table is
	// claimed by another cluster).
	ErrRefused = errors.New("refusing to write the route table")
)

// Decided reports whether err, a verdict's Err, is one of its decisions
// about the state (the table is missing and not created: ErrTableMissing;
// the plan is refused: ErrRefused) rather than a failure of the pass (a
// read or a write that failed). The verdict's findings report a decision,
// so every command exits on it with the findings' code (3), as on any
// finding, not with an error's (1).
func Decided(err error) bool {
	return errors.Is(err, ErrTableMissing) || errors.Is(err, ErrRefused)
}

// Desired is everything a verdict is judged against besides the cloud: the
// configuration, the nodes, and what the controller remembers.
type Desired struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	// Limit is the route limit in force (0: plan.DefaultLimit): Azure's
	// for the table's region, or routeTable.routeLimit below it
	// (internal/routelimit). LimitFrom says where it came from, for the
	// messages of nodes that do not fit and doctor ("" leaves them to say
	// routeTable.routeLimit).
	Limit     int
	LimitFrom string
	// Adopt, MaxDeletes and AllowEmptySource go to the planner as they are.
	Adopt            plan.AdoptPolicy
	MaxDeletes       int
	AllowEmptySource bool
	// Claim writes the claim tag with the next write (routeTable.claim, a
	// mirror); a table followed to is claimed anyway.
	Claim bool
	Mode  Mode
	// ConfirmStandDown confirms the stand-down (plan.Input's): the one
	// Mode StandDown asks for, or the one nodes without pod CIDRs imply.
	ConfirmStandDown bool
	// Policy and Restore are the association policy (default enforce).
	Policy  assoc.Policy
	Restore bool
	// CreateAllowed: a missing table may be created (tagged, filled,
	// associated). Location is where.
	CreateAllowed bool
	Location      string
	// Configured is the table of the configuration.
	Configured string
	// Table is the table kept now: Configured, or the one a followed swap
	// or migration led to earlier in this process. "" means Configured.
	Table string
	// Previous are the tables kept before; FollowedFrom is set while a
	// swap followed by the guard has not been filled yet.
	Previous     []string
	FollowedFrom string
	// TableExisted: the table existed earlier in this process, so creating
	// it again is a re-creation (it was deleted out of band).
	TableExisted bool
	// Nodes are the desired state.
	Nodes []source.Node
	// Routed are the nodes routed when last judged (the controller's
	// memory); with a node's own NetworkAvailable, a node routed before
	// stays routed while another writer's operation holds its route.
	Routed map[string]bool
}

// Outcome is what the writes of a pass did. A nil *Outcome means nothing
// was attempted yet: the verdict is the one the pass acts on (or a dry run).
type Outcome struct {
	// Table is the write of the route table; nil when none was made.
	Table *TableWrite
	// Subnets are the association writes, by armid.Key of the subnet.
	Subnets map[string]Write
}

// Write is the outcome of one write. The controller classifies the
// cloud's error (the judge imports no cloud package).
type Write struct {
	// Err is nil when the write succeeded.
	Err error
	// Raced: another writer came first (412, 409): the pass observes again.
	Raced bool
	// Lost: the write was sent and its answer lost, so it may or may not
	// have been applied (invariant 2): the pass observes again, and the
	// resource is written next only from that fresh read.
	Lost bool
	// Refused: ARM refused it for who routekeeper is or what governs the
	// scope (Err is the refusal); nil otherwise.
	Refused *observe.Refusal
	// Held: not sent, because an earlier refusal of the same write is
	// being waited out (Err and Refused are that refusal's).
	Held bool
	// Full: ARM refused the table write for holding more routes than
	// Azure allows (armerr.ErrRouteTableFull): its nodes are
	// RouteTableFull, never RouteWriteFailed. FullLimit is the limit ARM's
	// answer named (0: none).
	Full      bool
	FullLimit int
}

// TableWrite is the outcome of the one PUT of the route table.
type TableWrite struct {
	Write
	// ReadBack is the table as read back after the write; nil when it
	// failed.
	ReadBack *route.Table
}

// Verdict is the outcome of Judge.
type Verdict struct {
	// Table is the route table routekeeper keeps after this verdict.
	Table string `json:"routeTable"`
	// Decision is the association decision (which table, each subnet's
	// state and action). Plan is the route plan against Table; nil when
	// Table could not be read.
	Decision *assoc.Decision `json:"-"`
	Plan     *plan.Plan      `json:"-"`
	// Current is the table as it stands: read back after this pass's
	// write, else as observed; nil when it does not exist.
	Current *route.Table `json:"-"`
	// Nodes is one verdict per node, by name. Empty when the table could
	// not be read: nothing is known of the nodes then.
	Nodes map[string]Node `json:"nodes"`
	// Subnets is one verdict per guarded subnet, in the configuration's
	// order, after the outcome.
	Subnets []Subnet `json:"subnets"`
	// Routes counts the routes of Current against the nodes; nil when the
	// table could not be read.
	Routes *RouteCounts `json:"routes,omitempty"`
	// Wrote: the write of the table succeeded.
	Wrote bool `json:"wrote"`
	// Denials are the writes of the outcome Azure refused for who
	// routekeeper is or what governs the scope, with their fixes.
	Denials []Denial `json:"denials,omitempty"`
	// Access is every action routekeeper needs checked against what the
	// identity may do, when the observation read permissions (doctor).
	Access []Access `json:"access,omitempty"`
	// Reach is what stops pod traffic to nodes whose route exists
	// (reach.go); ReachUnknown says what of it could not be checked.
	Reach        []Reach `json:"reach,omitempty"`
	ReachUnknown string  `json:"reachUnknown,omitempty"`
	// Err is what the pass ends with: the table could not be read, is
	// missing and not created, the plan was refused, or the write failed.
	Err error `json:"-"`

	want     Desired
	guarded  []string // the configured subnets (the observation's scope)
	routing  *routing.State
	tracer   *routing.Tracer
	mode     Mode
	write    *route.Table // the table to PUT; nil when none
	etag     string
	acted    bool
	nodeList []source.Node
}

// Node is the verdict on one node.
type Node struct {
	// Routed: every pod CIDR of the node has its correct route in the
	// table its subnet uses.
	Routed bool `json:"routed"`
	// Pending: its routes are right by content, but some route is not
	// (yet) read Succeeded: another writer's operation is in progress. A
	// node routed before stays routed; one that was not is not routed yet
	// (RouteProvisioning). Every status writer reads Routed alone.
	Pending bool          `json:"pending,omitempty"`
	Reason  reason.Reason `json:"reason,omitempty"`
	Message string        `json:"message,omitempty"`
	// Actionable: not routed now, and this verdict's actions (the table
	// write, a subnet association) route it.
	Actionable bool `json:"actionable,omitempty"`
	// Subnet is the guarded subnet that holds the node's address: the one
	// whose association decides whether Azure uses its route; "" when no
	// guarded subnet does.
	Subnet string `json:"subnet,omitempty"`
}

// Subnet is the verdict on one guarded subnet: the association decision
// and what became of its action.
type Subnet struct {
	assoc.SubnetDecision
	// Repaired: the pass wrote the subnet (or adopted its table).
	Repaired bool `json:"repaired,omitempty"`
	// Recreated: the repair re-created routekeeper's table, deleted out
	// of band, before associating it.
	Recreated bool `json:"recreated,omitempty"`
	// RepairFailed: the association write failed (Err says how).
	RepairFailed bool `json:"repairFailed,omitempty"`
	// RepairHeld: the failed repair was not tried again this pass; an
	// earlier refusal of it is being waited out.
	RepairHeld bool  `json:"repairHeld,omitempty"`
	Err        error `json:"-"`
}

// Reason is why the subnet's nodes are not routed through it: the word
// of internal/reason its state stands for, "" when it is on our table (or
// its state says nothing of its nodes: missing, unreadable).
func (s Subnet) Reason() reason.Reason {
	switch s.State {
	case assoc.Detached:
		return reason.RouteTableDetached
	case assoc.OtherTable, assoc.Previous, assoc.Conflict:
		return reason.SubnetRouteTableLacksRoute
	}
	return ""
}

// Problem reports whether the subnet is left in a state that needs
// attention: not on our table, and no action of this verdict puts it there
// (or the one taken failed).
func (s Subnet) Problem() bool {
	if s.State.OnTable() {
		return false
	}
	return s.Action == assoc.None || s.Action == "" || s.RepairFailed || s.TableMissing
}

// Kubernetes event reasons of subnet verdicts (Subnet.EventReason).
const (
	EventReassociated     = "RouteTableReassociated"
	EventSwapFollowed     = "RouteTableSwapFollowed"
	EventDetached         = "RouteTableDetached"
	EventOtherTable       = "RouteTableSwapped"
	EventClaimConflict    = "RouteTableClaimConflict"
	EventSubnetMissing    = "SubnetMissing"
	EventAssociationError = "AssociationCheckFailed"
)

// EventReason is the reason of the event that reports the subnet's
// verdict, "" when there is nothing to report.
func (s Subnet) EventReason() string {
	switch s.State {
	case assoc.Reassociated:
		return EventReassociated
	case assoc.Followed:
		return EventSwapFollowed
	case assoc.Detached:
		return EventDetached
	case assoc.OtherTable, assoc.Previous:
		return EventOtherTable
	case assoc.Conflict:
		return EventClaimConflict
	case assoc.SubnetMissing:
		return EventSubnetMissing
	case assoc.Unreadable:
		return EventAssociationError
	}
	return ""
}

// Warning reports whether the subnet's event is a warning (a problem), not
// a normal report (a repair, a followed swap).
func (s Subnet) Warning() bool { return s.Problem() }

// RouteCounts describe a route table against the nodes, for metrics and
// observe mode's reports.
type RouteCounts struct {
	// Desired is the number of pod CIDRs of the nodes: one route each.
	Desired int `json:"desired"`
	// Present is the number of desired routes in the table, correct (name,
	// prefix, next hop, provisioned).
	Present int `json:"present"`
	// Owned and Foreign split the table's routes by owner (this cluster,
	// anyone else); Stale is the number of owned routes no node asks for.
	Owned   int `json:"owned"`
	Foreign int `json:"foreign"`
	Stale   int `json:"stale"`
}

// Missing is the number of desired routes absent or wrong in the table.
func (rc RouteCounts) Missing() int { return rc.Desired - rc.Present }

// Unrouted is the number of nodes not routed.
func (v *Verdict) Unrouted() int { return CountNodes(v.Nodes).NotRouted }

// NodeCounts count node verdicts: the one count every status writer,
// metric and summary line reads.
type NodeCounts struct {
	Routed, NotRouted int
	// Unmanaged counts the routed nodes whose route routekeeper does not
	// own (RouteNotManaged).
	Unmanaged int
	// ByReason counts the nodes not routed, by reason.
	ByReason map[reason.Reason]int
}

// CountNodes counts node verdicts.
func CountNodes(nodes map[string]Node) NodeCounts {
	c := NodeCounts{ByReason: map[reason.Reason]int{}}
	for _, nv := range nodes {
		switch {
		case nv.Routed && nv.Reason == reason.RouteNotManaged:
			c.Routed++
			c.Unmanaged++
		case nv.Routed:
			c.Routed++
		default:
			c.NotRouted++
			c.ByReason[nv.Reason]++
		}
	}
	return c
}

// Routed is the number of routed nodes.
func (v *Verdict) Routed() int { return len(v.Nodes) - v.Unrouted() }

// Repairs counts the subnets the pass repaired.
func (v *Verdict) Repairs() int { return CountRepaired(v.Subnets) }

// CountProblems counts the subnets left in a state that needs attention
// (Subnet.Problem).
func CountProblems(subnets []Subnet) int {
	return countSubnets(subnets, Subnet.Problem)
}

// CountRepaired counts the subnets the pass repaired.
func CountRepaired(subnets []Subnet) int {
	return countSubnets(subnets, func(s Subnet) bool { return s.Repaired })
}

func countSubnets(subnets []Subnet, f func(Subnet) bool) int {
	n := 0
	for _, s := range subnets {
		if f(s) {
			n++
		}
	}
	return n
}

// TableWrite is the table write this verdict calls for: the whole table to
// PUT and the etag for If-Match ("" = create, If-None-Match: *); ok is false
// when nothing is to be written (nothing changes, observe mode, a refused
// plan, a table missing that is not created, or after the outcome).
func (v *Verdict) TableWrite() (t *route.Table, etag string, ok bool) {
	if v.write == nil {
		return nil, "", false
	}
	return v.write, v.etag, true
}

// Associations are the subnets this verdict associates with Table, after
// the table write: Associate and CreateThenAssociate actions.
func (v *Verdict) Associations() []Subnet {
	if v.acted || v.Decision.TableErr != nil {
		// After the writes there is nothing left to do; a table that could
		// not be read is associated with nothing.
		return nil
	}
	var out []Subnet
	for _, s := range v.Subnets {
		if s.Action == assoc.Associate || s.Action == assoc.CreateThenAssociate {
			out = append(out, s)
		}
	}
	return out
}

// Changes reports whether the verdict's actions change anything: a table
// write, or a subnet association.
func (v *Verdict) Changes() bool {
	_, _, w := v.TableWrite()
	return w || len(v.Associations()) > 0
}

// Mode is the route mode the verdict was judged in.
func (v *Verdict) Mode() Mode { return v.mode }

// SourceNodes are the nodes the verdict was judged on.
func (v *Verdict) SourceNodes() []source.Node { return v.nodeList }

// Judge returns the verdict of a pass. It is pure.
func Judge(o *observe.Observation, want Desired, out *Outcome) *Verdict {
	if want.Table == "" {
		want.Table = want.Configured
	}
	if want.Mode == "" {
		want.Mode = Manage
	}
	if want.Policy == "" {
		want.Policy = assoc.Enforce
	}
	j := &judge{o: o, want: want, out: out}
	return j.run()
}

// AssocInput is the association decision's input from an observation.
func AssocInput(o *observe.Observation, want Desired) assoc.Input {
	in := assoc.Input{
		Cluster:       want.Cluster,
		ClusterCIDRs:  want.ClusterCIDRs,
		Policy:        want.Policy,
		Restore:       want.Restore,
		Observe:       want.Mode == Observe,
		CreateAllowed: want.CreateAllowed,
		Table:         want.Table,
		Previous:      want.Previous,
		FollowedFrom:  want.FollowedFrom,
		Tables:        map[string]assoc.TableRead{},
		NodeRoutes:    NodeRoutes(want.Nodes),
	}
	if in.Table == "" {
		in.Table = want.Configured
	}
	for _, t := range o.Tables() {
		in.Tables[armid.Key(t.ID)] = assoc.TableRead{Table: t.Table, NotFound: t.NotFound, Err: t.Err}
	}
	for _, s := range o.Subnets() {
		sn := assoc.Subnet{ID: s.ID, NotFound: s.NotFound, Err: s.Err, AddressPrefixes: s.Prefixes()}
		if s.Subnet != nil {
			sn.RouteTableID = s.Subnet.RouteTableID
		}
		in.Subnets = append(in.Subnets, sn)
	}
	return in
}

// NodeRoutes are the node routes by content.
func NodeRoutes(nodes []source.Node) []assoc.Want {
	var out []assoc.Want
	for _, n := range nodes {
		for _, cidr := range n.PodCIDRs {
			if hop, ok := n.NextHop(cidr); ok {
				out = append(out, assoc.Want{Prefix: cidr.Masked(), NextHop: hop})
			}
		}
	}
	return out
}

// EventType is "Warning" for a problem and "Normal" for a report.
func (s Subnet) EventType() string {
	if s.Warning() {
		return "Warning"
	}
	return "Normal"
}
