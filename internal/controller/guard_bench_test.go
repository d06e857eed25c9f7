package controller

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// BenchmarkGuardCycle measures one association guard cycle against the
// in-process fabric through the real SDK: "steady" (the subnet is on the
// table: the cost paid every interval), "steady-2-subnets" (two subnets
// on the table: still one read, the table's, which lists both) and
// "repair-redeploy" (a VNet redeploy detached the table before each
// cycle; the redeploy is not timed). reads/op and writes/op are
// routekeeper's ARM calls per cycle.
func BenchmarkGuardCycle(b *testing.B) {
	for _, bc := range []struct {
		name     string
		topology string
		subnets  []string
		repair   bool
	}{
		{"steady", fabrictest.KTHW, []string{fabrictest.KTHWSubnet}, false},
		{"steady-2-subnets", fabrictest.KTHWTwoSubnets, []string{fabrictest.KTHWSubnet, pool2Subnet}, false},
		{"repair-redeploy", fabrictest.KTHW, []string{fabrictest.KTHWSubnet}, true},
	} {
		repair := bc.repair
		b.Run(bc.name, func(b *testing.B) {
			env := fabrictest.New(b, fabric.Options{}, bc.topology)
			cfg := scenarioConfig()
			cfg.Subnets = bc.subnets
			c := New(cfg, env.Client, nodesource.New(workers(3)...), nil)
			ctx := context.Background()
			if r := c.Reconcile(ctx); r.Err != nil || r.AssociationProblems() > 0 {
				b.Fatalf("set-up: %s %v", r.Summary(), r.Err)
			}
			redeploy := func() { fabrictest.RedeployKTHWVNet(b, env.Server.ClientOptions()) }
			var reads, writes int64
			b.ResetTimer()
			for b.Loop() {
				if repair {
					b.StopTimer()
					redeploy()
					b.StartTimer()
				}
				g := c.Guard(ctx)
				if repair && g.Repairs() != 1 || !repair && g.AssociationProblems() != 0 {
					b.Fatalf("guard: %s", g.Summary())
				}
				reads += g.Reads
				writes += g.Writes
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		})
	}
}

// BenchmarkPass50Nodes measures the ARM calls of one pass on a 50-node
// table, steady (nothing to do): a guard cycle reads our table once (it
// lists the subnet, which is then not read); a reconcile reads each subnet,
// each table and the subnets' network once and writes nothing.
func BenchmarkPass50Nodes(b *testing.B) {
	for _, kind := range []string{"guard", "reconcile"} {
		b.Run(kind, func(b *testing.B) {
			env := fabrictest.New(b, fabric.Options{}, fabrictest.KTHW)
			c := New(scenarioConfig(), env.Client, nodesource.New(workers(50)...), nil)
			ctx := context.Background()
			if r := c.Reconcile(ctx); r.Err != nil || r.Unrouted() != 0 {
				b.Fatalf("set-up: %s %v", r.Summary(), r.Err)
			}
			var reads, writes int64
			for b.Loop() {
				var r *Result
				if kind == "guard" {
					r = c.Guard(ctx)
				} else {
					r = c.Reconcile(ctx)
				}
				if r.Err != nil || r.Writes != 0 || r.Unrouted() != 0 {
					b.Fatalf("steady %s: %s %v", kind, r.Summary(), r.Err)
				}
				reads += r.Reads
				writes += r.Writes
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		})
	}
}

// BenchmarkRouteRestore50Nodes measures, with the daemon's loops running
// (guard interval 1 s, resync 1 h), the time from an owned route deleted
// out of band (through the SDK, as an operator would) to the reconcile
// that put it back in the table. Each op is one deletion and its
// restoration. It waits on the controller's results, not by polling.
func BenchmarkRouteRestore50Nodes(b *testing.B) {
	env := fabrictest.New(b, fabric.Options{}, fabrictest.KTHW)
	nodes := workers(50)
	cfg := scenarioConfig()
	cfg.GuardInterval, cfg.Resync = time.Second, time.Hour
	rec := &recorder{}
	c := New(cfg, env.Client, nodesource.New(nodes...), nil, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		b.Fatal(err)
	}
	routes := f.NewRoutesClient()
	// wrote waits for a reconcile started at or after since that wrote the
	// table without error.
	wrote := func(since time.Time) {
		rec.wait(b, since, time.Minute, "a table write", func(r *Result) bool { return !r.GuardOnly && r.Wrote && r.Err == nil })
	}
	wrote(time.Time{})
	var total time.Duration
	i := 0
	for b.Loop() {
		n := nodes[i%len(nodes)]
		i++
		name := route.Name(n.Name, n.PodCIDRs[0])
		p, err := routes.BeginDelete(context.Background(), "kubernetes", "kubernetes-routes", name, nil)
		fabrictest.MustPoll(b, p, err)
		t0 := time.Now()
		wrote(t0)
		total += time.Since(t0)
		if _, err := routes.Get(context.Background(), "kubernetes", "kubernetes-routes", name, nil); err != nil {
			b.Fatalf("route %s not restored by the write: %v", name, err)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-restore/op")
}
