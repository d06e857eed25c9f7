package kubestatus

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// clientLookup reads nodes straight from the (fake) API server: an
// informer that is never behind.
type clientLookup struct{ client *fake.Clientset }

func (l clientLookup) Node(name string) (*corev1.Node, bool) {
	n, err := l.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	return n, err == nil
}

// staleLookup always returns the nodes as they were: an informer that has
// not seen anything since.
type staleLookup map[string]*corev1.Node

func (l staleLookup) Node(name string) (*corev1.Node, bool) { n, ok := l[name]; return n, ok }

type event struct{ kind, name, typ, reason, action, note string }

type fakeRecorder struct {
	mu     sync.Mutex
	events []event
}

func (f *fakeRecorder) Eventf(regarding, _ runtime.Object, typ, reason, action, note string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := regarding.(*corev1.ObjectReference)
	f.events = append(f.events, event{ref.Kind, ref.Name, typ, reason, action, fmt.Sprintf(note, args...)})
}

func (f *fakeRecorder) take() []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.events
	f.events = nil
	return e
}

func newNode(name, ip string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

type env struct {
	client *fake.Clientset
	rec    *fakeRecorder
	r      *Reporter
	now    time.Time
}

func newEnv(t *testing.T, mode verdict.Mode, nodes ...*corev1.Node) *env {
	t.Helper()
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	e := &env{client: fake.NewClientset(objs...), rec: &fakeRecorder{}, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	e.r = New(e.client, Options{
		Mode: mode, Nodes: clientLookup{e.client}, Events: e.rec,
		Pod: &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kube-system", Name: "routekeeper-abc", UID: "pod-uid"},
		Now: func() time.Time { return e.now },
	})
	return e
}

func (e *env) condition(t *testing.T, name string) (corev1.NodeCondition, bool) {
	t.Helper()
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

func (e *env) patches() int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func routed() verdict.Node {
	return verdict.Node{Routed: true, Reason: reason.RouteCreated, Message: "routekeeper created a route"}
}

func notRouted(why reason.Reason, msg string) verdict.Node {
	return verdict.Node{Reason: why, Message: msg}
}

func TestConditions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage,
		newNode("a", "10.240.0.10"), newNode("b", "10.240.0.11"), newNode("c", "10.240.0.12"),
		newNode("d", "10.240.0.13"), newNode("full", "10.240.0.14"))
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{
		"a":    routed(),
		"b":    notRouted(reason.PrefixConflict, "route to-fw already holds 10.200.1.0/24"),
		"c":    notRouted(reason.NoPodCIDR, "node has no pod CIDR"),
		"d":    notRouted(reason.RouteWriteFailed, "no correct route in route table for 10.200.3.0/24"),
		"full": notRouted(reason.RouteTableFull, "the route table holds 400 routes, its limit"),
	}})
	want := map[string]struct {
		status corev1.ConditionStatus
		reason reason.Reason
	}{
		"a":    {corev1.ConditionFalse, reason.RouteCreated},
		"b":    {corev1.ConditionTrue, "PrefixConflict"},
		"d":    {corev1.ConditionTrue, reason.RouteWriteFailed},
		"full": {corev1.ConditionTrue, reason.RouteTableFull},
	}
	for name, w := range want {
		c, ok := e.condition(t, name)
		if !ok || c.Status != w.status || c.Reason != string(w.reason) || c.Message == "" {
			t.Errorf("node %s: NetworkUnavailable %+v (present %v), want %s/%s with a message", name, c, ok, w.status, w.reason)
		}
		if !c.LastTransitionTime.Time.Equal(e.now) {
			t.Errorf("node %s: lastTransitionTime %v, want %v", name, c.LastTransitionTime, e.now)
		}
	}
	if c, ok := e.condition(t, "c"); ok {
		t.Errorf("node c without a pod CIDR got a condition: %+v", c)
	}
	if n, _ := e.client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{}); len(n.Status.Conditions) != 2 {
		t.Errorf("node a has conditions %+v; the patch must keep Ready", n.Status.Conditions)
	}
	evs := e.rec.take()
	got := map[string]string{}
	for _, ev := range evs {
		if ev.typ != corev1.EventTypeWarning || ev.reason != EventFailedToCreateRoute || ev.kind != "Node" {
			t.Errorf("unexpected event %+v", ev)
		}
		got[ev.name] = ev.note
	}
	if len(got) != 3 || !strings.HasPrefix(got["b"], "PrefixConflict: ") || !strings.HasPrefix(got["full"], "RouteTableFull: ") || !strings.HasPrefix(got["d"], "RouteWriteFailed: ") {
		t.Errorf("events %v, want FailedToCreateRoute for b, d and full with the reason first", got)
	}

	// The same result again: nothing to patch, no event.
	before := e.patches()
	e.now = e.now.Add(time.Minute)
	same := &controller.Result{Nodes: map[string]verdict.Node{
		"a": routed(), "b": notRouted(reason.PrefixConflict, "route to-fw already holds 10.200.1.0/24"),
		"d":    notRouted(reason.RouteWriteFailed, "no correct route in route table for 10.200.3.0/24"),
		"full": notRouted(reason.RouteTableFull, "the route table holds 400 routes, its limit"),
	}}
	e.r.Report(ctx, same)
	if n := e.patches() - before; n != 0 {
		t.Errorf("an unchanged result patched %d nodes", n)
	}
	if evs := e.rec.take(); len(evs) != 0 {
		t.Errorf("an unchanged result sent events again: %+v", evs)
	}

	// d's write succeeds now; b's reason changes but stays True: d's
	// transition time moves, b's does not.
	bBefore, _ := e.condition(t, "b")
	e.now = e.now.Add(time.Minute)
	same.Nodes["d"] = routed()
	same.Nodes["b"] = notRouted(reason.OverlappingPodCIDR, "pod CIDR overlaps node x's")
	e.r.Report(ctx, same)
	if d, _ := e.condition(t, "d"); d.Status != corev1.ConditionFalse || !d.LastTransitionTime.Time.Equal(e.now) {
		t.Errorf("node d after its write succeeded: %+v, want False since %v", d, e.now)
	}
	if b, _ := e.condition(t, "b"); b.Reason != "OverlappingPodCIDR" || !b.LastTransitionTime.Equal(&bBefore.LastTransitionTime) {
		t.Errorf("node b: %+v; want reason OverlappingPodCIDR and the transition time kept (%v)", b, bBefore.LastTransitionTime)
	}
	if evs := e.rec.take(); len(evs) != 1 || evs[0].name != "b" || !strings.HasPrefix(evs[0].note, "OverlappingPodCIDR") {
		t.Errorf("events after b's reason changed: %+v, want one for b", evs)
	}

	// Ten minutes on, the problems that persist are reported again.
	e.now = e.now.Add(DefaultEventInterval)
	e.r.Report(ctx, same)
	if evs := e.rec.take(); len(evs) != 2 {
		t.Errorf("after the event interval: %+v, want b and full again", evs)
	}
}

