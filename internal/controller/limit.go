package controller

import (
	"errors"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/routelimit"
)

// limitMemory is what the controller knows of Azure's route limit: the
// last usages read (observe.Scope.Usage) or the number an ARM refusal
// named, and when the usages were last read. It is part of memory,
// guarded by Controller.mu.
type limitMemory struct {
	known routelimit.Known
	// readAt is when the usages were last read (or tried); zero: never,
	// or a refusal asks for a fresh read.
	readAt time.Time
	// logged is the limit last logged (Value and From).
	logged string
}

// usageDue reports whether a reconcile reads the usages now: at the
// first pass, and then once per resync period (never the guard).
func (c *Controller) usageDue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mem.limit.readAt.IsZero() || c.now().Sub(c.mem.limit.readAt) >= c.cfg.Resync
}

// rememberUsage keeps what an observation read of the usages. A read
// that failed does not forget a limit read earlier: it is noted, and the
// earlier one stays in force until the next resync reads again.
func (c *Controller) rememberUsage(o *observe.Observation) {
	u, ok := o.Usage()
	if !ok {
		return
	}
	k := routelimit.FromUsage(u)
	c.mu.Lock()
	c.mem.limit.readAt = c.now()
	prev := c.mem.limit.known
	if k.Routes > 0 || prev.Routes <= 0 {
		c.mem.limit.known = k
	}
	c.mu.Unlock()
	if k.Routes <= 0 && prev.Routes > 0 {
		c.log.Warn("could not read Azure's route limit again; keeping the one read before", "limit", prev.Routes, "location", prev.Location, "why", k.Note)
	}
	c.logLimit()
}

// rememberRefusal keeps the limit ARM named when it refused a table write
// for too many routes; when it named none, the usages are read again at
// the next pass.
func (c *Controller) rememberRefusal(err error) {
	var rl *armerr.RouteLimitError
	if !errors.As(err, &rl) {
		return
	}
	c.mu.Lock()
	if rl.Limit > 0 {
		c.mem.limit.known = routelimit.Known{Routes: rl.Limit, Location: c.mem.limit.known.Location, Refusal: true}
	}
	c.mem.limit.readAt = time.Time{}
	c.mu.Unlock()
	c.log.Warn("Azure refused the route table for holding more routes than it allows; planning with Azure's limit from now on", "table", c.TableID(), "limit", rl.Limit, "code", rl.Code)
	c.logLimit()
}

// RouteLimit is the route limit in force and where it came from.
func (c *Controller) RouteLimit() routelimit.Limit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routeLimit()
}

// routeLimit is RouteLimit; c.mu is held.
func (c *Controller) routeLimit() routelimit.Limit {
	return routelimit.Effective(c.cfg.RouteLimit, c.mem.limit.known)
}

// logLimit logs the limit in force when it is new or changed: at start,
// and whenever a read or a refusal changes it.
func (c *Controller) logLimit() {
	c.mu.Lock()
	l := c.routeLimit()
	line := l.From()
	changed := c.mem.limit.logged != line
	c.mem.limit.logged = line
	c.mu.Unlock()
	if !changed {
		return
	}
	attrs := []any{"table", c.TableID(), "limit", l.Value, "source", l.Source, "from", l.From()}
	if l.Azure.Tables > 0 {
		attrs = append(attrs, "routeTablesInRegion", l.Azure.TablesUsed, "routeTablesLimit", l.Azure.Tables)
	}
	c.log.Info("route limit: routekeeper keeps the table to at most this many routes", attrs...)
	if ig := l.Ignored(); ig != "" {
		c.log.Warn(ig, "table", c.TableID())
	}
}
