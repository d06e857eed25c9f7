// Package e2e holds routekeeper's end-to-end tests against a real
// kube-apiserver and etcd (test/kube) and the local fabric: the node
// informer, node conditions, events, leader election, the RBAC manifest and
// `routekeeper run` itself, as they run in a cluster.
//
//	eval "$(scripts/kube-testenv.sh)"
//	ROUTEKEEPER_E2E=1 go test ./test/e2e
package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/promtest"
	kubetest "github.com/routekeeper/routekeeper/test/kube"
)

var cluster kubetest.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }

// topology is the test network: one VNet, one node subnet large enough
// for the 400-node test.
const topology = kthw.Network + `          - name: kubernetes-subnet
            addressPrefix: 10.240.0.0/20
`

const (
	tableID  = fabrictest.KTHWTable
	subnetID = fabrictest.KTHWSubnet
)

// clusterCIDR is every test's pod range; each test's node names differ
// (the control plane is shared), its fabric is its own.
var clusterCIDR = netip.MustParsePrefix("10.200.0.0/16")

// podCIDR is the i-th /24 of the cluster CIDR.
func podCIDR(i int) string { return fmt.Sprintf("10.200.%d.0/24", i) }

// nodeIP is the i-th node address in the node subnet.
func nodeIP(i int) string { return fmt.Sprintf("10.240.%d.%d", 1+i/250, 4+i%250) }

// fab is a test's own in-memory fabric.
type fab struct{ *fabrictest.Env }

// kubeCluster is what every kube scenario starts from: the shared
// cluster, the test's context and an admin clientset of the cluster.
func kubeCluster(t *testing.T) (*kubetest.Env, context.Context, kubernetes.Interface) {
	t.Helper()
	env := cluster.Env(t)
	return env, t.Context(), env.Clientset(t)
}

// kubeScenario is kubeCluster with a new fabric of the test topology:
// what most scenarios run against.
func kubeScenario(t *testing.T) (*kubetest.Env, context.Context, kubernetes.Interface, fab) {
	t.Helper()
	env, ctx, client := kubeCluster(t)
	return env, ctx, client, newFabric(t)
}

func newFabric(t *testing.T) fab {
	return fab{fabrictest.New(t, fabric.Options{}, topology)}
}

// client returns a new ARM client on the fabric (one per replica, so each
// replica's calls can be counted), reporting to m when not nil.
func (f fab) client(t *testing.T, m *metrics.Metrics) *azure.Client {
	t.Helper()
	o := azure.Options{Credential: fabric.Credential{}, ClientOptions: f.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond}
	if m != nil {
		o.Observer = m
	}
	c, err := azure.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// table reads the route table, nil when it does not exist.
func (f fab) table(t *testing.T) *route.Table {
	t.Helper()
	tb, err := f.Client.GetRouteTable(context.Background(), tableID)
	if err != nil {
		return nil
	}
	return tb
}

// routes returns the table's routes by name.
func (f fab) routes(t *testing.T) map[string]route.Route {
	t.Helper()
	out := map[string]route.Route{}
	if tb := f.table(t); tb != nil {
		for _, r := range tb.Routes {
			out[r.Name] = r
		}
	}
	return out
}

func routeName(node, cidr string) string { return route.Name(node, netip.MustParsePrefix(cidr)) }

// countingCloud counts route table PUTs and reads.
type countingCloud struct {
	cloud.Cloud
	puts  atomic.Int64
	reads atomic.Int64
}

func (c *countingCloud) PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error) {
	c.puts.Add(1)
	return c.Cloud.PutRouteTable(ctx, t, etag)
}

func (c *countingCloud) GetRouteTable(ctx context.Context, id string) (*route.Table, error) {
	c.reads.Add(1)
	return c.Cloud.GetRouteTable(ctx, id)
}

// readMore waits until routekeeper has read its route table n more times:
// every guard cycle and every reconcile reads it, so this is routekeeper's
// own progress. A test that checks that something did not happen (a write,
// a reconcile) waits for it first instead of for a time: on a busy machine
// it waits longer, never too little.
func (c *countingCloud) readMore(t testing.TB, n int64) {
	t.Helper()
	from := c.reads.Load()
	eventually(t, 60*time.Second, func() string {
		if got := c.reads.Load() - from; got < n {
			return fmt.Sprintf("routekeeper read its route table %d times, waiting for %d", got, n)
		}
		return ""
	})
}

