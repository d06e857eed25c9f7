// Package kubestatus tells Kubernetes what routekeeper found: the
// NetworkUnavailable condition of every node (the scheduler keeps pods off
// a node whose condition is True, through the network-unavailable taint)
// and events on Nodes and on routekeeper's own Pod.
//
// It is a controller.Reporter, and it writes what the pass's verdict
// (internal/verdict) says, nothing else: it reads no cloud and decides no
// routing. The condition is False, with the verdict's reason (RouteCreated,
// RouteNotManaged), only for a node the verdict calls routed — the write
// carrying its route succeeded and the route was read back, in the table
// its subnet really uses — and True with the verdict's reason otherwise (a
// failed write too: cloud-provider-azure clears it even then; see
// docs/kubernetes.md). The reasons are internal/reason's vocabulary. The
// condition is patched only when its status, reason or message change, and
// lastTransitionTime moves only when the status does.
//
// In observe mode (the platform writes routes, as on AKS) conditions are
// never touched: missing, stale and conflicting routes are reported as
// events only.
package kubestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// NodeLookup returns a node as the informer holds it (internal/source/kube
// keeps its InternalIPs and NetworkUnavailable condition).
type NodeLookup interface {
	Node(name string) (*corev1.Node, bool)
}

// Defaults of Options.
const (
	DefaultEventInterval = 10 * time.Minute
	DefaultGrace         = 2 * time.Minute
	DefaultWorkers       = 16
)

// Options configure a Reporter.
type Options struct {
	// Mode is the controller's: in Observe, conditions are never touched.
	Mode verdict.Mode
	// Nodes gives the nodes' current conditions. Required.
	Nodes NodeLookup
	// Events records events; nil sends none.
	Events Recorder
	// Pod is routekeeper's own Pod (from the downward API): the object of
	// events about subnets and stale routes. Nil skips those events.
	Pod *corev1.ObjectReference
	// EventInterval is how often a problem that persists is reported again
	// on the same object with the same reason (default 10m). A problem
	// with a new message is reported at once.
	EventInterval time.Duration
	// Grace is how long a node may lack its route for a reason that
	// usually clears by itself before an event says so (default 2m): no
	// InternalIP yet (the cloud node controller sets addresses after
	// registration), and in observe mode a route the platform has not
	// written yet (cloud-provider-azure writes new routes every 30 s or
	// so) or not removed yet (a deleted node's). The condition does not
	// wait.
	Grace time.Duration
	// Workers bounds the condition patches in flight (default 16).
	Workers int
	Logger  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Reporter reports reconcile results to Kubernetes. It is safe for
// concurrent use.
type Reporter struct {
	client kubernetes.Interface
	o      Options
	log    *slog.Logger
	now    func() time.Time
	events *dedup

	mu sync.Mutex
	// nodes are the node verdicts of the last pass that judged them.
	nodes map[string]verdict.Node
	// pending are condition patches sent but not yet seen by the informer.
	pending map[string]pendingPatch
	// since is when each unrouted node was first seen with its reason.
	since map[string]since
	// staleSince is when each stale route was first seen (observe mode).
	staleSince map[string]time.Time
	// kick wakes Run's condition writer; nil while Run is not running.
	kick chan struct{}
}

type since struct {
	reason reason.Reason
	at     time.Time
}

type pendingPatch struct {
	cond condition
	// baseRV is the node's resource version in the informer when the
	// patch was sent; while it is unchanged, the patch is not observed yet.
	baseRV string
}

// New makes a Reporter that patches node status with client.
func New(client kubernetes.Interface, o Options) *Reporter {
	if o.EventInterval <= 0 {
		o.EventInterval = DefaultEventInterval
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Mode == "" {
		o.Mode = verdict.Manage
	}
	r := &Reporter{client: client, o: o, log: o.Logger, now: o.Now,
		pending: map[string]pendingPatch{}, since: map[string]since{}, staleSince: map[string]time.Time{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.events = newDedup(o.Events, o.EventInterval, r.now)
	return r
}

// Report implements controller.Reporter. While Run runs, the conditions
// are patched by Run's goroutine and Report returns at once: the pass that
// reports, and so the next pass and its route writes, never waits for
// hundreds of condition patches (a burst of 1,000 nodes is 1,000 patches).
// Without Run, Report patches them before it returns.
func (r *Reporter) Report(ctx context.Context, res *controller.Result) {
	if !r.record(res) {
		return
	}
	r.mu.Lock()
	kick := r.kick
	r.mu.Unlock()
	if kick == nil {
		r.syncConditions(ctx)
		return
	}
	select {
	case kick <- struct{}{}:
	default: // a sync is due already: it reads the latest verdicts
	}
}

// record keeps a pass's verdicts and sends its events; it reports whether
// the conditions need syncing.
func (r *Reporter) record(res *controller.Result) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.associationEvents(res)
	if len(res.Nodes) == 0 {
		// A pass that could not judge the nodes (the table could not be
		// read, no nodes known yet) says nothing of them: keep what is known.
		return false
	}
	r.nodes = maps.Clone(res.Nodes)
	if !res.GuardOnly {
		r.nodeEvents(res)
		if r.o.Mode == verdict.Observe {
			r.staleEvent(res)
		}
	}
	return r.o.Mode != verdict.Observe
}

// Run patches the conditions the reports ask for, on this goroutine, until
// ctx is done. The daemon runs it beside the controller, for each term as
// leader; a sync that is running when a new report comes is followed by
// another with the new verdicts. One Run at a time.
func (r *Reporter) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	r.mu.Lock()
	r.kick = kick
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.kick == kick {
			r.kick = nil
		}
		r.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			r.syncConditions(ctx)
		}
	}
}

