package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/routelimit"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/lossy"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/promtest"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

func TestReport(t *testing.T) {
	m := New()
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	m.Report(ctx, &controller.Result{
		Start: start, Duration: 300 * time.Millisecond,
		Nodes: map[string]verdict.Node{
			"a": {Routed: true}, "b": {Routed: true},
			"c": {Reason: "PrefixConflict"}, "d": {Reason: "RouteLimit"}, "e": {Reason: "RouteLimit"},
		},
		Routes:       &verdict.RouteCounts{Desired: 5, Present: 2, Owned: 3, Foreign: 1, Stale: 1},
		Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "s1", State: assoc.Reassociated}, Repaired: true}, {SubnetDecision: assoc.SubnetDecision{Subnet: "s2", State: assoc.Detached}}},
	})
	const want = `
# HELP routekeeper_nodes_not_routed Nodes without their correct route after the last reconcile, by reason.
# TYPE routekeeper_nodes_not_routed gauge
routekeeper_nodes_not_routed{reason="PrefixConflict"} 1
routekeeper_nodes_not_routed{reason="RouteLimit"} 2
# HELP routekeeper_routes Routes after the last reconcile: desired (one per node pod CIDR), present (desired and correct in the table), missing (desired - present), owned (this cluster's in the table), foreign (every other route in the table), stale (owned but wanted by no node).
# TYPE routekeeper_routes gauge
routekeeper_routes{kind="desired"} 5
routekeeper_routes{kind="foreign"} 1
routekeeper_routes{kind="missing"} 3
routekeeper_routes{kind="owned"} 3
routekeeper_routes{kind="present"} 2
routekeeper_routes{kind="stale"} 1
# HELP routekeeper_reconciles_total Reconciles of the route table, by result (success, error).
# TYPE routekeeper_reconciles_total counter
routekeeper_reconciles_total{result="error"} 0
routekeeper_reconciles_total{result="success"} 1
# HELP routekeeper_association_repairs_total Subnets the association guard re-associated with the route table, or whose swapped table it followed.
# TYPE routekeeper_association_repairs_total counter
routekeeper_association_repairs_total 1
# HELP routekeeper_association_problems Configured subnets not on routekeeper's route table after the last check, by state.
# TYPE routekeeper_association_problems gauge
routekeeper_association_problems{state="Detached"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"routekeeper_nodes_not_routed", "routekeeper_routes", "routekeeper_reconciles_total",
		"routekeeper_association_repairs_total", "routekeeper_association_problems"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(m.lastSuccess); got != 1_800_000_000.3 {
		t.Errorf("last successful reconcile = %v, want 1800000000.3", got)
	}
	if n := testutil.CollectAndCount(m.reconcileDuration); n != 1 {
		t.Errorf("duration histogram has %d series", n)
	}

	// A failed reconcile that never read the table: counted as an error;
	// the last success, the routes and the nodes stay as they were.
	m.Report(ctx, &controller.Result{Start: start.Add(time.Minute), Nodes: map[string]verdict.Node{}, Err: errors.New("throttled")})
	if got := testutil.ToFloat64(m.reconciles.WithLabelValues("error")); got != 1 {
		t.Errorf("errors = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.lastSuccess); got != 1_800_000_000.3 {
		t.Errorf("last success moved on a failure: %v", got)
	}
	if got := testutil.ToFloat64(m.notRouted.WithLabelValues("RouteLimit")); got != 2 {
		t.Errorf("nodes_not_routed{RouteLimit} = %v after a failed read, want it kept at 2", got)
	}

	// The next good reconcile routes everyone: the reasons disappear.
	m.Report(ctx, &controller.Result{Start: start.Add(2 * time.Minute), Nodes: map[string]verdict.Node{"a": {Routed: true}},
		Routes: &verdict.RouteCounts{Desired: 1, Present: 1, Owned: 1}, Associations: []verdict.Subnet{}})
	if n := testutil.CollectAndCount(m.notRouted); n != 0 {
		t.Errorf("nodes_not_routed has %d series after every node was routed", n)
	}
	if n := testutil.CollectAndCount(m.assocProblems); n != 0 {
		t.Errorf("association_problems has %d series after the subnets were fixed", n)
	}
	// A guard check between reconciles counts its repair but no reconcile.
	m.Report(ctx, &controller.Result{GuardOnly: true, Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "s1", State: assoc.Reassociated}, Repaired: true}}})
	if got := testutil.ToFloat64(m.repairs); got != 2 {
		t.Errorf("repairs = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.reconciles.WithLabelValues("success")); got != 2 {
		t.Errorf("successes = %v, want 2 (guard checks are not reconciles)", got)
	}
	m.SetLeader(true)
	if got := testutil.ToFloat64(m.leader); got != 1 {
		t.Errorf("leader = %v", got)
	}
}

func TestGuardMetrics(t *testing.T) {
	m := New()
	p := &plan.Plan{
		HeldDeletes: []plan.Change{{Kind: plan.Delete}, {Kind: plan.Delete}, {Kind: plan.Delete}},
		HeldReason:  reason.EmptySource,
		Unclaimed:   []plan.Change{{Kind: plan.Delete}},
		Nodes:       map[string]plan.NodeStatus{"a": {State: plan.Routed, Reason: reason.RouteNotManaged}, "b": {State: plan.Routed}},
	}
	m.Report(context.Background(), &controller.Result{Plan: p, Nodes: map[string]verdict.Node{"a": {Routed: true, Reason: reason.RouteNotManaged}, "b": {Routed: true}}})
	const want = `
