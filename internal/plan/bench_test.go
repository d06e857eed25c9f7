package plan

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// benchNodes returns n nodes named node-000000..., each with one /26 pod
// CIDR cut from 10.0.0.0/8 in order and an address in 172.16.0.0/12.
func benchNodes(n, offset int) []source.Node {
	nodes := make([]source.Node, n)
	for i := range nodes {
		j := i + offset
		pod := uint32(10)<<24 | uint32(j)<<6
		ip := uint32(172)<<24 | uint32(16)<<16 | uint32(j+10)
		nodes[i] = source.Node{
			Name:        fmt.Sprintf("node-%06d", j),
			InternalIPs: []netip.Addr{u32(ip)},
			PodCIDRs:    []netip.Prefix{netip.PrefixFrom(u32(pod), 26)},
		}
	}
	return nodes
}

func u32(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// benchTable is the claimed table holding the routes of nodes plus a few
// custom routes, as a steady state would leave it.
func benchTable(nodes []source.Node) *route.Table {
	t := &route.Table{Name: "rt", Etag: `W/"1"`, Tags: map[string]string{route.ClaimTag: "bench"}}
	t.Routes = append(t.Routes,
		route.Route{Name: "default", AddressPrefix: "0.0.0.0/0", Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("172.31.0.4")},
		route.Route{Name: "azure", AddressPrefix: "AzureCloud", NextHopType: route.Internet},
	)
	for _, n := range nodes {
		p := n.PodCIDRs[0]
		t.Routes = append(t.Routes, route.Route{Name: route.Name(n.Name, p), AddressPrefix: p.String(), Prefix: p,
			NextHopType: route.VirtualAppliance, NextHopIP: n.InternalIPs[0], ProvisioningState: "Succeeded"})
	}
	return t
}

func benchCompute(b *testing.B, in Input, wantCreates, wantUpdates, wantDeletes int) {
	b.Helper()
	p := Compute(in)
	if c, u, d := p.Counts(); c != wantCreates || u != wantUpdates || d != wantDeletes || len(p.Conflicts) != 0 {
		b.Fatalf("plan %s, want %d/%d/%d and no conflicts", p, wantCreates, wantUpdates, wantDeletes)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Compute(in)
	}
}

var benchCIDRs = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}

// BenchmarkCompute400Nodes: a full default-size table. Target: well under
// 1 ms.
func BenchmarkCompute400Nodes(b *testing.B) {
	nodes := benchNodes(398, 0) // 398 pod routes + 2 custom routes = 400
	b.Run("empty-table", func(b *testing.B) {
		cur := &route.Table{Name: "rt", Tags: map[string]string{route.ClaimTag: "bench"}}
		benchCompute(b, Input{Cluster: "bench", ClusterCIDRs: benchCIDRs, Nodes: nodes, Current: cur}, 398, 0, 0)
	})
	b.Run("steady", func(b *testing.B) {
		benchCompute(b, Input{Cluster: "bench", ClusterCIDRs: benchCIDRs, Nodes: nodes, Current: benchTable(nodes)}, 0, 0, 0)
	})
}

// BenchmarkCompute100kRoutes: 100,000 nodes and routes (Limit 100000).
// Target: under 200 ms.
func BenchmarkCompute100kRoutes(b *testing.B) {
	const n = 100_000
	nodes := benchNodes(n-2, 0)
	cur := benchTable(nodes)
	in := Input{Cluster: "bench", ClusterCIDRs: benchCIDRs, Limit: n, Nodes: nodes, Current: cur}
	b.Run("steady", func(b *testing.B) {
		benchCompute(b, in, 0, 0, 0)
	})
	b.Run("churn", func(b *testing.B) {
		// 1% of the nodes gone, 1% new ones, 1% with a new address.
		churned := append([]source.Node(nil), nodes[n/100:]...)
		for i := 0; i < n/100; i++ {
			nd := churned[i*50]
			nd.InternalIPs = []netip.Addr{u32(uint32(192)<<24 | uint32(168)<<16 | uint32(i))}
			churned[i*50] = nd
		}
		churned = append(churned, benchNodes(n/100, n)...)
		benchCompute(b, Input{Cluster: "bench", ClusterCIDRs: benchCIDRs, Limit: n, Nodes: churned, Current: cur}, n/100, n/100, n/100)
	})
}
