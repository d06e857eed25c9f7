package observe_test

import (
	"context"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// The node networks are read once per network, however many guarded
// subnets it holds, and hold the prefixes of every subnet in it.
func TestNodeNetworksObserved(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHWTwoSubnets)
	scope := observe.Scope{Table: fabrictest.KTHWTable, Subnets: []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2}, Networks: true}
	o := observe.Observe(context.Background(), env.Client, scope)
	if n := len(o.Networks()); n != 1 {
		t.Errorf("%d networks read for two subnets of one network, want 1", n)
	}
	got, err := o.NodeNetworks()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "10.240.0.0/24" {
		t.Errorf("node networks %v, want both subnets' prefixes", got)
	}
	// Without Networks, nothing is read and next hops go unchecked; with
	// an earlier observation, its networks stand in.
	scope.Networks = false
	guard := observe.Observe(context.Background(), env.Client, scope)
	if n, _ := guard.NodeNetworks(); n != nil {
		t.Errorf("node networks %v without reading networks", n)
	}
	scope.Earlier = o
	again := observe.Observe(context.Background(), env.Client, scope)
	if n, _ := again.NodeNetworks(); len(n) != 2 || !again.Networks()[0].Earlier {
		t.Errorf("node networks from the earlier observation: %v (%+v)", n, again.Networks())
	}
}

// Each resource is read once per observation, and a table, subnet or
// network that is missing is recorded as missing, not as an error.
func TestObserveReadsOnce(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHWTwoSubnets)
	missing := fabrictest.KTHWTable + "-gone"
	r0, _ := env.Client.Calls()
	o := observe.Observe(context.Background(), env.Client, observe.Scope{
		Table:   missing,
		Subnets: []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2, fabrictest.KTHWSubnet},
		Routing: true,
	})
	r1, _ := env.Client.Calls()
	if got := r1 - r0; got != o.Reads() || got != 6 {
		t.Errorf("%d reads (observation says %d), want 6: the table, two subnets, one network, its peerings and its gateways", got, o.Reads())
	}
	tr, ok := o.Table(missing)
	if !ok || !tr.NotFound || tr.Err != nil {
		t.Errorf("missing table read as %+v", tr)
	}
	if got := len(o.Subnets()); got != 3 {
		t.Errorf("%d subnets in scope order, want 3", got)
	}
	if _, err := o.RoutingState(nil); err != nil {
		t.Errorf("routing state: %v", err)
	}
}

// steadyEnv is the KTHW network with two subnets on our table, as a
// reconcile leaves it, and the full observation a reconcile makes of it
// (the Earlier of the guard's steady observations).
func steadyEnv(t *testing.T) (*fabrictest.Env, observe.Scope, *observe.Observation) {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHWTwoSubnets)
	ctx := context.Background()
	if _, err := env.Client.PutRouteTable(ctx, &route.Table{ID: fabrictest.KTHWTable, Location: "eastus"}, ""); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2} {
		if _, err := env.Client.SetSubnetRouteTable(ctx, s, fabrictest.KTHWTable, ""); err != nil {
			t.Fatal(err)
		}
	}
	scope := observe.Scope{Table: fabrictest.KTHWTable, Subnets: []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2}, Networks: true}
	return env, scope, observe.Observe(ctx, env.Client, scope)
}

