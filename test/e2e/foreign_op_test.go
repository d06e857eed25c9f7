package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// TestForeignLongOperationLeavesConditionsFalse: a foreign long-running
// operation does not withdraw routed. Another client PUTs the table with
// one extra custom route, and its operation takes 30 s; every route reads
// Updating meanwhile. The nodes' routes are intact, so through every resync
// of that time their NetworkUnavailable condition stays False.
func TestForeignLongOperationLeavesConditionsFalse(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	cfg := controllerConfig("foreignop")
	cfg.Resync = 200 * time.Millisecond // reconciles keep coming during the operation
	r := start(t, daemon.Options{Controller: cfg, Cloud: f.client(t, nil), Kube: adminConfig(env)})

	names := []string{"foreignop-0", "foreignop-1"}
	for i, name := range names {
		createNode(ctx, t, client, node{name: name, podCIDRs: []string{podCIDR(40 + i)}, ips: []string{nodeIP(40 + i)}, networkUnavailable: true})
	}
	for _, name := range names {
		waitCondition(ctx, t, client, name, corev1.ConditionFalse, reason.RouteCreated)
	}

	fabrictest.StartForeignTableWrite(ctx, t, f.Store)
	for _, rt := range f.table(t).Routes {
		if rt.ProvisioningState != "Updating" {
			t.Fatalf("route %s is %s during the other operation; the test needs Updating", rt.Name, rt.ProvisioningState)
		}
	}
	// 15 reconciles while the operation runs (it lasts 30 s; they come
	// every 200 ms); a watch sees every condition they could have set.
	watch := watchConditions(ctx, t, client, names...)
	reconciles := gauge(t, r.metrics, "routekeeper_reconciles_total", "result", "success")
	atLeast(t, r.metrics, "routekeeper_reconciles_total", "result", "success", reconciles+15)
	for _, rt := range f.table(t).Routes {
		if rt.ProvisioningState != "Updating" {
			t.Fatalf("route %s is %s: the other operation ended before the 15 reconciles; the test needs it in flight", rt.Name, rt.ProvisioningState)
		}
	}
	for _, name := range names {
		if other := watch.other(name, corev1.ConditionFalse); len(other) > 0 {
			t.Errorf("node %s: NetworkUnavailable %v while another writer's operation is in flight", name, other)
		}
		if c, _ := condition(ctx, t, client, name); c.Status != corev1.ConditionFalse {
			t.Errorf("node %s: condition %+v while another writer's operation is in flight", name, c)
		}
	}
}
