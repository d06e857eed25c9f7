package controller

import (
	"context"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// BenchmarkGuardCycle measures one association guard cycle against the
// in-process fabric through the real SDK: "steady" (the subnet is on the
// table: the cost paid every interval) and "repair-seed001" (a VNet
// redeploy detached the table before each cycle; the redeploy is not
// timed). reads/op and writes/op are routekeeper's ARM calls per cycle.
func BenchmarkGuardCycle(b *testing.B) {
	for _, repair := range []bool{false, true} {
		name := "steady"
		if repair {
			name = "repair-seed001"
		}
		b.Run(name, func(b *testing.B) {
			env := fabrictest.New(b, fabric.Options{}, fabrictest.KTHW)
			cfg := scenarioConfig()
			c := New(cfg, env.Client, &staticSource{nodes: workers(3)}, nil)
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
