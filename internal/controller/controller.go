// Package controller is routekeeper's reconcile and guard loops. A pass is
// observe → decide → act → verify: it reads the nodes from a source and,
// once each, the guarded subnets, our route table (and the table it was
// migrated to) and the tables the subnets point to; decides with the pure
// route planner (internal/plan) and association decision (internal/assoc);
// writes the whole table in at most one PUT carrying If-Match, then the
// subnets to associate; and verifies by the table read back. A 412 means
// someone else wrote: the pass observes again, a bounded number of times
// with jitter. A node counts as routed when the table its subnet uses holds
// its route's content.
//
// The daemon (Run) debounces node events (a short batch window, capped by a
// maximum delay), resyncs periodically to catch out-of-band drift, backs off
// after failures and throttling instead of retrying in a hot loop, and
// finishes the reconcile in flight before it returns on shutdown. The
// association guard runs on its own loop, so that neither a long-running
// write nor an unavailable node source delays a repair.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Cloud is what the controller needs of the cloud back-end
// (internal/cloud/azure implements it, against Azure or the local fabric).
type Cloud interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
	// PutRouteTable writes the whole table with If-Match etag ("" = create
	// only) and returns the table read back after the operation succeeded.
	PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error)
	GetSubnet(ctx context.Context, id string) (*cloud.Subnet, error)
	SetSubnetRouteTable(ctx context.Context, subnetID, routeTableID, etag string) (*cloud.Subnet, error)
	// Calls returns the number of ARM reads and writes made so far.
	Calls() (reads, writes int64)
}

// Source provides the desired state: the cluster's nodes.
type Source interface {
	Nodes(ctx context.Context) ([]source.Node, error)
	// Watch blocks until ctx is done, calling changed whenever the nodes
	// may have changed.
	Watch(ctx context.Context, changed func()) error
}

// Reporter is told of every reconcile's result: logs, metrics, Kubernetes
// node conditions and events.
type Reporter interface {
	Report(ctx context.Context, r *Result)
}

// Mode says whether routekeeper writes routes.
type Mode string

// The route modes.
const (
	// Manage: routekeeper writes the routes.
	Manage Mode = "manage"
	// Observe: the platform (AKS) writes routes; routekeeper only reports
	// missing, stale and conflicting routes and never writes a route.
	Observe Mode = "observe"
)

// Config is the controller's part of routekeeper's configuration.
type Config struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	RouteLimit   int
	// Adopt, ClaimTable, MaxDeletes and AllowEmptySource go to the planner
	// as they are (plan.Input's Adopt, Claim, MaxDeletes, AllowEmptySource).
	Adopt            plan.AdoptPolicy
	ClaimTable       bool
	MaxDeletes       int
	AllowEmptySource bool
	RouteTableID     string
	// Location of the table when routekeeper creates it.
	Location string
	// CreateTable allows creating (tagged, filled, associated) a missing table.
	CreateTable bool
	// Subnets must stay associated with the table.
	Subnets []string
	Mode    Mode
	// Policy is the association guard's policy (default Enforce); Restore
	// lets Enforce put our table back over another one.
	Policy  Policy
	Restore bool
	// GuardInterval is how often the guard checks the subnets between
	// reconciles (default 5s).
	GuardInterval time.Duration

	// BatchWindow is the quiet time after a node change before a
	// reconcile starts; each further change extends it (default 200ms).
	BatchWindow time.Duration
	// MaxBatchDelay caps how long a change waits for the batch to close
	// while changes keep coming (default 1s, never less than BatchWindow).
	MaxBatchDelay time.Duration
	// Resync is the period of full reconciles that catch drift (default 60s).
	Resync time.Duration
	// MaxAttempts bounds the re-plans after 412 or 409 (default 5).
	MaxAttempts int
	// RetryBackoff is the first delay after a failed reconcile; it doubles
	// up to MaxRetryBackoff (defaults 1s and 2m).
	RetryBackoff, MaxRetryBackoff time.Duration
}

func (c *Config) defaults() {
	if c.RouteLimit <= 0 {
		c.RouteLimit = 400
	}
	if c.Mode == "" {
		c.Mode = Manage
	}
	if c.Policy == "" {
		c.Policy = Enforce
	}
	if c.GuardInterval <= 0 {
		c.GuardInterval = 5 * time.Second
	}
	if c.BatchWindow <= 0 {
		c.BatchWindow = 200 * time.Millisecond
	}
	if c.MaxBatchDelay <= 0 {
		c.MaxBatchDelay = time.Second
	}
	c.MaxBatchDelay = max(c.MaxBatchDelay, c.BatchWindow)
	if c.Resync <= 0 {
		c.Resync = time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = 2 * time.Minute
	}
}

