package kubestatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// TestStandDownStatus: once the cluster stands down from host routes
// (routes: standDown), a node whose condition was True (its route had
// failed) and a node that was routed both end NetworkUnavailable=False
// with HostRoutesNotNeeded, and no event says a route is missing: the
// stand-down gives no node a false status.
func TestStandDownStatus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, verdict.StandDown, newNode("a", "10.240.0.10"), newNode("b", "10.240.0.11"))
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{
		"a": routed(), "b": notRouted(reason.RouteWriteFailed, "no correct route in route table for 10.200.1.0/24"),
	}})
	e.rec.take()
	notNeeded := verdict.Node{Routed: true, Reason: reason.HostRoutesNotNeeded, Message: "the cluster no longer uses host routes (routes: standDown): the node needs none"}
	e.r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": notNeeded, "b": notNeeded}})
	for _, name := range []string{"a", "b"} {
		c, ok := e.condition(t, name)
		if !ok || c.Status != corev1.ConditionFalse || c.Reason != string(reason.HostRoutesNotNeeded) {
			t.Errorf("node %s: NetworkUnavailable %+v (present %v), want False/HostRoutesNotNeeded", name, c, ok)
		}
	}
	if evs := e.rec.take(); len(evs) != 0 {
		t.Errorf("events after the stand-down: %+v, want none", evs)
	}
}
