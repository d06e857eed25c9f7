package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// TestMirrorReport: each mirror table has its own series (label table),
// and the main table's metrics are not touched by a mirror's problems.
func TestMirrorReport(t *testing.T) {
	m := New()
	mm := NewMirrors(m)
	ctx := context.Background()
	appgw, hub := mm.ForTable("appgw-routes"), mm.ForTable("hub-routes")
	appgw.Report(ctx, &controller.Result{
		Start: time.Unix(1_800_000_000, 0), Duration: time.Second,
		Nodes:        map[string]verdict.Node{"a": {Routed: true}, "b": {Reason: "RouteLimit"}},
		Routes:       &verdict.RouteCounts{Desired: 2, Present: 1, Owned: 1, Foreign: 399},
		Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "s", State: assoc.Detached}}},
	})
	hub.Report(ctx, &controller.Result{Err: errors.New("throttled")})
	// A later guard check of appgw with the subnet fixed clears its problem.
	appgw.Report(ctx, &controller.Result{GuardOnly: true, Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "s", State: assoc.Reassociated}, Repaired: true}}})
	const want = `
# HELP routekeeper_mirror_reconciles_total Reconciles of a mirror route table, by table and result (success, error).
# TYPE routekeeper_mirror_reconciles_total counter
routekeeper_mirror_reconciles_total{result="error",table="appgw-routes"} 0
routekeeper_mirror_reconciles_total{result="error",table="hub-routes"} 1
routekeeper_mirror_reconciles_total{result="success",table="appgw-routes"} 1
routekeeper_mirror_reconciles_total{result="success",table="hub-routes"} 0
# HELP routekeeper_mirror_nodes_not_routed Nodes without their correct route in a mirror route table after its last reconcile, by reason.
# TYPE routekeeper_mirror_nodes_not_routed gauge
routekeeper_mirror_nodes_not_routed{reason="RouteLimit",table="appgw-routes"} 1
# HELP routekeeper_mirror_association_repairs_total Subnets the association guard re-associated with a mirror route table, or whose swapped table it followed.
# TYPE routekeeper_mirror_association_repairs_total counter
routekeeper_mirror_association_repairs_total{table="appgw-routes"} 1
routekeeper_mirror_association_repairs_total{table="hub-routes"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"routekeeper_mirror_reconciles_total", "routekeeper_mirror_nodes_not_routed", "routekeeper_mirror_association_repairs_total",
		"routekeeper_mirror_association_problems"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(mm.routes.WithLabelValues("appgw-routes", "missing")); got != 1 {
		t.Errorf("appgw missing routes = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.notRouted); n != 0 {
		t.Errorf("main nodes_not_routed has %d series after mirror reports, want 0", n)
	}
	if n := testutil.CollectAndCount(m.reconciles); n != 2 {
		t.Errorf("main reconciles_total has %d series, want only its 2 initial ones", n)
	}
}