// TestTransientFailureKeepsConditions: a reconcile that could not read
// the table reports no nodes; the conditions stay as they were.
func TestTransientFailureKeepsConditions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage, newNode("a", "10.240.0.10"))
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed()}})
	before := e.patches()
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{}, Err: fmt.Errorf("reading route table: %w", armerr.ErrNotFound)})
	if n := e.patches() - before; n != 0 {
		t.Errorf("a failed read patched %d nodes", n)
	}
	if c, _ := e.condition(t, "a"); c.Status != corev1.ConditionFalse {
		t.Errorf("node a: %+v, want still False", c)
	}
}

// TestPatchNotRepeatedBeforeTheInformerSeesIt: with an informer that lags,
// a second reconcile does not patch the same condition again.
func TestPatchNotRepeatedBeforeTheInformerSeesIt(t *testing.T) {
	ctx := context.Background()
	n := newNode("a", "10.240.0.10")
	client := fake.NewClientset(n)
	r := New(client, Options{Nodes: staleLookup{"a": n.DeepCopy()}})
	res := &controller.Result{Nodes: map[string]verdict.Node{"a": routed()}}
	r.Report(ctx, res)
	r.Report(ctx, res)
	patches := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d patches, want 1", patches)
	}
}

func TestObserveModeNeverTouchesConditions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Observe, newNode("a", "10.240.0.10"), newNode("b", "10.240.0.11"), newNode("c", "10.240.0.12"))
	res := &controller.Result{
		TableID: "/sub/rt",
		Nodes: map[string]verdict.Node{
			"a": routed(),
			"b": notRouted(reason.NoRouteCreated, "no correct route in route table for 10.200.1.0/24"),
			"c": notRouted(reason.OutsideClusterCIDR, "pod CIDR 10.99.0.0/24 is outside the cluster CIDRs"),
		},
		Plan: &plan.Plan{Changes: []plan.Change{{Kind: plan.Delete, Route: routeNamed("gone____102000500024")}}},
	}
	e.r.Report(ctx, res)
	// The platform has a while to write the new route and remove the old
	// one: only the conflict, which will not clear by itself, is
	// reported at once.
	if evs := e.rec.take(); len(evs) != 1 || evs[0].name != "c" || evs[0].reason != EventRouteConflict {
		t.Errorf("events at first sight: %+v, want only c's RouteConflict", evs)
	}
	e.now = e.now.Add(DefaultGrace)
	e.r.Report(ctx, res)
	if n := e.patches(); n != 0 {
		t.Errorf("observe mode patched %d nodes", n)
	}
	got := map[string]event{}
	for _, ev := range e.rec.take() {
		got[ev.name] = ev
	}
	if got["b"].reason != EventRouteMissing || got["routekeeper-abc"].reason != EventStaleRoutes {
		t.Errorf("observe events after the grace period %+v, want RouteMissing on b and StaleRoutes on the pod", got)
	}
	if !strings.Contains(got["routekeeper-abc"].note, "gone____102000500024") {
		t.Errorf("stale routes event does not name the route: %q", got["routekeeper-abc"].note)
	}
	if _, ok := got["c"]; ok {
		t.Error("c's conflict reported again within the event interval")
	}
}

