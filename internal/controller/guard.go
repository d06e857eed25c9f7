package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Policy is what the association guard does when a configured subnet is
// not associated with routekeeper's route table (DESIGN.md, "Association
// guard and route-table swaps"; docs/association.md).
type Policy string

// The association policies.
const (
	// Enforce re-associates routekeeper's table with a detached subnet (the
	// IaC redeploy of seed 001). A subnet on another table is reported and
	// left alone, unless Restore is set.
	Enforce Policy = "enforce"
	// Follow treats another table on the subnet as a deliberate swap (seed
	// 000): the node routes are written into it and it becomes the table
	// routekeeper keeps; the old table is neither written nor re-created. A
	// detached subnet is re-associated as under Enforce.
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
	Message   string `json:"message"`
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
	// known: the table has been read (or found missing) since tableID was
	// last set; exists and claim are what was found.
	known, exists bool
	claim         string
	// everExisted: the table existed at some point in this process, so
	// creating it again is a repair (it was deleted out of band), not the
	// first set-up.
	everExisted bool
	// previous holds the (lower-case) IDs of tables routekeeper kept
	// before a follow or a migration: subnets still on them are moved to
	// the current table, never the other way round.
	previous map[string]bool
	// followed are the subnets whose swap follow() adopted; the next
	// guard() reports them (once the routes are in the new table).
	followed map[string]Association
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
	c.assoc.known, c.assoc.exists, c.assoc.claim = false, false, ""
}

func (c *Controller) isPrevious(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assoc.previous[strings.ToLower(strings.TrimSuffix(id, "/"))]
}

// noteTable records what was found of our table (nil: missing).
func (c *Controller) noteTable(t *route.Table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assoc.known, c.assoc.exists, c.assoc.claim = true, t != nil, t.Claim()
	if t != nil {
		c.assoc.everExisted = true
	}
}

// follow, under the Follow policy, looks for configured subnets that point
// to another table and makes that table ours before the reconcile writes
// anything: the reconcile then writes the node routes into it, keeping its
// own routes. It returns the table followed, "" when none. A table claimed
// by another cluster, a table routekeeper migrated away from, and a choice
// between several tables are not followed (the guard reports them).
func (c *Controller) follow(ctx context.Context) (string, error) {
	if !c.follows() {
		return "", nil
	}
	return c.followSubnets(ctx, c.readSubnets(ctx))
}

func (c *Controller) follows() bool { return c.cfg.Policy == Follow && c.cfg.Mode != Observe }

// subnetRead is one configured subnet as read.
type subnetRead struct {
	id  string
	s   *cloud.Subnet
	err error
}

// readSubnets reads every configured subnet: one GET each.
func (c *Controller) readSubnets(ctx context.Context) []subnetRead {
	out := make([]subnetRead, len(c.cfg.Subnets))
	for i, id := range c.cfg.Subnets {
		s, err := c.cloud.GetSubnet(ctx, id)
		out[i] = subnetRead{id, s, err}
	}
	return out
}

func (c *Controller) followSubnets(ctx context.Context, reads []subnetRead) (string, error) {
	ours := c.TableID()
	var cands []string
	bySubnet := map[string]*cloud.Subnet{}
	for _, r := range reads {
		id, s := r.id, r.s
		if r.err != nil {
			if errors.Is(r.err, cloud.ErrNotFound) {
				continue // reported by the guard after the reconcile
			}
			return "", fmt.Errorf("association guard: %w", r.err)
		}
		if s.RouteTableID == "" || sameID(s.RouteTableID, ours) || c.isPrevious(s.RouteTableID) {
			continue
		}
		bySubnet[id] = s
		if !containsID(cands, s.RouteTableID) {
			cands = append(cands, s.RouteTableID)
		}
	}
	if len(cands) != 1 {
		if len(cands) > 1 {
			c.log.Warn("configured subnets were moved to several other route tables; not following any", "tables", cands, "table", ours)
		}
		return "", nil
	}
	to := cands[0]
	t, err := c.cloud.GetRouteTable(ctx, to)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("association guard: the table a subnet now uses: %w", err)
	}
	if claim := t.Claim(); claim != "" && claim != c.cfg.Cluster {
		c.log.Warn("subnet uses a route table claimed by another cluster; not following it",
			"table", to, "claimedBy", claim, "cluster", c.cfg.Cluster)
		return "", nil
	}
	if next := t.Tag(route.MigratedToTag); next != "" {
		c.log.Warn("subnet uses a route table that routekeeper migrated away from; not following it", "table", to, "migratedTo", next)
		return "", nil
	}
	if t.ID != "" {
		to = t.ID
	}
	c.log.Warn("subnet was moved to another route table; following it: writing the node routes into it and keeping it from now on; the old table is no longer written",
		"from", ours, "to", to)
	c.switchTable(ours, to)
	c.mu.Lock()
	c.assoc.followed = map[string]Association{}
	for id, s := range bySubnet {
		if sameID(s.RouteTableID, to) {
			c.assoc.followed[strings.ToLower(id)] = Association{
				Subnet: id, State: AssocFollowed, Table: s.RouteTableID, RouteTable: to, Repaired: true,
				Message: fmt.Sprintf("the subnet was moved from route table %s to %s: routekeeper follows the swap, keeps the node routes in %s and no longer writes %s", ours, to, to, ours),
			}
		}
	}
	c.mu.Unlock()
	return to, nil
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if sameID(x, id) {
			return true
		}
	}
	return false
}

