package fabric

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// interconnectEnv is a fabric with the SDK's clients for peerings, gateways,
// sites and connections, and two networks: kubernetes-vnet (10.240/16,
// kubernetes-subnet) and hub-vnet (10.250/16, shared and GatewaySubnet).
type interconnectEnv struct {
	*nicEnv
	peerings *armnetwork.VirtualNetworkPeeringsClient
	gateways *armnetwork.VirtualNetworkGatewaysClient
	sites    *armnetwork.LocalNetworkGatewaysClient
	conns    *armnetwork.VirtualNetworkGatewayConnectionsClient
}

func newInterconnectEnv(t *testing.T, mode string) *interconnectEnv {
	t.Helper()
	e := &interconnectEnv{nicEnv: newNICEnv(t, mode, Options{})}
	f, err := armnetwork.NewClientFactory(testSub, identity.Credential{}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.peerings, e.gateways = f.NewVirtualNetworkPeeringsClient(), f.NewVirtualNetworkGatewaysClient()
	e.sites, e.conns = f.NewLocalNetworkGatewaysClient(), f.NewVirtualNetworkGatewayConnectionsClient()
	ctx := context.Background()
	if _, err := e.putVNet(ctx, testRG, "hub-vnet", armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.250.0.0/16")}},
		Subnets: []*armnetwork.Subnet{
			{Name: api.Ptr("shared"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.250.1.0/24")}},
			{Name: api.Ptr("GatewaySubnet"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.250.255.0/27")}},
		}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func vnetID(name string) string {
	return api.ResourceID(testSub, testRG, api.TypeVirtualNetworks, name)
}

// poll is await on the background context, to wrap a Begin call:
// poll(client.BeginX(...)).
func poll[T any](p *runtime.Poller[T], err error) (T, error) {
	return await(context.Background(), p, err)
}

func (e *interconnectEnv) peer(vnet, name, remote string, props armnetwork.VirtualNetworkPeeringPropertiesFormat, opts *armnetwork.VirtualNetworkPeeringsClientBeginCreateOrUpdateOptions) (armnetwork.VirtualNetworkPeering, error) {
	props.RemoteVirtualNetwork = &armnetwork.SubResource{ID: api.Ptr(vnetID(remote))}
	p, err := e.peerings.BeginCreateOrUpdate(context.Background(), testRG, vnet, name, armnetwork.VirtualNetworkPeering{Properties: &props}, opts)
	r, err := poll(p, err)
	return r.VirtualNetworkPeering, err
}

func (e *interconnectEnv) mustPeer(vnet, name, remote string, props armnetwork.VirtualNetworkPeeringPropertiesFormat) armnetwork.VirtualNetworkPeering {
	e.t.Helper()
	p, err := e.peer(vnet, name, remote, props, nil)
	if err != nil {
		e.t.Fatalf("peering %s/%s: %v", vnet, name, err)
	}
	return p
}

func (e *interconnectEnv) getPeering(vnet, name string) armnetwork.VirtualNetworkPeering {
	e.t.Helper()
	r, err := e.peerings.Get(context.Background(), testRG, vnet, name, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.VirtualNetworkPeering
}

func state(p armnetwork.VirtualNetworkPeering) string {
	return string(*p.Properties.PeeringState) + "/" + string(*p.Properties.PeeringSyncLevel)
}

func TestPeeringLifecycle(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			e := newInterconnectEnv(t, mode)
			ctx := context.Background()

			// One side: Initiated, Azure's defaults, the remote space as peered.
			p := e.mustPeer("kubernetes-vnet", "to-hub", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{})
			if state(p) != "Initiated/FullyInSync" || !*p.Properties.AllowVirtualNetworkAccess || *p.Properties.AllowForwardedTraffic ||
				*p.Properties.AllowGatewayTransit || *p.Properties.UseRemoteGateways || *p.Properties.ProvisioningState != "Succeeded" ||
				*p.Type != network.ARMTypePeering || *p.Properties.RemoteAddressSpace.AddressPrefixes[0] != "10.250.0.0/16" {
				t.Fatalf("first side: %s %+v", state(p), *p.Properties)
			}
			// The VNet GET lists it inline, as ARM does.
			v, err := e.vnets.Get(ctx, testRG, "kubernetes-vnet", nil)
			if err != nil {
				t.Fatal(err)
			}
			if ps := v.Properties.VirtualNetworkPeerings; len(ps) != 1 || *ps[0].Name != "to-hub" || *ps[0].Properties.PeeringState != "Initiated" {
				t.Fatalf("VNet GET peerings: %+v", ps)
			}

			// The other side: both Connected.
			back := e.mustPeer("hub-vnet", "to-cluster", "kubernetes-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{AllowForwardedTraffic: api.Ptr(true)})
			if state(back) != "Connected/FullyInSync" || state(e.getPeering("kubernetes-vnet", "to-hub")) != "Connected/FullyInSync" {
				t.Fatalf("after both sides: %s, %s", state(back), state(e.getPeering("kubernetes-vnet", "to-hub")))
			}

			// A redeploy of the VNet (subnets inline, no peerings) keeps them.
			e.seedVNet(ctx, testRG)
			if got := state(e.getPeering("kubernetes-vnet", "to-hub")); got != "Connected/FullyInSync" {
				t.Fatalf("after a VNet PUT: %s", got)
			}

			// The hub grows: the cluster's view is stale until synced.
			hub, err := e.vnets.Get(ctx, testRG, "hub-vnet", nil)
			if err != nil {
				t.Fatal(err)
			}
			hub.Properties.AddressSpace.AddressPrefixes = append(hub.Properties.AddressSpace.AddressPrefixes, api.Ptr("10.251.0.0/16"))
			if _, err := e.putVNet(ctx, testRG, "hub-vnet", hub.VirtualNetwork); err != nil {
				t.Fatal(err)
			}
			p = e.getPeering("kubernetes-vnet", "to-hub")
			if state(p) != "Connected/RemoteNotInSync" || len(p.Properties.RemoteVirtualNetworkAddressSpace.AddressPrefixes) != 2 ||
				len(p.Properties.RemoteAddressSpace.AddressPrefixes) != 1 {
				t.Fatalf("after the hub grew: %s remote %v current %v", state(p), network.SpaceOf(p.Properties.RemoteAddressSpace), network.SpaceOf(p.Properties.RemoteVirtualNetworkAddressSpace))
			}
			if got := state(e.getPeering("hub-vnet", "to-cluster")); got != "Connected/LocalNotInSync" {
				t.Fatalf("the hub's side after it grew: %s", got)
			}
			p, err = e.peer("kubernetes-vnet", "to-hub", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{},
				&armnetwork.VirtualNetworkPeeringsClientBeginCreateOrUpdateOptions{SyncRemoteAddressSpace: api.Ptr(armnetwork.SyncRemoteAddressSpaceTrue)})
			if err != nil || state(p) != "Connected/FullyInSync" || len(p.Properties.RemoteAddressSpace.AddressPrefixes) != 2 {
				t.Fatalf("after a sync: %v %s %v", err, state(p), network.SpaceOf(p.Properties.RemoteAddressSpace))
			}

			// A stale If-Match is refused.
			_, err = e.peerings.BeginCreateOrUpdate(withHeader(ctx, "If-Match", `W/"stale"`), testRG, "kubernetes-vnet", "to-hub",
				armnetwork.VirtualNetworkPeering{Properties: &armnetwork.VirtualNetworkPeeringPropertiesFormat{RemoteVirtualNetwork: &armnetwork.SubResource{ID: api.Ptr(vnetID("hub-vnet"))}}}, nil)
			respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")

			// List, then delete the hub's side: the cluster's is Disconnected.
			names := pageNames(ctx, t, e.peerings.NewListPager(testRG, "hub-vnet", nil))
			if !slices.Equal(names, []string{"to-cluster"}) {
				t.Fatalf("list: %v", names)
			}
			if _, err := poll(e.peerings.BeginDelete(ctx, testRG, "hub-vnet", "to-cluster", nil)); err != nil {
				t.Fatal(err)
			}
			if got := *e.getPeering("kubernetes-vnet", "to-hub").Properties.PeeringState; got != "Disconnected" {
				t.Fatalf("after the other side was deleted: %s", got)
			}
			_, err = e.peerings.Get(ctx, testRG, "hub-vnet", "to-cluster", nil)
			respErr(t, err, http.StatusNotFound, "NotFound")
		})
	}
}

func TestPeeringRefusals(t *testing.T) {
	e := newInterconnectEnv(t, "inprocess")
	ctx := context.Background()
	if _, err := e.putVNet(ctx, testRG, "overlapping", armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.128.0/17")}}}}); err != nil {
		t.Fatal(err)
	}
	e.mustPeer("kubernetes-vnet", "to-hub", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{})
	tests := []struct {
		name, vnet, peering, remote string
		props                       armnetwork.VirtualNetworkPeeringPropertiesFormat
		code                        string
	}{
		{"itself", "kubernetes-vnet", "self", "kubernetes-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{}, "CannotPeerVirtualNetworkWithItself"},
		{"missing remote", "kubernetes-vnet", "nowhere", "nope", armnetwork.VirtualNetworkPeeringPropertiesFormat{}, "InvalidResourceReference"},
		{"overlapping spaces", "kubernetes-vnet", "overlap", "overlapping", armnetwork.VirtualNetworkPeeringPropertiesFormat{}, "VnetAddressSpacesOverlap"},
		{"a second peering to the same network", "kubernetes-vnet", "again", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{}, "VnetPeeringAlreadyExists"},
		{"remote gateways of a network without one", "kubernetes-vnet", "to-hub", "hub-vnet",
			armnetwork.VirtualNetworkPeeringPropertiesFormat{UseRemoteGateways: api.Ptr(true)}, "RemoteVnetHasNoGateways"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.peer(tt.vnet, tt.peering, tt.remote, tt.props, nil)
			respErr(t, err, http.StatusBadRequest, tt.code)
		})
	}
	_, err := e.peerings.BeginCreateOrUpdate(ctx, testRG, "kubernetes-vnet", "noremote",
		armnetwork.VirtualNetworkPeering{Properties: &armnetwork.VirtualNetworkPeeringPropertiesFormat{}}, nil)
	respErr(t, err, http.StatusBadRequest, "InvalidRequestFormat")
	_, err = e.peerings.BeginCreateOrUpdate(ctx, testRG, "nope-vnet", "x",
		armnetwork.VirtualNetworkPeering{Properties: &armnetwork.VirtualNetworkPeeringPropertiesFormat{RemoteVirtualNetwork: &armnetwork.SubResource{ID: api.Ptr(vnetID("hub-vnet"))}}}, nil)
	respErr(t, err, http.StatusNotFound, "ResourceNotFound")
}