// TestNoNodeIPWaitsForTheGrace: a node registered before the cloud node
// controller gave it addresses is True at once, but an event only comes
// when that lasts.
func TestNoNodeIPWaitsForTheGrace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage, newNode("new", "10.240.0.10"))
	res := &controller.Result{Nodes: map[string]verdict.Node{"new": notRouted(reason.NoNodeIP, "node has no IPv4 InternalIP")}}
	e.r.Report(ctx, res)
	if c, _ := e.condition(t, "new"); c.Status != corev1.ConditionTrue || c.Reason != "NoNodeIP" {
		t.Errorf("condition %+v, want True/NoNodeIP at once", c)
	}
	if evs := e.rec.take(); len(evs) != 0 {
		t.Errorf("events within the grace period: %+v", evs)
	}
	e.now = e.now.Add(DefaultGrace)
	e.r.Report(ctx, res)
	if evs := e.rec.take(); len(evs) != 1 || evs[0].reason != EventFailedToCreateRoute {
		t.Errorf("events after the grace period: %+v, want FailedToCreateRoute", evs)
	}
}

// TestDetachedSubnet: a node the verdict finds in a subnet without its
// route table is not available (RouteTableDetached); once the guard
// repairs the subnet it is again. The reporter reads no subnet: the
// verdict placed the node.
func TestDetachedSubnet(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage, newNode("in", "10.240.0.10"), newNode("out", "10.241.0.10"))
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"in": routed(), "out": routed()}})
	detached := verdict.Node{Reason: reason.RouteTableDetached, Message: "the node's route exists, but subnet /sub/nodes has no route table: Azure does not use the route"}
	e.r.Report(ctx, &controller.Result{GuardOnly: true,
		Nodes: map[string]verdict.Node{"in": detached, "out": routed()},
		Associations: []verdict.Subnet{
			{SubnetDecision: assoc.SubnetDecision{Subnet: "/sub/nodes", State: assoc.Detached, Action: assoc.None, Message: "subnet has no route table"}},
		}})
	if c, _ := e.condition(t, "in"); c.Status != corev1.ConditionTrue || c.Reason != string(reason.RouteTableDetached) || c.Message != detached.Message {
		t.Errorf("node in the detached subnet: %+v, want True/%s", c, reason.RouteTableDetached)
	}
	if c, _ := e.condition(t, "out"); c.Status != corev1.ConditionFalse {
		t.Errorf("node outside the detached subnet: %+v, want False", c)
	}
	evs := e.rec.take()
	if len(evs) != 1 || evs[0].kind != "Pod" || evs[0].reason != "RouteTableDetached" {
		t.Errorf("events %+v, want RouteTableDetached on the pod", evs)
	}
	e.r.Report(ctx, &controller.Result{GuardOnly: true,
		Nodes: map[string]verdict.Node{"in": routed(), "out": routed()},
		Associations: []verdict.Subnet{
			{SubnetDecision: assoc.SubnetDecision{Subnet: "/sub/nodes", State: assoc.Reassociated, Message: "re-associated"}, Repaired: true},
		}})
	if c, _ := e.condition(t, "in"); c.Status != corev1.ConditionFalse || c.Reason != string(reason.RouteCreated) {
		t.Errorf("node in the repaired subnet: %+v, want False/RouteCreated", c)
	}
	if evs := e.rec.take(); len(evs) != 1 || evs[0].typ != corev1.EventTypeNormal || evs[0].reason != "RouteTableReassociated" {
		t.Errorf("events after the repair %+v, want a Normal RouteTableReassociated", evs)
	}
}