// maxMigrationHops bounds a chain of migrated-to tags (a cycle is a
// mistake, never followed for ever).
const maxMigrationHops = 4

// followMigration switches to the table cur was migrated to (its
// route.MigratedToTag) when that table exists and is this cluster's
// (claimed by it, or naming cur as the table it was migrated from). When
// cur is nil (our table is gone: a migration with --delete-old), it looks
// for a configured subnet on a table of this cluster that names ours as
// the table it was migrated from. It returns the table to work on: cur, or
// the one switched to.
func (c *Controller) followMigration(ctx context.Context, cur *route.Table) (*route.Table, error) {
	if cur == nil {
		return c.findSuccessor(ctx)
	}
	for range maxMigrationHops {
		to := cur.Tag(route.MigratedToTag)
		if to == "" || sameID(to, cur.ID) {
			return cur, nil
		}
		next, err := c.cloud.GetRouteTable(ctx, to)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			c.log.Warn("route table is marked as migrated to a table that does not exist; staying on it", "table", cur.ID, "migratedTo", to)
			return cur, nil
		case err != nil:
			return nil, fmt.Errorf("the table %s was migrated to: %w", cur.ID, err)
		}
		if next.Claim() != c.cfg.Cluster && !sameID(next.Tag(route.MigratedFromTag), cur.ID) {
			c.log.Warn("route table is marked as migrated to a table that is not this cluster's; staying on it",
				"table", cur.ID, "migratedTo", to, "claimedBy", next.Claim(), "cluster", c.cfg.Cluster)
			return cur, nil
		}
		if next.ID == "" {
			next.ID = to
		}
		c.log.Info("route table was migrated; keeping the new table from now on", "from", cur.ID, "to", next.ID)
		c.switchTable(c.TableID(), next.ID)
		cur = next
	}
	return cur, nil
}

// findSuccessor looks, for our missing table, for the table a migration
// moved the subnets to, and switches to it. It returns nil when there is
// none.
func (c *Controller) findSuccessor(ctx context.Context) (*route.Table, error) {
	ours := c.TableID()
	seen := map[string]bool{}
	for _, id := range c.cfg.Subnets {
		s, err := c.cloud.GetSubnet(ctx, id)
		if err != nil || s.RouteTableID == "" || sameID(s.RouteTableID, ours) || seen[strings.ToLower(s.RouteTableID)] {
			continue // subnet problems are the guard's to report
		}
		seen[strings.ToLower(s.RouteTableID)] = true
		t, err := c.cloud.GetRouteTable(ctx, s.RouteTableID)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("the table subnet %s uses: %w", id, err)
		}
		if sameID(t.Tag(route.MigratedFromTag), ours) && t.Claim() == c.cfg.Cluster {
			if t.ID == "" {
				t.ID = s.RouteTableID
			}
			c.log.Info("route table is gone and was migrated; keeping the new table from now on", "from", ours, "to", t.ID)
			c.switchTable(ours, t.ID)
			return t, nil
		}
	}
	return nil, nil
}

