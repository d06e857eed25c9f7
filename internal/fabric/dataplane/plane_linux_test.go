package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// newTestPlane returns a Plane with a random prefix whose namespaces are
// removed when the test ends, pass or fail; it skips the test, saying
// why, when this process cannot create network namespaces.
func newTestPlane(t *testing.T) *Plane {
	t.Helper()
	if err := CheckPrivileges(); err != nil {
		// CI (scripts/test.sh) sets ROUTEKEEPER_E2E=1: there it must run.
		if os.Getenv("ROUTEKEEPER_E2E") == "1" {
			t.Fatalf("the data plane test cannot run with ROUTEKEEPER_E2E=1: %v", err)
		}
		t.Skipf("skipping the data plane test: %v (run as root, as CI does)", err)
	}
	prefix := fmt.Sprintf("rkt%06x", rand.Uint32()&0xffffff)
	p, err := New(prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("cleaning up the data plane: %v", err)
		}
		if left, _ := listNamespaces(prefix); len(left) > 0 {
			t.Errorf("namespaces left after Close: %v", left)
		}
	})
	return p
}

// TestEveryPairAgreesWithTheRouteComputation builds the lab and sends
// packets from every node and pod to every node, pod and a few addresses
// nobody holds: what arrives is what Trace (the walk through the data
// plane's model) says, and, for every address somebody holds, what
// internal/routing's trace — `routekeeper trace` — says from the source's
// subnet over the same fabric state.
func TestEveryPairAgreesWithTheRouteComputation(t *testing.T) {
	p := newTestPlane(t)
	spec, st := labSpecState(t)
	tracer := routing.NewTracer(RoutingState(st, labNodes))
	ctx := context.Background()
	if err := p.Apply(ctx, spec); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	// A second Apply of the same spec is a no-op that must not fail.
	if err := p.Apply(ctx, spec); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	var endpoints []netip.Addr
	for _, n := range spec.Nodes {
		endpoints = append(endpoints, n.IP)
		endpoints = append(endpoints, n.Pods...)
	}
	nobody := []netip.Addr{
		netip.MustParseAddr("10.240.0.99"),  // VNet space, no NIC
		netip.MustParseAddr("10.200.0.77"),  // worker-0's pod CIDR, no pod
		netip.MustParseAddr("10.200.9.1"),   // no route: 10/8 None
		netip.MustParseAddr("192.168.1.1"),  // None
		netip.MustParseAddr("203.0.113.10"), // Internet: unreachable here
	}
	delivered, dropped, agreed := 0, 0, 0
	for _, src := range endpoints {
		for _, dst := range append(endpoints, nobody...) {
			if src == dst {
				continue
			}
			want, err := Trace(spec, src, dst)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := FindNamespace(ctx, p.Prefix(), dst); err != nil {
				if want.Delivered {
					t.Errorf("%s -> %s: trace delivers to %s, but nobody holds %s", src, dst, want.To, dst)
				}
				continue
			}
			got, err := Probe(ctx, p.Prefix(), src, dst, ProbeOptions{Rate: 400, Duration: 25 * time.Millisecond, Grace: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			arrived := got.Received > 0
			if arrived != want.Delivered {
				t.Errorf("%s -> %s: probe %v; trace: delivered %v %s %v %s", src, dst, got, want.Delivered, want.To, want.Path, want.Reason)
			}
			if nodeOf(spec, src) == nodeOf(spec, dst) {
				// A node and its own pods: the packet never reaches
				// Azure's network, so Azure's route selection says nothing.
			} else if rt := tracer.Trace(routing.Endpoint{Addr: src}, routing.Endpoint{Addr: dst}); rt.OK() != arrived {
				t.Errorf("%s -> %s: probe %v; routekeeper trace: %s (%s)", src, dst, got, rt.Verdict, strings.Join(rt.Reasons, "; "))
			} else {
				agreed++
			}
			if want.Delivered {
				delivered++
			} else {
				dropped++
			}
		}
	}
	t.Logf("%d pairs delivered, %d dropped, as the route computation says; routekeeper trace agreed on %d probed pairs between nodes", delivered, dropped, agreed)
	if agreed == 0 {
		t.Error("no pair between two nodes was compared with routekeeper trace")
	}
	if delivered == 0 || dropped == 0 {
		t.Errorf("the lab should both deliver and drop: %d delivered, %d dropped", delivered, dropped)
	}
}

// TestApplyFollowsRouteChanges: a route replaced, removed and restored in
// the spec changes what arrives, and nodes and pods that leave the spec
// take their namespaces with them.
func TestApplyFollowsRouteChanges(t *testing.T) {
	p := newTestPlane(t)
	spec := labSpec(t)
	ctx := context.Background()
	pod0, pod1 := netip.MustParseAddr("10.200.0.2"), netip.MustParseAddr("10.200.1.2")
	probe := func(what string, want bool) {
		t.Helper()
		got, err := Probe(ctx, p.Prefix(), pod0, pod1, ProbeOptions{Rate: 400, Duration: 25 * time.Millisecond, Grace: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if (got.Received > 0) != want {
			t.Errorf("%s: %v, want delivered %v", what, got, want)
		}
	}
	if err := p.Apply(ctx, spec); err != nil {
		t.Fatal(err)
	}
	probe("lab", true)

	without := withoutRoute(spec, "worker-1")
	if err := p.Apply(ctx, without); err != nil {
		t.Fatal(err)
	}
	probe("worker-1's route removed", false)
	if err := p.Apply(ctx, spec); err != nil {
		t.Fatal(err)
	}
	probe("worker-1's route restored", true)

	fewer := cloneSpec(spec)
	fewer.Nodes = fewer.Nodes[:2]
	if err := p.Apply(ctx, fewer); err != nil {
		t.Fatal(err)
	}
	left, err := listNamespaces(p.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	// One router, two nodes, two pods.
	if len(left) != 5 {
		t.Errorf("namespaces after removing two nodes: %v, want 5", left)
	}
	probe("after removing other nodes", true)
}

// withoutRoute is a copy of s whose first subnet lacks the route name.
func withoutRoute(s Spec, name string) Spec {
	out := cloneSpec(s)
	sn := &out.VNets[0].Subnets[0]
	sn.Routes = slices.DeleteFunc(sn.Routes, func(r Route) bool { return r.Name == name })
	return out
}

func cloneSpec(s Spec) Spec {
	out := Spec{Nodes: append([]Node(nil), s.Nodes...)}
	for _, v := range s.VNets {
		nv := VNet{Name: v.Name}
		for _, sn := range v.Subnets {
			sn.Routes = append([]Route(nil), sn.Routes...)
			nv.Subnets = append(nv.Subnets, sn)
		}
		out.VNets = append(out.VNets, nv)
	}
	return out
}

// BenchmarkApplyRouteChange is the cost of bringing one route change to the
// kernel: the lab is built, and each iteration applies the spec with or
// without worker-1's route (the reads of the router's routes and rules and
// one ip batch).
func BenchmarkApplyRouteChange(b *testing.B) {
	if err := CheckPrivileges(); err != nil {
		b.Skip(err)
	}
	p, err := New(fmt.Sprintf("rkb%06x", rand.Uint32()&0xffffff), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	spec := labSpecTB(b)
	without := withoutRoute(spec, "worker-1")
	ctx := context.Background()
	if err := p.Apply(ctx, spec); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := spec
		if i%2 == 0 {
			s = without
		}
		if err := p.Apply(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// nodeOf is the node whose address, or pod's address, a is ("" for none).
func nodeOf(spec Spec, a netip.Addr) string {
	for _, n := range spec.Nodes {
		if n.IP == a || slices.Contains(n.Pods, a) {
			return n.Name
		}
	}
	return ""
}

// TestNICWithoutIPForwarding: when the fabric's NICs place the nodes, a
// NIC with IP forwarding disabled (Azure's default) gets what is addressed
// to it but not its pods' traffic, either way — the outage `routekeeper
// doctor`'s ip-forwarding check warns about — and the probe agrees with
// Trace on every pair.
func TestNICWithoutIPForwarding(t *testing.T) {
	p := newTestPlane(t)
	topo := labTopology + `    networkInterfaces:
      - {name: worker-0-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.20, enableIPForwarding: true}
      - {name: worker-1-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.21}
`
	env := fabrictest.New(t, fabric.Options{}, topo)
	ctx := context.Background()
	st, err := network.Networks(ctx, env.Store)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := FromState(st, labNodes[:2], 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, spec); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	pod0, pod1 := netip.MustParseAddr("10.200.0.2"), netip.MustParseAddr("10.200.1.2")
	node0, node1 := netip.MustParseAddr("10.240.0.20"), netip.MustParseAddr("10.240.0.21")
	cases := []struct {
		src, dst netip.Addr
		want     bool
	}{
		{pod0, pod1, false},  // to worker-1's pod: Azure drops it at worker-1's NIC
		{pod1, pod0, false},  // from worker-1's pod: dropped leaving worker-1
		{node0, node1, true}, // node to node: addressed to the NIC itself
		{pod0, node1, true},  // worker-0 forwards; worker-1 receives its own address
		{node1, pod0, true},  // worker-1 sends from its own address
	}
	for _, c := range cases {
		model, err := Trace(spec, c.src, c.dst)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Probe(ctx, p.Prefix(), c.src, c.dst, ProbeOptions{Rate: 400, Duration: 25 * time.Millisecond, Grace: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if arrived := got.Received > 0; arrived != c.want || model.Delivered != c.want {
			t.Errorf("%s -> %s: probe %v, model delivered %v (%s); want delivered %v", c.src, c.dst, got, model.Delivered, model.Reason, c.want)
		}
	}
}
