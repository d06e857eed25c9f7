package controller

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

const testTable = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"

func testConfig() Config {
	return Config{
		Cluster:      "kthw",
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: testTable,
		Location:     "eastus",
		CreateTable:  true,
	}
}

func newTest(t *testing.T, cfg Config, fc *fakeCloud, nodes ...source.Node) *Controller {
	t.Helper()
	c := New(cfg, fc, nodesource.New(nodes...), nil)
	c.sleep = func(context.Context, time.Duration) error { return nil }
	return c
}

func TestReconcile(t *testing.T) {
	custom := route.Route{Name: "default-fw", AddressPrefix: "0.0.0.0/0", Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.0.4"), ProvisioningState: "Succeeded"}
	workers := []source.Node{node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")}
	tests := []struct {
		name       string
		cfg        func(*Config)
		table      *route.Table
		nodes      []source.Node
		putErr     error
		wantErr    error
		wantPuts   int
		wantRouted map[string]bool
		wantReason map[string]reason.Reason
	}{
		{
			name:       "missing table is created with both routes",
			nodes:      workers,
			wantPuts:   1,
			wantRouted: map[string]bool{"worker-0": true, "worker-1": true},
		},
		{
			name:       "missing table without creation is an error and nothing is written",
			cfg:        func(c *Config) { c.CreateTable = false },
			nodes:      workers,
			wantErr:    verdict.ErrTableMissing,
			wantRouted: map[string]bool{"worker-0": false, "worker-1": false},
			wantReason: map[string]reason.Reason{"worker-0": reason.RouteTableMissing},
		},
		{
			name:       "table claimed by another cluster is refused",
			table:      &route.Table{ID: testTable, Etag: `W/"x"`, Tags: map[string]string{route.ClaimTag: "other"}, Routes: []route.Route{custom}},
			nodes:      workers,
			wantErr:    verdict.ErrRefused,
			wantRouted: map[string]bool{"worker-0": false},
			wantReason: map[string]reason.Reason{"worker-0": reason.RouteTableClaimed},
		},
		{
			name:       "a failed write leaves the nodes unrouted",
			table:      &route.Table{ID: testTable, Etag: `W/"x"`, Tags: map[string]string{route.ClaimTag: "kthw"}, Routes: []route.Route{custom}},
			nodes:      workers,
			putErr:     &armerr.OperationFailedError{Resource: testTable, Status: "Failed", Code: "InternalServerError"},
			wantPuts:   1,
			wantRouted: map[string]bool{"worker-0": false, "worker-1": false},
			wantReason: map[string]reason.Reason{"worker-0": reason.RouteWriteFailed},
		},
		{
			name:       "conflicting node is reported, others converge",
			table:      &route.Table{ID: testTable, Etag: `W/"x"`, Tags: map[string]string{route.ClaimTag: "kthw"}},
			nodes:      append(append([]source.Node(nil), workers...), node("stray", "10.240.0.30", "10.99.0.0/24")),
			wantPuts:   1,
			wantRouted: map[string]bool{"worker-0": true, "worker-1": true, "stray": false},
			wantReason: map[string]reason.Reason{"stray": "OutsideClusterCIDR"},
		},
		{
			name:       "observe mode never writes and reports missing routes",
			cfg:        func(c *Config) { c.Mode = verdict.Observe },
			table:      &route.Table{ID: testTable, Etag: `W/"x"`},
			nodes:      workers,
			wantRouted: map[string]bool{"worker-0": false},
			wantReason: map[string]reason.Reason{"worker-0": reason.NoRouteCreated},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			fc := &fakeCloud{table: tc.table.Clone(), putErr: tc.putErr}
			res := newTest(t, cfg, fc, tc.nodes...).Reconcile(context.Background())
			if tc.wantErr != nil {
				if !errors.Is(res.Err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", res.Err, tc.wantErr)
				}
			} else if tc.putErr != nil {
				if res.Err == nil {
					t.Fatalf("err = nil, want the write's error")
				}
			} else if res.Err != nil {
				t.Fatalf("err = %v", res.Err)
			}
			if fc.puts != tc.wantPuts {
				t.Errorf("PUTs = %d, want %d", fc.puts, tc.wantPuts)
			}
			for n, want := range tc.wantRouted {
				if got := res.Nodes[n].Routed; got != want {
					t.Errorf("node %s routed = %v, want %v (%+v)", n, got, want, res.Nodes[n])
				}
			}
			for n, want := range tc.wantReason {
				if got := res.Nodes[n].Reason; got != want {
					t.Errorf("node %s reason = %q, want %q", n, got, want)
				}
			}
		})
	}
}

func TestReconcileReplansAfterConcurrentWrite(t *testing.T) {
	fc := &fakeCloud{table: &route.Table{ID: testTable, Etag: `W/"0"`, Tags: map[string]string{route.ClaimTag: "kthw"}}}
	intruded := false
	fc.beforePut = func(f *fakeCloud) {
		if intruded {
			return
		}
		intruded = true
		f.table.Routes = append(f.table.Routes, route.Route{Name: "fw", AddressPrefix: "0.0.0.0/0", Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.0.4")})
		f.table.Etag = f.nextEtag()
	}
	c := newTest(t, testConfig(), fc, node("worker-0", "10.240.0.20", "10.200.0.0/24"))
	res := c.Reconcile(context.Background())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Attempts != 2 || fc.puts != 2 {
		t.Fatalf("attempts = %d, puts = %d; want 2 and 2", res.Attempts, fc.puts)
	}
	// The intruder's route survived: the second plan was made from the
	// table as it was after the concurrent write, not from a stale body.
	var found bool
	for _, r := range fc.table.Routes {
		found = found || r.Name == "fw"
	}
	if !found || len(fc.table.Routes) != 2 {
		t.Fatalf("table after reconcile = %+v; the concurrent writer's route was lost", fc.table.Routes)
	}
}

func TestReconcileGivesUpAfterMaxAttempts(t *testing.T) {
	fc := &fakeCloud{table: &route.Table{ID: testTable, Etag: `W/"0"`, Tags: map[string]string{route.ClaimTag: "kthw"}}}
	fc.beforePut = func(f *fakeCloud) { f.table.Etag = f.nextEtag() } // someone writes before every PUT
	cfg := testConfig()
	cfg.MaxAttempts = 3
	res := newTest(t, cfg, fc, node("worker-0", "10.240.0.20", "10.200.0.0/24")).Reconcile(context.Background())
	if !errors.Is(res.Err, armerr.ErrPreconditionFailed) || res.Attempts != 3 || fc.puts != 3 {
		t.Fatalf("err = %v, attempts = %d, puts = %d; want precondition failure after 3", res.Err, res.Attempts, fc.puts)
	}
	if res.Nodes["worker-0"].Routed {
		t.Fatal("worker-0 marked routed although no write succeeded")
	}
}

func TestSteadyStateMakesNoWrite(t *testing.T) {
	fc := &fakeCloud{}
	c := newTest(t, testConfig(), fc, node("worker-0", "10.240.0.20", "10.200.0.0/24"))
	if res := c.Reconcile(context.Background()); res.Err != nil || fc.puts != 1 {
		t.Fatalf("first reconcile: err %v, puts %d", res.Err, fc.puts)
	}
	res := c.Reconcile(context.Background())
	if res.Err != nil || fc.puts != 1 || res.Writes != 0 || res.Reads != 1 {
		t.Fatalf("second reconcile: err %v, puts %d, reads %d, writes %d; want no write and one read", res.Err, fc.puts, res.Reads, res.Writes)
	}
	if !res.Nodes["worker-0"].Routed {
		t.Fatalf("worker-0 not routed in steady state: %+v", res.Nodes["worker-0"])
	}
}
