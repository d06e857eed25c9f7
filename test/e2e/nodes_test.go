package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/reason"
)

// TestNodesRoutesAndConditions: nodes created with pod CIDRs get their
// routes and NetworkUnavailable=False; a deleted node loses its route; a
// changed InternalIP moves the next hop; status updates that do not touch
// routes cause no write.
func TestNodesRoutesAndConditions(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	cloud := &countingCloud{Cloud: f.client(t, nil)}
	rk := start(t, daemon.Options{Controller: controllerConfig("basic"), Cloud: cloud, Kube: adminConfig(env)})

	nodes := []node{
		{name: "basic-0", podCIDRs: []string{podCIDR(0)}, ips: []string{nodeIP(0)}, networkUnavailable: true},
		{name: "basic-1", podCIDRs: []string{podCIDR(1)}, ips: []string{nodeIP(1)}, networkUnavailable: true},
		{name: "basic-2", podCIDRs: []string{podCIDR(2)}, ips: []string{nodeIP(2)}},
	}
	for _, n := range nodes {
		createNode(ctx, t, client, n)
	}
	for i, n := range nodes {
		c := waitCondition(ctx, t, client, n.name, corev1.ConditionFalse, reason.RouteCreated)
		if c.Message == "" || c.LastTransitionTime.IsZero() {
			t.Errorf("node %s: condition %+v lacks a message or transition time", n.name, c)
		}
		r, ok := f.routes(t)[routeName(n.name, podCIDR(i))]
		if !ok || r.NextHopIP != netip.MustParseAddr(nodeIP(i)) || r.NextHopType != "VirtualAppliance" {
			t.Errorf("node %s routed (condition False) but its route is %+v (present %v)", n.name, r, ok)
		}
	}
	// The subnet was associated with the new table.
	s, err := f.Client.GetSubnet(ctx, subnetID)
	if err != nil || !strings.EqualFold(s.RouteTableID, tableID) {
		t.Errorf("subnet route table = %q (%v), want %s", s.RouteTableID, err, tableID)
	}

	// Status-only updates (heartbeats, other conditions) do not write, nor
	// even start a reconcile. Every node is routed, so the reconciles that
	// routed them have ended; a guard cycle or two later no batch is open.
	cloud.readMore(t, 2)
	puts := cloud.puts.Load()
	reconciles := gauge(t, rk.metrics, "routekeeper_reconciles_total", "result", "success")
	for i := range 5 {
		n, err := client.CoreV1().Nodes().Get(ctx, "basic-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(fmt.Sprintf("Example%d", i)), Status: corev1.ConditionFalse})
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A reconcile the updates had started would have run within its batch
	// window (200 ms), before routekeeper read its table four more times
	// (at least two guard cycles of 500 ms).
	cloud.readMore(t, 4)
	if got := cloud.puts.Load() - puts; got != 0 {
		t.Errorf("%d route table writes after status-only node updates, want 0", got)
	}
	if got := gauge(t, rk.metrics, "routekeeper_reconciles_total", "result", "success") - reconciles; got != 0 {
		t.Errorf("%v reconciles after status-only node updates, want 0", got)
	}

	// A deleted node's route goes.
	if err := client.CoreV1().Nodes().Delete(ctx, "basic-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if _, ok := f.routes(t)[routeName("basic-1", podCIDR(1))]; ok {
			return "route of deleted node basic-1 still in the table"
		}
		return ""
	})

	// A new InternalIP moves the next hop.
	n, err := client.CoreV1().Nodes().Get(ctx, "basic-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const newIP = "10.240.9.99"
	for i := range n.Status.Addresses {
		if n.Status.Addresses[i].Type == corev1.NodeInternalIP {
			n.Status.Addresses[i].Address = newIP
		}
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		r := f.routes(t)[routeName("basic-2", podCIDR(2))]
		if r.NextHopIP != netip.MustParseAddr(newIP) {
			return fmt.Sprintf("route of basic-2 goes to %s, want %s", r.NextHopIP, newIP)
		}
		return ""
	})
	// Between the new InternalIP and the write, a guard cycle may find
	// the route pointing at the old address and say so (True,
	// NoRouteCreated: traffic to the node's pods does go astray then);
	// the pass that wrote the route sets it False again.
	waitCondition(ctx, t, client, "basic-2", corev1.ConditionFalse, reason.RouteCreated)
}