// TestRoutedByUnmanagedRoute: the planner counts a node routed by a route
// routekeeper does not own (it writes only the routes it claims): the
// condition is False and says so.
func TestRoutedByUnmanagedRoute(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage, newNode("kthw", "10.240.0.20"))
	msg := "pod CIDR 10.200.0.0/24 of node kthw is routed to 10.240.0.20 by route kubernetes-route-10-200-0-0-24, which routekeeper does not own: traffic flows, route not managed; `--adopt matching` takes it over with no outage"
	e.r.Report(ctx, &controller.Result{
		Nodes: map[string]verdict.Node{"kthw": {Routed: true, Reason: reason.RouteNotManaged, Message: msg}},
		Plan:  &plan.Plan{Conflicts: []plan.Conflict{{Node: "kthw", Prefix: netip.MustParsePrefix("10.200.0.0/24"), Reason: reason.RouteNotManaged, Forwarding: true}}},
	})
	c, ok := e.condition(t, "kthw")
	if !ok || c.Status != corev1.ConditionFalse || c.Reason != string(reason.RouteNotManaged) || c.Message != msg {
		t.Errorf("condition %+v (present %v), want False/%s with the planner's message", c, ok, reason.RouteNotManaged)
	}
	if evs := e.rec.take(); len(evs) != 1 || evs[0].reason != EventRouteForwardedByForeignRoute {
		t.Errorf("events %+v, want one %s", evs, EventRouteForwardedByForeignRoute)
	}
}

func TestPatchRefusedForRecreatedNode(t *testing.T) {
	ctx := context.Background()
	n := newNode("a", "10.240.0.10")
	client := fake.NewClientset(n)
	var body string
	client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		body = string(a.(k8stesting.PatchAction).GetPatch())
		return false, nil, nil
	})
	r := New(client, Options{Nodes: clientLookup{client}})
	r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed()}})
	if !strings.Contains(body, `"uid":"uid-a"`) || !strings.Contains(body, `"type":"NetworkUnavailable"`) {
		t.Errorf("patch %s does not carry the node's UID and the condition", body)
	}
}

func routeNamed(name string) route.Route { return route.Route{Name: name} }

// TestDeletedNodesAreForgotten: what was sent about a node that is gone is
// dropped; a node of the same name that comes back with the same problem is
// reported again.
func TestDeletedNodesAreForgotten(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.Manage, newNode("a", "10.240.0.10"), newNode("b", "10.240.0.11"))
	bad := notRouted(reason.PrefixConflict, "route x holds 10.200.1.0/24")
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed(), "b": bad}})
	if evs := e.rec.take(); len(evs) != 1 {
		t.Fatalf("events %+v, want one for b", evs)
	}
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed()}})
	if n := len(e.r.events.sent); n != 0 {
		t.Errorf("%d objects remembered after b was deleted", n)
	}
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed(), "b": bad}})
	if evs := e.rec.take(); len(evs) != 1 || evs[0].name != "b" {
		t.Errorf("events when b came back: %+v, want one for b", evs)
	}
}

// TestRunPatchesBesideThePass: while Run runs, Report does not wait for
// the condition patches (a pass of a 1,000-node burst would wait for 1,000
// of them before the next pass could write routes); Run patches them, and
// a report that comes during a sync is followed by a sync with its
// verdicts.
func TestRunPatchesBesideThePass(t *testing.T) {
	a, b := newNode("a", "10.240.0.10"), newNode("b", "10.240.0.11")
	client := fake.NewClientset(a, b)
	release := make(chan struct{})
	var held atomic.Int32
	client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		held.Add(1)
		<-release
		return false, nil, nil
	})
	// The fake client holds its lock while a reactor runs, so the nodes
	// are looked up as the informer would give them, not through it.
	r := New(client, Options{Nodes: staleLookup{"a": a.DeepCopy(), "b": b.DeepCopy()}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var once sync.Once
	releasePatches := func() { once.Do(func() { close(release) }) }
	defer releasePatches() // runs first: a failing test does not hang in Run
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	// A Report before Run has started patches synchronously.
	waitFor("Run did not start", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.kick != nil
	})

	reported := make(chan struct{})
	go func() {
		defer close(reported)
		r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed()}})
	}()
	select {
	case <-reported:
	case <-time.After(30 * time.Second):
		t.Fatal("Report waited for the condition patches")
	}
	// a's patch is under way (held): b is reported during that sync.
	waitFor("no patch of a was sent", func() bool { return held.Load() == 1 })
	r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": routed(), "b": routed()}})
	releasePatches()
	for _, name := range []string{"a", "b"} {
		waitFor("node "+name+": no NetworkUnavailable=False from Run", func() bool {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := findCondition(n)
			return c != nil && c.Status == corev1.ConditionFalse
		})
	}
}
