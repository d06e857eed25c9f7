package fabric

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

func subnetID(rg, vnet, name string) string {
	return api.ChildID(api.ResourceID(testSub, rg, api.TypeVirtualNetworks, vnet), api.ChildSubnets, name)
}

func nicBody(subnet, ip string, forwarding bool) armnetwork.Interface {
	return armnetwork.Interface{Location: api.Ptr(testLoc), Properties: &armnetwork.InterfacePropertiesFormat{
		EnableIPForwarding: api.Ptr(forwarding),
		IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{Name: api.Ptr("ipconfig1"), Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
			Subnet: &armnetwork.Subnet{ID: api.Ptr(subnet)}, PrivateIPAddress: api.Ptr(ip), PrivateIPAllocationMethod: api.Ptr(armnetwork.IPAllocationMethodStatic),
		}}},
	}}
}

type nicEnv struct {
	*env
	nics     *armnetwork.InterfacesClient
	watchers *armnetwork.WatchersClient
}

func newNICEnv(t *testing.T, mode string, o Options) *nicEnv {
	t.Helper()
	e := newRGEnv(t, mode, o)
	e.seedVNet(context.Background(), testRG)
	nics, err := armnetwork.NewInterfacesClient(testSub, identity.Credential{}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := armnetwork.NewWatchersClient(testSub, identity.Credential{}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return &nicEnv{env: e, nics: nics, watchers: w}
}

func (e *nicEnv) putNIC(ctx context.Context, name string, n armnetwork.Interface) (armnetwork.Interface, error) {
	p, err := e.nics.BeginCreateOrUpdate(ctx, testRG, name, n, nil)
	r, err := await(ctx, p, err)
	return r.Interface, err
}

func TestNICCrud(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			e := newNICEnv(t, mode, Options{OperationDuration: 20 * time.Millisecond})
			sn := subnetID(testRG, "kubernetes-vnet", "kubernetes-subnet")
			got, err := e.putNIC(ctx, "worker-0-nic", nicBody(sn, "10.240.0.20", true))
			if err != nil {
				t.Fatalf("creating NIC: %v", err)
			}
			p := got.Properties
			if api.Str(got.Etag) == "" || *p.ProvisioningState != armnetwork.ProvisioningStateSucceeded || !*p.EnableIPForwarding ||
				api.Str(p.IPConfigurations[0].Properties.PrivateIPAddress) != "10.240.0.20" || !*p.IPConfigurations[0].Properties.Primary {
				t.Errorf("created NIC = %+v", p)
			}
			g, err := e.nics.Get(ctx, testRG, "worker-0-nic", nil)
			if err != nil || api.Str(g.Etag) != api.Str(got.Etag) {
				t.Fatalf("GET: %v, etag %s want %s", err, api.Str(g.Etag), api.Str(got.Etag))
			}
			// A stale If-Match is refused.
			_, err = e.putNIC(withHeader(ctx, "If-Match", `W/"stale"`), "worker-0-nic", nicBody(sn, "10.240.0.20", false))
			respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
			if _, err := e.putNIC(withHeader(ctx, "If-Match", api.Str(g.Etag)), "worker-0-nic", nicBody(sn, "10.240.0.20", false)); err != nil {
				t.Fatalf("update with If-Match: %v", err)
			}

			_, err = e.putNIC(ctx, "outside", nicBody(sn, "10.240.5.1", false))
			respErr(t, err, http.StatusBadRequest, "PrivateIPAddressNotInSubnet")
			_, err = e.putNIC(ctx, "dup", nicBody(sn, "10.240.0.20", false))
			respErr(t, err, http.StatusBadRequest, "PrivateIPAddressInUse")
			_, err = e.putNIC(ctx, "nosubnet", nicBody(subnetID(testRG, "kubernetes-vnet", "nope"), "10.240.0.30", false))
			respErr(t, err, http.StatusBadRequest, "InvalidResourceReference")

			names := pageNames(ctx, t, e.nics.NewListPager(testRG, nil))
			if !slices.Equal(names, []string{"worker-0-nic"}) {
				t.Errorf("list = %v", names)
			}
			dp, err := e.nics.BeginDelete(ctx, testRG, "worker-0-nic", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dp.PollUntilDone(ctx, fastPoll); err != nil {
				t.Fatalf("delete: %v", err)
			}
			_, err = e.nics.Get(ctx, testRG, "worker-0-nic", nil)
			respErr(t, err, http.StatusNotFound, "ResourceNotFound")
		})
	}
}