// createBlocked says why a missing route table must not be created, ""
// when it may be: creation is allowed, and some configured subnet will be
// associated with the new table by this reconcile. Creating a table that
// nothing uses would be the resurrected, unattached table of seed 000.
func (c *Controller) createBlocked(ctx context.Context) string {
	switch {
	case !c.cfg.CreateTable:
		return "creating it is not allowed (routeTable.create: false)"
	case c.cfg.Mode == Observe:
		return "routes: observe never creates the table (the platform owns it)"
	case len(c.cfg.Subnets) == 0:
		return ""
	}
	var notes []string
	for _, id := range c.cfg.Subnets {
		s, err := c.cloud.GetSubnet(ctx, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			notes = append(notes, fmt.Sprintf("subnet %s does not exist", id))
			continue
		case err != nil:
			return fmt.Sprintf("could not read subnet %s to decide whether to create the table: %v", id, err)
		}
		switch {
		case c.cfg.Policy == Report:
			notes = append(notes, fmt.Sprintf("association policy report never associates subnet %s", id))
		case s.RouteTableID == "", sameID(s.RouteTableID, c.TableID()), c.isPrevious(s.RouteTableID):
			return ""
		case c.cfg.Policy == Enforce && c.cfg.Restore:
			other, err := c.cloud.GetRouteTable(ctx, s.RouteTableID)
			if err == nil && other.Claim() != "" && other.Claim() != c.cfg.Cluster {
				notes = append(notes, fmt.Sprintf("subnet %s uses route table %s of cluster %q", id, s.RouteTableID, other.Claim()))
				continue
			}
			return ""
		default:
			notes = append(notes, fmt.Sprintf("subnet %s uses route table %s", id, s.RouteTableID))
		}
	}
	return "no configured subnet would be associated with it (" + strings.Join(notes, "; ") +
		"), and routekeeper does not create a route table that nothing uses"
}

// tableLoader reads routekeeper's table at most once per guard pass,
// following a migration, and records what it found.
type tableLoader struct {
	c      *Controller
	t      *route.Table
	err    error
	loaded bool
}

func (l *tableLoader) load(ctx context.Context) (*route.Table, error) {
	if l.loaded {
		return l.t, l.err
	}
	l.loaded = true
	if l.t != nil {
		l.c.noteTable(l.t)
		return l.t, nil
	}
	t, err := l.c.cloud.GetRouteTable(ctx, l.c.TableID())
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		t = nil
	case err != nil:
		l.err = err
		return nil, err
	}
	if t, err = l.c.followMigration(ctx, t); err != nil {
		l.err = err
		return nil, err
	}
	l.c.noteTable(t)
	if t == nil {
		l.err = fmt.Errorf("route table %s: %w", l.c.TableID(), cloud.ErrNotFound)
		return nil, l.err
	}
	l.t = t
	return t, nil
}

// guard checks every configured subnet after a reconcile and applies the
// policy. table is our table as the reconcile left it (nil when missing or
// unreadable); created says the reconcile created it, so that associating
// it is the first set-up (or, if it existed before in this process, the
// repair of a table deleted out of band).
func (c *Controller) guard(ctx context.Context, table *route.Table, created bool) []Association {
	c.mu.Lock()
	recreated := created && c.assoc.everExisted
	c.mu.Unlock()
	if table != nil {
		c.noteTable(table)
	}
	l := &tableLoader{c: c, t: table}
	return c.checkSubnets(ctx, c.readSubnets(ctx), l, created, recreated)
}