# HELP routekeeper_deletes_held Route deletions the deletion guard held back in the last reconcile, by reason: TooManyDeletes (over controller.maxDeletes), EmptySource (the source returned no nodes), StandDownUnconfirmed (routes: standDown without controller.confirmStandDown).
# TYPE routekeeper_deletes_held gauge
routekeeper_deletes_held{reason="EmptySource"} 3
# HELP routekeeper_routes_unclaimed Routes in the naming scheme for nodes this cluster does not have, left in a route table not claimed yet: never deleted until routeTable.claim.
# TYPE routekeeper_routes_unclaimed gauge
routekeeper_routes_unclaimed 1
# HELP routekeeper_nodes_unmanaged_route Nodes whose traffic flows through a route routekeeper does not own (routeTable.adopt matching takes it over with no outage).
# TYPE routekeeper_nodes_unmanaged_route gauge
routekeeper_nodes_unmanaged_route 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "routekeeper_deletes_held", "routekeeper_routes_unclaimed", "routekeeper_nodes_unmanaged_route"); err != nil {
		t.Error(err)
	}
	// The guard lets go: the series disappears.
	m.Report(context.Background(), &controller.Result{Plan: &plan.Plan{}, Nodes: map[string]verdict.Node{}})
	if n := testutil.CollectAndCount(m.deletesHeld); n != 0 {
		t.Errorf("deletes_held has %d series after nothing was held", n)
	}
}

// TestARMCallsThroughTheSDK drives a real controller over the real SDK
// against the fabric, with a concurrent writer (412) and write throttling
// (429), and checks what the observer saw.
func TestARMCallsThroughTheSDK(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	m := New()
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: env.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	nodes := nodesource.New(
		source.Node{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}},
	)
	cfg := controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable, Location: "eastus", CreateTable: true, Subnets: []string{fabrictest.KTHWSubnet},
	}
	ctrl := controller.New(cfg, client, nodes, nil, m)
	ctx := context.Background()
	if res := ctrl.Reconcile(ctx); res.Err != nil {
		t.Fatalf("first reconcile: %v", res.Err)
	}
	// Someone else writes between our read and our write: one 412.
	nodes.Add(source.Node{Name: "worker-1", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.1.0/24")}})
	ctrl = controller.New(cfg, client, nodes, nil, m)
	env.Server.SetFaults(fabric.Faults{IntruderNextGets: 1})
	if res := ctrl.Reconcile(ctx); res.Err != nil || res.Attempts != 2 {
		t.Fatalf("reconcile with an intruder: attempts %d, err %v", res.Attempts, res.Err)
	}
	if got := testutil.ToFloat64(m.armPrecondition); got != 1 {
		t.Errorf("arm_precondition_failed_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.armRequests.WithLabelValues("PUT", "412")); got != 1 {
		t.Errorf(`arm_requests_total{PUT,412} = %v, want 1`, got)
	}
	if got := testutil.ToFloat64(m.armRequests.WithLabelValues("GET", "200")); got < 3 {
		t.Errorf(`arm_requests_total{GET,200} = %v, want the table and subnet reads`, got)
	}
	// Writes throttled: the SDK retries after Retry-After; each 429 counts.
	// The bucket refills once in 5 s, so however slow the machine is
	// between the two reconciles, the second one's write is throttled.
	env.Server.SetFaults(fabric.Faults{WriteBucket: 1, WriteRefillPerSecond: 0.2})
	nodes.Add(source.Node{Name: "worker-2", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.22")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.2.0/24")}})
	ctrl = controller.New(cfg, client, nodes, nil, m)
	ctrl.Reconcile(ctx) // takes the one token
	nodes.Add(source.Node{Name: "worker-3", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.23")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.3.0/24")}})
	ctrl = controller.New(cfg, client, nodes, nil, m)
	if res := ctrl.Reconcile(ctx); res.Err != nil {
		t.Fatalf("throttled reconcile: %v", res.Err)
	}
	if got := testutil.ToFloat64(m.armThrottled); got < 1 {
		t.Errorf("arm_throttled_total = %v, want at least 1", got)
	}
	if got := testutil.ToFloat64(m.reconciles.WithLabelValues("success")); got != 4 {
		t.Errorf("reconciles{success} = %v, want 4", got)
	}
	if got := testutil.ToFloat64(m.routes.WithLabelValues("present")); got != 4 {
		t.Errorf("routes{present} = %v, want 4", got)
	}

	// The handler serves the text format.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{"routekeeper_arm_requests_total{code=\"412\",method=\"PUT\"} 1", "routekeeper_reconcile_duration_seconds_bucket", "go_goroutines", "process_"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestTableRequests: every ARM request a controller makes — reads, the
