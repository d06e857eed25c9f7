package fabric

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

func gatewayBody(typ armnetwork.VirtualNetworkGatewayType, subnet string) armnetwork.VirtualNetworkGateway {
	return armnetwork.VirtualNetworkGateway{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkGatewayPropertiesFormat{
		GatewayType: api.Ptr(typ),
		IPConfigurations: []*armnetwork.VirtualNetworkGatewayIPConfiguration{{Name: api.Ptr("default"),
			Properties: &armnetwork.VirtualNetworkGatewayIPConfigurationPropertiesFormat{Subnet: &armnetwork.SubResource{ID: api.Ptr(subnet)}}}},
	}}
}

func (e *interconnectEnv) putGateway(name string, g armnetwork.VirtualNetworkGateway) (armnetwork.VirtualNetworkGateway, error) {
	r, err := poll(e.gateways.BeginCreateOrUpdate(context.Background(), testRG, name, g, nil))
	return r.VirtualNetworkGateway, err
}

func (e *interconnectEnv) mustGateway(name string, typ armnetwork.VirtualNetworkGatewayType) armnetwork.VirtualNetworkGateway {
	e.t.Helper()
	g, err := e.putGateway(name, gatewayBody(typ, subnetID(testRG, "hub-vnet", "GatewaySubnet")))
	if err != nil {
		e.t.Fatalf("gateway %s: %v", name, err)
	}
	return g
}

// onPremises gives the hub a VPN gateway with a site (10.9.0.0/16,
// 172.20.0.0/16 at 203.0.113.10) connected over IPsec.
func (e *interconnectEnv) onPremises() armnetwork.VirtualNetworkGateway {
	e.t.Helper()
	ctx := context.Background()
	gw := e.mustGateway("hub-vpn", armnetwork.VirtualNetworkGatewayTypeVPN)
	site, err := poll(e.sites.BeginCreateOrUpdate(ctx, testRG, "datacenter", armnetwork.LocalNetworkGateway{Location: api.Ptr(testLoc),
		Properties: &armnetwork.LocalNetworkGatewayPropertiesFormat{GatewayIPAddress: api.Ptr("203.0.113.10"),
			LocalNetworkAddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.9.0.0/16"), api.Ptr("172.20.0.0/16")}}}}, nil))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := poll(e.conns.BeginCreateOrUpdate(ctx, testRG, "hub-to-datacenter", armnetwork.VirtualNetworkGatewayConnection{Location: api.Ptr(testLoc),
		Properties: &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{ConnectionType: api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeIPsec),
			VirtualNetworkGateway1: &armnetwork.VirtualNetworkGateway{ID: gw.ID}, LocalNetworkGateway2: &armnetwork.LocalNetworkGateway{ID: site.ID},
			SharedKey: api.Ptr("secret")}}, nil)); err != nil {
		e.t.Fatal(err)
	}
	return gw
}

func (e *interconnectEnv) learned(name string) []string {
	e.t.Helper()
	r, err := poll(e.gateways.BeginGetLearnedRoutes(context.Background(), testRG, name, nil))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, g := range r.Value {
		out = append(out, api.Str(g.Origin)+" "+api.Str(g.Network)+" "+api.Str(g.NextHop)+" "+api.Str(g.SourcePeer)+" "+api.Str(g.AsPath))
	}
	return out
}

