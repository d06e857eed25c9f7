// Package kubestatus tells Kubernetes what routekeeper found: the
// NetworkUnavailable condition of every node (the scheduler keeps pods off
// a node whose condition is True, through the network-unavailable taint)
// and events on Nodes and on routekeeper's own Pod.
//
// It is a controller.Reporter. The condition turns False (RouteCreated)
// only for a node the controller reported routed: the write carrying its
// route succeeded and the route was read back. A failed write leaves it
// True with the reason (cloud-provider-azure clears it even then; see
// docs/kubernetes.md). The condition is patched only when its status,
// reason or message change, and lastTransitionTime moves only when the
// status does.
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
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/plan"
)

// NodeLookup returns a node as the informer holds it (internal/source/kube
// keeps its InternalIPs and NetworkUnavailable condition).
type NodeLookup interface {
	Node(name string) (*corev1.Node, bool)
}

// SubnetReader reads a subnet's address prefixes, to find the nodes of a
// subnet whose route table is detached. The cloud client implements it.
type SubnetReader interface {
	GetSubnet(ctx context.Context, id string) (*cloud.Subnet, error)
}

// Defaults of Options.
const (
	DefaultEventInterval = 10 * time.Minute
	DefaultGrace         = 2 * time.Minute
	DefaultWorkers       = 16
	subnetCacheTTL       = 10 * time.Minute
)

// Options configure a Reporter.
type Options struct {
	// Mode is the controller's: in Observe, conditions are never touched.
	Mode controller.Mode
	// Nodes gives the nodes' current conditions and addresses. Required.
	Nodes NodeLookup
	// Subnets reads the address prefixes of a detached subnet whose result
	// did not carry them (the controller's results do); nil turns
	// the RouteTableDetached condition off (the event is still sent).
	Subnets SubnetReader
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
	// nodes is the node part of the last full reconcile.
	nodes map[string]controller.NodeResult
	// forwarded are the nodes whose only problem is a route routekeeper
	// does not own that already sends their pod CIDR to them.
	forwarded map[string]bool
	// detached are the subnets the guard last found without a route table,
	// with their prefixes (nil when unknown).
	detached map[string][]netip.Prefix
	// pending are condition patches sent but not yet seen by the informer.
	pending map[string]pendingPatch
	// subnetCache holds subnet prefixes read for the detached overlay.
	subnetCache map[string]cachedSubnet
	// since is when each unrouted node was first seen with its reason.
	since map[string]since
	// staleSince is when each stale route was first seen (observe mode).
	staleSince map[string]time.Time
}

type since struct {
	reason string
	at     time.Time
}

type pendingPatch struct {
	cond condition
	// baseRV is the node's resource version in the informer when the
	// patch was sent; while it is unchanged, the patch is not observed yet.
	baseRV string
}

