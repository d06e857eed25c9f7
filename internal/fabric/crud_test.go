package fabric

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

var etagRE = regexp.MustCompile(`^W/"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"$`)

func TestRouteTableCRUD(t *testing.T) {
	eachTransport(t, Options{OperationDuration: 20 * time.Millisecond}, func(ctx context.Context, t *testing.T, e *env) {

		created := e.mustPutTable(ctx, testRG, "kubernetes-routes", armnetwork.RouteTable{
			Location: api.Ptr("East US"),
			Tags:     map[string]*string{"env": api.Ptr("test")},
			Properties: &armnetwork.RouteTablePropertiesFormat{
				DisableBgpRoutePropagation: api.Ptr(true),
				Routes: []*armnetwork.Route{
					vaRoute("kubernetes-route-10-200-0-0-24", "10.200.0.0/24", "10.240.0.20"),
					{Name: api.Ptr("to-internet"), Properties: &armnetwork.RoutePropertiesFormat{
						AddressPrefix: api.Ptr("0.0.0.0/0"), NextHopType: api.Ptr(armnetwork.RouteNextHopTypeInternet)}},
					{Name: api.Ptr("storage"), Properties: &armnetwork.RoutePropertiesFormat{
						AddressPrefix: api.Ptr("Storage"), NextHopType: api.Ptr(armnetwork.RouteNextHopTypeInternet)}},
				},
			},
		})
		wantID := "/subscriptions/" + testSub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
		if api.Str(created.ID) != wantID || api.Str(created.Name) != "kubernetes-routes" || api.Str(created.Type) != "Microsoft.Network/routeTables" {
			t.Errorf("created = %s %s %s", api.Str(created.ID), api.Str(created.Name), api.Str(created.Type))
		}
		if api.Str(created.Location) != "eastus" {
			t.Errorf("location = %q, want eastus (normalised)", api.Str(created.Location))
		}
		if !etagRE.MatchString(api.Str(created.Etag)) {
			t.Errorf("etag = %q, want W/\"<uuid>\"", api.Str(created.Etag))
		}
		if *created.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded || !*created.Properties.DisableBgpRoutePropagation {
			t.Errorf("properties = %+v", created.Properties)
		}
		if api.Str(created.Tags["env"]) != "test" {
			t.Errorf("tags = %v", created.Tags)
		}
		r0 := created.Properties.Routes[0]
		if api.Str(r0.ID) != wantID+"/routes/kubernetes-route-10-200-0-0-24" || api.Str(r0.Type) != "Microsoft.Network/routeTables/routes" ||
			!etagRE.MatchString(api.Str(r0.Etag)) || api.Str(r0.Properties.NextHopIPAddress) != "10.240.0.20" ||
			*r0.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
			t.Errorf("route = %+v %+v", r0, r0.Properties)
		}

		// Names and IDs are case-insensitive.
		got, err := e.tables.Get(ctx, "KUBERNETES", "Kubernetes-Routes", nil)
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(got.ID) != wantID || api.Str(got.Etag) != api.Str(created.Etag) {
			t.Errorf("case-insensitive get = %s %s", api.Str(got.ID), api.Str(got.Etag))
		}
		if n := len(got.Properties.Routes); n != 3 {
			t.Errorf("routes = %d, want 3", n)
		}

		// The ETag header matches the body.
		resp, body := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes", "")
		if resp.Header.Get("ETag") != api.Str(created.Etag) || resp.StatusCode != 200 {
			t.Errorf("ETag header = %q, body etag %q (%d)", resp.Header.Get("ETag"), api.Str(created.Etag), resp.StatusCode)
		}
		if m := decodeJSON(t, body); m["etag"] != api.Str(created.Etag) {
			t.Errorf("raw body etag = %v", m["etag"])
		}

		// List in the group and in the subscription.
		e.mustPutTable(ctx, testRG, "other", table())
		e.createRG("second")
		e.mustPutTable(ctx, "second", "third", table())
		names := pageNames(ctx, t, e.tables.NewListPager(testRG, nil))
		if !slices.Equal(names, []string{"kubernetes-routes", "other"}) {
			t.Errorf("list = %v", names)
		}
		names = pageNames(ctx, t, e.tables.NewListAllPager(nil))
		if !slices.Equal(names, []string{"kubernetes-routes", "other", "third"}) {
			t.Errorf("list all = %v", names)
		}

		// PATCH replaces the tags at once, with a new etag.
		patched, err := e.tables.UpdateTags(ctx, testRG, "kubernetes-routes", armnetwork.TagsObject{Tags: map[string]*string{"a": api.Ptr("b")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(patched.Tags) != 1 || api.Str(patched.Tags["a"]) != "b" || api.Str(patched.Etag) == api.Str(created.Etag) || len(patched.Properties.Routes) != 3 {
			t.Errorf("patched = tags %v etag %s routes %d", patched.Tags, api.Str(patched.Etag), len(patched.Properties.Routes))
		}

		// Delete is an LRO; afterwards the table is gone (404 with Azure's message).
		dp, err := e.tables.BeginDelete(ctx, testRG, "other", nil)
		mustPoll(ctx, t, dp, err)
		_, err = e.tables.Get(ctx, testRG, "other", nil)
		re := respErr(t, err, 404, "ResourceNotFound")
		if !strings.Contains(re.Error(), "The Resource 'Microsoft.Network/routeTables/other' under resource group 'kubernetes' was not found") {
			t.Errorf("404 message: %v", re)
		}
		// Deleting what does not exist: 204, no error.
		resp, _ = e.do("DELETE", "/subscriptions/"+testSub+"/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/other", "")
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("delete of a missing table = %d, want 204", resp.StatusCode)
		}
		// A missing group.
		_, err = e.tables.Get(ctx, "nope", "x", nil)
		respErr(t, err, 404, "ResourceGroupNotFound")
		_, err = e.putTable(ctx, "nope", "x", table())
		respErr(t, err, 404, "ResourceGroupNotFound")
	})
}

func TestRoutesAsChildren(t *testing.T) {
	eachTransport(t, Options{OperationDuration: 10 * time.Millisecond, PageSize: 2}, func(ctx context.Context, t *testing.T, e *env) {
		before := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("keep", "10.1.0.0/16", "10.240.0.4")))

		// Kubernetes the Hard Way on Azure: one route per worker, as child resources.
		for i := range 3 {
			name := fmt.Sprintf("kubernetes-route-10-200-%d-0-24", i)
			r, err := e.putRoute(ctx, testRG, "rt", name, *vaRoute("", fmt.Sprintf("10.200.%d.0/24", i), fmt.Sprintf("10.240.0.2%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			if api.Str(r.Name) != name || *r.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
				t.Errorf("route = %s %v", api.Str(r.Name), *r.Properties.ProvisioningState)
			}
		}
		// The parent sees them inline, with a new etag.
		after := e.getTable(ctx, testRG, "rt")
		if got := routeNames(after); !slices.Equal(got, []string{"keep", "kubernetes-route-10-200-0-0-24", "kubernetes-route-10-200-1-0-24", "kubernetes-route-10-200-2-0-24"}) {
			t.Errorf("inline routes = %v", got)
		}
		if api.Str(after.Etag) == api.Str(before.Etag) {
			t.Error("a child write did not change the parent's etag")
		}
		// An untouched route keeps its etag.
		if api.Str(after.Properties.Routes[0].Etag) != api.Str(before.Properties.Routes[0].Etag) {
			t.Error("an untouched route got a new etag")
		}
		// The list pages with nextLink (page size 2).
		var listed []string
		pages := 0
		for pg := e.routes.NewListPager(testRG, "rt", nil); pg.More(); {
			p, err := pg.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, r := range p.Value {
				listed = append(listed, api.Str(r.Name))
			}
		}
		if pages != 2 || !slices.Equal(listed, routeNames(after)) {
			t.Errorf("listed %v in %d pages", listed, pages)
		}
		// A route GET.
		got, err := e.routes.Get(ctx, testRG, "rt", "KUBERNETES-ROUTE-10-200-1-0-24", nil)
		if err != nil || api.Str(got.Properties.AddressPrefix) != "10.200.1.0/24" {
			t.Fatalf("get route = %+v, %v", got, err)
		}
		_, err = e.routes.Get(ctx, testRG, "rt", "nope", nil)
		respErr(t, err, 404, "NotFound")
		// Update of a route in place.
		if _, err := e.putRoute(ctx, testRG, "rt", "keep", *vaRoute("", "10.1.0.0/16", "10.240.0.5")); err != nil {
			t.Fatal(err)
		}
		if tb := e.getTable(ctx, testRG, "rt"); api.Str(tb.Properties.Routes[0].Properties.NextHopIPAddress) != "10.240.0.5" {
			t.Errorf("updated next hop = %s", api.Str(tb.Properties.Routes[0].Properties.NextHopIPAddress))
		}
		// A route delete: the parent loses it.
		dp, err := e.routes.BeginDelete(ctx, testRG, "rt", "kubernetes-route-10-200-0-0-24", nil)
		mustPoll(ctx, t, dp, err)
		if got := routeNames(e.getTable(ctx, testRG, "rt")); slices.Contains(got, "kubernetes-route-10-200-0-0-24") || len(got) != 3 {
			t.Errorf("after delete: %v", got)
		}
		// And the other way round: a table PUT replaces the children.
		e.mustPutTable(ctx, testRG, "rt", table(vaRoute("only", "10.9.0.0/16", "10.240.0.4")))
		left := pageNames(ctx, t, e.routes.NewListPager(testRG, "rt", nil))
		if !slices.Equal(left, []string{"only"}) {
			t.Errorf("routes after table PUT = %v", left)
		}
		// A route in a missing table.
		_, err = e.putRoute(ctx, testRG, "missing", "r", *vaRoute("", "10.0.0.0/8", "10.240.0.4"))
		respErr(t, err, 404, "ResourceNotFound")
	})
}

func TestVirtualNetworkAndSubnetCRUD(t *testing.T) {
	eachTransport(t, Options{OperationDuration: 10 * time.Millisecond, PageSize: 1}, func(ctx context.Context, t *testing.T, e *env) {
		v := e.seedVNet(ctx, testRG)
		if api.Str(v.Type) != "Microsoft.Network/virtualNetworks" || len(v.Properties.Subnets) != 1 ||
			api.Str(v.Properties.Subnets[0].Type) != "Microsoft.Network/virtualNetworks/subnets" ||
			*v.Properties.Subnets[0].Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
			t.Fatalf("vnet = %+v", v)
		}
		sn, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "appgw", armnetwork.Subnet{
			Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefixes: []*string{api.Ptr("10.240.1.0/24")}}})
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(sn.ID) != api.Str(v.ID)+"/subnets/appgw" || len(sn.Properties.AddressPrefixes) != 1 {
			t.Errorf("subnet = %+v", sn)
		}
		got, err := e.vnets.Get(ctx, testRG, "kubernetes-vnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Properties.Subnets) != 2 || api.Str(got.Etag) == api.Str(v.Etag) {
			t.Errorf("vnet after subnet PUT: %d subnets, etag %s (was %s)", len(got.Properties.Subnets), api.Str(got.Etag), api.Str(v.Etag))
		}
		listed := pageNames(ctx, t, e.subnets.NewListPager(testRG, "kubernetes-vnet", nil))
		if !slices.Equal(listed, []string{"kubernetes-subnet", "appgw"}) {
			t.Errorf("subnets = %v", listed)
		}
		if _, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "APPGW", nil); err != nil {
			t.Error(err)
		}
		dp, err := e.subnets.BeginDelete(ctx, testRG, "kubernetes-vnet", "appgw", nil)
		mustPoll(ctx, t, dp, err)
		_, err = e.subnets.Get(ctx, testRG, "kubernetes-vnet", "appgw", nil)
		respErr(t, err, 404, "NotFound")

		e.createRG("other")
		if _, err := e.putVNet(ctx, "other", "v2", armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.0.0.0/16")}}}}); err != nil {
			t.Fatal(err)
		}
		all := pageNames(ctx, t, e.vnets.NewListAllPager(nil))
		if !slices.Equal(all, []string{"kubernetes-vnet", "v2"}) {
			t.Errorf("all vnets = %v", all)
		}
		vp, err := e.vnets.BeginDelete(ctx, "other", "v2", nil)
		mustPoll(ctx, t, vp, err)
		_, err = e.vnets.Get(ctx, "other", "v2", nil)
		respErr(t, err, 404, "ResourceNotFound")
	})
}

