package fabric

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

func vnetPath(rg, name string) string {
	return "/subscriptions/" + testSub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/" + name
}

// TestPropertyNamesIgnoreCase: ARM's deserializer ignores the case of
// property names. A subnet PUT spelling "RouteTable" must associate the
// table, not answer 200 and silently detach it.
func TestPropertyNamesIgnoreCase(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	rt := e.mustPutTable(ctx, testRG, "kubernetes-routes", table())
	e.seedVNet(ctx, testRG)
	rtID := api.Str(rt.ID)
	tests := []struct {
		name, path, body string
		subnet           string // the subnet to read back
	}{
		{"subnet RouteTable", vnetPath(testRG, "kubernetes-vnet") + "/subnets/kubernetes-subnet",
			`{"properties":{"addressPrefix":"10.240.0.0/24","RouteTable":{"id":"` + rtID + `"}}}`, "kubernetes-subnet"},
		{"subnet all capitals", vnetPath(testRG, "kubernetes-vnet") + "/subnets/second",
			`{"PROPERTIES":{"ADDRESSPREFIX":"10.240.1.0/24","ROUTETABLE":{"ID":"` + rtID + `"}}}`, "second"},
		{"vnet with subnets", vnetPath(testRG, "other-vnet"),
			`{"Location":"eastus","Tags":{"MixedCase":"v"},"Properties":{"AddressSpace":{"AddressPrefixes":["10.1.0.0/16"]},` +
				`"Subnets":[{"Name":"s1","Properties":{"AddressPrefix":"10.1.0.0/24","routetable":{"Id":"` + rtID + `"}}}]}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("PUT", tc.path, tc.body)
			if resp.StatusCode/100 != 2 {
				t.Fatalf("PUT = %d %s", resp.StatusCode, body)
			}
			var sn armnetwork.Subnet
			if tc.subnet != "" {
				got, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", tc.subnet, nil)
				if err != nil {
					t.Fatal(err)
				}
				sn = got.Subnet
			} else {
				got, err := e.vnets.Get(ctx, testRG, "other-vnet", nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.Tags["MixedCase"] == nil {
					t.Errorf("tags = %v: a tag name's case must be kept", got.Tags)
				}
				if got.Properties.AddressSpace == nil || len(got.Properties.AddressSpace.AddressPrefixes) != 1 || len(got.Properties.Subnets) != 1 {
					t.Fatalf("vnet = %+v", got.Properties)
				}
				sn = *got.Properties.Subnets[0]
			}
			if sn.Properties.RouteTable == nil || !strings.EqualFold(api.Str(sn.Properties.RouteTable.ID), rtID) {
				t.Errorf("subnet %s route table = %+v, want %s", api.Str(sn.Name), sn.Properties.RouteTable, rtID)
			}
		})
	}
	if got := subnetIDs(e.getTable(ctx, testRG, "kubernetes-routes")); len(got) != 3 {
		t.Errorf("table subnets = %v, want the three subnets", got)
	}
}

// TestEmptyListsAsAzure: Azure returns "subnets": [] and "delegations": []
// rather than omitting them.
func TestEmptyListsAsAzure(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	e.do("PUT", vnetPath(testRG, "empty"), `{"location":"eastus","properties":{"addressSpace":{"addressPrefixes":["10.9.0.0/16"]}}}`)
	e.seedVNet(ctx, testRG)
	tests := []struct{ name, path, want string }{
		{"vnet without subnets", vnetPath(testRG, "empty"), `"subnets":[]`},
		{"vnet peerings", vnetPath(testRG, "empty"), `"virtualNetworkPeerings":[]`},
		{"subnet delegations", vnetPath(testRG, "kubernetes-vnet") + "/subnets/kubernetes-subnet", `"delegations":[]`},
		{"subnet inside its vnet", vnetPath(testRG, "kubernetes-vnet"), `"delegations":[]`},
		{"table without routes", tablePath(testRG, "none"), `"routes":[]`},
	}
	e.mustPutTable(ctx, testRG, "none", table())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("GET", tc.path, "")
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) {
				t.Errorf("GET = %d %s, want %s", resp.StatusCode, body, tc.want)
			}
		})
	}
}

// TestPercentEncodedNames: %2F in a name is part of the name, never a
// path separator.
func TestPercentEncodedNames(t *testing.T) {
	ctx := context.Background()
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			e := newRGEnv(t, mode, Options{})
			e.mustPutTable(ctx, testRG, "rt", table())
			// The SDK escapes "/" in the route name as %2F.
			_, err := e.putRoute(ctx, testRG, "rt", "pods/10.244.0.0", *vaRoute("", "10.244.0.0/24", "10.240.0.20"))
			respErr(t, err, http.StatusBadRequest, "InvalidResourceName")
			_, err = e.routes.Get(ctx, testRG, "rt", "a/b", nil)
			respErr(t, err, http.StatusNotFound, "NotFound")
			resp, body := e.do("GET", tablePath(testRG, "rt")+"/routes/x%2Fy", "")
			if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "InvalidResourceType") {
				t.Errorf("GET x%%2Fy = %d %s, want 404 NotFound for the route x/y", resp.StatusCode, body)
			}
		})
	}
}

// TestNoOpPutSucceeded: a PUT that changes nothing is answered 200 with
// provisioningState Succeeded and the same etag, with nothing to poll.
func TestNoOpPutSucceeded(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "loopback", Options{})
	rt := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r", "10.244.0.0/24", "10.240.0.20")))
	e.seedVNet(ctx, testRG)
	rtBody := `{"location":"eastus","properties":{"routes":[{"name":"r","properties":{"addressPrefix":"10.244.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20"}}]}}`
	subnetBody := `{"properties":{"addressPrefix":"10.240.0.0/24","routeTable":{"id":"` + api.Str(rt.ID) + `"}}}`
	subnetPath := vnetPath(testRG, "kubernetes-vnet") + "/subnets/kubernetes-subnet"
	if resp, body := e.do("PUT", subnetPath, subnetBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("associating = %d %s", resp.StatusCode, body)
	}
	vnetBody := `{"location":"eastus","properties":{"addressSpace":{"addressPrefixes":["10.240.0.0/16"]},"subnets":[{"name":"kubernetes-subnet","properties":{"addressPrefix":"10.240.0.0/24","routeTable":{"id":"` + api.Str(rt.ID) + `"}}}]}}`
	tests := []struct{ name, path, body string }{
		{"route table", tablePath(testRG, "rt"), rtBody},
		{"route", tablePath(testRG, "rt") + "/routes/r", `{"properties":{"addressPrefix":"10.244.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20"}}`},
		{"subnet", subnetPath, subnetBody},
		{"virtual network", vnetPath(testRG, "kubernetes-vnet"), vnetBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := e.do("GET", tc.path, "")
			resp, body := e.do("PUT", tc.path, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("no-op PUT = %d %s", resp.StatusCode, body)
			}
			props, _ := decodeJSON(t, body)["properties"].(map[string]any)
			if props["provisioningState"] != "Succeeded" {
				t.Errorf("provisioningState = %v, want Succeeded: %s", props["provisioningState"], body)
			}
			if h := resp.Header.Get("Azure-AsyncOperation"); h != "" {
				t.Errorf("Azure-AsyncOperation %q on a no-op", h)
			}
			if got, want := resp.Header.Get("ETag"), before.Header.Get("ETag"); got != want {
				t.Errorf("etag = %s, want %s kept", got, want)
			}
		})
	}
	// The same body with one change is a real update again.
	resp, _ := e.do("PUT", tablePath(testRG, "rt"), strings.Replace(rtBody, "10.240.0.20", "10.240.0.21", 1))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Azure-AsyncOperation") == "" {
		t.Errorf("update = %d, async %q", resp.StatusCode, resp.Header.Get("Azure-AsyncOperation"))
	}
}

// TestLastPageHasNoNextLink: the last page of a list carries no nextLink
// at all (not "nextLink": null).
func TestLastPageHasNoNextLink(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "loopback", Options{PageSize: 2})
	for _, n := range []string{"a", "b", "c"} {
		e.mustPutTable(ctx, testRG, n, table(vaRoute("r1", "10.244.0.0/24", "10.240.0.20"), vaRoute("r2", "10.244.1.0/24", "10.240.0.21"), vaRoute("r3", "10.244.2.0/24", "10.240.0.22")))
	}
	lists := []string{
		"/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/routeTables",
		tablePath(testRG, "a") + "/routes",
	}
	for _, path := range lists {
		t.Run(path[strings.LastIndex(path, "/")+1:], func(t *testing.T) {
			pages := 0
			for next := e.endpoint + path + "?api-version=2024-05-01"; next != ""; pages++ {
				_, body := e.do("GET", strings.TrimPrefix(next, e.endpoint), "")
				doc := decodeJSON(t, body)
				link, has := doc["nextLink"]
				next, _ = link.(string)
				if has && next == "" {
					t.Fatalf("page %d: nextLink %v present but empty: %s", pages, link, body)
				}
				if !strings.HasPrefix(next, e.endpoint) && next != "" {
					t.Fatalf("nextLink %s is not under %s", next, e.endpoint)
				}
			}
			if pages != 2 {
				t.Errorf("pages = %d, want 2", pages)
			}
		})
	}
}

// TestPropertyNamesIgnoreCaseOtherTypes: resource groups, route tables,
// routes and tag PATCHes read property names without regard to case too.
func TestPropertyNamesIgnoreCaseOtherTypes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "inprocess", Options{})
	rgPath := "/subscriptions/" + testSub + "/resourceGroups/" + testRG
	route := `{"Name":"r","PROPERTIES":{"AddressPrefix":"10.244.0.0/24","NEXTHOPTYPE":"VirtualAppliance","NextHopIPAddress":"10.240.0.20"}}`
	steps := []struct{ name, method, path, body string }{
		{"resource group", "PUT", rgPath, `{"Location":"eastus","Tags":{"Owner":"me"}}`},
		{"route table", "PUT", tablePath(testRG, "rt"), `{"LOCATION":"eastus","Properties":{"DisableBgpRoutePropagation":true,"Routes":[` + route + `]}}`},
		{"route", "PUT", tablePath(testRG, "rt") + "/routes/r2", `{"Properties":{"AddressPrefix":"10.244.1.0/24","NextHopType":"VirtualAppliance","NextHopIpAddress":"10.240.0.21"}}`},
		{"tags patch", "PATCH", tablePath(testRG, "rt"), `{"Tags":{"Env":"test"}}`},
	}
	for _, s := range steps {
		if resp, body := e.do(s.method, s.path, s.body); resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %s = %d %s", s.name, s.method, resp.StatusCode, body)
		}
	}
	got := e.getTable(ctx, testRG, "rt")
	if len(got.Properties.Routes) != 2 || got.Properties.DisableBgpRoutePropagation == nil || !*got.Properties.DisableBgpRoutePropagation {
		t.Errorf("table = %+v, want two routes and BGP propagation disabled", got.Properties)
	}
	if r := sdkRoute(got, "r"); r == nil || api.Str(r.Properties.NextHopIPAddress) != "10.240.0.20" {
		t.Errorf("route r = %+v", r)
	}
	if got.Tags["Env"] == nil {
		t.Errorf("tags = %v, want Env from the PATCH", got.Tags)
	}
	_, body := e.do("GET", rgPath, "")
	if g := decodeJSON(t, body); g["location"] != "eastus" || g["tags"].(map[string]any)["Owner"] != "me" {
		t.Errorf("resource group = %s", body)
	}
}
