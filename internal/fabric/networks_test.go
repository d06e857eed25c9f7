package fabric_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// TestNetworksAgreesWithSnapshot: the store's direct read (what the data
// plane forwards by) shows the virtual networks, subnets, associations and
// routes that the ARM API shows, and Version changes with every write.
func TestNetworksAgreesWithSnapshot(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHWTwoSubnets+`            routeTable: kubernetes-routes
    routeTables:
      - name: kubernetes-routes
        routes:
          - {name: worker-0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
          - {name: drop, addressPrefix: 10.201.0.0/16, nextHopType: None}
`)
	ctx := context.Background()
	written, stop := env.Store.Subscribe()
	defer stop()
	v1, err := env.Store.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := network.Networks(ctx, env.Store)
	if err != nil {
		t.Fatal(err)
	}
	want, err := topology.Snapshot(ctx, env.Server.ClientOptions(), identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	ignore := cmpopts.IgnoreFields(network.StateRouteTable{}, "Subnets")
	if d := cmp.Diff(want.VirtualNetworks, got.VirtualNetworks); d != "" {
		t.Errorf("virtual networks (-Snapshot +Networks):\n%s", d)
	}
	if d := cmp.Diff(want.RouteTables, got.RouteTables, ignore); d != "" {
		t.Errorf("route tables (-Snapshot +Networks):\n%s", d)
	}
	if len(got.RouteTables) != 1 || len(got.RouteTables[0].Routes) != 2 || got.VirtualNetworks[0].Subnets[1].RouteTable == "" {
		t.Errorf("Networks = %+v, want the table with 2 routes on pool-2", got)
	}

	select {
	case <-written:
	default:
	}
	fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions())
	select {
	case <-written:
	case <-time.After(5 * time.Second):
		t.Error("no write announced to the subscriber")
	}
	v2, err := env.Store.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v1 == v2 {
		t.Errorf("Version %q unchanged by a VNet write", v1)
	}
	after, err := network.Networks(ctx, env.Store)
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range after.VirtualNetworks[0].Subnets {
		if sn.RouteTable != "" {
			t.Errorf("subnet %s still on %s after the redeploy", sn.Name, sn.RouteTable)
		}
	}
}
