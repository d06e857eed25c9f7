package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Policy is what the association guard does when a configured subnet is
// not associated with routekeeper's route table (DESIGN.md, "Association
// guard and route-table swaps"; docs/association.md).
type Policy string

// The association policies.
const (
	// Enforce re-associates routekeeper's table with a detached subnet (the
	// IaC redeploy of seed 001), and with a subnet on another table that
	// lacks the node routes (an outage). A subnet on another table holding
	// them is reported and left alone, unless Restore is set.
	Enforce Policy = "enforce"
	// Follow treats another table on the subnet as a deliberate swap (seed
	// 000): the node routes are written into it and it becomes the table
	// routekeeper keeps; the old table is neither written nor re-created. A
	// detached subnet is re-associated as under Enforce. The rules are
	// internal/assoc's.
	Follow Policy = "follow"
	// Report changes nothing and reports.
	Report Policy = "report"
)

// Association states of a subnet.
const (
	// AssocOK: the subnet is on routekeeper's table.
	AssocOK = "Associated"
	// AssocRepaired: the guard put routekeeper's table (back) on the subnet.
	AssocRepaired = "Reassociated"
	// AssocFollowed: the subnet was moved to another table on purpose and
	// routekeeper adopted that table (policy follow).
	AssocFollowed = "Followed"
	// AssocMigrating: the subnet is on the new table of a `routekeeper
	// migrate` from routekeeper's table that is still running.
	AssocMigrating = "Migrating"
	// AssocDetached: the subnet has no route table, and it was not repaired
	// (policy report, table missing, or the repair failed).
	AssocDetached = "Detached"
	// AssocOtherTable: the subnet uses another table, left alone.
	AssocOtherTable = "OtherTable"
	// AssocConflict: the subnet uses, or would be given, a table claimed by
	// another cluster; nothing is written.
	AssocConflict = "Conflict"
	// AssocMissing: the configured subnet does not exist.
	AssocMissing = "SubnetMissing"
	// AssocError: the subnet could not be read.
	AssocError = "Error"
)

// Kubernetes event reasons of association findings (Association.EventReason).
const (
	EventReassociated     = "RouteTableReassociated"
	EventSwapFollowed     = "RouteTableSwapFollowed"
	EventDetached         = "RouteTableDetached"
	EventOtherTable       = "RouteTableSwapped"
	EventClaimConflict    = "RouteTableClaimConflict"
	EventSubnetMissing    = "SubnetMissing"
	EventAssociationError = "AssociationCheckFailed"
)

// Association is what the guard found (and did) for one subnet: everything
// a log line, a metric or a Kubernetes event about it needs.
type Association struct {
	Subnet string `json:"subnet"`
	// State is one of the Assoc* constants.
	State string `json:"state"`
	// Table is the route table the subnet pointed to when read ("" = none).
	Table string `json:"table,omitempty"`
	// RouteTable is routekeeper's table (after a follow: the new one).
	RouteTable string `json:"routeTable"`
	// Repaired is set when the guard wrote the subnet, or adopted its table.
	Repaired bool `json:"repaired,omitempty"`
	// Recreated: the repair re-created routekeeper's table, deleted out of
	// band, before associating it.
	Recreated bool `json:"recreated,omitempty"`
	// TableMissing: a repair was due but routekeeper's table does not exist.
	TableMissing bool `json:"tableMissing,omitempty"`
	// RepairFailed: a repair was due and its write failed.
	RepairFailed bool `json:"repairFailed,omitempty"`
	// ClaimedBy is the other cluster of a Conflict.
	ClaimedBy string `json:"claimedBy,omitempty"`
	// AddressPrefixes are the subnet's prefixes as read (kubestatus finds
	// the nodes of a detached subnet with them, without a cloud read).
	AddressPrefixes []netip.Prefix `json:"-"`
	// Action is what the decision said to do (internal/assoc).
	Action  string `json:"action,omitempty"`
	Message string `json:"message"`
	// Fix is the command that resolves a problem routekeeper leaves alone.
	Fix string `json:"fix,omitempty"`
}

// Problem reports whether the subnet is not on our table in a way that
// needs attention: everything but OK, a successful repair or follow, and a
// migration in progress.
func (a Association) Problem() bool {
	switch a.State {
	case AssocOK, AssocRepaired, AssocFollowed, AssocMigrating:
		return false
	}
	return true
}

// EventReason is the reason of the Kubernetes event that reports the
// finding, "" when there is nothing to report (associated, migrating).
func (a Association) EventReason() string {
	switch a.State {
	case AssocRepaired:
		return EventReassociated
	case AssocFollowed:
		return EventSwapFollowed
	case AssocDetached:
		return EventDetached
	case AssocOtherTable:
		return EventOtherTable
	case AssocConflict:
		return EventClaimConflict
	case AssocMissing:
		return EventSubnetMissing
	case AssocError:
		return EventAssociationError
	}
	return ""
}