// controllerConfig is the controller configuration of the tests.
func controllerConfig(name string) controller.Config {
	return controller.Config{
		Cluster:       name,
		ClusterCIDRs:  []netip.Prefix{clusterCIDR},
		RouteTableID:  tableID,
		Location:      "eastus",
		CreateTable:   true,
		Subnets:       []string{subnetID},
		GuardInterval: 500 * time.Millisecond,
		Resync:        time.Hour,
		RetryBackoff:  200 * time.Millisecond,
	}
}

// replica is one routekeeper process, run in-process by daemon.Run.
type replica struct {
	cancel  context.CancelFunc
	done    chan error
	metrics *metrics.Metrics
	cloud   *azure.Client
}

// start runs daemon.Run with o until the test ends (or stop).
func start(t *testing.T, o daemon.Options) *replica {
	t.Helper()
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan error, 1), metrics: o.Metrics}
	if c, ok := o.Cloud.(*azure.Client); ok {
		r.cloud = c
	}
	go func() { r.done <- daemon.Run(ctx, o) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the replica and returns what Run returned (once; later
// calls return nil).
func (r *replica) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("routekeeper did not stop within 60s")
		return nil
	}
}

// testLogger logs to the test's log while it runs, and nowhere after.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && os.Getenv("E2E_VERBOSE") != "" {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

var _ io.Writer = (*testWriter)(nil)

// node describes a node to create.
type node struct {
	name     string
	podCIDRs []string
	ips      []string
	// networkUnavailable sets the condition as a cloud node controller
	// does when the node registers (True, NoRouteCreated).
	networkUnavailable bool
	// batch labels the node e2e.routekeeper.io/batch=<batch>, for deleting
	// many at once.
	batch string
	// kubelet makes the node as large as a kubelet's: images, capacity,
	// conditions, labels (for memory measurements).
	kubelet bool
}

// createNode creates the node with its status in one request, as a
// kubelet registers. The shared control plane's reset deletes it when the
// test ends, after the test's routekeeper has stopped (kubetest.Shared).
func createNode(ctx context.Context, t testing.TB, client kubernetes.Interface, n node) {
	t.Helper()
	if err := registerNode(ctx, client, n); err != nil {
		t.Fatal(err)
	}
}

// registerNode creates the node (with its status) and leaves it.
func registerNode(ctx context.Context, client kubernetes.Interface, n node) error {
	obj := nodeObject(n)
	created, err := client.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.name, err)
	}
	if len(created.Status.Addresses) != len(obj.Status.Addresses) {
		// The API server dropped the status on create: set it as a
		// kubelet's first status update would.
		created.Status = obj.Status
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting the status of node %s: %w", n.name, err)
		}
	}
	return nil
}

func nodeObject(n node) *corev1.Node {
	obj := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"e2e.routekeeper.io/test": "true"}},
		Spec:       corev1.NodeSpec{PodCIDRs: n.podCIDRs},
	}
	if n.batch != "" {
		obj.Labels[batchLabel] = n.batch
	}
	if n.kubelet {
		kubeletLike(obj)
	}
	if len(n.podCIDRs) > 0 {
		obj.Spec.PodCIDR = n.podCIDRs[0]
	}
	for _, ip := range n.ips {
		obj.Status.Addresses = append(obj.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	obj.Status.Addresses = append(obj.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.name})
	if n.networkUnavailable {
		now := metav1.Now()
		obj.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue,
			Reason: "NoRouteCreated", Message: "Node created without a route", LastTransitionTime: now, LastHeartbeatTime: now}}
	}
	return obj
}

// condition returns the node's NetworkUnavailable condition.
func condition(ctx context.Context, t testing.TB, client kubernetes.Interface, name string) (corev1.NodeCondition, bool) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node %s: %v", name, err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

