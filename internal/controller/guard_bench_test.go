package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
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

// bigKTHW is the KTHW network with a /20 node subnet: room for 1,000 nodes.
const bigKTHW = kthw.Network + `          - name: kubernetes-subnet
            addressPrefix: 10.240.0.0/20
`

// manyWorkers are n nodes in bigKTHW's subnet with a /24 pod CIDR each in
// 10.64.0.0/14.
func manyWorkers(n int) []source.Node {
	out := make([]source.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("worker-%04d", i), fmt.Sprintf("10.240.%d.%d", i/250, 4+i%250), fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256))
	}
	return out
}

// BenchmarkGuardCycleRoutes measures the steady guard cycle (nothing to
// do: one GET of the table, which lists the subnet) on a table of 400 and
// of 1,000 node routes, Azure's limit since May 2026: reads/op, the bytes
// of the table's JSON (B/read), and the cycle's CPU (ns/op) and
// allocations, most of which are the SDK's decoding of the answer.
func BenchmarkGuardCycleRoutes(b *testing.B) {
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("routes-%d", n), func(b *testing.B) {
			env := fabrictest.New(b, fabric.Options{}, bigKTHW)
			cfg := scenarioConfig()
			cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.64.0.0/14")}
			c := New(cfg, env.Client, nodesource.New(manyWorkers(n)...), nil)
			ctx := context.Background()
			if r := c.Reconcile(ctx); r.Err != nil || r.Unrouted() != 0 || len(r.Table.Routes) != n {
				b.Fatalf("set-up: %s %v", r.Summary(), r.Err)
			}
			body := tableJSON(b, env)
			var reads int64
			b.ResetTimer()
			for b.Loop() {
				g := c.Guard(ctx)
				if g.AssociationProblems() != 0 || g.NeedsWrite || g.Unrouted() != 0 {
					b.Fatalf("guard: %s", g.Summary())
				}
				reads += g.Reads
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(len(body)), "B/read")
		})
	}
}

// tableJSON is the KTHW table as ARM answers its GET.
func tableJSON(tb testing.TB, env *fabrictest.Env) []byte {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, fabric.InProcessEndpoint+fabrictest.KTHWTable+"?api-version=2025-05-01", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer x")
	resp, err := env.Server.RoundTripper().RoundTrip(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET table: %d %v", resp.StatusCode, err)
	}
	return body
}

// BenchmarkBurst1000 measures the pass that routes a burst of n new nodes
// (400, and 1,000: a full table at Azure's limit) against the in-process
// fabric through the real SDK: one GET, one PUT of the whole table, its
// operation and the read-back (writes/op is the PUTs). A fresh fabric per
// iteration, not timed.
func BenchmarkBurst1000(b *testing.B) {
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("nodes-%d", n), func(b *testing.B) {
			cfg := scenarioConfig()
			cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.64.0.0/14")}
			nodes := manyWorkers(n)
			var writes int64
			for b.Loop() {
				b.StopTimer()
				env := fabrictest.New(b, fabric.Options{}, bigKTHW)
				c := New(cfg, env.Client, nodesource.New(nodes...), nil)
				b.StartTimer()
				r := c.Reconcile(context.Background())
				if r.Err != nil || r.Unrouted() != 0 || len(r.Table.Routes) != n {
					b.Fatalf("burst: %s %v", r.Summary(), r.Err)
				}
				writes += r.Writes
			}
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		})
	}
}