// TestConflictsAreReportedOthersConverge: a pod CIDR outside the cluster
// CIDR, and one shared by two nodes, get a clear condition reason and
// event on their nodes; the other nodes are routed.
func TestConflictsAreReportedOthersConverge(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	start(t, daemon.Options{Controller: controllerConfig("conflicts"), Cloud: f.client(t, nil), Kube: adminConfig(env)})

	createNode(ctx, t, client, node{name: "conflicts-ok-0", podCIDRs: []string{podCIDR(10)}, ips: []string{nodeIP(10)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "conflicts-outside", podCIDRs: []string{"10.99.0.0/24"}, ips: []string{nodeIP(11)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "conflicts-shared-a", podCIDRs: []string{podCIDR(12)}, ips: []string{nodeIP(12)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "conflicts-shared-b", podCIDRs: []string{podCIDR(12)}, ips: []string{nodeIP(13)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "conflicts-ok-1", podCIDRs: []string{podCIDR(14)}, ips: []string{nodeIP(14)}, networkUnavailable: true})

	for _, name := range []string{"conflicts-ok-0", "conflicts-ok-1"} {
		waitCondition(ctx, t, client, name, corev1.ConditionFalse, reason.RouteCreated)
	}
	c := waitCondition(ctx, t, client, "conflicts-outside", corev1.ConditionTrue, reason.OutsideClusterCIDR)
	if !strings.Contains(c.Message, "10.99.0.0/24") {
		t.Errorf("outside-CIDR condition message %q does not name the pod CIDR", c.Message)
	}
	ev := waitEvent(ctx, t, client, "default", "Node", "conflicts-outside", kubestatus.EventFailedToCreateRoute)
	if ev.Type != corev1.EventTypeWarning || !strings.HasPrefix(ev.Note, "OutsideClusterCIDR") || ev.ReportingController != kubestatus.ReportingController {
		t.Errorf("event %s %s %q from %q, want a Warning whose note starts with the reason", ev.Type, ev.Reason, ev.Note, ev.ReportingController)
	}
	for _, name := range []string{"conflicts-shared-a", "conflicts-shared-b"} {
		waitCondition(ctx, t, client, name, corev1.ConditionTrue, reason.OverlappingPodCIDR)
		waitEvent(ctx, t, client, "default", "Node", name, kubestatus.EventFailedToCreateRoute)
	}
	routes := f.routes(t)
	for name, cidr := range map[string]string{"conflicts-ok-0": podCIDR(10), "conflicts-ok-1": podCIDR(14)} {
		if _, ok := routes[routeName(name, cidr)]; !ok {
			t.Errorf("no route for %s", name)
		}
	}
	for name, cidr := range map[string]string{"conflicts-outside": "10.99.0.0/24", "conflicts-shared-a": podCIDR(12), "conflicts-shared-b": podCIDR(12)} {
		if _, ok := routes[routeName(name, cidr)]; ok {
			t.Errorf("route written for conflicting node %s", name)
		}
	}

	// The problem persists across reconciles: no second event. (A second
	// report of the same event would be a series on the same Event.)
	n, _ := client.CoreV1().Nodes().Get(ctx, "conflicts-ok-0", metav1.GetOptions{})
	for i := range n.Status.Addresses {
		if n.Status.Addresses[i].Type == corev1.NodeInternalIP {
			n.Status.Addresses[i].Address = "10.240.9.10" // triggers a reconcile
		}
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if r := f.routes(t)[routeName("conflicts-ok-0", podCIDR(10))]; r.NextHopIP != netip.MustParseAddr("10.240.9.10") {
			return "next hop of conflicts-ok-0 not updated"
		}
		return ""
	})
	// The recorder sends asynchronously. A node with a problem of its own,
	// added now, is reported by a later reconcile, which reports
	// conflicts-outside too, just before it (the reporter goes by name):
	// once that node's event has arrived, a second one on conflicts-outside
	// would have been sent.
	createNode(ctx, t, client, node{name: "conflicts-z-marker", podCIDRs: []string{"10.98.0.0/24"}, ips: []string{nodeIP(15)}, networkUnavailable: true})
	waitEvent(ctx, t, client, "default", "Node", "conflicts-z-marker", kubestatus.EventFailedToCreateRoute)
	if evs := events(ctx, t, client, "default", "Node", "conflicts-outside"); len(evs) != 1 || evs[0].Series != nil {
		t.Errorf("events on conflicts-outside after later reconciles: %+v, want the first one only, once", evs)
	}
}

// TestFailedWriteKeepsConditionsTrue: while the fabric fails every write,
// new nodes stay NetworkUnavailable=True (RouteWriteFailed), never False;
// once writes succeed, they turn False.
func TestFailedWriteKeepsConditionsTrue(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	c := f.client(t, nil)
	// The table exists and is associated before the failure starts.
	cfg := controllerConfig("failing")
	r := start(t, daemon.Options{Controller: cfg, Cloud: c, Kube: adminConfig(env)})
	eventually(t, 30*time.Second, func() string {
		if f.table(t) == nil {
			return "table not created"
		}
		return ""
	})
	f.Server.SetFaults(fabric.Faults{FailOperations: 1})

	names := []string{"failing-0", "failing-1"}
	for i, name := range names {
		createNode(ctx, t, client, node{name: name, podCIDRs: []string{podCIDR(20 + i)}, ips: []string{nodeIP(20 + i)}, networkUnavailable: true})
	}
	for _, name := range names {
		c := waitCondition(ctx, t, client, name, corev1.ConditionTrue, reason.RouteWriteFailed)
		if !strings.Contains(c.Message, "10.200.") {
			t.Errorf("condition message %q does not say which route is missing", c.Message)
		}
		ev := waitEvent(ctx, t, client, "default", "Node", name, kubestatus.EventFailedToCreateRoute)
		if !strings.HasPrefix(ev.Note, string(reason.RouteWriteFailed)) {
			t.Errorf("event note %q", ev.Note)
		}
	}
	// Several failed retries later, still True (never anything else, as
	// a watch sees every update) and no route.
	watch := watchConditions(ctx, t, client, names...)
	failed := gauge(t, r.metrics, "routekeeper_reconciles_total", "result", "error")
	atLeast(t, r.metrics, "routekeeper_reconciles_total", "result", "error", failed+3)
	for _, name := range names {
		if other := watch.other(name, corev1.ConditionTrue); len(other) > 0 {
			t.Fatalf("node %s: NetworkUnavailable %v while every write fails", name, other)
		}
		if c, _ := condition(ctx, t, client, name); c.Status != corev1.ConditionTrue {
			t.Fatalf("node %s: condition %+v while every write fails", name, c)
		}
	}
	if n := len(f.routes(t)); n != 0 {
		t.Fatalf("%d routes in the table although every write failed", n)
	}
	if got := r.metrics; got == nil {
		t.Fatal("no metrics")
	}

	f.Server.SetFaults(fabric.Faults{})
	for _, name := range names {
		waitCondition(ctx, t, client, name, corev1.ConditionFalse, reason.RouteCreated)
	}
}
