package fabric

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// benchEnv is a fabric holding one route table of n routes associated with
// one subnet, on a state file (as `routekeeper fabric serve` runs) or in
// memory.
func benchEnv(b *testing.B, storage, mode string, n int) *env {
	b.Helper()
	ctx := context.Background()
	var st *store.Store
	var err error
	if storage == "file" {
		st, err = store.Open(ctx, filepath.Join(b.TempDir(), "fabric.db"))
	} else {
		st, err = store.OpenMemory(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	t := &testing.T{}
	e := newEnvOn(t, mode, st, Options{})
	e.t = t
	e.createRG(testRG)
	e.seedVNet(ctx, testRG)
	routes := make([]*armnetwork.Route, n)
	for i := range routes {
		routes[i] = vaRoute(fmt.Sprintf("worker-%d____1020%d024", i, i), fmt.Sprintf("10.%d.%d.0/24", 200+i/256, i%256), "10.240.0.4")
	}
	rt := e.mustPutTable(ctx, testRG, "rt", table(routes...))
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
		b.Fatal(err)
	}
	if t.Failed() {
		b.Fatal("setting up the benchmark failed")
	}
	return e
}

// BenchmarkRouteTableGet measures route table GETs by the real SDK client.
// Target: at least 2,000 per second on 2 cores (docs/fabric.md).
func BenchmarkRouteTableGet(b *testing.B) {
	eachBenchEnv(b, func(b *testing.B, e *env) {
		ctx := context.Background()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.tables.Get(ctx, testRG, "rt", nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
	})
}

// eachBenchEnv runs f as a sub-benchmark on every storage, transport and
// table size, with allocations reported and the set-up not timed.
func eachBenchEnv(b *testing.B, f func(b *testing.B, e *env)) {
	for _, storage := range []string{"file", "memory"} {
		for _, mode := range transports {
			for _, n := range []int{2, 50, 400} {
				b.Run(fmt.Sprintf("%s/%s/routes=%d", storage, mode, n), func(b *testing.B) {
					e := benchEnv(b, storage, mode, n)
					b.ReportAllocs()
					b.ResetTimer()
					f(b, e)
				})
			}
		}
	}
}

// BenchmarkRouteTableGetRaw measures the same GETs without the SDK's
// decoding of the answer (which costs more than serving it for large
// tables): the fabric's own throughput.
func BenchmarkRouteTableGetRaw(b *testing.B) {
	for _, mode := range transports {
		for _, n := range []int{2, 50, 400} {
			b.Run(fmt.Sprintf("file/%s/routes=%d", mode, n), func(b *testing.B) {
				e := benchEnv(b, "file", mode, n)
				u := e.endpoint + tablePath(testRG, "rt") + "?api-version=2024-05-01"
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req, _ := http.NewRequest("GET", u, nil)
						req.Header.Set("Authorization", "Bearer bench")
						resp, err := e.hc.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
			})
		}
	}
}

// BenchmarkRouteTablePut measures whole-table PUTs with If-Match, polled to
// completion, as the controller writes: GET, change one route, PUT.
func BenchmarkRouteTablePut(b *testing.B) {
	eachBenchEnv(b, func(b *testing.B, e *env) {
		ctx := context.Background()
		for i := range b.N {
			cur, err := e.tables.Get(ctx, testRG, "rt", nil)
			if err != nil {
				b.Fatal(err)
			}
			cur.Properties.Routes[0].Properties.NextHopIPAddress = api.Ptr(fmt.Sprintf("10.240.%d.%d", i/250%250, i%250+1))
			p, err := e.tables.BeginCreateOrUpdate(withHeader(ctx, "If-Match", api.Str(cur.Etag)), testRG, "rt", cur.RouteTable, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.PollUntilDone(ctx, fastPoll); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
	})
}
