package fabric

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

func subnetIDs(t armnetwork.RouteTable) []string {
	var out []string
	for _, s := range t.Properties.Subnets {
		out = append(out, api.Str(s.ID))
	}
	return out
}

func TestAssociation(t *testing.T) {
	eachTransport(t, Options{}, func(ctx context.Context, t *testing.T, e *env) {
		v := e.seedVNet(ctx, testRG)
		rt := e.mustPutTable(ctx, testRG, "kubernetes-routes", table())
		subnetID := api.Str(v.Properties.Subnets[0].ID)

		// az network vnet subnet update --route-table kubernetes-routes
		sn, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(strings.ToUpper(api.Str(rt.ID)))}
		got, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", sn.Subnet)
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(got.Properties.RouteTable.ID) != api.Str(rt.ID) {
			t.Errorf("subnet routeTable = %s, want the table's own ID %s", api.Str(got.Properties.RouteTable.ID), api.Str(rt.ID))
		}
		if ids := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(ids) != 1 || ids[0] != subnetID {
			t.Errorf("table subnets = %v, want [%s]", ids, subnetID)
		}
		// The back-reference is read-only: what a client sends is ignored,
		// and a table write keeps it.
		tb := e.getTable(ctx, testRG, "kubernetes-routes")
		tb.Properties.Subnets = []*armnetwork.Subnet{{ID: api.Ptr("/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/virtualNetworks/v/subnets/s")}}
		if after := e.mustPutTable(ctx, testRG, "kubernetes-routes", tb); len(subnetIDs(after)) != 1 || subnetIDs(after)[0] != subnetID {
			t.Errorf("after a table PUT carrying subnets: %v", subnetIDs(after))
		}
		// Deleting an associated table: 400 InUseRouteTableCannotBeDeleted.
		_, err = e.tables.BeginDelete(ctx, testRG, "kubernetes-routes", nil)
		respErr(t, err, http.StatusBadRequest, "InUseRouteTableCannotBeDeleted")

		// The missing route table assignment: the IaC redeploy PUTs the VNet without the subnet's
		// routeTable, and the association is gone, both ways.
		vn, err := e.vnets.Get(ctx, testRG, "kubernetes-vnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(vn.Properties.Subnets[0].Properties.RouteTable.ID) != api.Str(rt.ID) {
			t.Fatalf("vnet GET does not show the association: %+v", vn.Properties.Subnets[0].Properties)
		}
		if _, err := e.putVNet(ctx, testRG, "kubernetes-vnet", armnetwork.VirtualNetwork{
			Location: api.Ptr(testLoc),
			Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
				Subnets: []*armnetwork.Subnet{{Name: api.Ptr("kubernetes-subnet"),
					Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24")}}},
			},
		}); err != nil {
			t.Fatal(err)
		}
		if ids := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(ids) != 0 {
			t.Errorf("table subnets after the redeploy = %v, want none", ids)
		}
		if sn, _ := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil); sn.Properties.RouteTable != nil {
			t.Errorf("subnet still has routeTable %v", api.Str(sn.Properties.RouteTable.ID))
		}

		// Re-associate through a VNet PUT, then drop it with a subnet PUT.
		if _, err := e.putVNet(ctx, testRG, "kubernetes-vnet", armnetwork.VirtualNetwork{
			Location: api.Ptr(testLoc),
			Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
				Subnets: []*armnetwork.Subnet{{Name: api.Ptr("kubernetes-subnet"), Properties: &armnetwork.SubnetPropertiesFormat{
					AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}},
			},
		}); err != nil {
			t.Fatal(err)
		}
		if ids := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(ids) != 1 {
			t.Errorf("after VNet PUT with routeTable: %v", ids)
		}
		if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
			Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24")}}); err != nil {
			t.Fatal(err)
		}
		if ids := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(ids) != 0 {
			t.Errorf("after subnet PUT without routeTable: %v", ids)
		}

		// Deleting the subnet, or the VNet, removes the back-reference.
		for _, del := range []string{"subnet", "vnet"} {
			if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
				Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
				t.Fatal(err)
			}
			if len(subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes"))) != 1 {
				t.Fatal("not associated")
			}
			if del == "subnet" {
				p, err := e.subnets.BeginDelete(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
				mustPoll(ctx, t, p, err)
			} else {
				p, err := e.vnets.BeginDelete(ctx, testRG, "kubernetes-vnet", nil)
				mustPoll(ctx, t, p, err)
				e.seedVNet(ctx, testRG)
			}
			if ids := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(ids) != 0 {
				t.Errorf("after deleting the %s: %v", del, ids)
			}
		}
		// Now the table can go.
		p, err := e.tables.BeginDelete(ctx, testRG, "kubernetes-routes", nil)
		mustPoll(ctx, t, p, err)
	})
}

func TestAssociationValidation(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	e.seedVNet(ctx, testRG)
	west := e.mustPutTable(ctx, testRG, "west", armnetwork.RouteTable{Location: api.Ptr("westus")})
	missing := strings.Replace(api.Str(west.ID), "/west", "/nope", 1)
	for _, tc := range []struct {
		name, ref, code string
	}{
		{"missing table", missing, "InvalidResourceReference"},
		{"table in another location", api.Str(west.ID), "InvalidResourceReference"},
		{"table in another subscription", strings.Replace(api.Str(west.ID), testSub, "99999999-2222-3333-4444-555555555555", 1), "InvalidResourceReference"},
		{"not a route table ID", "/subscriptions/" + testSub + "/resourceGroups/kubernetes/providers/Microsoft.Network/networkSecurityGroups/x", "LinkedInvalidPropertyId"},
		{"garbage", "kubernetes-routes", "LinkedInvalidPropertyId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
				Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: api.Ptr(tc.ref)}}})
			respErr(t, err, http.StatusBadRequest, tc.code)
			_, err = e.putVNet(ctx, testRG, "kubernetes-vnet", armnetwork.VirtualNetwork{
				Location: api.Ptr(testLoc),
				Properties: &armnetwork.VirtualNetworkPropertiesFormat{
					AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
					Subnets: []*armnetwork.Subnet{{Name: api.Ptr("kubernetes-subnet"), Properties: &armnetwork.SubnetPropertiesFormat{
						AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: api.Ptr(tc.ref)}}}},
				},
			})
			respErr(t, err, http.StatusBadRequest, tc.code)
		})
	}
}

func TestFailedSubnetUpdateKeepsAssociation(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	e.seedVNet(ctx, testRG)
	rt := e.mustPutTable(ctx, testRG, "rt", table())
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
		t.Fatal(err)
	}
	e.srv.SetFaults(Faults{FailNextOperations: 1})
	_, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24")}})
	respErr(t, err, http.StatusOK, "InternalServerError")
	if ids := subnetIDs(e.getTable(ctx, testRG, "rt")); len(ids) != 1 {
		t.Errorf("a failed subnet update dropped the association: %v", ids)
	}
}
