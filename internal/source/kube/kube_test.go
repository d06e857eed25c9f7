package kube

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/routekeeper/routekeeper/internal/source"
)

// kubeletNode is a node as a kubelet registers it: much more than
// routekeeper reads.
func kubeletNode(name, podCIDR, ip string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels:        map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}, ProviderID: "azure:///subscriptions/x/vm/" + name},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalIP, Address: ip},
				{Type: corev1.NodeExternalIP, Address: "20.1.2.3"},
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: "NoRouteCreated"},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			},
			Images:   []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320000}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3"},
		},
	}
}

func TestTrim(t *testing.T) {
	in := kubeletNode("worker-0", "10.200.0.0/24", "10.240.0.20")
	got, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", UID: "uid-worker-0", ResourceVersion: "7"},
		Spec:       corev1.NodeSpec{PodCIDR: "10.200.0.0/24", PodCIDRs: []string{"10.200.0.0/24"}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.240.0.20"}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: "NoRouteCreated"}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Trim (-want +got):\n%s", d)
	}
	again, _ := Trim(got)
	if d := cmp.Diff(got, again); d != "" {
		t.Errorf("Trim is not idempotent (-once +twice):\n%s", d)
	}
	tomb, _ := Trim(cache.DeletedFinalStateUnknown{Key: "worker-0", Obj: kubeletNode("worker-0", "10.200.0.0/24", "10.240.0.20")})
	if n := tomb.(cache.DeletedFinalStateUnknown).Obj.(*corev1.Node); len(n.Status.Images) != 0 || len(n.Labels) != 0 {
		t.Errorf("tombstone's node not trimmed: %+v", n)
	}
	if s, _ := Trim("other"); s != "other" {
		t.Errorf("Trim changed a non-node: %v", s)
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want source.Node
	}{
		{
			name: "kubelet node",
			node: kubeletNode("worker-0", "10.200.0.0/24", "10.240.0.20"),
			want: source.Node{Name: "worker-0", UID: "uid-worker-0", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}, InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}},
		},
		{
			name: "dual stack in the node's order",
			node: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "ds"},
				Spec:       corev1.NodeSpec{PodCIDR: "10.200.3.0/24", PodCIDRs: []string{"10.200.3.0/24", "fd00:10:200:3::/64"}},
				Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: "10.240.0.23"},
					{Type: corev1.NodeInternalIP, Address: "fd00:240::23"},
				}},
			},
			want: source.Node{Name: "ds",
				PodCIDRs:    []netip.Prefix{netip.MustParsePrefix("10.200.3.0/24"), netip.MustParsePrefix("fd00:10:200:3::/64")},
				InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.23"), netip.MustParseAddr("fd00:240::23")}},
		},
		{
			name: "old single pod CIDR field only",
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: corev1.NodeSpec{PodCIDR: "10.200.4.0/24"}},
			want: source.Node{Name: "old", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.4.0/24")}},
		},
		{
			name: "no pod CIDR yet, and garbage left out",
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "not-an-ip"},
				{Type: corev1.NodeInternalIP, Address: "10.240.0.30"},
			}}},
			want: source.Node{Name: "new", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.30")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Convert(tc.node), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
				t.Errorf("Convert (-want +got):\n%s", d)
			}
		})
	}
}

