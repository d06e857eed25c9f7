package dataplane

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

// labTopology is the Hard Way network with a second subnet (pool-2) that
// has no route table, and a table on kubernetes-subnet with a route per
// worker's pod CIDR.
const labTopology = kthw.Network + `          - {name: kubernetes-subnet, addressPrefix: 10.240.0.0/24, routeTable: kubernetes-routes}
          - {name: pool-2, addressPrefix: 10.240.1.0/24}
    routeTables:
      - name: kubernetes-routes
        routes:
          - {name: worker-0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
          - {name: worker-1, addressPrefix: 10.200.1.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.21}
          - {name: worker-2, addressPrefix: 10.200.2.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.1.20}
          - {name: blocked, addressPrefix: 10.240.0.128/25, nextHopType: None}
`

var labNodes = []source.Node{
	{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}},
	{Name: "worker-1", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.1.0/24")}},
	{Name: "worker-2", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.1.20")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.2.0/24")}},
	{Name: "blocked-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.200")}},
}

func labSpec(t *testing.T) Spec { return labSpecTB(t) }

func labSpecTB(t testing.TB) Spec {
	spec, _ := labSpecState(t)
	return spec
}

// labSpecState is the lab's Spec and the fabric state it was computed from.
func labSpecState(t testing.TB) (Spec, *network.State) {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{}, labTopology)
	st, err := network.Networks(context.Background(), env.Store)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := FromState(st, labNodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	return spec, st
}

func TestEffectiveRoutes(t *testing.T) {
	tests := []struct {
		name  string
		space []string
		udrs  []network.StateRoute
		want  map[string]string // prefix -> kind [via]
	}{{
		name:  "system routes only",
		space: []string{"10.240.0.0/16"},
		want: map[string]string{
			"0.0.0.0/0": "Unreachable", "10.0.0.0/8": "Blackhole", "10.240.0.0/16": "Deliver",
			"100.64.0.0/10": "Blackhole", "172.16.0.0/12": "Blackhole", "192.168.0.0/16": "Blackhole",
		},
	}, {
		name:  "a VNet space that holds a private range keeps it VnetLocal",
		space: []string{"10.0.0.0/8", "192.168.0.0/24"},
		want: map[string]string{
			"0.0.0.0/0": "Unreachable", "10.0.0.0/8": "Deliver", "192.168.0.0/24": "Deliver",
			"100.64.0.0/10": "Blackhole", "172.16.0.0/12": "Blackhole", "192.168.0.0/16": "Blackhole",
		},
	}, {
		name:  "UDRs replace system routes of the same prefix and add their own",
		space: []string{"10.240.0.0/16"},
		udrs: []network.StateRoute{
			{Name: "worker-0", AddressPrefix: "10.200.0.0/24", NextHopType: "VirtualAppliance", NextHopIPAddress: "10.240.0.20"},
			{Name: "fw", AddressPrefix: "0.0.0.0/0", NextHopType: "VirtualAppliance", NextHopIPAddress: "10.240.0.4"},
			{Name: "drop", AddressPrefix: "10.0.0.0/8", NextHopType: "None"},
			{Name: "local", AddressPrefix: "172.16.0.0/12", NextHopType: "VnetLocal"},
			{Name: "gw", AddressPrefix: "192.168.0.0/16", NextHopType: "VirtualNetworkGateway"},
			{Name: "tag", AddressPrefix: "AzureCloud", NextHopType: "Internet"},
		},
		// 0.0.0.0/0 to an appliance also replaces the None routes of the
		// private and shared ranges (forced tunnelling: Azure shows them
		// Invalid), so 100.64.0.0/10 goes to the firewall too.
		want: map[string]string{
			"0.0.0.0/0": "Appliance 10.240.0.4", "10.0.0.0/8": "Blackhole", "10.200.0.0/24": "Appliance 10.240.0.20",
			"10.240.0.0/16": "Deliver", "172.16.0.0/12": "Deliver", "192.168.0.0/16": "Unreachable",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var space []netip.Prefix
			for _, s := range tt.space {
				space = append(space, pfx(s))
			}
			got := map[string]string{}
			for _, r := range EffectiveRoutes(space, tt.udrs) {
				got[r.Prefix.String()] = strings.TrimSpace(r.Kind.String() + " " + viaString(r))
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("routes (-want +got):\n%s", d)
			}
		})
	}
}