// TestInUseSubnetCannotBeDeleted: with a NIC in it, a subnet survives a
// DELETE, a VNet PUT that omits it (an IaC redeploy) and a VNet DELETE.
func TestInUseSubnetCannotBeDeleted(t *testing.T) {
	ctx := context.Background()
	e := newNICEnv(t, "inprocess", Options{})
	sn := subnetID(testRG, "kubernetes-vnet", "kubernetes-subnet")
	if _, err := e.putNIC(ctx, "worker-0-nic", nicBody(sn, "10.240.0.20", true)); err != nil {
		t.Fatal(err)
	}
	p, err := e.subnets.BeginDelete(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, fastPoll)
	}
	re := respErr(t, err, http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	t.Logf("subnet DELETE: %v", re.Error())

	_, err = e.putVNet(ctx, testRG, "kubernetes-vnet", armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
		Subnets:      []*armnetwork.Subnet{{Name: api.Ptr("other"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.1.0/24")}}},
	}})
	respErr(t, err, http.StatusBadRequest, "InUseSubnetCannotBeDeleted")

	vp, err := e.vnets.BeginDelete(ctx, testRG, "kubernetes-vnet", nil)
	if err == nil {
		_, err = vp.PollUntilDone(ctx, fastPoll)
	}
	respErr(t, err, http.StatusBadRequest, "InUseSubnetCannotBeDeleted")

	if _, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil); err != nil {
		t.Fatalf("the subnet is gone: %v", err)
	}
	// A VNet PUT that keeps it is fine.
	if _, err := e.putVNet(ctx, testRG, "kubernetes-vnet", armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
		Subnets:      []*armnetwork.Subnet{{Name: api.Ptr("kubernetes-subnet"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24")}}},
	}}); err != nil {
		t.Fatalf("VNet PUT keeping the subnet: %v", err)
	}
	// Without the NIC the subnet can go.
	dp, err := e.nics.BeginDelete(ctx, testRG, "worker-0-nic", nil)
	mustPoll(ctx, t, dp, err)
	p, err = e.subnets.BeginDelete(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, fastPoll); err != nil {
		t.Fatalf("deleting the empty subnet: %v", err)
	}
}

// TestEffectiveRoutesAndNextHop asks the SDK's effective routes and next
// hop of worker-0's NIC on the KTHW network with its pod routes and a
// 0.0.0.0/0 firewall route, and after the subnet loses its table.
func TestEffectiveRoutesAndNextHop(t *testing.T) {
	ctx := context.Background()
	e := newNICEnv(t, "loopback", Options{OperationDuration: 20 * time.Millisecond})
	sn := subnetID(testRG, "kubernetes-vnet", "kubernetes-subnet")
	nic, err := e.putNIC(ctx, "worker-0-nic", nicBody(sn, "10.240.0.20", true))
	if err != nil {
		t.Fatal(err)
	}
	rt := e.mustPutTable(ctx, testRG, "kubernetes-routes", table(
		vaRoute("worker-1____102001024", "10.200.1.0/24", "10.240.0.21"),
		vaRoute("to-firewall", "0.0.0.0/0", "10.240.1.4")))
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{
		AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
		t.Fatal(err)
	}

	ep, err := e.nics.BeginGetEffectiveRouteTable(ctx, testRG, "worker-0-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	eff, err := ep.PollUntilDone(ctx, fastPoll)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range eff.Value {
		line := string(*r.Source) + " " + string(*r.State) + " " + *r.AddressPrefix[0] + " " + string(*r.NextHopType)
		if len(r.NextHopIPAddress) > 0 {
			line += " " + *r.NextHopIPAddress[0]
		}
		if r.Name != nil {
			line += " " + *r.Name
		}
		got = append(got, line)
	}
	want := []string{
		"Default Active 10.240.0.0/16 VnetLocal",
		"Default Invalid 0.0.0.0/0 Internet",
		"Default Invalid 10.0.0.0/8 None",
		"Default Invalid 172.16.0.0/12 None",
		"Default Invalid 192.168.0.0/16 None",
		"Default Invalid 100.64.0.0/10 None",
		"User Active 10.200.1.0/24 VirtualAppliance 10.240.0.21 worker-1____102001024",
		"User Active 0.0.0.0/0 VirtualAppliance 10.240.1.4 to-firewall",
	}
	if !slices.Equal(got, want) {
		t.Errorf("effective routes:\n got %q\nwant %q", got, want)
	}

	if _, err := e.watchers.CreateOrUpdate(ctx, testRG, "NetworkWatcher_eastus", armnetwork.Watcher{Location: api.Ptr(testLoc)}, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dst, hop, ip, table string
	}{
		{"10.200.1.5", "VirtualAppliance", "10.240.0.21", api.Str(rt.ID)},
		{"10.200.9.5", "VirtualAppliance", "10.240.1.4", api.Str(rt.ID)},
		{"10.240.0.21", "VnetLocal", "", "System Route"},
	}
	for _, tt := range tests {
		t.Run(tt.dst, func(t *testing.T) {
			np, err := e.watchers.BeginGetNextHop(ctx, testRG, "NetworkWatcher_eastus", armnetwork.NextHopParameters{
				TargetResourceID: nic.ID, SourceIPAddress: api.Ptr("10.240.0.20"), DestinationIPAddress: api.Ptr(tt.dst)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := np.PollUntilDone(ctx, fastPoll)
			if err != nil {
				t.Fatal(err)
			}
			if string(*r.NextHopType) != tt.hop || api.Str(r.NextHopIPAddress) != tt.ip || api.Str(r.RouteTableID) != tt.table {
				t.Errorf("next hop = %s %s %s, want %s %s %s", *r.NextHopType, api.Str(r.NextHopIPAddress), api.Str(r.RouteTableID), tt.hop, tt.ip, tt.table)
			}
		})
	}

	_, err = e.watchers.BeginGetNextHop(ctx, testRG, "NetworkWatcher_eastus", armnetwork.NextHopParameters{
		TargetResourceID: api.Ptr(api.ResourceID(testSub, testRG, network.TypeNetworkInterfaces, "nobody")), SourceIPAddress: api.Ptr("10.240.0.20"), DestinationIPAddress: api.Ptr("10.200.1.5")}, nil)
	respErr(t, err, http.StatusNotFound, "NotFound")
	_, err = e.watchers.BeginGetNextHop(ctx, testRG, "NetworkWatcher_eastus", armnetwork.NextHopParameters{
		TargetResourceID: nic.ID, SourceIPAddress: api.Ptr("10.240.0.20"), DestinationIPAddress: api.Ptr("10.200.1")}, nil)
	respErr(t, err, http.StatusBadRequest, "InvalidIPAddress")
}

// ARM ignores the case of property names for network interfaces too: an
// IP configuration spelled "IPConfigurations"/"PrivateIPAddress" must give
// the NIC its address and subnet, not be dropped (the SDK's model decodes
// only its own spelling).
func TestNICPropertyNamesIgnoreCase(t *testing.T) {
	ctx := context.Background()
	e := newNICEnv(t, "inprocess", Options{})
	sub := subnetID(testRG, "kubernetes-vnet", "kubernetes-subnet")
	path := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/networkInterfaces/worker-0-nic"
	body := `{"LOCATION":"` + testLoc + `","Properties":{"EnableIPForwarding":true,"IPConfigurations":[{"NAME":"ipconfig1","properties":{"Subnet":{"ID":"` + sub + `"},"PrivateIPAddress":"10.240.0.20","PrivateIPAllocationMethod":"Static"}}]}}`
	if resp, b := e.do("PUT", path, body); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT = %d %s", resp.StatusCode, b)
	}
	got, err := e.nics.Get(ctx, testRG, "worker-0-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Properties
	if p == nil || p.EnableIPForwarding == nil || !*p.EnableIPForwarding || len(p.IPConfigurations) != 1 ||
		api.Str(p.IPConfigurations[0].Properties.PrivateIPAddress) != "10.240.0.20" ||
		!strings.EqualFold(api.Str(p.IPConfigurations[0].Properties.Subnet.ID), sub) {
		t.Errorf("NIC = %+v, want forwarding on and 10.240.0.20 in kubernetes-subnet", p)
	}
}
