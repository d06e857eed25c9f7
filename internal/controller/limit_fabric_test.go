package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/routelimit"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// usageCounter is a cloud that counts its reads of the usages.
type usageCounter struct {
	cloud.Cloud
	mu sync.Mutex
	n  int
}

func (u *usageCounter) ListUsages(ctx context.Context, sub, loc string) ([]observe.Usage, error) {
	u.mu.Lock()
	u.n++
	u.mu.Unlock()
	return u.Cloud.(observe.UsageReader).ListUsages(ctx, sub, loc)
}

func (u *usageCounter) reads() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// noUsages is a cloud without the usages API.
type noUsages struct{ cloud.Cloud }

// TestRouteLimitIsAzures: the controller keeps the table to the limit the
// usages API states for the table's region (here a subscription of before
// May 2026, 400, played with 5), reads it at start and once per resync
// (never in the guard), says which limit it uses and where from in the
// log, and reports a node that does not fit as RouteTableFull with that
// number; routeTable.routeLimit may only lower it.
func TestRouteLimitIsAzures(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{RouteLimit: 5}, fabrictest.KTHW)
	cc := &usageCounter{Cloud: env.Client}
	var logs syncbuf.Buffer
	nodes := workers(6)
	c := New(scenarioConfig(), cc, nodesource.New(nodes...), slog.New(slog.NewTextHandler(&logs, nil)))
	now := time.Now()
	c.now = func() time.Time { return now }

	r := c.Reconcile(ctx)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if l := r.RouteLimit; l.Value != 5 || l.Source != routelimit.Azure || l.Azure.Location != "eastus" {
		t.Errorf("limit = %+v, want Azure's 5 in eastus", l)
	}
	if want := "read from the usages API"; !strings.Contains(r.RouteLimit.From(), want) {
		t.Errorf("From() = %q, want it to say %q", r.RouteLimit.From(), want)
	}
	full := 0
	for _, n := range nodes {
		if nr := r.Nodes[n.Name]; nr.Reason == reason.RouteTableFull {
			full++
			if !strings.Contains(nr.Message, "it may hold 5 routes (Azure's limit in eastus of 5 routes per route table, read from the usages API)") {
				t.Errorf("node %s: %q, want Azure's number and where it came from", n.Name, nr.Message)
			}
		}
	}
	if routes := len(r.Table.Routes); routes != 5 || full == 0 {
		t.Errorf("table holds %d routes with %d nodes RouteTableFull; want it full at 5, the others RouteTableFull", routes, full)
	}
	if got := logs.String(); !strings.Contains(got, "route limit: routekeeper keeps the table to at most this many routes") || !strings.Contains(got, "limit=5 source=azure") {
		t.Errorf("no log line of the limit in use:\n%s", got)
	}

	// Another reconcile and the guard read no usages; a resync later does.
	c.Reconcile(ctx)
	c.Guard(ctx)
	if n := cc.reads(); n != 1 {
		t.Errorf("usages read %d times in two reconciles and a guard cycle, want once", n)
	}
	now = now.Add(c.cfg.Resync)
	c.Reconcile(ctx)
	if n := cc.reads(); n != 2 {
		t.Errorf("usages read %d times after a resync period, want twice", n)
	}
	if n := strings.Count(logs.String(), "route limit: routekeeper keeps"); n != 1 {
		t.Errorf("the limit was logged %d times, want once (it did not change)", n)
	}

	// routeTable.routeLimit lowers it, never raises it.
	for _, tc := range []struct {
		configured, want int
		source           routelimit.Source
	}{{3, 3, routelimit.Config}, {900, 5, routelimit.Azure}} {
		cfg := scenarioConfig()
		cfg.RouteLimit = tc.configured
		r := New(cfg, env.Client, nodesource.New(nodes...), nil).DryRun(ctx, observe.Scope{})
		if l := r.RouteLimit; l.Value != tc.want || l.Source != tc.source {
			t.Errorf("routeLimit %d: limit %d %s, want %d %s", tc.configured, l.Value, l.Source, tc.want, tc.source)
		}
	}
}

