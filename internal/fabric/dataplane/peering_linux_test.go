package dataplane

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// peeredTopology is a cluster network peered with a hub (a VM whose subnet
// routes the pod CIDRs to the nodes; the hub's side allows forwarded
// traffic when hubForwarded) and with a second node pool's network (whose
// side does not allow forwarded traffic), and a network peered with
// nobody, whose node the cluster's table still names.
func peeredTopology(hubForwarded bool) string {
	fwd := "false"
	if hubForwarded {
		fwd = "true"
	}
	return kthw.Network + `          - {name: kubernetes-subnet, addressPrefix: 10.240.0.0/24, routeTable: kubernetes-routes}
        peerings:
          - {name: to-hub, remoteVirtualNetwork: hub-vnet}
          - {name: to-pool, remoteVirtualNetwork: pool-vnet}
      - name: hub-vnet
        addressPrefixes: [10.250.0.0/16]
        subnets:
          - {name: shared, addressPrefix: 10.250.1.0/24, routeTable: shared-routes}
        peerings:
          - {name: to-kubernetes, remoteVirtualNetwork: kubernetes-vnet, allowForwardedTraffic: ` + fwd + `}
      - name: pool-vnet
        addressPrefixes: [10.241.0.0/16]
        subnets:
          - {name: pool, addressPrefix: 10.241.0.0/24, routeTable: pool-routes}
        peerings:
          - {name: to-kubernetes, remoteVirtualNetwork: kubernetes-vnet}
      - name: stray-vnet
        addressPrefixes: [10.242.0.0/16]
        subnets:
          - {name: stray, addressPrefix: 10.242.0.0/24}
    routeTables:
      - name: kubernetes-routes
        routes:
          - {name: worker-0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
          - {name: worker-1, addressPrefix: 10.200.1.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.21}
          - {name: worker-9, addressPrefix: 10.200.9.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.241.0.9}
          - {name: worker-x, addressPrefix: 10.200.10.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.242.0.9}
      - name: shared-routes
        routes:
          - {name: worker-0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
          - {name: worker-1, addressPrefix: 10.200.1.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.21}
      - name: pool-routes
        routes:
          - {name: worker-0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
          - {name: worker-1, addressPrefix: 10.200.1.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.21}
    networkInterfaces:
      - {name: worker-0-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.20, enableIPForwarding: true}
      - {name: worker-1-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.21, enableIPForwarding: true}
      - {name: worker-9-nic, subnet: pool-vnet/pool, privateIPAddress: 10.241.0.9, enableIPForwarding: true}
      - {name: worker-x-nic, subnet: stray-vnet/stray, privateIPAddress: 10.242.0.9, enableIPForwarding: true}
      - {name: hub-vm-nic, subnet: hub-vnet/shared, privateIPAddress: 10.250.1.10}
`
}

var peeredNodes = []source.Node{
	{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.240.0.20")}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
	{Name: "worker-1", InternalIPs: []netip.Addr{addr("10.240.0.21")}, PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}},
	{Name: "worker-9", InternalIPs: []netip.Addr{addr("10.241.0.9")}, PodCIDRs: []netip.Prefix{pfx("10.200.9.0/24")}},
	{Name: "worker-x", InternalIPs: []netip.Addr{addr("10.242.0.9")}, PodCIDRs: []netip.Prefix{pfx("10.200.10.0/24")}},
	{Name: "hub-vm", InternalIPs: []netip.Addr{addr("10.250.1.10")}},
}

// TestPeeringsAgreeWithTheRouteComputation builds peered networks and
// sends real packets from every node and pod to every other: what arrives
// is what the data plane's model says and what internal/routing — the
// route computation of `routekeeper trace` — says about the packet's way
// there (delivered, or delivered with its replies lost). A reply that
// routing says is lost (no-return) is really lost: the packet back from
// the pod does not arrive.
func TestPeeringsAgreeWithTheRouteComputation(t *testing.T) {
	for _, hubForwarded := range []bool{true, false} {
		name := "hub refuses forwarded traffic"
		if hubForwarded {
			name = "hub allows forwarded traffic"
		}
		t.Run(name, func(t *testing.T) {
			p := newTestPlane(t)
			env := fabrictest.New(t, fabric.Options{}, peeredTopology(hubForwarded))
			ctx := context.Background()
			st, err := network.Networks(ctx, env.Store)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := FromState(st, peeredNodes, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(ctx, spec); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if err := p.Apply(ctx, spec); err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			tracer := routing.NewTracer(RoutingState(st, peeredNodes))
			var endpoints []netip.Addr
			for _, n := range spec.Nodes {
				endpoints = append(endpoints, n.IP)
				endpoints = append(endpoints, n.Pods...)
			}
			probe := func(src, dst netip.Addr) bool {
				t.Helper()
				got, err := Probe(ctx, p.Prefix(), src, dst, ProbeOptions{Rate: 400, Duration: 25 * time.Millisecond, Grace: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return got.Received > 0
			}
			counts := map[routing.Verdict]int{}
			arrivedAcross := 0
			for _, src := range endpoints {
				for _, dst := range endpoints {
					if src == dst || nodeOf(spec, src) == nodeOf(spec, dst) {
						continue
					}
					arrived := probe(src, dst)
					model, err := Trace(spec, src, dst)
					if err != nil {
						t.Fatal(err)
					}
					if arrived != model.Delivered {
						t.Errorf("%s -> %s: arrived %v; the data plane's model says %v %v %s", src, dst, arrived, model.Delivered, model.Path, model.Reason)
					}
					rt := tracer.Trace(routing.Endpoint{Addr: src}, routing.Endpoint{Addr: dst})
					counts[rt.Verdict]++
					if there := rt.Verdict == routing.Delivered || rt.Verdict == routing.NoReturn; there != arrived {
						t.Errorf("%s -> %s: arrived %v; routekeeper trace: %s (%s)", src, dst, arrived, rt.Verdict, strings.Join(rt.Reasons, "; "))
					}
					if arrived && rt.Peering != "" {
						arrivedAcross++
					}
					if rt.Verdict == routing.NoReturn && probe(dst, src) {
						t.Errorf("%s -> %s: routekeeper trace says the replies are lost, but %s reaches %s", src, dst, dst, src)
					}
				}
			}
			t.Logf("verdicts of the probed pairs: %v; %d arrived across a peering", counts, arrivedAcross)
			for _, v := range []routing.Verdict{routing.Delivered, routing.NoReturn, routing.NotForwarded, routing.Unreachable, routing.Dropped} {
				if counts[v] == 0 {
					t.Errorf("no probed pair had the verdict %s: the lab should exercise it", v)
				}
			}
			if arrivedAcross == 0 {
				t.Error("no packet crossed a peering")
			}
		})
	}
}