// TestTraceLab checks the route computation's verdicts on the lab of the
// data plane test (plane_linux_test.go): per source subnet, what reaches
// what and why not.
func TestTraceLab(t *testing.T) {
	spec := labSpec(t)
	tests := []struct {
		src, dst string
		to       string // "" when dropped
		reason   string
	}{
		{"10.200.0.2", "10.200.1.2", "worker-1/10.200.1.2", ""},
		{"10.200.0.2", "10.200.2.2", "worker-2/10.200.2.2", ""}, // appliance in another subnet
		{"10.240.0.20", "10.240.1.20", "worker-2", ""},
		{"10.200.0.2", "10.240.0.20", "worker-0", ""},                        // its own node, never at the router
		{"10.240.1.20", "10.200.0.2", "", "route 10.0.0.0/8 (system: None)"}, // pool-2 has no table
		{"10.240.1.20", "10.240.0.21", "worker-1", ""},
		{"10.240.0.20", "10.240.0.200", "", "route 10.240.0.128/25 (blocked)"}, // a UDR None beats VnetLocal
		{"10.240.1.20", "10.240.0.200", "blocked-0", ""},                       // not from pool-2
		{"10.240.0.20", "10.240.0.99", "", "no NIC holds 10.240.0.99"},
		{"10.200.0.2", "10.200.0.77", "", "worker-0 has no pod 10.200.0.77"},
		{"10.200.1.2", "10.200.0.77", "", "worker-0 has no pod 10.200.0.77"},
		{"10.200.0.2", "203.0.113.1", "", "Unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.src+"->"+tt.dst, func(t *testing.T) {
			v, err := Trace(spec, addr(tt.src), addr(tt.dst))
			if err != nil {
				t.Fatal(err)
			}
			if v.Delivered != (tt.to != "") || v.To != tt.to || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("Trace = %+v, want to %q, reason containing %q", v, tt.to, tt.reason)
			}
		})
	}
	if _, err := Trace(spec, addr("10.9.9.9"), addr("10.200.0.2")); err == nil {
		t.Error("a source nobody holds: want an error")
	}
}

func TestFromStateErrors(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	st, err := network.Networks(context.Background(), env.Store)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := FromState(st, []source.Node{
		{Name: "outside", InternalIPs: []netip.Addr{addr("10.9.0.4")}},
		{Name: "v6", InternalIPs: []netip.Addr{addr("fd00::4")}},
		{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.240.0.20")}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
	}, 2)
	var unplaced *UnplacedError
	if !errors.As(err, &unplaced) {
		t.Fatalf("FromState error %v, want an *UnplacedError", err)
	}
	want := []Node{{Name: "worker-0", VNet: "kubernetes-vnet", Subnet: "kubernetes-subnet", IP: addr("10.240.0.20"),
		PodCIDR: pfx("10.200.0.0/24"), Pods: []netip.Addr{addr("10.200.0.2"), addr("10.200.0.3")}}}
	if d := cmp.Diff(want, spec.Nodes, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("the placed nodes (-want +got):\n%s", d)
	}
	for _, want := range []string{`node "outside": internal IP 10.9.0.4 is in no subnet`, `node "v6": no IPv4 internal address`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromState error %v, want it to contain %q", err, want)
		}
	}
}

func TestValidate(t *testing.T) {
	spec := Spec{
		VNets: []VNet{{Name: "v", Subnets: []Subnet{{Name: "s", Prefix: pfx("10.0.0.0/24"), Routes: []Route{
			{Prefix: pfx("10.1.0.0/16"), Kind: Appliance},
			{Prefix: pfx("10.1.0.0/16"), Kind: Blackhole},
		}}}}},
		Nodes: []Node{
			{Name: "a", VNet: "v", Subnet: "s", IP: addr("10.0.0.1")},
			{Name: "b", VNet: "v", Subnet: "nope", IP: addr("10.0.0.5")},
			{Name: "c", VNet: "v", Subnet: "s", IP: addr("10.0.0.6"), PodCIDR: pfx("10.2.0.0/24"), Pods: []netip.Addr{addr("10.3.0.2")}},
		},
	}
	err := spec.Validate()
	for _, want := range []string{
		"vnets[0].subnets[0].routes[0].via: invalid IP is not an IPv4 address",
		"vnets[0].subnets[0].routes[1].prefix: 10.1.0.0/16 appears twice",
		"nodes[0].ip: 10.0.0.1 is not a host address of subnet s",
		"nodes[1].subnet: v/nope is not a subnet",
		"nodes[2].pods[0]: 10.3.0.2 is not a pod address of 10.2.0.0/24",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v\nwant it to contain %q", err, want)
		}
	}
}

// fakeFabric is a NetworkReader whose state the test changes.
type fakeFabric struct {
	mu      sync.Mutex
	version int
	state   *network.State
}

