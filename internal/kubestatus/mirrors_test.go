package kubestatus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// TestMirrorReporter: a mirror's failure, its nodes without routes and its
// subnet findings become events on routekeeper's Pod naming the mirror
// table, deduplicated, and sent again at once when they come back.
func TestMirrorReporter(t *testing.T) {
	rec := &fakeRecorder{}
	pod := &corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "routekeeper-0"}
	now := time.Unix(1_800_000_000, 0)
	r := NewMirrorReporter(rec, pod, "appgw-routes", time.Hour, func() time.Time { return now })
	ctx := context.Background()

	failed := &controller.Result{Err: errors.New("throttled by ARM, retry after 1m")}
	r.Report(ctx, failed)
	r.Report(ctx, failed) // the same: no second event
	full := &controller.Result{Nodes: map[string]verdict.Node{
		"a": {Routed: true}, "b": {Reason: "RouteTableFull"}, "c": {Reason: "NoPodCIDR"},
	}, Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "appgw-subnet", State: assoc.Detached, Message: "no route table"}}}}
	r.Report(ctx, full)
	r.Report(ctx, &controller.Result{Nodes: map[string]verdict.Node{"a": {Routed: true}}})
	r.Report(ctx, failed) // came back: at once

	got := rec.take()
	want := []struct{ reason, note string }{
		{EventMirrorFailed, "mirror route table appgw-routes: throttled"},
		{"RouteTableDetached", "mirror route table appgw-routes, subnet appgw-subnet: no route table"},
		{EventMirrorRoutesMissing, "mirror route table appgw-routes lacks the routes of 1 nodes: b (RouteTableFull)"},
		{EventMirrorFailed, "mirror route table appgw-routes: throttled"},
	}
	if len(got) != len(want) {
		t.Fatalf("events = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		e := got[i]
		if e.reason != w.reason || !strings.Contains(e.note, w.note) || e.kind != "Pod" || e.typ != corev1.EventTypeWarning {
			t.Errorf("event %d = %+v, want a Warning on the Pod, reason %s, note with %q", i, e, w.reason, w.note)
		}
	}
}
