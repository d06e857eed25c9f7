package controller

import (
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// memory is what the controller remembers between passes for the verdict
// (verdict.Desired's Table, Previous, FollowedFrom, TableExisted, and the
// route limit: Azure's as last read, limit.go) and for its own logging. It is guarded by Controller.mu.
type memory struct {
	// table is the table routekeeper keeps: the configured one until a
	// verdict follows a swap or a migration.
	table string
	// previous holds the (armid.Key) IDs of tables kept before: subnets
	// still on them are moved to the current table, never the other way.
	previous map[string]bool
	// followedFrom is the table a swap was followed from, until a
	// reconcile has written the node routes into the new table.
	followedFrom string
	// everExisted: the table existed at some point in this process, so
	// creating it again is a repair (deleted out of band), not the first
	// set-up.
	everExisted bool
	// networks is the last observation that read the node networks (and
	// every guarded subnet: a reconcile's): the guard judges next hops
	// against it without reading them each cycle, and answers from it for
	// the subnets our table lists (observe.Scope.Steady).
	networks *observe.Observation
	// problems are the subnets' problems last logged (newProblem).
	problems map[string]string
	// routed are the nodes the last reported verdict found routed
	// (verdict.Desired.Routed): a node routed before stays routed while
	// another writer's operation holds its route.
	routed map[string]bool
	// limit is what is known of Azure's route limit (limit.go).
	limit limitMemory
}

// rememberRouted keeps the routed nodes of a reported verdict; a pass
// that said nothing of the nodes (nil) leaves what is known.
func (c *Controller) rememberRouted(nodes map[string]verdict.Node) {
	if nodes == nil {
		return
	}
	routed := make(map[string]bool, len(nodes))
	for name, n := range nodes {
		if n.Routed {
			routed[name] = true
		}
	}
	c.mu.Lock()
	c.mem.routed = routed
	c.mu.Unlock()
}

// Desired is the verdict's input besides the cloud: the configuration,
// nodes and this controller's memory (what iac check judges a plan with).
func (c *Controller) Desired(nodes []source.Node) verdict.Desired { return c.desired(nodes) }

// desired is Desired.
func (c *Controller) desired(nodes []source.Node) verdict.Desired {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := make([]string, 0, len(c.mem.previous))
	for id := range c.mem.previous {
		prev = append(prev, id)
	}
	limit := c.routeLimit()
	return verdict.Desired{
		Cluster:          c.cfg.Cluster,
		ClusterCIDRs:     c.cfg.ClusterCIDRs,
		Limit:            limit.Value,
		LimitFrom:        limit.From(),
		Adopt:            c.cfg.Adopt,
		MaxDeletes:       c.cfg.MaxDeletes,
		AllowEmptySource: c.cfg.AllowEmptySource,
		ConfirmStandDown: c.cfg.ConfirmStandDown,
		Claim:            c.cfg.ClaimTable,
		Mode:             c.cfg.Mode,
		Policy:           c.cfg.Policy,
		Restore:          c.cfg.Restore,
		CreateAllowed:    c.cfg.CreateTable,
		Location:         c.cfg.Location,
		Configured:       c.cfg.RouteTableID,
		Table:            c.mem.table,
		Previous:         prev,
		FollowedFrom:     c.mem.followedFrom,
		TableExisted:     c.mem.everExisted,
		Nodes:            nodes,
		Routed:           c.mem.routed,
	}
}

// remember makes a verdict's switch of table (a followed migration or
// swap) the controller's, and keeps an observation that read the node
// networks for the guard.
func (c *Controller) remember(o *observe.Observation, v *verdict.Verdict) {
	c.mu.Lock()
	if len(o.Networks()) > 0 && !o.Networks()[0].Earlier {
		c.mem.networks = o
	}
	c.mu.Unlock()
	d := v.Decision
	if d.Switch == assoc.NoSwitch || armid.Same(d.Table, c.TableID()) {
		return
	}
	switch d.Switch {
	case assoc.Migrated:
		c.log.Info("route table was migrated; keeping the new table from now on", "from", d.From, "to", d.Table)
	case assoc.Swapped:
		c.log.Warn("subnet was moved to another route table; following it: writing the node routes into it and keeping it from now on; the old table is no longer written",
			"from", d.From, "to", d.Table)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem.previous == nil {
		c.mem.previous = map[string]bool{}
	}
	c.mem.previous[armid.Key(d.From)] = true
	delete(c.mem.previous, armid.Key(d.Table))
	c.mem.table = d.Table
	if d.Switch == assoc.Swapped {
		c.mem.followedFrom = d.From
	}
}

// lastNetworks is the last observation that read the node networks.
func (c *Controller) lastNetworks() *observe.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mem.networks
}

// TableID returns the route table routekeeper currently keeps: the
// configured one, or the one it followed or migrated to.
func (c *Controller) TableID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mem.table
}

// filled records that the table we keep holds the node routes: a swap
// followed earlier is complete.
func (c *Controller) filled() {
	c.mu.Lock()
	c.mem.followedFrom = ""
	c.mu.Unlock()
}

// tableExisted records that our table exists: creating it later in this
// process is a repair (it was deleted out of band), not the first set-up.
func (c *Controller) tableExisted() {
	c.mu.Lock()
	c.mem.everExisted = true
	c.mu.Unlock()
}

// newProblem records a subnet's problem and reports whether it is new (or
// changed): a problem is logged at WARN once, not at every guard cycle (the
// metric and the summary line keep saying it).
func (c *Controller) newProblem(s verdict.Subnet) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem.problems == nil {
		c.mem.problems = map[string]string{}
	}
	key, v := armid.Key(s.Subnet), string(s.State)+" "+s.Table
	if c.mem.problems[key] == v {
		return false
	}
	c.mem.problems[key] = v
	return true
}

func (c *Controller) clearProblem(subnet string) {
	c.mu.Lock()
	delete(c.mem.problems, armid.Key(subnet))
	c.mu.Unlock()
}
