package routing

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// bigCluster is a KTHW-shaped cluster of n nodes: node i at 10.240.x.y
// with pod CIDR 10.200.i.0/24 (10.201... past 255), one UDR per node.
func bigCluster(n int) State {
	st := kthwState(kthwTableID)
	st.Subnets[0].Prefixes = []netip.Prefix{pfx("10.240.0.0/16")}
	tb := &route.Table{ID: kthwTableID}
	st.Nodes = nil
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, 240, byte(i / 250), byte(10 + i%250)})
		pod := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + i/256), byte(i % 256), 0}), 24)
		name := fmt.Sprintf("worker-%d", i)
		st.Nodes = append(st.Nodes, source.Node{Name: name, InternalIPs: []netip.Addr{ip}, PodCIDRs: []netip.Prefix{pod}})
		tb.Routes = append(tb.Routes, route.Route{Name: route.Name(name, pod), AddressPrefix: pod.String(), Prefix: pod, NextHopType: route.VirtualAppliance, NextHopIP: ip})
	}
	st.Tables = []*route.Table{tb}
	return st
}

// BenchmarkSelect400 is one lookup among 400 UDRs and the system routes.
func BenchmarkSelect400(b *testing.B) {
	st := bigCluster(400)
	sel := NewSelector(Effective(st.Subnets[0].VNet, st.Tables[0].Routes))
	dsts := make([]netip.Addr, len(st.Nodes))
	for i, n := range st.Nodes {
		dsts[i] = PodAddr(n.PodCIDRs[0])
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := sel.Lookup(dsts[i%len(dsts)]); !ok {
			b.Fatal("no route")
		}
	}
}

// BenchmarkCompile400 builds the effective routes and the selector of a
// subnet whose table holds 400 UDRs.
func BenchmarkCompile400(b *testing.B) {
	st := bigCluster(400)
	for b.Loop() {
		NewSelector(Effective(st.Subnets[0].VNet, st.Tables[0].Routes))
	}
}

// BenchmarkVerdictAllPairs400 decides every node to every node's pods:
// 400 × 400 verdicts, as doctor does (it explains only the failures). One
// iteration is the whole all-pairs run (target: under 100 ms).
func BenchmarkVerdictAllPairs400(b *testing.B) {
	benchAllPairs400(b, (*Tracer).Verdict)
}

// BenchmarkTraceAllPairs400 is the same with the shadowed routes and the
// chain of reasoning of every trace, as `routekeeper trace` prints them.
func BenchmarkTraceAllPairs400(b *testing.B) {
	benchAllPairs400(b, (*Tracer).Trace)
}

// benchAllPairs400 runs trace from every node of a 400-node cluster to
// every node's pods, each iteration with a new Tracer; every answer must
// be Delivered.
func benchAllPairs400(b *testing.B, trace func(*Tracer, Endpoint, Endpoint) *Result) {
	st := bigCluster(400)
	for b.Loop() {
		tr := NewTracer(st)
		for _, s := range st.Nodes {
			src := Endpoint{Addr: s.InternalIPs[0], Node: s.Name}
			for _, d := range st.Nodes {
				if r := trace(tr, src, Endpoint{Addr: PodAddr(d.PodCIDRs[0])}); r.Verdict != Delivered {
					b.Fatalf("%s -> %s: %s %v", s.Name, d.Name, r.Verdict, r.Reasons)
				}
			}
		}
	}
}