// table and subnet PUTs and their operation polls — is counted for its
// table as well; a request made outside any controller only in
// arm_requests_total.
func TestTableRequests(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	m := New()
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: env.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	nodes := nodesource.New(source.Node{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}})
	ctrl := controller.New(controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable, Location: "eastus", CreateTable: true, Subnets: []string{fabrictest.KTHWSubnet},
	}, client, nodes, nil, m)
	ctx := context.Background()
	if res := ctrl.Reconcile(ctx); res.Err != nil {
		t.Fatal(res.Err)
	}
	ctrl.Guard(ctx)
	total := func(method string) float64 {
		return promtest.Sum(t, m.Registry(), "routekeeper_arm_requests_total", "method", method)
	}
	for _, method := range []string{"GET", "PUT"} {
		got, want := testutil.ToFloat64(m.tableRequests.WithLabelValues("kubernetes-routes", method)), total(method)
		if got != want || got == 0 {
			t.Errorf(`table_arm_requests_total{kubernetes-routes,%s} = %v, want all %v of arm_requests_total`, method, got, want)
		}
	}
	if _, err := client.GetRouteTable(ctx, fabrictest.KTHWTable); err != nil {
		t.Fatal(err)
	}
	if got, want := testutil.ToFloat64(m.tableRequests.WithLabelValues("kubernetes-routes", "GET")), total("GET")-1; got != want {
		t.Errorf("a GET made outside the controller was counted for the table: %v, want %v", got, want)
	}
}

// TestLostAnswersCounted: a table PUT whose answer is lost (through the
// real SDK, behind a lossy path to the fabric) is counted once, as what
// it is: write_outcome_unknown_total{op="route table write"}, and the
// request that got no answer as arm_requests_total{PUT,0}. Both ops start
// at 0.
func TestLostAnswersCounted(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	m := New()
	proxy := lossy.New(env.Server.Transporter(), 1)
	opts := env.Server.ClientOptions()
	opts.Transport = proxy
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: opts, PollFrequency: 10 * time.Millisecond, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{verdict.OpTableWrite, verdict.OpSubnetWrite} {
		if got := testutil.ToFloat64(m.outcomeUnknown.WithLabelValues(op)); got != 0 {
			t.Errorf("write_outcome_unknown_total{op=%q} = %v before any write, want 0", op, got)
		}
	}
	nodes := nodesource.New(source.Node{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}})
	ctrl := controller.New(controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable, Location: "eastus", CreateTable: true, Subnets: []string{fabrictest.KTHWSubnet},
	}, client, nodes, nil, m)
	proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/routeTables/", Lose: true})
	if res := ctrl.Reconcile(context.Background()); res.Err != nil {
		t.Fatalf("reconcile after a lost answer: %s: %v", res.Summary(), res.Err)
	}
	if got := testutil.ToFloat64(m.outcomeUnknown.WithLabelValues(verdict.OpTableWrite)); got != 1 {
		t.Errorf(`write_outcome_unknown_total{op="route table write"} = %v, want 1`, got)
	}
	if got := testutil.ToFloat64(m.armRequests.WithLabelValues("PUT", "0")); got != 1 {
		t.Errorf(`arm_requests_total{PUT,0} = %v, want 1 (the PUT whose answer was lost)`, got)
	}
}

// The route limit in force is one series, labelled by where it came from.
func TestRouteLimitMetric(t *testing.T) {
	m := New()
	ctx := context.Background()
	for _, l := range []routelimit.Limit{
		routelimit.Effective(0, routelimit.Known{}),
		routelimit.Effective(0, routelimit.Known{Routes: 1000, Location: "westeurope"}),
		routelimit.Effective(300, routelimit.Known{Routes: 1000, Location: "westeurope"}),
	} {
		m.Report(ctx, &controller.Result{RouteLimit: l})
		if n := testutil.CollectAndCount(m.routeLimit); n != 1 {
			t.Errorf("%s: route_limit has %d series, want 1", l.Source, n)
		}
		if got := testutil.ToFloat64(m.routeLimit.WithLabelValues(string(l.Source))); got != float64(l.Value) {
			t.Errorf("route_limit{source=%q} = %v, want %d", l.Source, got, l.Value)
		}
	}
}
