package observe_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func hubSpoke(t testing.TB) *fabrictest.Env {
	t.Helper()
	b, err := os.ReadFile("../fabric/testdata/topology/hub-spoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return fabrictest.New(t, fabric.Options{}, string(b))
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// A next hop in a network peered with the node network makes the
// observation read that network (one GET: the node network's GET carried
// the peering), and its subnets join the node networks. In a steady state
// — every next hop in the node network — nothing more is read: this is the
// measurement behind reading peered networks only when a next hop needs
// them (one more read per reconcile while a node lives in a peered
// network), rather than listing each node network's peerings every pass
// (one more read per network every pass, with a right routekeeper's role
// does not grant).
func TestPeeredNextHopReads(t *testing.T) {
	env := hubSpoke(t)
	tests := []struct {
		name      string
		hops      []netip.Addr
		reads     int64
		networks  []string
		peered    []string
		noteWants string
	}{
		{name: "every next hop in the node network", hops: addrs("10.240.0.20", "10.240.0.21"), reads: 3,
			networks: []string{"10.240.0.0/24"}},
		{name: "a node in the peered hub", hops: addrs("10.240.0.20", "10.250.1.10"), reads: 4,
			networks: []string{"10.240.0.0/24", "10.250.1.0/24", "10.250.255.0/27"}, peered: []string{"hub-vnet"},
			noteWants: " or of the networks peered with them (hub-vnet)"},
		{name: "a node in no network at all", hops: addrs("10.240.0.20", "192.168.7.4"), reads: 3,
			networks: []string{"10.240.0.0/24"}},
		{name: "no next hops given", reads: 3, networks: []string{"10.240.0.0/24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r0, _ := env.Client.Calls()
			o := observe.Observe(context.Background(), env.Client, observe.Scope{Table: fabrictest.KTHWTable,
				Subnets: []string{fabrictest.KTHWSubnet}, Networks: true, NextHops: tt.hops})
			r1, _ := env.Client.Calls()
			if r1-r0 != tt.reads || o.Reads() != tt.reads {
				t.Errorf("%d reads (observation says %d), want %d", r1-r0, o.Reads(), tt.reads)
			}
			nets, err := o.NodeNetworks()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range nets {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.networks) {
				t.Errorf("node networks %v, want %v", got, tt.networks)
			}
			var peered []string
			for _, p := range o.PeeredNetworks() {
				peered = append(peered, p.Network.Name)
				if p.From != "kubernetes-vnet" || p.Peering != "to-hub" {
					t.Errorf("peered network %s reached from %s by %s, want kubernetes-vnet by to-hub", p.Network.Name, p.From, p.Peering)
				}
			}
			if !slices.Equal(peered, tt.peered) {
				t.Errorf("peered networks %v, want %v", peered, tt.peered)
			}
			if note := o.NodeNetworksNote(); note != tt.noteWants {
				t.Errorf("note %q, want %q", note, tt.noteWants)
			}
			// The guard's observation reuses them without reading.
			again := observe.Observe(context.Background(), env.Client, observe.Scope{Table: fabrictest.KTHWTable,
				Subnets: []string{fabrictest.KTHWSubnet}, Earlier: o})
			if n, _ := again.NodeNetworks(); len(n) != len(nets) {
				t.Errorf("the guard's node networks %v, want the earlier %v", n, nets)
			}
		})
	}
}

// With Scope.Routing (trace, doctor) the peered networks were read with
// the interconnect: a next hop in them costs no further read.
func TestPeeredNextHopFromInterconnect(t *testing.T) {
	env := hubSpoke(t)
	scope := observe.Scope{Table: fabrictest.KTHWTable, Subnets: []string{fabrictest.KTHWSubnet}, Networks: true, Routing: true}
	base := observe.Observe(context.Background(), env.Client, scope)
	scope.NextHops = addrs("10.250.1.10")
	o := observe.Observe(context.Background(), env.Client, scope)
	if o.Reads() != base.Reads() {
		t.Errorf("%d reads with a next hop in the hub, %d without: want the same", o.Reads(), base.Reads())
	}
	if nets, _ := o.NodeNetworks(); !slices.Contains(nets, netip.MustParsePrefix("10.250.1.0/24")) {
		t.Errorf("node networks %v lack the hub's subnets", nets)
	}
}

// peerCloud is a network with one peering to a network that cannot be
// read: denied, gone, or failing.
type peerCloud struct {
	err   error
	reads int64
}

const (
	pcVNet   = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
	pcHub    = "/subscriptions/s/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/hub"
	pcSubnet = pcVNet + "/subnets/nodes"
	pcTable  = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt"
)

func (c *peerCloud) GetRouteTable(context.Context, string) (*route.Table, error) {
	c.reads++
	return &route.Table{ID: pcTable, Name: "rt"}, nil
}

func (c *peerCloud) GetSubnet(context.Context, string) (*observe.Subnet, error) {
	c.reads++
	return &observe.Subnet{ID: pcSubnet, Name: "nodes", AddressPrefixes: []string{"10.240.0.0/24"}, RouteTableID: pcTable}, nil
}

func (c *peerCloud) GetVirtualNetwork(_ context.Context, id string) (*observe.VirtualNetwork, error) {
	c.reads++
	if armid.Same(id, pcHub) {
		return nil, c.err
	}
	return &observe.VirtualNetwork{ID: pcVNet, Name: "v", AddressPrefixes: []string{"10.240.0.0/16"},
		Subnets:  []observe.Subnet{{ID: pcSubnet, Name: "nodes", AddressPrefixes: []string{"10.240.0.0/24"}}},
		Peerings: []observe.Peering{{Name: "to-hub", RemoteVNetID: pcHub, State: "Connected", RemoteAddressPrefixes: []string{"10.250.0.0/16"}}}}, nil
}

func (c *peerCloud) ListNetworkInterfaces(context.Context, string) ([]observe.NetworkInterface, error) {
	return nil, nil
}

func (c *peerCloud) Calls() (int64, int64) { return c.reads, 0 }

func TestPeeredUnreadable(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		nets     bool // node networks known (next hops checked)
		note     string
		wantsErr string
	}{
		{name: "denied", err: fmt.Errorf("reading hub: 403 AuthorizationFailed: %w", armerr.ErrDenied), nets: true,
			note: "; virtual network hub could not be read (Microsoft.Network/virtualNetworks/read), so a node there is not recognised"},
		{name: "gone", err: fmt.Errorf("hub: %w", armerr.ErrNotFound), nets: true},
		{name: "failing", err: errors.New("500 InternalServerError"), wantsErr: "peered with v: 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observe.Observe(context.Background(), &peerCloud{err: tt.err}, observe.Scope{Table: pcTable,
				Subnets: []string{pcSubnet}, Networks: true, NextHops: addrs("10.240.0.5", "10.250.1.10")})
			nets, err := o.NodeNetworks()
			switch {
			case tt.wantsErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantsErr) || nets != nil {
					t.Errorf("node networks %v, err %v: want none (next hops unchecked) and an error with %q", nets, err, tt.wantsErr)
				}
			case err != nil || (nets != nil) != tt.nets || len(nets) != 1:
				t.Errorf("node networks %v, err %v: want the node network's alone", nets, err)
			}
			if got := o.NodeNetworksNote(); got != tt.note {
				t.Errorf("note %q, want %q", got, tt.note)
			}
		})
	}
}

