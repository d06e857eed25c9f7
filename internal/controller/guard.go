package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/cloud"
)

// Policy is what the association guard does when a configured subnet is
// not associated with routekeeper's route table (DESIGN.md, "Association
// guard and route-table swaps").
type Policy string

// The association policies.
const (
	// Enforce re-associates routekeeper's table with a detached subnet (the
	// IaC redeploy of seed 001). A subnet on another table is reported and
	// left alone, unless Restore is set.
	Enforce Policy = "enforce"
	// Follow treats another table on the subnet as a deliberate swap (seed
	// 000): the owned routes are copied into it and it becomes the table
	// routekeeper keeps; the old table is neither written nor re-created. A
	// detached subnet is re-associated as under Enforce.
	Follow Policy = "follow"
	// Report changes nothing and reports.
	Report Policy = "report"
)

// Association states of a subnet.
const (
	AssocOK         = "Associated"
	AssocRepaired   = "Reassociated"
	AssocDetached   = "Detached"
	AssocOtherTable = "OtherTable"
	AssocFollowed   = "Followed"
	AssocMissing    = "SubnetMissing"
	AssocError      = "Error"
)

// Association is what the guard found (and did) for one subnet.
type Association struct {
	Subnet string `json:"subnet"`
	// State is one of the Assoc* constants.
	State string `json:"state"`
	// Table is the route table the subnet pointed to when read ("" = none).
	Table string `json:"table,omitempty"`
	// Repaired is set when the guard wrote the subnet (or adopted its table).
	Repaired bool `json:"repaired,omitempty"`
	// TableMissing: the repair was due but our table does not exist.
	TableMissing bool   `json:"tableMissing,omitempty"`
	Message      string `json:"message"`
}

// Problem reports whether the subnet is not (or was not) on our table in a
// way that needs attention: everything but OK and a successful repair.
func (a Association) Problem() bool {
	return a.State != AssocOK && a.State != AssocRepaired && a.State != AssocFollowed
}

func sameID(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}

// TableID returns the route table routekeeper currently keeps: the
// configured one, or the one it followed.
func (c *Controller) TableID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tableID
}

func (c *Controller) setTableID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tableID = id
}

// follow, under the Follow policy, looks for a configured subnet that
// points to another table and makes that table ours before the reconcile
// writes anything: the reconcile then copies the owned routes into it. It
// returns the table followed, "" when none.
func (c *Controller) follow(ctx context.Context) (string, error) {
	if c.cfg.Policy != Follow || c.cfg.Mode == Observe {
		return "", nil
	}
	ours := c.TableID()
	for _, id := range c.cfg.Subnets {
		s, err := c.cloud.GetSubnet(ctx, id)
		if err != nil {
			if errors.Is(err, cloud.ErrNotFound) {
				continue // reported by the guard after the reconcile
			}
			return "", fmt.Errorf("association guard: %w", err)
		}
		if s.RouteTableID == "" || sameID(s.RouteTableID, ours) {
			continue
		}
		// A table claimed by another cluster is not followed: writing to
		// it would be refused anyway, and ours must stay as it is.
		t, err := c.cloud.GetRouteTable(ctx, s.RouteTableID)
		if err != nil {
			return "", fmt.Errorf("association guard: reading route table %s that subnet %s now uses: %w", s.RouteTableID, id, err)
		}
		if claim := t.Claim(); claim != "" && claim != c.cfg.Cluster {
			c.log.Warn("subnet uses a route table claimed by another cluster; not following it",
				"subnet", id, "table", s.RouteTableID, "claimedBy", claim, "cluster", c.cfg.Cluster)
			continue
		}
		c.log.Warn("subnet was moved to another route table; following it: copying the node routes into it and keeping it from now on",
			"subnet", id, "from", ours, "to", s.RouteTableID)
		c.setTableID(s.RouteTableID)
		return s.RouteTableID, nil
	}
	return "", nil
}