type cachedSubnet struct {
	prefixes []netip.Prefix
	at       time.Time
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
		o.Mode = controller.Manage
	}
	r := &Reporter{client: client, o: o, log: o.Logger, now: o.Now,
		pending: map[string]pendingPatch{}, subnetCache: map[string]cachedSubnet{}, since: map[string]since{}, staleSince: map[string]time.Time{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.events = newDedup(o.Events, o.EventInterval, r.now)
	return r
}

// Report implements controller.Reporter.
func (r *Reporter) Report(ctx context.Context, res *controller.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.associationEvents(res)
	detachedChanged := r.updateDetached(ctx, res)
	if !res.GuardOnly && len(res.Nodes) > 0 {
		// A reconcile that failed before it could plan (the table could
		// not be read) says nothing about the nodes: keep what is known.
		r.nodes = maps.Clone(res.Nodes)
		r.forwarded = forwardedNodes(res.Plan)
		r.nodeEvents(res)
		if r.o.Mode == controller.Observe {
			r.staleEvent(res)
		}
	} else if !detachedChanged {
		return
	}
	if r.o.Mode == controller.Observe {
		return
	}
	r.syncConditions(ctx)
}

// condition is the part of NetworkUnavailable routekeeper decides.
type condition struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// desired returns the condition node name should have, and false when
// routekeeper leaves it alone.
func (r *Reporter) desired(name string, nr controller.NodeResult, ips []netip.Addr) (condition, bool) {
	switch {
	case nr.Reason == string(plan.ReasonNoPodCIDR):
		// Like the Kubernetes route controller: a node without a pod
		// CIDR is IPAM's business (CIDRNotAvailable), not a route's.
		return condition{}, false
	case r.forwarded[name] && !nr.Routed:
		// A route routekeeper does not own forwards the pod CIDR to the
		// node: traffic flows, but no write of routekeeper carried it.
		// Neither True (a lie that would taint a working node) nor False.
		return condition{}, false
	case !nr.Routed:
		return condition{Status: corev1.ConditionTrue, Reason: conditionReason(nr.Reason), Message: nr.Message}, true
	}
	for subnet, prefixes := range r.detached {
		for _, p := range prefixes {
			for _, ip := range ips {
				if p.Contains(ip) {
					return condition{Status: corev1.ConditionTrue, Reason: ReasonRouteTableDetached,
						Message: fmt.Sprintf("the node's route exists, but subnet %s has no route table: Azure does not use the route", subnet)}, true
				}
			}
		}
	}
	msg := nr.Message
	if msg == "" {
		msg = "routekeeper created a route"
	}
	if nr.Reason == string(plan.ReasonRouteNotManaged) {
		// issue 11: the planner counts the node routed by a route
		// routekeeper does not own that sends the pod CIDR to it (traffic
		// flows); the condition says so, and by which route.
		return condition{Status: corev1.ConditionFalse, Reason: ReasonRouteNotManaged, Message: msg}, true
	}
	return condition{Status: corev1.ConditionFalse, Reason: ReasonRouteCreated, Message: msg}, true
}

// syncConditions patches every node whose condition differs from the
// desired one, a few at a time.
func (r *Reporter) syncConditions(ctx context.Context) {
	type job struct {
		name string
		cond condition
		cur  *corev1.NodeCondition
		rv   string
		uid  types.UID
	}
	var jobs []job
	for _, name := range slices.Sorted(maps.Keys(r.nodes)) {
		node, ok := r.o.Nodes.Node(name)
		if !ok || node.DeletionTimestamp != nil {
			continue
		}
		want, ok := r.desired(name, r.nodes[name], internalIPs(node))
		if !ok {
			continue
		}
		cur := findCondition(node)
		if want.Status == corev1.ConditionFalse && r.nodes[name].Pending && (cur == nil || cur.Status != corev1.ConditionFalse) {
			// A correct route under another writer's operation keeps a
			// node routed but never makes it routed: False only after
			// our write was read back or the route read Succeeded.
			continue
		}
		if cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
			delete(r.pending, name)
			continue
		}
		if p, ok := r.pending[name]; ok && p.cond == want && p.baseRV == node.ResourceVersion {
			continue // patched already; the informer has not seen it yet
		}
		jobs = append(jobs, job{name: name, cond: want, cur: cur, rv: node.ResourceVersion, uid: node.UID})
	}
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
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				patched++
				r.pending[j.name] = pendingPatch{cond: j.cond, baseRV: j.rv}
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err) ||
				apierrors.IsInvalid(err) && strings.Contains(err.Error(), "metadata.uid"):
				// Deleted, or re-created under the same name (the UID
				// in the patch is refused as immutable): the next
				// reconcile sees the new node.
			default:
				failed++
				r.log.Warn("could not set the node's NetworkUnavailable condition", "node", j.name, "err", err)
			}
		}()
	}
	wg.Wait()
	r.log.Debug("node conditions updated", "patched", patched, "failed", failed)
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