func TestResourceGroups(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	e := newEnv(t, "loopback", Options{OperationDuration: 30 * time.Millisecond, Clock: clock.Now})
	resp, body := e.do("PUT", "/subscriptions/"+testSub+"/resourcegroups/RG1", `{"location":"West Europe","tags":{"a":"b"}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	m := decodeJSON(t, body)
	if m["id"] != "/subscriptions/"+testSub+"/resourceGroups/RG1" || m["location"] != "westeurope" || m["type"] != "Microsoft.Resources/resourceGroups" {
		t.Errorf("rg = %v", m)
	}
	resp, _ = e.do("PUT", "/subscriptions/"+testSub+"/resourceGroups/rg1", `{"location":"westeurope"}`)
	if resp.StatusCode != 200 {
		t.Errorf("update = %d", resp.StatusCode)
	}
	if resp, _ := e.do("HEAD", "/subscriptions/"+testSub+"/resourcegroups/rg1", ""); resp.StatusCode != 204 {
		t.Errorf("HEAD existing = %d", resp.StatusCode)
	}
	if resp, _ := e.do("HEAD", "/subscriptions/"+testSub+"/resourcegroups/nope", ""); resp.StatusCode != 404 {
		t.Errorf("HEAD missing = %d", resp.StatusCode)
	}
	resp, body = e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/nope", "")
	if resp.StatusCode != 404 || decodeJSON(t, body)["error"].(map[string]any)["code"] != "ResourceGroupNotFound" {
		t.Errorf("missing = %d %s", resp.StatusCode, body)
	}
	// Deleting the group deletes what is in it, as an LRO polled by Location.
	// (The table is made through a server whose operations end at once.)
	if _, err := newEnvOn(t, "inprocess", e.store, Options{}).putTable(ctx, "rg1", "t", armnetwork.RouteTable{Location: api.Ptr("westeurope")}); err != nil {
		t.Fatal(err)
	}
	resp, _ = e.do("DELETE", "/subscriptions/"+testSub+"/resourcegroups/rg1", "")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 202 || !strings.HasPrefix(loc, e.endpoint+"/subscriptions/"+testSub+"/operationresults/") {
		t.Fatalf("delete = %d, Location %q", resp.StatusCode, loc)
	}
	// While it runs, writes into the group are refused.
	_, err := e.putTable(ctx, "rg1", "t2", armnetwork.RouteTable{Location: api.Ptr("westeurope")})
	respErr(t, err, 409, "ResourceGroupBeingDeleted")
	if resp, _ = e.do("GET", strings.TrimPrefix(loc, e.endpoint), ""); resp.StatusCode != 202 {
		t.Errorf("operation result while running = %d", resp.StatusCode)
	}
	clock.Advance(30 * time.Millisecond)
	resp, _ = e.do("GET", strings.TrimPrefix(loc, e.endpoint), "")
	if resp.StatusCode != 200 {
		t.Fatalf("operation result = %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/rg1", ""); resp.StatusCode != 404 {
		t.Errorf("group after delete = %d", resp.StatusCode)
	}
	_, err = e.tables.Get(ctx, "rg1", "t", nil)
	respErr(t, err, 404, "ResourceGroupNotFound")
}