// guard checks every configured subnet and applies the policy. It is cheap:
// one subnet GET each, and a write only to repair. tableExists says whether
// our table exists (a missing one cannot be associated).
// created says the table was created by this reconcile: associating it is
// then the first association, not a repair.
func (c *Controller) guard(ctx context.Context, tableExists, created bool) []Association {
	ours := c.TableID()
	out := make([]Association, 0, len(c.cfg.Subnets))
	for _, id := range c.cfg.Subnets {
		a := c.guardSubnet(ctx, id, ours, tableExists)
		switch {
		case created && a.State == AssocRepaired:
			a.State, a.Repaired = AssocOK, false
			a.Message = "associated the new route table " + ours
			c.log.Info("associated the new route table with a subnet", "subnet", id, "table", ours)
		case a.State == AssocRepaired || a.State == AssocFollowed:
			c.log.Warn("association guard repaired a subnet", "subnet", id, "state", a.State, "table", ours, "message", a.Message)
		case a.Problem():
			c.log.Warn("association guard: subnet not on the route table", "subnet", id, "state", a.State, "message", a.Message)
		}
		out = append(out, a)
	}
	return out
}

func (c *Controller) guardSubnet(ctx context.Context, id, ours string, tableExists bool) Association {
	a := Association{Subnet: id}
	s, err := c.cloud.GetSubnet(ctx, id)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		a.State, a.Message = AssocMissing, fmt.Sprintf("subnet %s does not exist", id)
		return a
	case err != nil:
		a.State, a.Message = AssocError, err.Error()
		return a
	}
	a.Table = s.RouteTableID
	switch {
	case sameID(s.RouteTableID, ours):
		a.State, a.Message = AssocOK, "associated with "+ours
		return a
	case s.RouteTableID == "":
		a.State, a.Message = AssocDetached, fmt.Sprintf("subnet has no route table: pod traffic between nodes is dropped (route table %s is not associated)", ours)
		if c.cfg.Policy == Report {
			a.Message += "; association policy report: not repairing"
			return a
		}
	default:
		a.State = AssocOtherTable
		a.Message = fmt.Sprintf("subnet uses route table %s instead of %s", s.RouteTableID, ours)
		switch {
		case c.cfg.Policy == Report:
			a.Message += "; association policy report: not repairing"
			return a
		case c.cfg.Policy == Enforce && !c.cfg.Restore:
			a.Message += "; association policy enforce leaves another table alone (set association.restore to put ours back)"
			return a
		case c.cfg.Policy == Follow && c.cfg.Mode == Observe:
			a.Message += "; association policy follow does not adopt tables in routes: observe mode (the platform writes the routes)"
			return a
		case c.cfg.Policy == Follow:
			// follow() adopts it before the reconcile; getting here means
			// it could not be followed (claimed by another cluster).
			a.Message += "; not followed: it is claimed by another cluster or could not be read"
			return a
		}
	}
	if !tableExists {
		a.TableMissing = true
		a.Message += fmt.Sprintf("; route table %s does not exist, so it cannot be associated", ours)
		return a
	}
	if _, err := c.cloud.SetSubnetRouteTable(ctx, id, ours, s.Etag); err != nil {
		a.Message += "; repair failed: " + err.Error()
		// A table deleted since the last reconcile fails the association:
		// the next reconcile re-creates it (when allowed) and retries.
		a.TableMissing = true
		return a
	}
	a.State, a.Repaired = AssocRepaired, true
	a.Message = fmt.Sprintf("re-associated route table %s (was %s)", ours, orNone(s.RouteTableID))
	return a
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Guard runs the association guard alone, between reconciles: a subnet GET
// per configured subnet, and a write only to repair. When it finds a swap to
// follow, or a subnet it could not repair because our table is missing,
// Result.Followed or NeedsReconcile tells the caller to reconcile now.
func (c *Controller) Guard(ctx context.Context) *Result {
	res := &Result{Start: time.Now(), GuardOnly: true}
	reads0, writes0 := c.cloud.Calls()
	var err error
	if res.Followed, err = c.follow(ctx); err != nil {
		res.Err = err
	} else if res.Followed == "" {
		res.Associations = c.guard(ctx, c.tableKnown(), false)
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
// now: a swap was followed (the routes must be copied), or a repair failed
// (the table may be gone, and may need re-creating).
func (r *Result) NeedsReconcile() bool {
	if r.Followed != "" || r.Err != nil {
		return true
	}
	for _, a := range r.Associations {
		if a.TableMissing || a.State == AssocError {
			return true
		}
	}
	return false
}

func (c *Controller) tableKnown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tableExists
}

func (c *Controller) setTableKnown(exists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tableExists = exists
}
