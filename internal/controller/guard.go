package controller

import (
	"context"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Guard runs the association guard alone, between reconciles: it observes
// our table, and the subnets it does not list with the tables they point
// to (observe.Scope.Steady; not the networks: the next hops are judged
// against the last ones read), judges with the last known nodes, and
// writes only to associate. It never writes routes: when the verdict calls
// for a table write (a route missing or wrong, a followed swap to fill, a
// table to re-create) or a repair failed, NeedsReconcile tells the caller
// to reconcile now.
func (c *Controller) Guard(ctx context.Context) *Result {
	ctx = c.forTable(ctx)
	res := &Result{Start: time.Now(), GuardOnly: true}
	reads0, writes0 := c.cloud.Calls()
	nodes := c.lastNodes()
	want := c.desired(nodes)
	// The steady scope reads our table, and a subnet only when the table
	// does not list it: one GET per cycle while every subnet is on it.
	o := observe.Observe(ctx, c.cloud, observe.Scope{Table: want.Table, Subnets: c.cfg.Subnets, Steady: true, Earlier: c.lastNetworks()})
	v := verdict.Judge(o, want, nil)
	if ids := listedWrites(o, v); len(ids) > 0 {
		// A subnet to write that was taken from the table's list: its PUT
		// must carry the body and etag of a read (If-Match), so read it and
		// judge again. This costs nothing in steady state: a subnet our
		// table lists is on it, and a subnet on our table is written only
		// when the verdict moves it to another table (a followed swap or
		// migration), which a steady cycle does not find.
		o = o.ReadListed(ctx, c.cloud, ids)
		v = verdict.Judge(o, want, nil)
	}
	res.Observation = o
	if _, _, res.NeedsWrite = v.TableWrite(); res.NeedsWrite {
		_, res.WriteHeld = c.heldBack(v.Table)
	}
	c.remember(o, v)
	for _, n := range v.Decision.Notes {
		c.log.Warn("association guard: " + n)
	}
	switch {
	case v.Decision.TableErr != nil:
		// Our table could not be read: nothing is associated with a table
		// of unknown state; the reconcile it asks for says more.
		res.set(v)
		res.Err = v.Err
	case v.Decision.Switch == assoc.Swapped:
		// A followed swap is reported by the reconcile that fills the new
		// table (the subnets are on it already): until then the nodes'
		// verdicts would describe a table routekeeper is about to write.
		res.set(v)
		res.Nodes, res.Associations = nil, nil
	default:
		out, _ := c.act(ctx, o, v, false)
		res.countLost(out)
		v = verdict.Judge(o, want, out)
		res.set(v)
		c.logSubnets(v)
		if v.Current != nil {
			c.tableExisted()
		}
		if len(nodes) == 0 {
			res.Nodes = nil // no nodes known yet: nothing to say of them
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
// new table), the verdict calls for a table write (a node route missing or
// wrong, the table to re-create), our table could not be read, or an
// association could not be made. A write Azure refused and routekeeper is
// waiting to try again calls for none until the wait is over: a reconcile
// would not send it either.
func (r *Result) NeedsReconcile() bool {
	if r.Followed != "" || r.Err != nil || r.NeedsWrite && !r.WriteHeld {
		return true
	}
	for _, a := range r.Associations {
		if a.TableMissing || a.RepairFailed && !a.RepairHeld || a.State == assoc.Unreadable {
			return true
		}
	}
	return false
}

// listedWrites returns the subnets a verdict would write that the
// observation took from our table's list instead of reading them.
func listedWrites(o *observe.Observation, v *verdict.Verdict) []string {
	var out []string
	for _, s := range v.Associations() {
		if r, ok := o.Subnet(s.Subnet); ok && r.Listed {
			out = append(out, s.Subnet)
		}
	}
	return out
}
