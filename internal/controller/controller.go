// Package controller is routekeeper's reconcile and guard loops. A pass is
// observe → judge → act → judge: the observer (internal/observe) reads the
// guarded subnets, our route table (and the table it was migrated to) and
// the tables the subnets point to, once each; the verdict
// (internal/verdict, pure) decides which table is kept, what to write and
// whether each node is routed; the controller writes the whole table in at
// most one PUT carrying If-Match, then the subnets to associate; and the
// verdict is judged again with the outcome of those writes, which is what
// the pass reports. A 412 means someone else wrote: the pass observes
// again, a bounded number of times with jitter. A write whose answer was
// lost (armerr.ErrOutcomeUnknown) is handled the same way: the pass
// observes again at once and plans from what is there, and while the table
// reads mid-operation it reads it again until the operation ended, as the
// lost answer's poller would have. The controller has no routing rules of
// its own: it carries out a verdict's actions and remembers what a verdict
// needs from earlier passes (the table it followed, the nodes last seen).
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
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routelimit"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Source provides the desired state: the cluster's nodes.
type Source interface {
	Nodes(ctx context.Context) ([]source.Node, error)
	// Watch blocks until ctx is done, calling changed whenever the nodes
	// may have changed.
	Watch(ctx context.Context, changed func()) error
}

// Reporter is told of every pass's result: logs, metrics, Kubernetes node
// conditions and events.
type Reporter interface {
	Report(ctx context.Context, r *Result)
}

// Config is the controller's part of routekeeper's configuration.
type Config struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	// RouteLimit is routeTable.routeLimit: 0 keeps the table to Azure's
	// limit (read from the usages API at start and each resync); a
	// positive value lowers it (internal/routelimit).
	RouteLimit int
	// Adopt, ClaimTable, MaxDeletes and AllowEmptySource go to the planner
	// as they are (plan.Input's Adopt, Claim, MaxDeletes, AllowEmptySource).
	Adopt            plan.AdoptPolicy
	ClaimTable       bool
	MaxDeletes       int
	AllowEmptySource bool
	// ConfirmStandDown confirms the stand-down from host routes
	// (verdict.Desired's; Mode StandDown).
	ConfirmStandDown bool
	RouteTableID     string
	// Location of the table when routekeeper creates it.
	Location string
	// CreateTable allows creating (tagged, filled, associated) a missing table.
	CreateTable bool
	// Subnets must stay associated with the table.
	Subnets []string
	Mode    verdict.Mode
	// Policy is the association policy (default enforce); Restore lets
	// enforce put our table back over another one.
	Policy  assoc.Policy
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
	// MaxAttempts bounds the re-plans after 412, 409 or a lost answer
	// (default 5).
	MaxAttempts int
	// RetryBackoff is the first delay after a failed reconcile; it doubles
	// up to MaxRetryBackoff (defaults 1s and 2m).
	RetryBackoff, MaxRetryBackoff time.Duration
}