// checkSubnets applies the policy to the subnets as read, reading our
// table only when some subnet is not on it.
func (c *Controller) checkSubnets(ctx context.Context, reads []subnetRead, l *tableLoader, created, recreated bool) []Association {
	anomaly := false
	for _, r := range reads {
		if r.err == nil && !sameID(r.s.RouteTableID, c.TableID()) {
			anomaly = true
		}
	}
	if anomaly {
		// Reads the table, and may switch to the table it was migrated to.
		_, _ = l.load(ctx)
	}
	c.mu.Lock()
	followed := c.assoc.followed
	c.assoc.followed = nil
	c.mu.Unlock()

	others := map[string]*route.Table{}
	out := make([]Association, 0, len(reads))
	for _, r := range reads {
		id := r.id
		a := c.checkSubnet(ctx, id, r.s, r.err, l, others)
		if f, ok := followed[strings.ToLower(id)]; ok && a.State == AssocOK {
			a = f
		}
		switch {
		case created && a.State == AssocRepaired && !recreated:
			a.State, a.Repaired = AssocOK, false
			a.Message = "associated the new route table " + a.RouteTable
			c.log.Info("associated the new route table with a subnet", "subnet", id, "table", a.RouteTable)
		case created && a.State == AssocRepaired:
			a.Recreated = true
			a.Message = fmt.Sprintf("route table %s was deleted out of band: re-created it (tagged %s=%s), filled it with the node routes and re-associated it (was %s)",
				a.RouteTable, route.ClaimTag, c.cfg.Cluster, orNone(a.Table))
			c.log.Warn("association guard repaired a subnet", "subnet", id, "state", a.State, "table", a.RouteTable, "message", a.Message)
		case a.Repaired:
			c.log.Warn("association guard repaired a subnet", "subnet", id, "state", a.State, "table", a.RouteTable, "message", a.Message)
		case a.Problem():
			c.log.Warn("association guard: subnet not on the route table", "subnet", id, "state", a.State, "table", a.Table, "message", a.Message)
		}
		out = append(out, a)
	}
	return out
}

func (c *Controller) checkSubnet(ctx context.Context, id string, s *cloud.Subnet, err error, l *tableLoader, others map[string]*route.Table) Association {
	ours := c.TableID()
	a := Association{Subnet: id, RouteTable: ours}
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		a.State, a.Message = AssocMissing, fmt.Sprintf("subnet %s does not exist", id)
		return a
	case err != nil:
		a.State, a.Message = AssocError, err.Error()
		return a
	}
	a.Table = s.RouteTableID
	if sameID(s.RouteTableID, ours) {
		a.State, a.Message = AssocOK, "associated with "+ours
		return a
	}
	if s.RouteTableID == "" {
		a.State = AssocDetached
		a.Message = fmt.Sprintf("subnet has no route table: pod traffic between nodes is dropped (route table %s is not associated)", ours)
		if c.cfg.Policy == Report {
			a.Message += "; association policy report: not repairing"
			return a
		}
		return c.repair(ctx, a, s, l)
	}

	a.State = AssocOtherTable
	a.Message = fmt.Sprintf("subnet uses route table %s instead of %s", s.RouteTableID, ours)
	previous := c.isPrevious(s.RouteTableID)
	if !previous {
		other, ok := others[strings.ToLower(s.RouteTableID)]
		if !ok {
			other, _ = c.cloud.GetRouteTable(ctx, s.RouteTableID) // unreadable: judged by the policy alone
			others[strings.ToLower(s.RouteTableID)] = other
		}
		switch {
		case other == nil:
		case sameID(other.Tag(route.MigratedToTag), ours):
			previous = true
		case sameID(other.Tag(route.MigratedFromTag), ours):
			a.State = AssocMigrating
			a.Message = fmt.Sprintf("subnet is on route table %s, the new table of a migration from %s that has not finished (routekeeper migrate); left alone", s.RouteTableID, ours)
			return a
		case other.Claim() != "" && other.Claim() != c.cfg.Cluster:
			a.State, a.ClaimedBy = AssocConflict, other.Claim()
			a.Message = fmt.Sprintf("subnet uses route table %s, claimed by cluster %q, not by this cluster %q: routekeeper writes nothing to the table or the subnet%s",
				s.RouteTableID, other.Claim(), c.cfg.Cluster, plan.CIDROverlap(other, other.Claim(), c.cfg.ClusterCIDRs))
			return a
		}
	}
	if previous {
		a.Message = fmt.Sprintf("subnet is still on route table %s, which routekeeper kept before and no longer writes (it now keeps %s)", s.RouteTableID, ours)
	}
	switch {
	case c.cfg.Policy == Report:
		a.Message += "; association policy report: not repairing"
		return a
	case previous:
		return c.repair(ctx, a, s, l)
	case c.cfg.Policy == Enforce && !c.cfg.Restore:
		a.Message += "; association policy enforce leaves another table alone (set association.restore to put ours back, or policy follow to adopt it)"
		return a
	case c.cfg.Policy == Follow && c.cfg.Mode == Observe:
		a.Message += "; association policy follow does not adopt tables in routes: observe mode (the platform writes the routes)"
		return a
	case c.cfg.Policy == Follow:
		// follow() adopts a single other table before the reconcile;
		// getting here means it did not.
		a.Message += "; not followed: the subnets point to several other tables, or it is a table routekeeper migrated away from"
		return a
	}
	return c.repair(ctx, a, s, l) // enforce with restore
}