// EventType is "Normal" for repairs and "Warning" for problems.
func (a Association) EventType() string {
	if a.Problem() {
		return "Warning"
	}
	return "Normal"
}

// assocState is what the guard remembers between checks. It is guarded by
// Controller.mu.
type assocState struct {
	// everExisted: the table existed at some point in this process, so
	// creating it again is a repair (it was deleted out of band), not the
	// first set-up.
	everExisted bool
	// previous holds the (lower-case) IDs of tables routekeeper kept
	// before a follow or a migration: subnets still on them are moved to
	// the current table, never the other way round.
	previous map[string]bool
	// followedFrom is the table a swap was followed from by the guard,
	// until a reconcile has written the node routes into the new table.
	followedFrom string
	// problems are the subnets' problems last logged (newProblem).
	problems map[string]string
}

func sameID(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}

// TableID returns the route table routekeeper currently keeps: the
// configured one, or the one it followed or migrated to.
func (c *Controller) TableID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tableID
}

// switchTable makes to the table routekeeper keeps; from becomes a previous
// table that is never written again.
func (c *Controller) switchTable(from, to string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assoc.previous == nil {
		c.assoc.previous = map[string]bool{}
	}
	c.assoc.previous[strings.ToLower(from)] = true
	delete(c.assoc.previous, strings.ToLower(to))
	c.tableID = to
}

// tableExisted records that our table exists: creating it later in this
// process is a repair (it was deleted out of band), not the first set-up.
func (c *Controller) tableExisted() {
	c.mu.Lock()
	c.assoc.everExisted = true
	c.mu.Unlock()
}

// toAssociation is the reported form of a subnet's decision, before any act.
func toAssociation(sd assoc.SubnetDecision) Association {
	a := Association{
		Subnet: sd.Subnet, Table: sd.Table, RouteTable: sd.RouteTable, ClaimedBy: sd.ClaimedBy,
		TableMissing: sd.TableMissing, Message: sd.Message, Fix: sd.Fix, Action: string(sd.Action),
		AddressPrefixes: sd.AddressPrefixes,
	}
	switch sd.State {
	case assoc.Associated:
		a.State = AssocOK
	case assoc.Followed:
		a.State, a.Repaired = AssocFollowed, true
	case assoc.Migrating:
		a.State = AssocMigrating
	case assoc.Detached:
		a.State = AssocDetached
	case assoc.Previous, assoc.OtherTable:
		a.State = AssocOtherTable
	case assoc.Conflict:
		a.State = AssocConflict
	case assoc.SubnetMissing:
		a.State = AssocMissing
	default:
		a.State = AssocError
	}
	return a
}

// planned returns the decision's associations without acting (dry run).
func planned(d *assoc.Decision) []Association {
	out := make([]Association, 0, len(d.Subnets))
	for _, sd := range d.Subnets {
		out = append(out, toAssociation(sd))
	}
	return out
}

// act carries out the subnet actions of d: one PUT of the whole subnet,
// with If-Match of the version decided on, per subnet to associate, and
// only when our table exists (it was filled first). created says this
// pass created our table.
func (c *Controller) act(ctx context.Context, o *observation, d *assoc.Decision, tableExists, created bool) []Association {
	c.mu.Lock()
	recreated := created && c.assoc.everExisted
	c.mu.Unlock()
	if tableExists {
		c.tableExisted()
	}
	out := make([]Association, 0, len(d.Subnets))
	for _, sd := range d.Subnets {
		a := toAssociation(sd)
		if sd.Action == assoc.Associate || sd.Action == assoc.CreateThenAssociate {
			a = c.associate(ctx, a, sd, o, tableExists, created, recreated)
		}
		switch {
		case a.Repaired && a.State != AssocFollowed:
			c.log.Warn("association guard repaired a subnet", "subnet", a.Subnet, "state", a.State, "table", a.RouteTable, "message", a.Message)
		case a.Problem() && c.newProblem(a):
			c.log.Warn("association guard: subnet not on the route table", "subnet", a.Subnet, "state", a.State, "table", a.Table, "message", a.Message, "fix", a.Fix)
		case a.Problem():
			c.log.Debug("association guard: subnet still not on the route table", "subnet", a.Subnet, "state", a.State, "table", a.Table)
		}
		if !a.Problem() {
			c.clearProblem(a.Subnet)
		}
		out = append(out, a)
	}
	return out
}