func (c *Config) defaults() {
	c.RouteLimit = max(c.RouteLimit, 0)
	if c.Mode == "" {
		c.Mode = verdict.Manage
	}
	if c.Policy == "" {
		c.Policy = assoc.Enforce
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
	cloud     cloud.Cloud
	src       Source
	reporters []Reporter
	log       *slog.Logger
	sleep     func(ctx context.Context, d time.Duration) error
	now       func() time.Time

	mu sync.Mutex
	// mem is what verdicts need from earlier passes (memory.go).
	mem memory
	// nodes are the last nodes the source returned (the guard works from
	// them when the source is unavailable); sourceErr its last error.
	nodes     []source.Node
	sourceErr error
	// unrouted are the nodes not routed after the last reconcile, with
	// their reason (logUnrouted).
	unrouted map[string]string
	// refusals are the writes Azure refused, waiting (denials.go).
	refusals map[string]*refusal
	// reportMu serializes the reporters: the guard and the reconcile run
	// on separate loops.
	reportMu sync.Mutex
}

// New makes a controller. Reporters are called after every pass.
func New(cfg Config, c cloud.Cloud, src Source, log *slog.Logger, reporters ...Reporter) *Controller {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Controller{cfg: cfg, cloud: c, src: src, reporters: reporters, log: log, sleep: sleepCtx, now: time.Now, mem: memory{table: cfg.RouteTableID}}
}

// Config returns the controller's configuration with defaults applied.
func (c *Controller) Config() Config { return c.cfg }

// Result is the outcome of one pass: its verdict, and what the pass did.
// The fields after Verdict are the verdict's own values, at hand.
type Result struct {
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Attempts counts observations made (more than one after 412 or 409).
	Attempts int `json:"attempts"`
	// GuardOnly is set on the association guard's passes between
	// reconciles.
	GuardOnly bool `json:"guardOnly,omitempty"`
	// Followed is the table adopted by a followed swap or migration in
	// this pass.
	Followed string `json:"followed,omitempty"`
	// TableID is the table this pass kept.
	TableID string `json:"tableId"`
	// Reads and Writes are the ARM calls this pass made.
	Reads, Writes int64
	// NeedsWrite: the verdict the pass acted on called for a table write
	// (the guard does not write routes: it asks for a reconcile).
	NeedsWrite bool `json:"needsWrite,omitempty"`
	// WriteHeld: that table write is not tried before an earlier refusal
	// of it has been waited out.
	WriteHeld bool `json:"writeHeld,omitempty"`
	// RouteLimit is the route limit the pass planned with, and where it
	// came from (Azure's usages API, routeTable.routeLimit, Azure's
	// default).
	RouteLimit routelimit.Limit `json:"routeLimit"`
	// LostAnswers counts the pass's writes whose answer was lost
	// (armerr.ErrOutcomeUnknown), by write (verdict.OpTableWrite,
	// verdict.OpSubnetWrite): each was followed by a fresh read of the
	// resource, never sent again as it was.
	LostAnswers map[string]int `json:"lostAnswers,omitempty"`
	Err         error          `json:"-"`

	// Observation is what the pass's last attempt read; the verdict was
	// judged from it.
	Observation *observe.Observation `json:"-"`
	// Verdict is the pass's verdict, after its writes.
	Verdict *verdict.Verdict `json:"-"`
	// From the verdict: the plan, the table as it stands, the association
	// decision, the node and subnet verdicts and the route counts.
	Plan                      *plan.Plan      `json:"-"`
	Table                     *route.Table    `json:"-"`
	Decision                  *assoc.Decision `json:"-"`
	Nodes                     map[string]verdict.Node
	Associations              []verdict.Subnet     `json:"associations,omitempty"`
	Routes                    *verdict.RouteCounts `json:"routes,omitempty"`
	Wrote                     bool                 `json:"wrote"`
	Created, Updated, Deleted int
	Conflicts                 int
}

// set makes v the result's verdict.
func (r *Result) set(v *verdict.Verdict) {
	r.Verdict, r.Plan, r.Table, r.Decision = v, v.Plan, v.Current, v.Decision
	r.Nodes, r.Associations, r.Routes, r.Wrote = v.Nodes, v.Subnets, v.Routes, v.Wrote
	r.TableID = v.Table
	r.Created, r.Updated, r.Deleted, r.Conflicts = 0, 0, 0, 0
	if v.Plan != nil {
		r.Conflicts = len(v.Plan.Conflicts)
		if v.Mode() != verdict.Observe && v.Plan.Refused == "" && (v.Current != nil || v.Decision.Create) {
			r.Created, r.Updated, r.Deleted = v.Plan.Counts()
		}
	}
	if v.Decision != nil && v.Decision.Switch != assoc.NoSwitch {
		r.Followed = v.Table
	}
}

// SourceNodes are the nodes the pass worked from.
func (r *Result) SourceNodes() []source.Node {
	if r.Verdict == nil {
		return nil
	}
	return r.Verdict.SourceNodes()
}

// AssociationProblems counts the subnets left off our table (the
// verdict's Subnet.Problem).
func (r *Result) AssociationProblems() int { return verdict.CountProblems(r.Associations) }

// Repairs counts the subnets the pass repaired.
func (r *Result) Repairs() int { return verdict.CountRepaired(r.Associations) }

// Unrouted returns the number of nodes the verdict found not routed.
func (r *Result) Unrouted() int { return verdict.CountNodes(r.Nodes).NotRouted }

// Summary is the one line that ends every pass.
func (r *Result) Summary() string {
	status := "ok"
	if r.Err != nil {
		status = "failed"
	}
	if r.GuardOnly {
		missing := 0
		if r.Routes != nil {
			missing = r.Routes.Missing()
		}
		return fmt.Sprintf("association guard %s: subnets=%d repaired=%d problems=%d unrouted=%d routes missing=%d arm reads=%d writes=%d duration=%s",
			status, len(r.Associations), r.Repairs(), r.AssociationProblems(), r.Unrouted(), missing, r.Reads, r.Writes, r.Duration.Round(time.Millisecond))
	}
	lost := ""
	if n := r.Lost(); n > 0 {
		lost = fmt.Sprintf(" answers lost=%d", n)
	}
	return fmt.Sprintf("reconcile %s: routes created=%d updated=%d deleted=%d conflicts=%d unrouted=%d subnets repaired=%d problems=%d arm reads=%d writes=%d%s attempts=%d duration=%s",
		status, r.Created, r.Updated, r.Deleted, r.Conflicts, r.Unrouted(), r.Repairs(), r.AssociationProblems(), r.Reads, r.Writes, lost, r.Attempts, r.Duration.Round(time.Millisecond))
}

// Lost returns the number of the pass's writes whose answer was lost.
func (r *Result) Lost() int {
	n := 0
	for _, c := range r.LostAnswers {
		n += c
	}
	return n
}

// countLost adds the writes of out whose answer was lost to LostAnswers.
func (r *Result) countLost(out *verdict.Outcome) {
	add := func(write string) {
		if r.LostAnswers == nil {
			r.LostAnswers = map[string]int{}
		}
		r.LostAnswers[write]++
	}
	if out.Table != nil && out.Table.Lost {
		add(verdict.OpTableWrite)
	}
	for _, w := range out.Subnets {
		if w.Lost {
			add(verdict.OpSubnetWrite)
		}
	}
}

// Reconcile makes the route table match the nodes, once.
func (c *Controller) Reconcile(ctx context.Context) *Result {
	ctx = c.forTable(ctx)
	nodes, err := c.src.Nodes(ctx)
	return c.pass(ctx, nodes, err, false, observe.Scope{})
}

// DryRun reads the nodes and the cloud and judges like Reconcile, but
// writes nothing: the result's verdict holds what a reconcile would do.
// Reporters are not called. more widens what is observed for the
// commands that need more than a reconcile (trace and doctor: Routing,
// RoutingSubnets, NICs); its Table and Subnets are the controller's.
func (c *Controller) DryRun(ctx context.Context, more observe.Scope) *Result {
	ctx = c.forTable(ctx)
	nodes, err := c.src.Nodes(ctx)
	return c.pass(ctx, nodes, err, true, more)
}

// Inspect is DryRun with the nodes given instead of read from the source
// (nil: no nodes, when only the table and the association decision are
// wanted, as for `routes list`).
func (c *Controller) Inspect(ctx context.Context, nodes []source.Node, more observe.Scope) *Result {
	return c.pass(ctx, nodes, nil, true, more)
}

// forTable marks ctx as this controller's: the ARM requests made with it
// are counted for its configured table (cloud.ForTable, metric
// routekeeper_table_arm_requests_total), apart from those of the other
// controllers (mirrors) that share the cloud client.
func (c *Controller) forTable(ctx context.Context) context.Context {
	return cloud.ForTable(ctx, TableName(c.cfg.RouteTableID))
}

// report hands res to every reporter, one result at a time.
func (c *Controller) report(ctx context.Context, res *Result) {
	c.rememberRouted(res.Nodes)
	c.reportMu.Lock()
	defer c.reportMu.Unlock()
	for _, r := range c.reporters {
		r.Report(ctx, res)
	}
}

// pass is one reconcile (or dry run) from nodes as read (srcErr: they
// could not be).
func (c *Controller) pass(ctx context.Context, nodes []source.Node, srcErr error, dryRun bool, more observe.Scope) *Result {
	ctx = c.forTable(ctx)
	res := &Result{Start: time.Now()}
	reads0, writes0 := c.cloud.Calls()
	switch {
	case srcErr != nil && dryRun:
		res.Err = fmt.Errorf("reading nodes: %w", srcErr)
	case srcErr != nil:
		if c.SourceErr() == nil {
			c.log.Warn("the node source is unavailable; the association guard goes on, with the last known nodes for routes", "err", srcErr, "lastKnownNodes", len(c.lastNodes()))
		}
		c.setSourceErr(srcErr)
		res.Err = fmt.Errorf("reading nodes: %w", srcErr)
	case dryRun:
		res.Attempts = 1
		_, res.Err = c.attempt(ctx, nodes, res, true, more)
	default:
		c.setNodes(nodes)
		res.Err = c.reconcile(ctx, nodes, res, more)
	}
	reads1, writes1 := c.cloud.Calls()
	res.Reads, res.Writes = reads1-reads0, writes1-writes0
	res.Duration = time.Since(res.Start)
	if !dryRun {
		c.report(ctx, res)
	}
	return res
}

// reconcile observes (more widens it, as for a dry run), judges, acts and
// judges again until the table write did not race or lose its answer.
func (c *Controller) reconcile(ctx context.Context, nodes []source.Node, res *Result, more observe.Scope) error {
	replans, settles := 1, 0
	for {
		res.Attempts++
		retry, err := c.attempt(ctx, nodes, res, false, more)
		var d time.Duration
		switch {
		case retry && replans == c.cfg.MaxAttempts:
			return fmt.Errorf("route table %s kept changing under us or losing our writes' answers: gave up after %d attempts: %w", res.TableID, replans, err)
		case retry:
			// Jittered, growing pause so two writers do not keep
			// colliding, and a path that keeps losing answers is not
			// hammered.
			d = time.Duration(replans) * (50*time.Millisecond + rand.N(200*time.Millisecond))
			replans++
			if errors.Is(err, armerr.ErrOutcomeUnknown) {
				c.log.Info("the answer to the route table write was lost; reading the table back and planning from what is there", "table", res.TableID, "attempt", res.Attempts, "wait", d)
			} else {
				c.log.Info("route table changed since it was read; re-reading and re-planning", "table", res.TableID, "attempt", res.Attempts, "wait", d, "cause", err)
			}
		case err == nil && settles < maxSettles && res.settling():
			// Our write's answer was lost, and the table read back is
			// mid-operation (that write's, most likely): its nodes are
			// pending. Read it again until the operation ended, as the
			// lost answer's poller would have: Succeeded routes them,
			// Failed makes the next plan write again.
			d = settlePause
			settles++
			c.log.Debug("the route table whose write's answer was lost is still being updated; reading it again", "table", res.TableID, "state", res.Table.ProvisioningState, "wait", d)
		default:
			return err
		}
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// A table read back after a lost answer while its operation runs is read
// again every settlePause, at most maxSettles times (one default guard
// interval); then the pass ends and the guard follows the table.
const (
	settlePause = 500 * time.Millisecond
	maxSettles  = 10
)

// settling reports whether the pass lost the answer to a table write and
// its last observation found the table mid-operation with nothing to
// write: the outcome is still being decided.
func (r *Result) settling() bool {
	return r.LostAnswers[verdict.OpTableWrite] > 0 && !r.Wrote && !r.NeedsWrite && r.Table != nil &&
		r.Table.ProvisioningState != "" && r.Table.ProvisioningState != "Succeeded" && r.Table.ProvisioningState != "Failed"
}

// attempt is one observe, judge, act, judge pass (observe and judge when
// dryRun). retry reports whether the error is a concurrent change (412,
// 409) or a lost answer worth observing again for.
func (c *Controller) attempt(ctx context.Context, nodes []source.Node, res *Result, dryRun bool, more observe.Scope) (retry bool, err error) {
	more.Table, more.Subnets, more.Networks = c.TableID(), c.cfg.Subnets, true
	more.NextHops = observe.NextHops(nodes) // a node in a peered network costs one read
	// Azure's route limit: one GET at start and once per resync.
	more.Usage, more.Location = more.Usage || c.usageDue(), c.cfg.Location
	o := observe.Observe(ctx, c.cloud, more)
	res.Observation = o
	c.rememberUsage(o)
	want := c.desired(nodes)
	res.RouteLimit = c.RouteLimit()
	v := verdict.Judge(o, want, nil)
	_, _, res.NeedsWrite = v.TableWrite()
	if dryRun {
		res.set(v)
		return false, v.Err
	}
	c.remember(o, v)
	c.logPlan(v)
	if v.Decision.TableErr != nil {
		res.set(v)
		return false, v.Err
	}
	out, retry := c.act(ctx, o, v, true)
	res.countLost(out)
	if retry {
		res.set(verdict.Judge(o, want, out))
		return true, out.Table.Err
	}
	v = verdict.Judge(o, want, out)
	res.set(v)
	c.logSubnets(v)
	if v.Current != nil {
		c.tableExisted()
	}
	if v.Err == nil && (v.Wrote || !res.NeedsWrite) {
		c.filled()
	}
	return false, v.Err
}

// act carries out a verdict's actions: the table first (one PUT with
// If-Match), so that a subnet is never pointed to a table that lacks the
// node routes; then one PUT per subnet to associate, with If-Match of the
// version decided on, only when our table exists. The guard acts without
// the table write (writeTable false): route writes are the reconcile's.
// retry: the table write met another writer (412, 409) or its answer was
// lost (outcome unknown), so the pass must observe again.
func (c *Controller) act(ctx context.Context, o *observe.Observation, v *verdict.Verdict, writeTable bool) (out *verdict.Outcome, retry bool) {
	out = &verdict.Outcome{Subnets: map[string]verdict.Write{}}
	exists := v.Current != nil
	if t, etag, ok := v.TableWrite(); ok && writeTable {
		if err, held := c.heldBack(v.Table); held {
			out.Table = &verdict.TableWrite{Write: heldOutcome(err)}
		} else {
			written, err := c.cloud.PutRouteTable(ctx, t, etag)
			out.Table = &verdict.TableWrite{Write: outcome(err), ReadBack: written}
			c.wrote(verdict.OpTableWrite, v.Table, err)
			c.rememberRefusal(err)
			if out.Table.Raced || out.Table.Lost {
				return out, true
			}
			exists = exists || err == nil
		}
	}
	if !exists {
		return out, false
	}
	for _, s := range v.Associations() {
		if err, held := c.heldBack(s.Subnet); held {
			out.Subnets[armid.Key(s.Subnet)] = heldOutcome(err)
			continue
		}
		etag := ""
		if r, ok := o.Subnet(s.Subnet); ok && r.Subnet != nil {
			etag = r.Subnet.Etag
		}
		_, err := c.cloud.SetSubnetRouteTable(ctx, s.Subnet, v.Table, etag)
		out.Subnets[armid.Key(s.Subnet)] = outcome(err)
		c.wrote(verdict.OpSubnetWrite, s.Subnet, err)
	}
	return out, false
}

// logPlan logs what a verdict about to be acted on holds back or leaves:
// held deletions and routes of unknown nodes (every pass while they last),
// adoptions, notes of the association decision.
func (c *Controller) logPlan(v *verdict.Verdict) {
	for _, n := range v.Decision.Notes {
		c.log.Warn("association guard: " + n)
	}
	p := v.Plan
	if p == nil {
		return
	}
	if p.HeldMessage != "" {
		c.log.Warn(p.HeldMessage, "table", v.Table, "held", len(p.HeldDeletes), "reason", p.HeldReason)
	}
	if _, _, write := v.TableWrite(); write {
		for _, ch := range p.Changes {
			if ch.Adopts != "" {
				c.log.Info("adopting route: renamed in the same write, no gap", "table", v.Table, "from", ch.Adopts, "to", ch.Route.Name, "prefix", ch.Route.AddressPrefix, "node", ch.Node)
			}
		}
	}
	if len(p.Unclaimed) > 0 {
		// A table cloud-provider-azure wrote holds routes of nodes that are
		// gone; claiming the table is what lets routekeeper clean them up.
		c.log.Warn("routes of nodes this cluster does not have are left in the unclaimed route table; doctor lists them. Claim the table (routeTable.claim: true, --claim-route-table) to have routekeeper delete them, if no other cluster uses it",
			"table", v.Table, "routes", len(p.Unclaimed))
	}
}

// logSubnets logs each repair, and each subnet problem once when it
// appears (or changes).
func (c *Controller) logSubnets(v *verdict.Verdict) {
	for _, s := range v.Subnets {
		switch {
		case s.Repaired && s.State != assoc.Followed:
			c.log.Warn("association guard repaired a subnet", "subnet", s.Subnet, "state", s.State, "table", s.RouteTable, "message", s.Message)
		case s.State == assoc.Associated && s.Action != assoc.None:
			c.log.Info("associated the new route table with a subnet", "subnet", s.Subnet, "table", s.RouteTable)
		case s.Problem() && c.newProblem(s):
			c.log.Warn("association guard: subnet not on the route table", "subnet", s.Subnet, "state", s.State, "table", s.Table, "message", s.Message, "fix", s.Fix)
		case s.Problem():
			c.log.Debug("association guard: subnet still not on the route table", "subnet", s.Subnet, "state", s.State, "table", s.Table)
		}
		if !s.Problem() {
			c.clearProblem(s.Subnet)
		}
	}
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