// Controller keeps the route table of one cluster.
type Controller struct {
	cfg       Config
	cloud     Cloud
	src       Source
	reporters []Reporter
	log       *slog.Logger
	sleep     func(ctx context.Context, d time.Duration) error

	mu sync.Mutex
	// tableID is the table routekeeper keeps: the configured one until the
	// guard follows a swap.
	tableID string
	// assoc is the association guard's memory (guard.go).
	assoc assocState
	// nodes are the last nodes the source returned (the guard works from
	// them when the source is unavailable); sourceErr its last error.
	nodes     []source.Node
	sourceErr error
	// unrouted are the nodes not routed after the last reconcile, with
	// their reason (logUnrouted).
	unrouted map[string]string
	// lastResults are the node results of the last reconcile that planned:
	// the guard starts from them (the planner's reasons stay).
	lastResults map[string]NodeResult
	// reportMu serializes the reporters: the guard and the reconcile run
	// on separate loops.
	reportMu sync.Mutex
}

// New makes a controller. Reporters are called after every reconcile.
func New(cfg Config, c Cloud, src Source, log *slog.Logger, reporters ...Reporter) *Controller {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Controller{cfg: cfg, cloud: c, src: src, reporters: reporters, log: log, sleep: sleepCtx, tableID: cfg.RouteTableID}
}

// Config returns the controller's configuration with defaults applied.
func (c *Controller) Config() Config { return c.cfg }