// forwardedNodes returns the nodes whose every conflict is a route
// routekeeper does not own that already forwards the pod CIDR to them.
func forwardedNodes(p *plan.Plan) map[string]bool {
	if p == nil {
		return nil
	}
	out := map[string]bool{}
	for _, c := range p.Conflicts {
		fwd, seen := out[c.Node]
		out[c.Node] = c.Forwarding && (fwd || !seen)
	}
	for n, fwd := range out {
		if !fwd {
			delete(out, n)
		}
	}
	return out
}

func findCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func internalIPs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// updateDetached records the subnets the guard found without a route table
// (after its repairs) and reports whether the set changed. Subnet prefixes
// are read (and cached) only for detached subnets.
func (r *Reporter) updateDetached(ctx context.Context, res *controller.Result) bool {
	if res.Associations == nil {
		return false
	}
	next := map[string][]netip.Prefix{}
	for _, a := range res.Associations {
		if a.State == controller.AssocDetached {
			next[a.Subnet] = a.AddressPrefixes
			if len(next[a.Subnet]) == 0 {
				next[a.Subnet] = r.subnetPrefixes(ctx, a.Subnet)
			}
		}
	}
	changed := len(next) != len(r.detached)
	for k, v := range next {
		if old, ok := r.detached[k]; !ok || !slices.Equal(old, v) {
			changed = true
		}
	}
	r.detached = next
	return changed
}

func (r *Reporter) subnetPrefixes(ctx context.Context, id string) []netip.Prefix {
	if r.o.Subnets == nil {
		return nil
	}
	key := strings.ToLower(id)
	if c, ok := r.subnetCache[key]; ok && r.now().Sub(c.at) < subnetCacheTTL {
		return c.prefixes
	}
	s, err := r.o.Subnets.GetSubnet(ctx, id)
	if err != nil {
		r.log.Warn("could not read the prefixes of a detached subnet; its nodes' conditions are not changed", "subnet", id, "err", err)
		return nil
	}
	var out []netip.Prefix
	for _, p := range s.AddressPrefixes {
		if pf, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pf.Masked())
		}
	}
	r.subnetCache[key] = cachedSubnet{prefixes: out, at: r.now()}
	return out
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
		// its RouteNotManaged event (issue 11).
		if nr.Routed && !r.forwarded[name] || nr.Reason == string(plan.ReasonNoPodCIDR) {
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
		var reason, action string
		switch {
		case r.forwarded[name]:
			reason, action = EventRouteForwardedByForeignRoute, actionObserveRoutes
		case r.o.Mode == controller.Observe && nr.Reason == controller.ReasonRouteMissing:
			reason, action = EventRouteMissing, actionObserveRoutes
		case r.o.Mode == controller.Observe:
			reason, action = EventRouteConflict, actionObserveRoutes
		default:
			reason, action = EventFailedToCreateRoute, actionCreateRoute
		}
		r.events.emit(ref, true, reason, action, fmt.Sprintf("%s: %s", conditionReason(nr.Reason), nr.Message))
	}
}

// transient reports whether a node's reason usually clears by itself
// shortly (see Options.Grace).
func (r *Reporter) transient(reason string) bool {
	return reason == string(plan.ReasonNoNodeIP) || r.o.Mode == controller.Observe && reason == controller.ReasonRouteMissing
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
	// issue 11: in observe mode nothing is deleted anyway; routes the
	// deletion guard holds back and, in the platform's unclaimed table,
	// routes of nodes the cluster does not have are stale all the same.
	candidates := slices.Concat(res.Plan.Changes, res.Plan.HeldDeletes, res.Plan.Unclaimed)
	for _, c := range candidates {
		if c.Kind != plan.Delete || strings.HasPrefix(c.Reason, "adopted") {
			continue
		}
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
		reason, warning := associationEvent(a)
		if reason == "" {
			continue
		}
		r.events.emitKeyed(r.o.Pod, a.Subnet, warning, reason, actionGuardSubnet, fmt.Sprintf("subnet %s: %s", a.Subnet, a.Message))
	}
}