// repair associates our table with the subnet: one PUT of the whole subnet
// with If-Match of the version a was decided on.
func (c *Controller) repair(ctx context.Context, a Association, s *cloud.Subnet, l *tableLoader) Association {
	t, err := l.load(ctx)
	ours := c.TableID()
	a.RouteTable = ours
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		a.TableMissing = true
		a.Message += fmt.Sprintf("; route table %s does not exist, so it cannot be associated", ours)
		return a
	case err != nil:
		a.RepairFailed = true
		a.Message += fmt.Sprintf("; reading route table %s failed: %v", ours, err)
		return a
	}
	if sameID(s.RouteTableID, ours) {
		// The table was migrated to the one the subnet already uses.
		a.State, a.Message = AssocOK, "associated with "+ours
		return a
	}
	if claim := t.Claim(); claim != "" && claim != c.cfg.Cluster {
		a.State, a.ClaimedBy = AssocConflict, claim
		a.Message += fmt.Sprintf("; route table %s is claimed by cluster %q, not by this cluster %q: routekeeper does not associate it%s",
			ours, claim, c.cfg.Cluster, plan.CIDROverlap(t, claim, c.cfg.ClusterCIDRs))
		return a
	}
	if _, err := c.cloud.SetSubnetRouteTable(ctx, a.Subnet, ours, s.Etag); err != nil {
		a.RepairFailed = true
		if errors.Is(err, cloud.ErrPreconditionFailed) {
			a.Message += "; the subnet changed while being repaired: checked again at the next cycle"
		} else {
			a.Message += "; repair failed: " + err.Error()
		}
		return a
	}
	a.State, a.Repaired = AssocRepaired, true
	a.Message = fmt.Sprintf("re-associated route table %s (was %s)", ours, orNone(s.RouteTableID))
	if s.RouteTableID != "" && c.isPrevious(s.RouteTableID) {
		a.Message = fmt.Sprintf("moved the subnet from route table %s, which routekeeper kept before and no longer writes, to %s", s.RouteTableID, ours)
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Guard runs the association guard alone, between reconciles: one subnet
// GET per configured subnet, our table read only when a subnet is not on
// it, and a write only to repair. When it follows a swap or a migration,
// or a repair needs the table (re-created, or after a failed write),
// NeedsReconcile tells the caller to reconcile now.
func (c *Controller) Guard(ctx context.Context) *Result {
	res := &Result{Start: time.Now(), GuardOnly: true}
	reads0, writes0 := c.cloud.Calls()
	before := c.TableID()
	reads := c.readSubnets(ctx)
	var err error
	if c.follows() {
		res.Followed, err = c.followSubnets(ctx, reads)
	}
	if err != nil {
		res.Err = err
	} else if res.Followed == "" {
		res.Associations = c.checkSubnets(ctx, reads, &tableLoader{c: c}, false, false)
		if now := c.TableID(); !sameID(now, before) {
			res.Followed = now // a migration was followed
		}
	}
	res.TableID = c.TableID()
	reads1, writes1 := c.cloud.Calls()
	res.Reads, res.Writes = reads1-reads0, writes1-writes0
	res.Duration = time.Since(res.Start)
	for _, r := range c.reporters {
		r.Report(ctx, res)
	}
	return res
}

// NeedsReconcile reports whether a guard result calls for a full reconcile
// now: a swap or migration was followed (the routes must be written to the
// new table), our table is missing (it may need re-creating), or a repair
// failed.
func (r *Result) NeedsReconcile() bool {
	if r.Followed != "" || r.Err != nil {
		return true
	}
	for _, a := range r.Associations {
		if a.TableMissing || a.RepairFailed || a.State == AssocError {
			return true
		}
	}
	return false
}