// BenchmarkReconcileObservation measures a reconcile's observation of the
// hub-spoke network against the fabric through the SDK: the steady state,
// a node in the peered hub (read only then), and the alternative of
// listing the node network's peerings every pass.
func BenchmarkReconcileObservation(b *testing.B) {
	env := hubSpoke(b)
	ctx := context.Background()
	scope := observe.Scope{Table: fabrictest.KTHWTable, Subnets: []string{fabrictest.KTHWSubnet}, Networks: true}
	run := func(b *testing.B, hops []netip.Addr, list bool) {
		s := scope
		s.NextHops = hops
		r0, _ := env.Client.Calls()
		for b.Loop() {
			observe.Observe(ctx, env.Client, s)
			if list {
				if _, err := env.Client.ListPeerings(ctx, fabrictest.KTHWVNet); err != nil {
					b.Fatal(err)
				}
			}
		}
		r1, _ := env.Client.Calls()
		b.ReportMetric(float64(r1-r0)/float64(b.N), "reads/op")
	}
	b.Run("steady", func(b *testing.B) { run(b, addrs("10.240.0.20"), false) })
	b.Run("node-in-peered-hub", func(b *testing.B) { run(b, addrs("10.240.0.20", "10.250.1.10"), false) })
	b.Run("list-peerings-every-pass", func(b *testing.B) { run(b, addrs("10.240.0.20"), true) })
}