// TestRouteLimitRefusedByAzure: when routekeeper could not read Azure's
// limit (a cloud without the usages API: it plans with Azure's default of
// 1,000) and the subscription allows fewer, ARM refuses the write; the
// nodes it carried are RouteTableFull with Azure's number, never
// RouteWriteFailed, and the next pass plans with that number and routes
// what fits in one write.
func TestRouteLimitRefusedByAzure(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{RouteLimit: 4}, fabrictest.KTHW)
	nodes := workers(6)
	c := New(scenarioConfig(), noUsages{env.Client}, nodesource.New(nodes...), nil)

	r := c.Reconcile(ctx)
	if l := r.RouteLimit; l.Value != routelimit.Default || l.Source != routelimit.DefaultSource || !strings.Contains(l.From(), "the cloud has no usages API") {
		t.Errorf("limit before the refusal = %d %s %q, want Azure's default, saying why", l.Value, l.Source, l.From())
	}
	for _, n := range nodes {
		nr := r.Nodes[n.Name]
		if nr.Routed || nr.Reason != reason.RouteTableFull || !strings.Contains(nr.Message, "its limit: 4 routes per route table") {
			t.Errorf("node %s after the refused write: routed %v %s %q, want RouteTableFull with Azure's 4", n.Name, nr.Routed, nr.Reason, nr.Message)
		}
	}

	r = c.Reconcile(ctx)
	if r.Err != nil || !r.Wrote || r.Writes < 1 {
		t.Fatalf("the pass after the refusal: wrote %v, %v", r.Wrote, r.Err)
	}
	if l := r.RouteLimit; l.Value != 4 || l.Source != routelimit.Azure || !strings.Contains(l.From(), "named in its refusal of a write") {
		t.Errorf("limit after the refusal = %d %s %q, want Azure's 4 from its refusal", l.Value, l.Source, l.From())
	}
	if got := len(r.Table.Routes); got != 4 {
		t.Errorf("table holds %d routes, want 4", got)
	}
	if u := r.Unrouted(); u != len(nodes)-4 {
		t.Errorf("%d nodes unrouted, want %d", u, len(nodes)-4)
	}
}

// TestRouteLimitNotPermitted: a principal whose role (the one we ship,
// assigned on the cluster's resource group) does not let it read the
// usages on the subscription keeps to Azure's default of 1,000 and is told
// which permission would let it read Azure's limit; it is no error and no
// denial of the pass.
func TestRouteLimitNotPermitted(t *testing.T) {
	role, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
	}
	ok, ds, res := runRoleScenarioResult(t, roleScenarios()[0], role)
	if !ok || len(ds) > 0 {
		t.Fatalf("the scenario with the shipped role: done %v, denials %v", ok, names(ds))
	}
	l := res.RouteLimit
	want := fmt.Sprintf("grant Microsoft.Network/locations/usages/read on subscription %s", fabrictest.Sub)
	if l.Value != routelimit.Default || l.Source != routelimit.DefaultSource || !strings.Contains(l.From(), want) {
		t.Errorf("limit = %d %s %q, want Azure's default, naming the permission (%q)", l.Value, l.Source, l.From(), want)
	}
}

// TestThousandNodesOneWrite: on the fabric's defaults, which are Azure's
// since May 2026, a burst of 1,001 new nodes is one pass: the table is
// created with 1,000 routes in one PUT (and associated: the pass's second
// write), and the 1,001st node is RouteTableFull with Azure's number, read
// from the usages API.
func TestThousandNodesOneWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("1,001 nodes: skipped with -short")
	}
	cfg := scenarioConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.64.0.0/14")}
	env := fabrictest.New(t, fabric.Options{}, bigKTHW)
	nodes := manyWorkers(1001)
	r := New(cfg, env.Client, nodesource.New(nodes...), nil).Reconcile(context.Background())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(r.Table.Routes) != 1000 || r.Writes != 2 {
		t.Errorf("%d routes in %d writes, want 1,000 in 2 (the table's PUT and the association)", len(r.Table.Routes), r.Writes)
	}
	var full []string
	for name, nr := range r.Nodes {
		if nr.Reason == reason.RouteTableFull {
			full = append(full, name)
			if want := "it may hold 1000 routes (Azure's limit in eastus of 1,000 routes per route table, read from the usages API)"; !strings.Contains(nr.Message, want) {
				t.Errorf("node %s: %q, want %q", name, nr.Message, want)
			}
		}
	}
	if len(full) != 1 || r.Unrouted() != 1 {
		t.Errorf("RouteTableFull: %v, %d unrouted; want one node", full, r.Unrouted())
	}
}