func TestGatewayLearnedRoutes(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			e := newInterconnectEnv(t, mode)
			ctx := context.Background()
			gw := e.onPremises()
			if *gw.Properties.GatewayType != "Vpn" || *gw.Properties.VPNType != "RouteBased" || *gw.Properties.ProvisioningState != "Succeeded" ||
				*gw.Properties.IPConfigurations[0].Properties.ProvisioningState != "Succeeded" {
				t.Fatalf("gateway: %+v", *gw.Properties)
			}
			want := []string{
				"Network 10.250.0.0/16  10.250.255.4 ",
				"Network 10.9.0.0/16 203.0.113.10 10.250.255.4 ",
				"Network 172.20.0.0/16 203.0.113.10 10.250.255.4 ",
			}
			if d := cmp.Diff(want, e.learned("hub-vpn")); d != "" {
				t.Errorf("VPN learned routes (-want +got):\n%s", d)
			}
			c, err := e.conns.Get(ctx, testRG, "hub-to-datacenter", nil)
			if err != nil || *c.Properties.ConnectionStatus != "Connected" || c.Properties.SharedKey != nil {
				t.Errorf("connection: %v %+v", err, c.Properties)
			}

			// An ExpressRoute gateway learns what the circuit's BGP peer
			// advertises: the fabric takes that at /_fabric/bgp.
			er := e.mustGateway("hub-er", armnetwork.VirtualNetworkGatewayTypeExpressRoute)
			resp, b := e.do("PUT", "/_fabric/bgp?gateway="+*er.ID, `{"prefixes": ["10.0.0.0/8", "192.168.0.0/16"], "asn": 65010}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("PUT /_fabric/bgp: %d %s", resp.StatusCode, b)
			}
			got := e.learned("hub-er")
			if !slices.Contains(got, "EBgp 10.0.0.0/8 169.254.21.1 169.254.21.1 65010") || !slices.Contains(got, "EBgp 192.168.0.0/16 169.254.21.1 169.254.21.1 65010") {
				t.Errorf("ExpressRoute learned routes: %v", got)
			}
			// A client's PUT of the gateway keeps the advertisement, and
			// the GET never shows the fabric's part.
			g, err := e.gateways.Get(ctx, testRG, "hub-er", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.putGateway("hub-er", g.VirtualNetworkGateway); err != nil {
				t.Fatal(err)
			}
			if got := e.learned("hub-er"); !slices.Contains(got, "EBgp 10.0.0.0/8 169.254.21.1 169.254.21.1 65010") {
				t.Errorf("after a client's PUT: %v", got)
			}
			_, raw := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/"+testRG+"/providers/Microsoft.Network/virtualNetworkGateways/hub-er", "")
			if strings.Contains(string(raw), network.FabricKey) {
				t.Errorf("GET shows the fabric's part: %s", raw)
			}
			if _, err := poll(e.conns.BeginCreateOrUpdate(ctx, testRG, "er-circuit", armnetwork.VirtualNetworkGatewayConnection{Location: api.Ptr(testLoc),
				Properties: &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{ConnectionType: api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeExpressRoute),
					VirtualNetworkGateway1: &armnetwork.VirtualNetworkGateway{ID: er.ID},
					Peer:                   &armnetwork.SubResource{ID: api.Ptr("/subscriptions/" + testSub + "/resourceGroups/er/providers/Microsoft.Network/expressRouteCircuits/circuit")}}}, nil)); err != nil {
				t.Fatal(err)
			}

			st, err := network.Networks(ctx, e.store)
			if err != nil {
				t.Fatal(err)
			}
			var gws []string
			for _, g := range st.Gateways {
				gws = append(gws, g.Name+" "+g.Type+" "+strings.Join(g.LearnedPrefixes, ","))
			}
			if d := cmp.Diff([]string{"hub-er ExpressRoute 10.0.0.0/8,192.168.0.0/16", "hub-vpn Vpn 10.9.0.0/16,172.20.0.0/16"}, gws); d != "" {
				t.Errorf("Store.Networks gateways (-want +got):\n%s", d)
			}
		})
	}
}

func TestGatewayRefusals(t *testing.T) {
	e := newInterconnectEnv(t, "inprocess")
	ctx := context.Background()
	_, err := e.putGateway("in-the-wrong-subnet", gatewayBody(armnetwork.VirtualNetworkGatewayTypeVPN, subnetID(testRG, "hub-vnet", "shared")))
	respErr(t, err, http.StatusBadRequest, "InvalidGatewaySubnet")
	_, err = e.putGateway("nowhere", gatewayBody(armnetwork.VirtualNetworkGatewayTypeVPN, subnetID(testRG, "hub-vnet", "nope")))
	respErr(t, err, http.StatusBadRequest, "InvalidResourceReference")
	_, err = e.putGateway("local", gatewayBody("LocalGateway", subnetID(testRG, "hub-vnet", "GatewaySubnet")))
	respErr(t, err, http.StatusBadRequest, "InvalidGatewayType")
	gw := e.onPremises()
	_, err = e.putGateway("second-vpn", gatewayBody(armnetwork.VirtualNetworkGatewayTypeVPN, subnetID(testRG, "hub-vnet", "GatewaySubnet")))
	respErr(t, err, http.StatusBadRequest, "VirtualNetworkAlreadyHasGatewayOfThisType")

	// The gateway holds its subnet and its connection holds it.
	_, err = e.subnets.BeginDelete(ctx, testRG, "hub-vnet", "GatewaySubnet", nil)
	respErr(t, err, http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	_, err = e.gateways.BeginDelete(ctx, testRG, "hub-vpn", nil)
	respErr(t, err, http.StatusBadRequest, "InUseVirtualNetworkGatewayCannotBeDeleted")
	_, err = e.sites.BeginDelete(ctx, testRG, "datacenter", nil)
	respErr(t, err, http.StatusBadRequest, "InUseLocalNetworkGatewayCannotBeDeleted")

	// An IPsec connection needs a VPN gateway; ExpressRoute needs a circuit.
	_, err = e.conns.BeginCreateOrUpdate(ctx, testRG, "bad", armnetwork.VirtualNetworkGatewayConnection{Location: api.Ptr(testLoc),
		Properties: &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{ConnectionType: api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeExpressRoute),
			VirtualNetworkGateway1: &armnetwork.VirtualNetworkGateway{ID: gw.ID}}}, nil)
	respErr(t, err, http.StatusBadRequest, "InvalidRequestFormat")
	_, err = e.conns.BeginCreateOrUpdate(ctx, testRG, "bad", armnetwork.VirtualNetworkGatewayConnection{Location: api.Ptr(testLoc),
		Properties: &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{ConnectionType: api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeExpressRoute),
			VirtualNetworkGateway1: &armnetwork.VirtualNetworkGateway{ID: gw.ID}, Peer: &armnetwork.SubResource{ID: api.Ptr("/x")}}}, nil)
	respErr(t, err, http.StatusBadRequest, "ConnectionTypeDoesNotMatchGatewayType")

	// A network that uses the hub's gateway may not have its own.
	e.mustPeer("hub-vnet", "to-cluster", "kubernetes-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{AllowGatewayTransit: api.Ptr(true)})
	e.mustPeer("kubernetes-vnet", "to-hub", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{UseRemoteGateways: api.Ptr(true)})
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "GatewaySubnet", armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.255.0/27")}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.putGateway("own", gatewayBody(armnetwork.VirtualNetworkGatewayTypeVPN, subnetID(testRG, "kubernetes-vnet", "GatewaySubnet")))
	respErr(t, err, http.StatusBadRequest, "VirtualNetworkGatewayCannotBeCreatedWhenPeeringUsesRemoteGateways")

	resp, _ := e.do("PUT", "/_fabric/bgp?gateway="+*gw.ID, `{"prefixes": ["10.0.0.1/8"]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a prefix with host bits: %d", resp.StatusCode)
	}
	resp, _ = e.do("PUT", "/_fabric/bgp?gateway="+api.ResourceID(testSub, testRG, network.TypeVNetGateways, "nope"), `{"prefixes": []}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown gateway: %d", resp.StatusCode)
	}
}

// The routes of a subnet follow its network's peerings and gateways, also
// through gateway transit, unless its table disables gateway route
// propagation; Network Watcher's next hop agrees.
func TestEffectiveRoutesInterconnect(t *testing.T) {
	e := newInterconnectEnv(t, "inprocess")
	ctx := context.Background()
	e.onPremises()
	e.mustPeer("hub-vnet", "to-cluster", "kubernetes-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{AllowGatewayTransit: api.Ptr(true)})
	e.mustPeer("kubernetes-vnet", "to-hub", "hub-vnet", armnetwork.VirtualNetworkPeeringPropertiesFormat{UseRemoteGateways: api.Ptr(true)})
	if _, err := e.putNIC(ctx, "worker-0-nic", nicBody(subnetID(testRG, "kubernetes-vnet", "kubernetes-subnet"), "10.240.0.20", true)); err != nil {
		t.Fatal(err)
	}
	effective := func() []string {
		t.Helper()
		r, err := poll(e.nics.BeginGetEffectiveRouteTable(ctx, testRG, "worker-0-nic", nil))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range r.Value {
			if *x.Source != "Default" || *x.NextHopType != "None" {
				out = append(out, string(*x.Source)+" "+string(*x.State)+" "+*x.AddressPrefix[0]+" "+string(*x.NextHopType))
			}
		}
		return out
	}
	want := []string{
		"Default Active 10.240.0.0/16 VnetLocal",
		"Default Active 10.250.0.0/16 VNetPeering",
		"Default Active 0.0.0.0/0 Internet",
		"VirtualNetworkGateway Active 10.9.0.0/16 VirtualNetworkGateway",
		"VirtualNetworkGateway Active 172.20.0.0/16 VirtualNetworkGateway",
	}
	if d := cmp.Diff(want, effective()); d != "" {
		t.Errorf("effective routes (-want +got):\n%s", d)
	}
	if _, err := e.watchers.CreateOrUpdate(ctx, testRG, "NetworkWatcher_eastus", armnetwork.Watcher{Location: api.Ptr(testLoc)}, nil); err != nil {
		t.Fatal(err)
	}
	nextHop := func(dst string) string {
		t.Helper()
		r, err := poll(e.watchers.BeginGetNextHop(ctx, testRG, "NetworkWatcher_eastus", armnetwork.NextHopParameters{
			TargetResourceID: api.Ptr(api.ResourceID(testSub, testRG, network.TypeNetworkInterfaces, "worker-0-nic")), SourceIPAddress: api.Ptr("10.240.0.20"), DestinationIPAddress: api.Ptr(dst)}, nil))
		if err != nil {
			t.Fatal(err)
		}
		return string(*r.NextHopType)
	}
	for dst, hop := range map[string]string{"10.9.1.1": "VirtualNetworkGateway", "10.250.1.4": "VNetPeering", "172.20.0.1": "VirtualNetworkGateway"} {
		if got := nextHop(dst); got != hop {
			t.Errorf("next hop of %s: %s, want %s", dst, got, hop)
		}
	}

	// A table that disables gateway route propagation keeps them out.
	rt := table()
	rt.Properties.DisableBgpRoutePropagation = api.Ptr(true)
	created := e.mustPutTable(ctx, testRG, "no-bgp", rt)
	sn, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	sn.Properties.RouteTable = &armnetwork.RouteTable{ID: created.ID}
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", sn.Subnet); err != nil {
		t.Fatal(err)
	}
	if got := effective(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "VirtualNetworkGateway") }) {
		t.Errorf("with disableBgpRoutePropagation: %v", got)
	}
	if got := nextHop("10.9.1.1"); got != "None" {
		t.Errorf("next hop of 10.9.1.1 without the gateway's routes: %s, want None (10.0.0.0/8)", got)
	}
}