// eventually polls cond every 50ms until it returns "" (done) or the
// timeout passes, then fails with cond's last message.
func eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	eventuallyEvery(t, timeout, 50*time.Millisecond, cond)
}

// eventuallyEvery is eventually polling every interval (for a cond that is
// costly to check). This is the package's only sleep: the end-to-end tests
// talk to a real API server, so they poll for a condition; the timeout is
// a budget, never what makes a test pass.
func eventuallyEvery(t testing.TB, timeout, interval time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(interval)
	}
}

// atLeast waits until the metric series with the label reaches want (a
// counter, such as routekeeper_reconciles_total{result="success"}).
func atLeast(t testing.TB, m *metrics.Metrics, name, label, value string, want float64) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		if got := gauge(t, m, name, label, value); got < want {
			return fmt.Sprintf("%s{%s=%q} = %v, waiting for %v", name, label, value, got, want)
		}
		return ""
	})
}

// conditionWatch records, from a watch, every NetworkUnavailable status the
// named nodes take: a flip and back between two reads cannot be missed.
type conditionWatch struct {
	mu   sync.Mutex
	seen map[string][]corev1.ConditionStatus
	stop func()
}

// watchConditions starts recording from the nodes' current version.
func watchConditions(ctx context.Context, t testing.TB, client kubernetes.Interface, names ...string) *conditionWatch {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := client.CoreV1().Nodes().Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cw := &conditionWatch{seen: map[string][]corev1.ConditionStatus{}}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || !want[n.Name] {
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable {
					cw.mu.Lock()
					cw.seen[n.Name] = append(cw.seen[n.Name], c.Status)
					cw.mu.Unlock()
				}
			}
		}
	}()
	cw.stop = func() { w.Stop(); cancel(); <-done }
	t.Cleanup(cw.stop)
	return cw
}

// other returns the statuses other than want the node took while watched.
func (cw *conditionWatch) other(name string, want corev1.ConditionStatus) []corev1.ConditionStatus {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var out []corev1.ConditionStatus
	for _, s := range cw.seen[name] {
		if s != want {
			out = append(out, s)
		}
	}
	return out
}

// waitCondition waits for the node's NetworkUnavailable to have status and
// reason ("" for any).
func waitCondition(ctx context.Context, t testing.TB, client kubernetes.Interface, name string, status corev1.ConditionStatus, why reason.Reason) corev1.NodeCondition {
	t.Helper()
	var got corev1.NodeCondition
	eventually(t, 30*time.Second, func() string {
		c, ok := condition(ctx, t, client, name)
		if ok && c.Status == status && (why == "" || c.Reason == string(why)) {
			got = c
			return ""
		}
		return fmt.Sprintf("node %s: NetworkUnavailable %+v (present %v), want %s/%s", name, c, ok, status, why)
	})
	return got
}

// events returns the events.k8s.io events about the object.
func events(ctx context.Context, t testing.TB, client kubernetes.Interface, namespace, kind, name string) []eventsv1.Event {
	t.Helper()
	l, err := client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range l.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an event with reason about the object and returns it.
func waitEvent(ctx context.Context, t testing.TB, client kubernetes.Interface, namespace, kind, name, reason string) eventsv1.Event {
	t.Helper()
	var got eventsv1.Event
	eventually(t, 30*time.Second, func() string {
		evs := events(ctx, t, client, namespace, kind, name)
		for _, e := range evs {
			if e.Reason == reason {
				got = e
				return ""
			}
		}
		var seen []string
		for _, e := range evs {
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return fmt.Sprintf("no %s event on %s %s; events: %v", reason, kind, name, seen)
	})
	return got
}

// adminConfig is the control plane's admin client configuration, with
// routekeeper's own API rate defaults (daemon.DefaultKubeQPS and Burst).
func adminConfig(env *kubetest.Env) *rest.Config {
	c := rest.CopyConfig(env.Config)
	c.QPS, c.Burst = 0, 0
	return c
}

// gauge returns the value of the metric with the label, from m's
// registry, -1 when it has no such series.
func gauge(t testing.TB, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	if v, ok := promtest.Value(t, m.Registry(), name, label, value); ok {
		return v
	}
	return -1
}