// condition is the part of NetworkUnavailable routekeeper decides.
type condition struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// desired returns the condition a node with verdict nv should have, and
// false when routekeeper leaves it alone.
func desired(nv verdict.Node) (condition, bool) {
	switch {
	case nv.Reason == reason.NoPodCIDR:
		// Like the Kubernetes route controller: a node without a pod
		// CIDR is IPAM's business (CIDRNotAvailable), not a route's.
		return condition{}, false
	case !nv.Routed:
		return condition{Status: corev1.ConditionTrue, Reason: string(nv.Reason), Message: nv.Message}, true
	}
	msg := nv.Message
	if msg == "" {
		msg = "routekeeper created a route"
	}
	return condition{Status: corev1.ConditionFalse, Reason: string(nv.Reason), Message: msg}, true
}

// conditionJob is one node's condition patch.
type conditionJob struct {
	name string
	cond condition
	cur  *corev1.NodeCondition
	rv   string
	uid  types.UID
}

// syncConditions patches every node whose condition differs from the
// desired one, a few at a time.
func (r *Reporter) syncConditions(ctx context.Context) {
	jobs := r.conditionJobs()
	if len(jobs) == 0 {
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, r.o.Workers)
	patched, failed := 0, 0
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.patch(ctx, j.name, j.uid, j.cond, j.cur)
			switch {
			case err == nil:
				r.mu.Lock()
				r.pending[j.name] = pendingPatch{cond: j.cond, baseRV: j.rv}
				r.mu.Unlock()
				mu.Lock()
				patched++
				mu.Unlock()
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err) ||
				apierrors.IsInvalid(err) && strings.Contains(err.Error(), "metadata.uid"):
				// Deleted, or re-created under the same name (the UID
				// in the patch is refused as immutable): the next
				// reconcile sees the new node.
			case ctx.Err() != nil:
				// Shutting down, or the term as leader ended: the next
				// leader patches what is left.
			default:
				mu.Lock()
				failed++
				mu.Unlock()
				r.log.Warn("could not set the node's NetworkUnavailable condition", "node", j.name, "err", err)
			}
		}()
	}
	wg.Wait()
	r.log.Debug("node conditions updated", "patched", patched, "failed", failed)
}

// conditionJobs are the patches the last verdicts need: the nodes whose
// condition differs from the desired one and is not patched already.
func (r *Reporter) conditionJobs() []conditionJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	var jobs []conditionJob
	for _, name := range slices.Sorted(maps.Keys(r.nodes)) {
		node, ok := r.o.Nodes.Node(name)
		if !ok || node.DeletionTimestamp != nil {
			continue
		}
		want, ok := desired(r.nodes[name])
		if !ok {
			continue
		}
		cur := findCondition(node)
		if cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
			delete(r.pending, name)
			continue
		}
		if p, ok := r.pending[name]; ok && p.cond == want && p.baseRV == node.ResourceVersion {
			continue // patched already; the informer has not seen it yet
		}
		jobs = append(jobs, conditionJob{name: name, cond: want, cur: cur, rv: node.ResourceVersion, uid: node.UID})
	}
	if len(r.pending) == 0 {
		// A map keeps its buckets when emptied: after a burst's patches
		// were all seen, let the thousands of them go.
		r.pending = map[string]pendingPatch{}
	}
	return jobs
}