func (c *Controller) associate(ctx context.Context, a Association, sd assoc.SubnetDecision, o *observation, tableExists, created, recreated bool) Association {
	ours := sd.RouteTable
	if !tableExists {
		a.TableMissing = true
		a.Message += fmt.Sprintf("; route table %s does not exist, so it cannot be associated", ours)
		return a
	}
	s := o.subnets[assoc.Key(sd.Subnet)]
	if _, err := c.cloud.SetSubnetRouteTable(ctx, sd.Subnet, ours, s.Etag); err != nil {
		a.RepairFailed = true
		if errors.Is(err, cloud.ErrPreconditionFailed) {
			a.Message += "; the subnet changed while being repaired: checked again at the next cycle"
		} else {
			a.Message += "; repair failed: " + err.Error()
		}
		return a
	}
	a.Repaired = true
	switch {
	case created && !recreated:
		a.State, a.Repaired = AssocOK, false
		a.Message = "associated the new route table " + ours
		c.log.Info("associated the new route table with a subnet", "subnet", a.Subnet, "table", ours)
	case created:
		a.State, a.Recreated = AssocRepaired, true
		a.Message = fmt.Sprintf("route table %s was deleted out of band: re-created it (tagged %s=%s), filled it with the node routes and re-associated it (was %s)",
			ours, route.ClaimTag, c.cfg.Cluster, orNone(sd.Table))
	case sd.State == assoc.Previous:
		a.State = AssocRepaired
		a.Message = fmt.Sprintf("moved the subnet from route table %s, which routekeeper kept before and no longer writes, to %s", sd.Table, ours)
	case sd.State == assoc.OtherTable:
		a.State = AssocRepaired
		a.Message = fmt.Sprintf("re-associated route table %s (was %s, which holds %d of %d node routes). To swap route tables without an outage, use routekeeper migrate --to %s",
			ours, sd.Table, sd.HasRoutes, sd.NodeRoutes, sd.Table)
	default:
		a.State = AssocRepaired
		a.Message = fmt.Sprintf("re-associated route table %s (was %s)", ours, orNone(sd.Table))
	}
	a.Fix = ""
	return a
}

// newProblem records a subnet's problem and reports whether it is new (or
// changed): a problem is logged at WARN once, not at every guard cycle (the
// metric and the summary line keep saying it).
func (c *Controller) newProblem(a Association) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assoc.problems == nil {
		c.assoc.problems = map[string]string{}
	}
	key, v := strings.ToLower(a.Subnet), a.State+" "+a.Table
	if c.assoc.problems[key] == v {
		return false
	}
	c.assoc.problems[key] = v
	return true
}

func (c *Controller) clearProblem(subnet string) {
	c.mu.Lock()
	delete(c.assoc.problems, strings.ToLower(subnet))
	c.mu.Unlock()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Guard runs the association guard alone, between reconciles: one GET per
// configured subnet, one of our table, one of each other table a subnet
// points to, and a write only to repair. Association repair needs no
// nodes; the route check uses the last known nodes. When it follows a swap
// or a migration, a repair needs the table (re-created), or an owned
// route is missing or wrong in our table, NeedsReconcile tells the caller
// to reconcile now.
func (c *Controller) Guard(ctx context.Context) *Result {
	res := &Result{Start: time.Now(), GuardOnly: true}
	reads0, writes0 := c.cloud.Calls()
	nodes := c.lastNodes()
	o := c.observe(ctx, nodes)
	d := c.decide(o)
	res.Decision = d
	if d.Switch != assoc.NoSwitch {
		res.Followed = d.Table
	}
	if d.TableErr != nil {
		// Our table could not be read: nothing is associated with a table
		// of unknown state; the reconcile it asks for says more.
		res.Err = d.TableErr // it names the operation and the table
		res.Associations = planned(d)
	} else if d.Switch != assoc.Swapped {
		// A followed swap is reported by the reconcile that fills the new
		// table: the subnets are on it already.
		ours := o.table(d.Table)
		res.Associations = c.act(ctx, o, d, ours != nil, false)
		if ours != nil && c.cfg.Mode != Observe {
			want := o.input.NodeRoutes
			res.Drift = len(want) - assoc.Holds(ours, want)
		}
		if len(nodes) > 0 {
			// The last known nodes, judged by the table each subnet uses
			// now: the guard's summary and the routed gauge tell the truth.
			c.mu.Lock()
			last := c.lastResults
			c.mu.Unlock()
			res.Nodes = map[string]NodeResult{}
			for _, n := range nodes {
				nr := last[n.Name]
				if !nr.planned {
					nr = NodeResult{}
				}
				res.Nodes[n.Name] = nr
			}
			c.verify(res, nodes, ours, ReasonRouteMissing, nil)
			c.subnetTruth(res, o, nodes)
		}
	}
	res.TableID = c.TableID()
	reads1, writes1 := c.cloud.Calls()
	res.Reads, res.Writes = reads1-reads0, writes1-writes0
	res.Duration = time.Since(res.Start)
	c.report(ctx, res)
	return res
}

// NeedsReconcile reports whether a guard result calls for a full reconcile
// now: a swap or migration was followed (the routes must be written to the
// new table), our table is missing (it may need re-creating), a node route
// is missing or wrong in our table, or a repair failed.
func (r *Result) NeedsReconcile() bool {
	if r.Followed != "" || r.Err != nil || r.Drift > 0 {
		return true
	}
	for _, a := range r.Associations {
		if a.TableMissing || a.RepairFailed || a.State == AssocError {
			return true
		}
	}
	return false
}