func TestRoutesChanged(t *testing.T) {
	base := kubeletNode("w", "10.200.0.0/24", "10.240.0.20")
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"routekeeper's condition", func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionFalse }, false},
		{"labels and images", func(n *corev1.Node) { n.Labels["x"] = "y"; n.Status.Images = nil }, false},
		{"external address", func(n *corev1.Node) { n.Status.Addresses[2].Address = "20.9.9.9" }, false},
		{"internal address", func(n *corev1.Node) { n.Status.Addresses[1].Address = "10.240.0.99" }, true},
		{"second internal address", func(n *corev1.Node) {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"})
		}, true},
		{"pod CIDR", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.200.9.0/24"}; n.Spec.PodCIDR = "10.200.9.0/24" }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := base.DeepCopy()
			tc.change(n)
			if got := RoutesChanged(base, n); got != tc.want {
				t.Errorf("RoutesChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWatchTriggersOnRouteChangesOnly runs the informer on a fake
// clientset: adds, deletes and address or pod CIDR changes call changed;
// status-only updates do not. It runs in a synctest bubble: the fake
// clientset hands events to the informer over channels, so once every
// goroutine of the bubble waits (synctest.Wait) each event has been
// handled, and the test counts the calls then, with no sleep to guess
// how long the informer takes.
func TestWatchTriggersOnRouteChangesOnly(t *testing.T) {
	synctest.Test(t, watchTriggersOnRouteChangesOnly)
}

func watchTriggersOnRouteChangesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(kubeletNode("worker-0", "10.200.0.0/24", "10.240.0.20"))
	s := New(client, Options{})
	if nodes, err := s.Nodes(ctx); err != nil || len(nodes) != 1 {
		t.Fatalf("Nodes before Start (a list): %v, %v", nodes, err)
	}
	var calls atomic.Int64
	watchDone := make(chan error, 1)
	go func() { watchDone <- s.Watch(ctx, func() { calls.Add(1) }) }()
	// handled returns the calls so far, once every event sent has been
	// handled.
	handled := func() int64 {
		synctest.Wait()
		return calls.Load()
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("informer sync: %v", err)
	}
	if handled() < 1 {
		t.Fatal("no call for the initial add")
	}
	before := handled()

	nodes := client.CoreV1().Nodes()
	n, _ := nodes.Get(ctx, "worker-0", metav1.GetOptions{})
	n.Status.Conditions[1].Status = corev1.ConditionFalse
	n.Status.Conditions[1].Reason = "RouteCreated"
	if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := handled()
	if c, ok := s.Node("worker-0"); !ok || len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Reason != "RouteCreated" {
		t.Fatalf("the condition update is not in the cache: %+v", c)
	}
	if got != before {
		t.Errorf("a condition update triggered %d reconciles, want none", got-before)
	}

	n, _ = nodes.Get(ctx, "worker-0", metav1.GetOptions{})
	n.Status.Addresses[1].Address = "10.240.0.77"
	if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if handled() <= before {
		t.Fatal("no trigger for the new address")
	}
	got2, err := s.Nodes(ctx)
	if err != nil || len(got2) != 1 || got2[0].InternalIPs[0] != netip.MustParseAddr("10.240.0.77") {
		t.Fatalf("Nodes after the address change = %+v, %v", got2, err)
	}

	before = handled()
	if _, err := nodes.Create(ctx, kubeletNode("worker-1", "10.200.1.0/24", "10.240.0.21"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if handled() <= before {
		t.Fatal("no trigger for the new node")
	}
	before = handled()
	if err := nodes.Delete(ctx, "worker-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if handled() <= before {
		t.Fatal("no trigger for the deleted node")
	}
	got2, _ = s.Nodes(ctx)
	if len(got2) != 1 || got2[0].Name != "worker-1" {
		t.Errorf("Nodes after delete = %+v, want worker-1 only", got2)
	}
	cancel()
	if err := <-watchDone; err != nil {
		t.Errorf("Watch: %v", err)
	}
}

// TestStartFailsFastWhenForbidden: without RBAC the informer's list is
// refused; Start says so at once instead of waiting for a sync that never
// comes. Which of the two returned shows in the error: only the refusal
// names the RBAC manifest, while a sync that timed out says "did not
// sync" (and, with an hour's timeout, the test would hang instead).
//
// It does not run in a synctest bubble: client-go's error handler backs
// off with a sleep computed from a process-wide timestamp, which on a
// bubble's clock is years long and outlives the bubble.
func TestStartFailsFastWhenForbidden(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errForbidden{})
	})
	s := New(client, Options{SyncTimeout: time.Hour})
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "deploy/kustomize/base/rbac.yaml") || strings.Contains(err.Error(), "did not sync") {
		t.Fatalf("Start = %v, want a forbidden error naming the RBAC manifest", err)
	}
}

type errForbidden struct{}

func (errForbidden) Error() string {
	return `User "system:serviceaccount:kube-system:nobody" cannot list resource "nodes"`
}