func (f *fakeFabric) Version(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(rune('a' + f.version)), nil
}

func (f *fakeFabric) Networks(context.Context) (*network.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, nil
}

func (f *fakeFabric) set(prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	f.state = &network.State{VirtualNetworks: []network.StateVirtualNetwork{{Name: "v", AddressPrefixes: []string{prefix},
		Subnets: []network.StateSubnet{{Name: "s", AddressPrefixes: []string{prefix}}}}}}
}

// recorder is an Applier that remembers what it was given.
type recorder struct {
	mu      sync.Mutex
	specs   []Spec
	applied chan struct{} // receives once per Apply, if made
}

func (r *recorder) Apply(_ context.Context, s Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specs = append(r.specs, s)
	if r.applied != nil {
		r.applied <- struct{}{}
	}
	return nil
}

func (r *recorder) last() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.specs) == 0 {
		return 0, ""
	}
	return len(r.specs), r.specs[len(r.specs)-1].VNets[0].Subnets[0].Prefix.String()
}

// TestDriverFollowsWrites runs the driver in synctest bubbles: its polls
// and the propagation delay run on the bubble's clock, so "not applied
// within 50 polls" means 50 polls happened.
func TestDriverFollowsWrites(t *testing.T) {
	const poll = time.Millisecond
	for _, delay := range []time.Duration{0, 30 * time.Millisecond, time.Hour} {
		t.Run("delay "+delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, rec := &fakeFabric{}, &recorder{applied: make(chan struct{}, 10)}
				f.set("10.0.0.0/24")
				d := &Driver{Fabric: f, Plane: rec, Nodes: func(context.Context) ([]source.Node, error) { return nil, nil },
					PropagationDelay: delay, Poll: poll}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if err := d.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				<-rec.applied // the start
				done := make(chan error, 1)
				go func() { done <- d.Run(ctx) }()
				written := time.Now()
				f.set("10.1.0.0/24")
				if delay < time.Hour {
					select {
					case <-rec.applied:
					case <-time.After(10 * time.Second):
						t.Fatalf("the written network was never applied (delay %s)", delay)
					}
					if n, p := rec.last(); n != 2 || p != "10.1.0.0/24" {
						t.Errorf("%d applies, last %s; want 2: the start and the write", n, p)
					}
					if took := time.Since(written); took < delay || took > delay+poll {
						t.Errorf("applied %s after the write (bubble time), want the delay %s plus at most a poll", took, delay)
					}
				} else {
					select {
					case <-rec.applied:
						t.Errorf("with an hour's delay the write was applied at once")
					case <-time.After(50 * poll):
					}
					if n, p := rec.last(); n != 1 || p != "10.0.0.0/24" {
						t.Errorf("with an hour's delay: %d applies, last %s; want only the first", n, p)
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestFromStateNICs: with network interfaces in the fabric, a node sits in
// the subnet of the NIC that holds its address (not merely a subnet whose
// prefix holds it), a NIC of no inventory node becomes a node without
// pods, and a node no NIC holds is left out and named.
func TestFromStateNICs(t *testing.T) {
	topo := labTopology + `    networkInterfaces:
      - {name: worker-0-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.20}
      - {name: worker-2-nic, subnet: kubernetes-vnet/pool-2, privateIPAddress: 10.240.1.20}
      - {name: nva-nic, subnet: kubernetes-vnet/kubernetes-subnet, privateIPAddress: 10.240.0.4, enableIPForwarding: true}
`
	env := fabrictest.New(t, fabric.Options{}, topo)
	st, err := network.Networks(context.Background(), env.Store)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.NetworkInterfaces) != 3 {
		t.Fatalf("Networks: %d NICs, want 3: %+v", len(st.NetworkInterfaces), st.NetworkInterfaces)
	}
	spec, err := FromState(st, labNodes[:3], 1)
	var unplaced *UnplacedError
	if !errors.As(err, &unplaced) || !strings.Contains(err.Error(), `node "worker-1": no network interface of the fabric holds its internal IP 10.240.0.21`) {
		t.Fatalf("FromState error = %v, want worker-1 left out: no NIC holds 10.240.0.21", err)
	}
	got := map[string]string{}
	for _, n := range spec.Nodes {
		got[n.Name] = n.Subnet + " " + n.IP.String() + " " + n.PodCIDR.String()
	}
	want := map[string]string{
		"worker-0": "kubernetes-subnet 10.240.0.20 10.200.0.0/24",
		"worker-2": "pool-2 10.240.1.20 10.200.2.0/24",
		"nva-nic":  "kubernetes-subnet 10.240.0.4 invalid Prefix",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
}
