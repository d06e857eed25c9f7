package dataplane

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// FromState turns Connected peerings into peers of the routers, marks the
// routes that lead into a peer, and drops a route whose appliance sits in
// a network that is not peered.
func TestFromStatePeers(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, peeredTopology(false))
	st, err := network.Networks(context.Background(), env.Store)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := FromState(st, peeredNodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	k8s := spec.vnet("kubernetes-vnet")
	if d := cmp.Diff([]Peer{{VNet: "hub-vnet"}, {VNet: "pool-vnet"}}, k8s.Peers); d != "" {
		t.Errorf("peers of kubernetes-vnet (-want +got):\n%s", d)
	}
	got := map[string]string{}
	for _, r := range k8s.Subnets[0].Routes {
		got[r.Prefix.String()] = strings.TrimSpace(r.Kind.String() + " " + viaString(r) + " " + r.Peer)
	}
	want := map[string]string{
		"10.250.0.0/16":  "Deliver  hub-vnet",
		"10.241.0.0/16":  "Deliver  pool-vnet",
		"10.200.9.0/24":  "Appliance 10.241.0.9 pool-vnet",
		"10.200.10.0/24": "Blackhole",
		"10.200.0.0/24":  "Appliance 10.240.0.20",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("route %s: %q, want %q", p, got[p], w)
		}
	}
	if stray := spec.vnet("stray-vnet"); len(stray.Peers) != 0 {
		t.Errorf("stray-vnet peers: %+v", stray.Peers)
	}
	// The model: worker-0's pod to worker-9's crosses with a forwarded
	// source, which the pool's side refuses; worker-0 itself crosses.
	v, err := Trace(spec, addr("10.200.0.2"), addr("10.200.9.2"))
	if err != nil || v.Delivered || !strings.Contains(v.Reason, "does not allow forwarded traffic") {
		t.Errorf("pod to pool pod: %+v %v", v, err)
	}
	v, err = Trace(spec, addr("10.240.0.20"), addr("10.200.9.2"))
	if err != nil || !v.Delivered || v.To != "worker-9/10.200.9.2" {
		t.Errorf("node to pool pod: %+v %v", v, err)
	}
}

func TestValidatePeers(t *testing.T) {
	spec := func() Spec {
		return Spec{VNets: []VNet{
			{Name: "a", Peers: []Peer{{VNet: "b"}}, Subnets: []Subnet{{Name: "s", Prefix: pfx("10.1.0.0/24"), Routes: []Route{
				{Prefix: pfx("10.2.0.0/16"), Kind: Deliver, Peer: "b"}}}}},
			{Name: "b", Peers: []Peer{{VNet: "a"}}},
		}}
	}
	ok := spec()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"one-sided", func(s *Spec) { s.VNets[1].Peers = nil }, "is not peered back"},
		{"unknown peer", func(s *Spec) { s.VNets[0].Peers = append(s.VNets[0].Peers, Peer{VNet: "c"}) }, `"c" is not a virtual network of the spec`},
		{"itself", func(s *Spec) { s.VNets[0].Peers = append(s.VNets[0].Peers, Peer{VNet: "a"}) }, "peered with itself"},
		{"route into a non-peer", func(s *Spec) { s.VNets[0].Subnets[0].Routes[0].Peer = "c" }, `"c" is not a peer`},
		{"two appliances for one prefix", func(s *Spec) {
			s.VNets[0].Subnets = append(s.VNets[0].Subnets,
				Subnet{Name: "s1", Prefix: pfx("10.1.1.0/24"), Routes: []Route{{Prefix: pfx("10.9.0.0/24"), Kind: Appliance, Via: addr("10.2.0.4"), Peer: "b"}}},
				Subnet{Name: "s2", Prefix: pfx("10.1.2.0/24"), Routes: []Route{{Prefix: pfx("10.9.0.0/24"), Kind: Appliance, Via: addr("10.2.0.5"), Peer: "b"}}})
		}, "cannot tell them apart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.change(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	a1, b1 := ok.peerAddrs("a", "b")
	b2, a2 := ok.peerAddrs("b", "a")
	if a1 != a2 || b1 != b2 || a1 == b1 || a1.String() != "169.254.0.1" {
		t.Errorf("peer addresses: %s %s / %s %s", a1, b1, a2, b2)
	}
}