// NodeResult is what a reconcile established for one node.
type NodeResult struct {
	// Routed: every pod CIDR of the node has its correct route in the table
	// as read back after the last write (or as read, when nothing was written).
	Routed bool `json:"routed"`
	// Pending: the node is routed by its routes' content, but some route
	// is not (yet) read Succeeded: another writer's operation on the table
	// is in progress. It keeps a routed status, but is not made routed for
	// the first time (DESIGN invariants 4 and 8).
	Pending bool   `json:"pending,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// planned: the reason comes from the planner, not from verification.
	planned bool
}

// Result is the outcome of one reconcile.
type Result struct {
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Plan is the last plan made (after any re-plans).
	Plan *plan.Plan `json:"-"`
	// Table is the route table as it stands after the reconcile, nil when
	// it does not exist.
	Table *route.Table `json:"-"`
	// Wrote is true when a PUT of the table succeeded.
	Wrote                     bool `json:"wrote"`
	Created, Updated, Deleted int
	Conflicts                 int
	// Attempts counts plans made (more than one after 412 or 409).
	Attempts int `json:"attempts"`
	Nodes    map[string]NodeResult
	// GuardOnly is set on the results of the association guard's own
	// checks between reconciles: only Associations is filled in.
	GuardOnly bool `json:"guardOnly,omitempty"`
	// Associations are the guard's findings, one per configured subnet.
	Associations []Association `json:"associations,omitempty"`
	// Followed is the table adopted by the Follow policy in this reconcile.
	Followed string `json:"followed,omitempty"`
	// TableID is the table this reconcile kept.
	TableID string `json:"tableId"`
	// Reads and Writes are the ARM calls this reconcile made.
	Reads, Writes int64
	// Routes counts the routes of Table against the nodes; nil when the
	// table could not be read (or for GuardOnly results).
	Routes *RouteCounts `json:"routes,omitempty"`
	// Decision is the association decision the pass acted on.
	Decision *assoc.Decision `json:"-"`
	// Drift is, for GuardOnly results, the number of node routes missing
	// or wrong in our table as the guard read it (last known nodes).
	Drift int   `json:"drift,omitempty"`
	Err   error `json:"-"`

	// nodes are the nodes the reconcile worked from.
	nodes []source.Node
}

// RouteCounts describe the route table after a reconcile, for metrics and
// observe mode's reports.
type RouteCounts struct {
	// Desired is the number of pod CIDRs of the nodes: one route each.
	Desired int `json:"desired"`
	// Present is the number of desired routes in the table, correct (name,
	// prefix, next hop, provisioned).
	Present int `json:"present"`
	// Owned is the number of routes in the table that belong to this
	// cluster (route.OwnerThisCluster); Foreign the others (custom routes,
	// other clusters' routes).
	Owned   int `json:"owned"`
	Foreign int `json:"foreign"`
	// Stale is the number of owned routes that no node's pod CIDR asks
	// for: routes of deleted nodes or of old pod CIDRs. A reconcile in
	// manage mode deletes them; observe mode only reports them.
	Stale int `json:"stale"`
}

// Missing is the number of desired routes absent or wrong in the table.
func (rc RouteCounts) Missing() int { return rc.Desired - rc.Present }

// countRoutes compares the table with the nodes.
func (c *Controller) countRoutes(t *route.Table, nodes []source.Node) *RouteCounts {
	rc := &RouteCounts{}
	var byName map[string]*route.Route
	if t != nil {
		byName = make(map[string]*route.Route, len(t.Routes))
		for i := range t.Routes {
			byName[strings.ToLower(t.Routes[i].Name)] = &t.Routes[i]
		}
	}
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		rc.Desired += len(n.PodCIDRs)
		for _, cidr := range n.PodCIDRs {
			name := strings.ToLower(route.Name(n.Name, cidr))
			want[name] = true
			hop, ok := n.NextHop(cidr)
			if r := byName[name]; ok && r != nil && correct(r, cidr, hop) {
				rc.Present++
			}
		}
	}
	if t == nil {
		return rc
	}
	own := route.Ownership{Cluster: c.cfg.Cluster, ClusterCIDRs: c.cfg.ClusterCIDRs}
	for i, cl := range own.ClassifyTable(t) {
		if cl.Owner != route.OwnerThisCluster {
			rc.Foreign++
			continue
		}
		rc.Owned++
		if !want[strings.ToLower(t.Routes[i].Name)] {
			rc.Stale++
		}
	}
	return rc
}

// AssociationProblems counts subnets not on our table after the guard.
func (r *Result) AssociationProblems() int {
	n := 0
	for _, a := range r.Associations {
		if a.Problem() {
			n++
		}
	}
	return n
}

// Repairs counts the subnets the guard repaired.
func (r *Result) Repairs() int {
	n := 0
	for _, a := range r.Associations {
		if a.Repaired {
			n++
		}
	}
	return n
}

// Unrouted returns the number of nodes not routed.
func (r *Result) Unrouted() int {
	n := 0
	for _, nr := range r.Nodes {
		if !nr.Routed {
			n++
		}
	}
	return n
}

// Summary is the one line that ends every reconcile.
func (r *Result) Summary() string {
	status := "ok"
	if r.Err != nil {
		status = "failed"
	}
	if r.GuardOnly {
		return fmt.Sprintf("association guard %s: subnets=%d repaired=%d problems=%d unrouted=%d routes missing=%d arm reads=%d writes=%d duration=%s",
			status, len(r.Associations), r.Repairs(), r.AssociationProblems(), r.Unrouted(), r.Drift, r.Reads, r.Writes, r.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("reconcile %s: routes created=%d updated=%d deleted=%d conflicts=%d unrouted=%d subnets repaired=%d problems=%d arm reads=%d writes=%d attempts=%d duration=%s",
		status, r.Created, r.Updated, r.Deleted, r.Conflicts, r.Unrouted(), r.Repairs(), r.AssociationProblems(), r.Reads, r.Writes, r.Attempts, r.Duration.Round(time.Millisecond))
}

// Errors that end a reconcile without a write.
var (
	// ErrTableMissing: the route table does not exist and may not be
	// created (not allowed, or nothing would use it: see createBlocked).
	ErrTableMissing = errors.New("route table does not exist")
	// ErrRefused: the plan refused to write (for example the table is
	// claimed by another cluster).
	ErrRefused = errors.New("refusing to write the route table")
)

// Reconcile makes the route table match the nodes, once.
func (c *Controller) Reconcile(ctx context.Context) *Result {
	return c.run(ctx, false)
}

// DryRun reads the nodes and the table and plans like Reconcile, but writes
// nothing: Result.Plan holds the changes a reconcile would make. Reporters
// are not called.
func (c *Controller) DryRun(ctx context.Context) *Result {
	return c.run(ctx, true)
}

// report hands res to every reporter, one result at a time.
func (c *Controller) report(ctx context.Context, res *Result) {
	c.reportMu.Lock()
	defer c.reportMu.Unlock()
	for _, r := range c.reporters {
		r.Report(ctx, res)
	}
}

// Inspect is DryRun with the nodes given instead of read from the source
// (nil: no nodes, when only the table and the association decision are
// wanted, as for `routes list`).
func (c *Controller) Inspect(ctx context.Context, nodes []source.Node) *Result {
	res := &Result{Start: time.Now(), Nodes: map[string]NodeResult{}, nodes: nodes}
	reads0, writes0 := c.cloud.Calls()
	_, res.Err = c.attempt(ctx, nodes, res, true)
	if res.Plan != nil {
		res.Routes = c.countRoutes(res.Table, nodes)
	}
	reads1, writes1 := c.cloud.Calls()
	res.Reads, res.Writes = reads1-reads0, writes1-writes0
	res.Duration = time.Since(res.Start)
	return res
}

func (c *Controller) run(ctx context.Context, dryRun bool) *Result {
	res := &Result{Start: time.Now(), Nodes: map[string]NodeResult{}}
	reads0, writes0 := c.cloud.Calls()
	if dryRun {
		nodes, err := c.src.Nodes(ctx)
		res.nodes = nodes
		if err == nil {
			_, err = c.attempt(ctx, nodes, res, true)
		} else {
			err = fmt.Errorf("reading nodes: %w", err)
		}
		res.Err = err
	} else {
		res.Err = c.reconcile(ctx, res)
	}
	if res.Plan != nil {
		// The table was read: count its routes (as written, or as read).
		res.Routes = c.countRoutes(res.Table, res.nodes)
	}
	reads1, writes1 := c.cloud.Calls()
	res.Reads, res.Writes = reads1-reads0, writes1-writes0
	res.Duration = time.Since(res.Start)
	if !dryRun {
		if res.Plan != nil {
			c.mu.Lock()
			c.lastResults = maps.Clone(res.Nodes)
			c.mu.Unlock()
		}
		c.report(ctx, res)
	}
	return res
}

func (c *Controller) reconcile(ctx context.Context, res *Result) error {
	nodes, err := c.src.Nodes(ctx)
	if err != nil {
		if c.SourceErr() == nil {
			c.log.Warn("the node source is unavailable; the association guard goes on, with the last known nodes for routes", "err", err, "lastKnownNodes", len(c.lastNodes()))
		}
		c.setSourceErr(err)
		return fmt.Errorf("reading nodes: %w", err)
	}
	c.setNodes(nodes)
	res.nodes = nodes
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		res.Attempts = attempt
		retry, err := c.attempt(ctx, nodes, res, false)
		if err == nil || !retry {
			return err
		}
		if attempt == c.cfg.MaxAttempts {
			return fmt.Errorf("route table %s kept changing under us: gave up after %d attempts: %w", res.TableID, attempt, err)
		}
		// Jittered, growing pause so two writers do not keep colliding.
		d := time.Duration(attempt) * (50*time.Millisecond + rand.N(200*time.Millisecond))
		c.log.Info("route table changed since it was read; re-reading and re-planning", "table", res.TableID, "attempt", attempt, "wait", d, "cause", err)
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// attempt is one observe, decide, act, verify pass (observe and decide
// when dryRun). retry reports whether the error is a concurrent change
// worth observing again for (412, 409).
func (c *Controller) attempt(ctx context.Context, nodes []source.Node, res *Result, dryRun bool) (retry bool, err error) {
	// observe: every subnet, our table (and its successor), the tables the
	// subnets point to, once each.
	o := c.observe(ctx, nodes)
	o.nodeNetworks = c.nodeNetworks(ctx)
	// decide: the association decision (which may move us to the table a
	// migration or a followed swap leads to), then the route plan against
	// the table we keep.
	var d *assoc.Decision
	if dryRun {
		d = assoc.Decide(o.input)
	} else {
		d = c.decide(o)
	}
	res.Decision = d
	tableID := d.Table
	res.TableID = tableID
	if d.Switch != assoc.NoSwitch {
		res.Followed = tableID
	}
	if d.TableErr != nil {
		return false, d.TableErr // it names the operation and the table
	}
	cur := o.table(tableID)
	p := plan.Compute(plan.Input{
		Cluster:      c.cfg.Cluster,
		ClusterCIDRs: c.cfg.ClusterCIDRs,
		Limit:        c.cfg.RouteLimit,
		Nodes:        nodes,
		Current:      cur,
		Adopt:        c.cfg.Adopt,
		// A table followed to (a swap) is adopted on purpose: claim it.
		Claim:            c.cfg.ClaimTable || !sameID(tableID, c.cfg.RouteTableID),
		MaxDeletes:       c.cfg.MaxDeletes,
		AllowEmptySource: c.cfg.AllowEmptySource,
		NodeNetworks:     o.nodeNetworks,
	})
	res.Plan, res.Table = p, cur
	// Deletions held back and routes of unknown nodes left in an unclaimed
	// table are logged every pass while they last; node problems are
	// logged once when they appear (logUnrouted, or the CLI for --once).
	if p.HeldMessage != "" {
		c.log.Warn(p.HeldMessage, "table", tableID, "held", len(p.HeldDeletes), "reason", p.HeldReason)
	}
	for _, ch := range p.Changes {
		if ch.Adopts != "" && c.cfg.Mode != Observe && !dryRun {
			c.log.Info("adopting route: renamed in the same write, no gap", "table", tableID, "from", ch.Adopts, "to", ch.Route.Name, "prefix", ch.Route.AddressPrefix, "node", ch.Node)
		}
	}
	if len(p.Unclaimed) > 0 {
		c.log.Warn("routes of nodes this cluster does not have are left in the unclaimed route table; doctor lists them", "table", tableID, "routes", len(p.Unclaimed))
	}
	res.Created, res.Updated, res.Deleted = p.Counts()
	res.Conflicts = len(p.Conflicts)
	res.Nodes = nodeResults(p, nodes)
	finish := func(tableExists, created bool) {
		if dryRun {
			res.Associations = planned(d)
		} else {
			res.Associations = c.act(ctx, o, d, tableExists, created)
		}
		c.subnetTruth(res, o, nodes)
	}

	if cur == nil && !d.Create {
		for name := range res.Nodes {
			res.Nodes[name] = NodeResult{Reason: ReasonTableMissing, Message: fmt.Sprintf("route table %s does not exist", tableID)}
		}
		res.Created, res.Updated, res.Deleted = 0, 0, 0
		finish(false, false)
		return false, fmt.Errorf("%w: %s: %s", ErrTableMissing, tableID, d.CreateBlocked)
	}
	if p.Refused != "" {
		res.Created, res.Updated, res.Deleted = 0, 0, 0
		finish(cur != nil, false)
		return false, fmt.Errorf("%w %s: %s", ErrRefused, tableID, p.Refused)
	}
	if dryRun || c.cfg.Mode == Observe || !p.NeedsWrite() {
		if c.cfg.Mode == Observe {
			res.Created, res.Updated, res.Deleted = 0, 0, 0
		}
		c.verify(res, nodes, cur, ReasonRouteMissing, nil)
		finish(cur != nil, false)
		if !dryRun {
			c.filled()
		}
		return false, nil
	}

	// act: the table first (If-Match), so that a subnet is never pointed
	// to a table that lacks the node routes; then the subnets.
	desired := p.Desired
	etag := ""
	if cur == nil {
		desired = c.newTable(desired)
	} else {
		etag = cur.Etag
	}
	written, err := c.cloud.PutRouteTable(ctx, desired, etag)
	if err != nil {
		// Routes that were already right stay so; the ones this write
		// carried did not land.
		c.verify(res, nodes, cur, ReasonWriteFailed, nil)
		if errors.Is(err, cloud.ErrPreconditionFailed) || errors.Is(err, cloud.ErrConflict) {
			return true, err // back to observe
		}
		finish(cur != nil, false)
		return false, err
	}
	res.Wrote, res.Table = true, written
	// verify: a node is routed only if the table read back after the
	// write holds its route.
	c.verify(res, nodes, written, ReasonNotReadBack, p)
	finish(true, p.Create)
	c.filled()
	return false, nil
}

// filled records that the table we keep holds the node routes: a swap the
// guard followed is complete.
func (c *Controller) filled() {
	c.mu.Lock()
	c.assoc.followedFrom = ""
	c.mu.Unlock()
}

// newTable fills in what a create needs: ID, name, location.
func (c *Controller) newTable(t *route.Table) *route.Table {
	t.ID = c.TableID()
	if t.Location == "" {
		t.Location = c.cfg.Location
	}
	return t
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// correct reports whether r routes cidr to hop, provisioned (the test
// verify applies to a route found by name).
func correct(r *route.Route, cidr netip.Prefix, hop netip.Addr) bool {
	return r.Prefix == cidr.Masked() && r.NextHopType == route.VirtualAppliance && r.NextHopIP == hop &&
		(r.ProvisioningState == "" || r.ProvisioningState == "Succeeded")
}

// SourceNodes are the nodes the pass worked from.
func (r *Result) SourceNodes() []source.Node { return r.nodes }
