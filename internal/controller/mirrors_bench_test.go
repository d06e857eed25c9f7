package controller

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// putCounter counts route table PUTs per table.
type putCounter struct {
	cloud.Cloud
	mu   sync.Mutex
	puts map[string]int
}

func (c *putCounter) PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error) {
	c.mu.Lock()
	c.puts[TableName(t.ID)]++
	c.mu.Unlock()
	return c.Cloud.PutRouteTable(ctx, t, etag)
}

// BenchmarkMirrorBurst400 is one pass of a Set over a burst of 400 new
// nodes with three mirror tables (the App Gateway table and two more, each
// with routes of its own), against the in-process fabric through the real
// SDK: every table gets its 400 routes in exactly one PUT (checked on every
// iteration; puts/table is reported). The fabric is made fresh for each
// iteration, untimed.
func BenchmarkMirrorBurst400(b *testing.B) {
	const n = 400
	topo := appGWTopology + `      - name: hub-routes
        routes:
          - name: to-spoke
            addressPrefix: 172.16.0.0/12
            nextHopType: VirtualAppliance
            nextHopIpAddress: 10.240.0.4
      - name: vm-routes
`
	nodes := make([]source.Node, n)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("burst-%03d", i), fmt.Sprintf("10.240.%d.%d", i/200, 10+i%200), fmt.Sprintf("10.200.%d.0/24", i%256))
		if i >= 256 {
			nodes[i].PodCIDRs = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.201.%d.0/24", i-256))}
		}
	}
	cfg := scenarioConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.200.0.0/15")}
	cfg.RouteLimit = 1000
	mirrors := []Mirror{appGWMirror(),
		{RouteTableID: "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/hub-routes", Policy: assoc.Enforce},
		{RouteTableID: "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/vm-routes", Policy: assoc.Enforce}}
	ctx := context.Background()
	var puts map[string]int
	for b.Loop() {
		b.StopTimer()
		env := fabrictest.New(b, fabric.Options{RouteLimit: 1000}, topo)
		pc := &putCounter{Cloud: env.Client, puts: map[string]int{}}
		src := Share(nodesource.New(nodes...), nil)
		set := &Set{Main: New(cfg, pc, src, nil)}
		for _, m := range mirrors {
			set.Mirrors = append(set.Mirrors, New(MirrorConfig(cfg, m), pc, src, nil))
		}
		b.StartTimer()
		for _, r := range set.Reconcile(ctx, observe.Scope{}) {
			if r.Err != nil || r.Unrouted() != 0 {
				b.Fatalf("%s: %s: %v", TableName(r.TableID), r.Summary(), r.Err)
			}
		}
		b.StopTimer()
		for _, name := range []string{"kubernetes-routes", "appgw-routes", "hub-routes", "vm-routes"} {
			if pc.puts[name] != 1 {
				b.Fatalf("%s: %d PUTs for the burst, want exactly 1 (%v)", name, pc.puts[name], pc.puts)
			}
		}
		puts = pc.puts
		b.StartTimer()
	}
	b.ReportMetric(float64(len(puts)), "tables")
	b.ReportMetric(1, "puts/table")
}
