package azure_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

const (
	hubVNet     = "/subscriptions/" + fabrictest.Sub + "/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/hub-vnet"
	hubGateway  = "/subscriptions/" + fabrictest.Sub + "/resourceGroups/hub/providers/Microsoft.Network/virtualNetworkGateways/hub-vpn"
	hubSpokeDoc = "../../fabric/testdata/topology/hub-spoke.yaml"
)

func hubSpoke(t *testing.T) *fabrictest.Env {
	t.Helper()
	b, err := os.ReadFile(hubSpokeDoc)
	if err != nil {
		t.Fatal(err)
	}
	return fabrictest.New(t, fabric.Options{}, string(b))
}

func TestListPeerings(t *testing.T) {
	env := hubSpoke(t)
	ctx := context.Background()
	got, err := env.Client.ListPeerings(ctx, fabrictest.KTHWVNet)
	if err != nil {
		t.Fatal(err)
	}
	want := []azure.Peering{{
		ID: fabrictest.KTHWVNet + "/virtualNetworkPeerings/to-hub", Name: "to-hub", RemoteVNetID: hubVNet,
		RemoteAddressPrefixes: []string{"10.250.0.0/16"}, RemoteCurrentPrefixes: []string{"10.250.0.0/16"},
		State: "Connected", SyncLevel: "FullyInSync", AllowVirtualNetworkAccess: true, UseRemoteGateways: true,
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ListPeerings (-want +got):\n%s", d)
	}
	hub, err := env.Client.ListPeerings(ctx, hubVNet)
	if err != nil || len(hub) != 1 || !hub[0].AllowForwardedTraffic || !hub[0].AllowGatewayTransit || hub[0].RemoteVNetID != fabrictest.KTHWVNet {
		t.Errorf("hub peerings: %+v %v", hub, err)
	}
	_, err = env.Client.ListPeerings(ctx, "/subscriptions/"+fabrictest.Sub+"/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/nope")
	if !errors.Is(err, armerr.ErrNotFound) {
		t.Errorf("missing network: %v, want ErrNotFound", err)
	}
}

func TestVirtualNetworkGateways(t *testing.T) {
	env := hubSpoke(t)
	ctx := context.Background()
	got, err := env.Client.VirtualNetworkGateways(ctx, hubVNet, []string{"10.250.0.0/16", "10.240.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	p := netip.MustParsePrefix
	want := []azure.Gateway{{
		ID: hubGateway, Name: "hub-vpn", Type: "Vpn", VNetID: hubVNet, SubnetID: hubVNet + "/subnets/GatewaySubnet",
		Routes: []azure.GatewayRoute{
			{Network: p("10.250.0.0/16"), Origin: "Network", SourcePeer: "10.250.255.4", Weight: 32768},
			{Network: p("10.9.0.0/16"), Origin: "Network", NextHop: "203.0.113.10", SourcePeer: "10.250.255.4", Weight: 32768},
			{Network: p("192.168.50.0/24"), Origin: "EBgp", NextHop: "169.254.21.1", SourcePeer: "169.254.21.1", AsPath: "65020", Weight: 32768},
		},
		OnPremises: []netip.Prefix{p("10.9.0.0/16"), p("192.168.50.0/24")},
	}}
	if d := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
		t.Errorf("VirtualNetworkGateways (-want +got):\n%s", d)
	}
	// The cluster's network has no gateway of its own (it uses the hub's).
	if own, err := env.Client.VirtualNetworkGateways(ctx, fabrictest.KTHWVNet, nil); err != nil || len(own) != 0 {
		t.Errorf("cluster network gateways: %+v %v", own, err)
	}
	if _, err := env.Client.GatewayLearnedRoutes(ctx, fabrictest.KTHWVNet); err == nil {
		t.Error("GatewayLearnedRoutes took a virtual network ID")
	}
	if azure.IsForbidden(err) || azure.IsForbidden(errors.New("x")) {
		t.Error("IsForbidden on errors that are not 403")
	}
}
