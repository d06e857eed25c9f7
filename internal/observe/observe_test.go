package observe_test

import (
	"context"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
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
