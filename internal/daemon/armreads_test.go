package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
	"github.com/routekeeper/routekeeper/internal/testutil/promtest"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// armGets sums routekeeper_arm_requests_total{method="GET"} over every
// status code: what the daemon's own metric says it read.
func armGets(t *testing.T, reg prometheus.Gatherer) float64 {
	t.Helper()
	return promtest.Sum(t, reg, "routekeeper_arm_requests_total", "method", "GET")
}

// counterValue is the value of the series of a counter with the label
// pair given, 0 when there is none.
func counterValue(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	v, _ := promtest.Value(t, reg, name, label, value)
	return v
}

// tableGets is routekeeper_table_arm_requests_total{method="GET"} by table.
func tableGets(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	promtest.Each(t, reg, "routekeeper_table_arm_requests_total", func(labels map[string]string, v float64) {
		if labels["method"] == "GET" {
			out[labels["table"]] += v
		}
	})
	return out
}

// TestSteadyGuardARMReads holds the guard to one read per table: the daemon
// on the Kubernetes-the-Hard-Way example (examples/kthw: its configuration,
// topology and inventory, on the in-process fabric through the real SDK)
// with the association guard every second makes at most 12 ARM GETs in 10 s
// of steady state, as its own routekeeper_arm_requests_total says: one read
// of the route table per guard cycle (the table lists the subnet, so the
// subnet is not read), not two. With the Application Gateway example
// (examples/kthw-appgw: the same plus a mirror table) each table's guard
// reads its own table once per cycle, and
// routekeeper_table_arm_requests_total tells the tables apart although
// their guards run at the same instants on one client.
//
// It runs in a synctest bubble: the daemon's tickers, the SDK's pollers
// and the fabric's operations all run on the bubble's clock, so the 10 s
// (and the set-up before them) take no wall time, and no cycle is lost or
// gained to a loaded machine.
func TestSteadyGuardARMReads(t *testing.T) {
	const (
		interval = time.Second
		window   = 10 * time.Second
		// maxGets is the bound per table: 10 cycles of one read,
		// and room for two more.
		maxGets = 12
	)
	for _, example := range []string{"kthw", "kthw-appgw"} {
		t.Run(example, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"routekeeper.yaml", "nodes.yaml", "topology.yaml"} {
				b, err := os.ReadFile(filepath.Join("..", "..", "examples", example, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.Load(filepath.Join(dir, "routekeeper.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			topoYAML, err := os.ReadFile(cfg.Cloud.Local.Topology)
			if err != nil {
				t.Fatal(err)
			}
			var mirrors []controller.Mirror
			tables := []string{controller.TableName(cfg.RouteTable.ID)}
			for _, m := range cfg.Mirrors {
				mirrors = append(mirrors, controller.Mirror{RouteTableID: m.RouteTable, Subnets: m.Subnets,
					Policy: assoc.Policy(m.Association.Policy), Restore: m.Association.Restore, CreateTable: m.Create, Location: m.Location})
				tables = append(tables, controller.TableName(m.RouteTable))
			}
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				store, err := fabric.OpenMemory(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				srv := fabric.New(store, fabric.Options{})
				topo, err := topology.ParseTopology(topoYAML)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := topology.Apply(ctx, topo, srv.ClientOptions(), fabric.Credential{}); err != nil {
					t.Fatal(err)
				}
				m := metrics.New()
				client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: srv.ClientOptions(), PollFrequency: 100 * time.Millisecond, Observer: m})
				if err != nil {
					t.Fatal(err)
				}
				src := inventory.New(inventory.Options{
					File: cfg.Source.Inventory.File, AllocationsFile: cfg.Source.Inventory.Allocations,
					ClusterCIDRs: cfg.Cluster.ClusterCIDRs, ServiceCIDRs: cfg.Cluster.ServiceCIDRs, NodeMaskV4: cfg.Cluster.NodeCIDRMaskSize,
				})
				done := make(chan error, 1)
				go func() {
					done <- Run(ctx, Options{
						Controller: controller.Config{
							Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs, RouteLimit: cfg.RouteTable.RouteLimit,
							RouteTableID: cfg.RouteTable.ID, Location: cfg.RouteTable.Location, CreateTable: cfg.RouteTable.Create,
							Subnets: cfg.Subnets, Mode: verdict.Mode(cfg.Routes), Policy: assoc.Policy(cfg.Association.Policy),
							BatchWindow: cfg.Controller.BatchWindow, MaxBatchDelay: cfg.Controller.MaxBatchDelay, Resync: cfg.Controller.Resync,
							GuardInterval: interval,
						},
						Mirrors: mirrors,
						Cloud:   client, Source: src, Metrics: m,
					})
				}()
				// Set-up: the first reconcile creates, fills and associates
				// the table (and fills the mirror); a few guard cycles later
				// the daemon is in steady state.
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if got := counterValue(t, m.Registry(), "routekeeper_reconciles_total", "result", "success"); got < 1 {
					t.Fatalf("no successful reconcile after 5 s (reconciles_total{success} = %v)", got)
				}
				before, beforeByTable := armGets(t, m.Registry()), tableGets(t, m.Registry())
				time.Sleep(window)
				synctest.Wait()
				gets, byTable := armGets(t, m.Registry())-before, tableGets(t, m.Registry())
				sum := 0.0
				for _, table := range tables {
					n := byTable[table] - beforeByTable[table]
					sum += n
					t.Logf("table %s: %v ARM GETs in %s of steady state with the guard every %s", table, n, window, interval)
					if n > maxGets {
						t.Errorf("table %s: %v ARM GETs in %s with the guard every %s, want at most %d", table, n, window, interval, maxGets)
					}
				}
				t.Logf("all tables: %v ARM GETs (routekeeper_arm_requests_total)", gets)
				if gets > float64(maxGets*len(tables)) {
					t.Errorf("%v ARM GETs in %s with the guard every %s for %d tables, want at most %d", gets, window, interval, len(tables), maxGets*len(tables))
				}
				if sum != gets {
					t.Errorf("the tables' GETs add up to %v, the daemon made %v: every request of a steady daemon is some table's", sum, gets)
				}
				if got := counterValue(t, m.Registry(), "routekeeper_reconciles_total", "result", "error"); got != 0 {
					t.Errorf("%v failed reconciles", got)
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run after cancel = %v, want nil", err)
				}
			})
		})
	}
}