// A steady observation reads our table and, of the guarded subnets, only
// those the table does not list; a listed subnet is answered as on our
// table with what the earlier observation read of it.
func TestSteadyObservation(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fault is done to the network after the reconcile's observation.
		fault func(t *testing.T, env *fabrictest.Env)
		// noEarlier observes without an earlier observation.
		noEarlier bool
		// reads is the ARM reads of the steady observation; read the
		// guarded subnets it reads; table what each subnet is on.
		reads int64
		read  []string
		table map[string]string
	}{
		{name: "both subnets listed: one read", reads: 1,
			table: map[string]string{fabrictest.KTHWSubnet: fabrictest.KTHWTable, fabrictest.KTHWPool2: fabrictest.KTHWTable}},
		{name: "no earlier observation: every subnet read", noEarlier: true, reads: 3,
			read:  []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2},
			table: map[string]string{fabrictest.KTHWSubnet: fabrictest.KTHWTable, fabrictest.KTHWPool2: fabrictest.KTHWTable}},
		{name: "one subnet detached: it is read", reads: 2, read: []string{fabrictest.KTHWPool2},
			fault: func(t *testing.T, env *fabrictest.Env) {
				if _, err := env.Client.SetSubnetRouteTable(context.Background(), fabrictest.KTHWPool2, "", ""); err != nil {
					t.Fatal(err)
				}
			},
			table: map[string]string{fabrictest.KTHWSubnet: fabrictest.KTHWTable, fabrictest.KTHWPool2: ""}},
		{name: "VNet redeployed: both read", reads: 3, read: []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2},
			fault: func(t *testing.T, env *fabrictest.Env) {
				fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions(), [2]string{"kubernetes-subnet", "10.240.0.0/24"}, [2]string{"pool-2", "10.240.1.0/24"})
			},
			table: map[string]string{fabrictest.KTHWSubnet: "", fabrictest.KTHWPool2: ""}},
		{name: "one subnet swapped: it and the other table read", reads: 3, read: []string{fabrictest.KTHWSubnet},
			fault: func(t *testing.T, env *fabrictest.Env) {
				ctx := context.Background()
				if _, err := env.Client.PutRouteTable(ctx, &route.Table{ID: fabrictest.KTHWTable2, Location: "eastus"}, ""); err != nil {
					t.Fatal(err)
				}
				if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable2, ""); err != nil {
					t.Fatal(err)
				}
			},
			table: map[string]string{fabrictest.KTHWSubnet: fabrictest.KTHWTable2, fabrictest.KTHWPool2: fabrictest.KTHWTable}},
		{name: "our table migrated away from: every subnet read", reads: 4, read: []string{fabrictest.KTHWSubnet, fabrictest.KTHWPool2},
			fault: func(t *testing.T, env *fabrictest.Env) {
				ctx := context.Background()
				if _, err := env.Client.PutRouteTable(ctx, &route.Table{ID: fabrictest.KTHWTable2, Location: "eastus"}, ""); err != nil {
					t.Fatal(err)
				}
				tb, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable)
				if err != nil {
					t.Fatal(err)
				}
				tb.Tags = map[string]string{route.MigratedToTag: fabrictest.KTHWTable2}
				if _, err := env.Client.PutRouteTable(ctx, tb, tb.Etag); err != nil {
					t.Fatal(err)
				}
			},
			table: map[string]string{fabrictest.KTHWSubnet: fabrictest.KTHWTable, fabrictest.KTHWPool2: fabrictest.KTHWTable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, scope, full := steadyEnv(t)
			if tc.fault != nil {
				tc.fault(t, env)
			}
			scope.Networks, scope.Steady, scope.Earlier = false, true, full
			if tc.noEarlier {
				scope.Earlier = nil
			}
			r0, _ := env.Client.Calls()
			o := observe.Observe(context.Background(), env.Client, scope)
			r1, _ := env.Client.Calls()
			if got := r1 - r0; got != tc.reads || o.Reads() != got {
				t.Errorf("%d ARM reads (observation says %d), want %d", got, o.Reads(), tc.reads)
			}
			for _, s := range o.Subnets() {
				wasRead := armid.Contains(tc.read, s.ID)
				if s.Listed == wasRead {
					t.Errorf("%s: Listed = %v, want %v", armid.Name(s.ID), s.Listed, !wasRead)
				}
				if s.Subnet == nil {
					t.Errorf("%s: no subnet in the observation (%+v)", armid.Name(s.ID), s)
					continue
				}
				if want := tc.table[s.ID]; !armid.Same(s.Subnet.RouteTableID, want) {
					t.Errorf("%s on route table %q, want %q", armid.Name(s.ID), s.Subnet.RouteTableID, want)
				}
				if len(s.Prefixes()) != 1 {
					t.Errorf("%s: prefixes %v, want the subnet's one", armid.Name(s.ID), s.Prefixes())
				}
				if e, _ := full.Subnet(s.ID); s.Listed && (s.Subnet.Etag != e.Subnet.Etag || s.Subnet.Name != e.Subnet.Name) {
					t.Errorf("%s: listed subnet %+v, want the earlier read %+v on our table", armid.Name(s.ID), *s.Subnet, *e.Subnet)
				}
			}
		})
	}
}

// ReadListed reads the listed subnets asked for, once, and nothing else;
// the observation it was made from is left as it was.
func TestReadListed(t *testing.T) {
	env, scope, full := steadyEnv(t)
	scope.Networks, scope.Steady, scope.Earlier = false, true, full
	ctx := context.Background()
	o := observe.Observe(ctx, env.Client, scope)
	// pool-2 is written again after the reconcile's read: ReadListed must
	// hand out its etag as it is now, not the earlier one.
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWPool2, fabrictest.KTHWTable, ""); err != nil {
		t.Fatal(err)
	}
	r0, _ := env.Client.Calls()
	n := o.ReadListed(ctx, env.Client, []string{fabrictest.KTHWPool2, fabrictest.KTHWTable2})
	r1, _ := env.Client.Calls()
	if got := r1 - r0; got != 1 || n.Reads() != o.Reads()+1 {
		t.Errorf("ReadListed made %d reads (observation: %d after %d), want 1: pool-2 (our table was read)", got, n.Reads(), o.Reads())
	}
	p, _ := n.Subnet(fabrictest.KTHWPool2)
	cur, err := env.Client.GetSubnet(ctx, fabrictest.KTHWPool2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Listed || p.Subnet == nil || p.Subnet.Etag != cur.Etag {
		t.Errorf("pool-2 after ReadListed: %+v, want it read with etag %s", p, cur.Etag)
	}
	if k, _ := n.Subnet(fabrictest.KTHWSubnet); !k.Listed {
		t.Errorf("kubernetes-subnet was read too: %+v", k)
	}
	if p, _ := o.Subnet(fabrictest.KTHWPool2); !p.Listed {
		t.Errorf("ReadListed changed the observation it was made from: %+v", p)
	}
	if same := n.ReadListed(ctx, env.Client, []string{fabrictest.KTHWPool2}); same != n {
		t.Error("ReadListed of a subnet already read made a new observation")
	}
}