// patch sets the NetworkUnavailable condition with a strategic merge patch
// of the status subresource: conditions merge by type, so no other
// condition is touched. The patch carries the node's UID, so a node
// deleted and re-created under the same name is not given the old node's
// condition: the API server refuses the patch (metadata.uid is immutable).
func (r *Reporter) patch(ctx context.Context, name string, uid types.UID, want condition, cur *corev1.NodeCondition) error {
	now := metav1.NewTime(r.now())
	transition := now
	if cur != nil && cur.Status == want.Status {
		transition = cur.LastTransitionTime
	}
	body := map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status": map[string]any{"conditions": []corev1.NodeCondition{{
			Type:               corev1.NodeNetworkUnavailable,
			Status:             want.Status,
			Reason:             want.Reason,
			Message:            want.Message,
			LastHeartbeatTime:  now,
			LastTransitionTime: transition,
		}}},
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = r.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patching the status of node %s: %w", name, err)
	}
	return nil
}

func findCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodeEvents sends a warning per node that is not routed (deduplicated).
func (r *Reporter) nodeEvents(res *controller.Result) {
	now := r.now()
	// Forget deleted nodes.
	for name := range r.since {
		if _, ok := res.Nodes[name]; !ok {
			delete(r.since, name)
		}
	}
	for name := range r.pending {
		if _, ok := res.Nodes[name]; !ok {
			delete(r.pending, name)
		}
	}
	r.events.forgetNodesExcept(res.Nodes)
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		node, ok := r.o.Nodes.Node(name)
		if !ok {
			continue
		}
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}
		// A node routed by a route routekeeper does not own still gets
		// its RouteNotManaged event (routekeeper writes only the routes
		// it claims).
		if nr.Routed && nr.Reason != reason.RouteNotManaged || nr.Reason == reason.NoPodCIDR {
			r.events.forget(ref)
			delete(r.since, name)
			continue
		}
		if s, ok := r.since[name]; !ok || s.reason != nr.Reason {
			r.since[name] = since{reason: nr.Reason, at: now}
		}
		if r.transient(nr.Reason) && now.Sub(r.since[name].at) < r.o.Grace {
			continue
		}
		var event, action string
		switch {
		case nr.Reason == reason.RouteNotManaged:
			event, action = EventRouteForwardedByForeignRoute, actionObserveRoutes
		case r.o.Mode == verdict.Observe && nr.Reason == reason.NoRouteCreated:
			event, action = EventRouteMissing, actionObserveRoutes
		case r.o.Mode == verdict.Observe:
			event, action = EventRouteConflict, actionObserveRoutes
		default:
			event, action = EventFailedToCreateRoute, actionCreateRoute
		}
		r.events.emit(ref, true, event, action, fmt.Sprintf("%s: %s", nr.Reason, nr.Message))
	}
}

// transient reports whether a node's reason usually clears by itself
// shortly (see Options.Grace).
func (r *Reporter) transient(why reason.Reason) bool {
	return why == reason.NoNodeIP || r.o.Mode == verdict.Observe && why == reason.NoRouteCreated
}

// staleEvent reports, in observe mode, the routes of this cluster that no
// node asks for.
func (r *Reporter) staleEvent(res *controller.Result) {
	if r.o.Pod == nil || res.Plan == nil {
		return
	}
	// A deleted node's route is the platform's to remove, which takes it
	// a while: report routes stale for longer than the grace period.
	now := r.now()
	stale := map[string]time.Time{}
	var names []string
	// In observe mode nothing is deleted anyway; routes the deletion guard
	// holds back and, in the platform's unclaimed table, routes of nodes the
	// cluster does not have are stale all the same.
	for _, c := range res.Plan.Stale() {
		at, ok := r.staleSince[c.Route.Name]
		if !ok {
			at = now
		}
		stale[c.Route.Name] = at
		if now.Sub(at) >= r.o.Grace {
			names = append(names, c.Route.Name)
		}
	}
	r.staleSince = stale
	if len(names) == 0 {
		r.events.forgetReason(r.o.Pod, EventStaleRoutes)
		return
	}
	slices.Sort(names)
	shown := names
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	r.events.emit(r.o.Pod, true, EventStaleRoutes, actionObserveRoutes,
		fmt.Sprintf("%d routes of this cluster in route table %s match no node (deleted nodes or old pod CIDRs); routes: observe leaves them: %s",
			len(names), res.TableID, strings.Join(shown, ", ")))
}

// associationEvents sends the guard's findings as events on
// routekeeper's Pod, deduplicated per subnet and reason.
func (r *Reporter) associationEvents(res *controller.Result) {
	if r.o.Pod == nil {
		return
	}
	for _, a := range res.Associations {
		event := a.EventReason()
		if event == "" {
			continue
		}
		r.events.emitKeyed(r.o.Pod, a.Subnet, a.Warning(), event, actionGuardSubnet, fmt.Sprintf("subnet %s: %s", a.Subnet, a.Message))
	}
}
