package fabric

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestValidation(t *testing.T) {
	e := newRGEnv(t, "loopback", Options{})
	ctx := context.Background()
	e.seedVNet(ctx, testRG)
	e.mustPutTable(ctx, testRG, "rt", table(vaRoute("existing", "10.200.0.0/24", "10.240.0.20")))
	vnetPath := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/"
	route := func(name, prefix, hop, ip string) string {
		r := fmt.Sprintf(`{"name":%q,"properties":{"addressPrefix":%q,"nextHopType":%q`, name, prefix, hop)
		if ip != "" {
			r += fmt.Sprintf(`,"nextHopIpAddress":%q`, ip)
		}
		return r + "}}"
	}
	tableBody := func(routes ...string) string {
		return `{"location":"eastus","properties":{"routes":[` + strings.Join(routes, ",") + `]}}`
	}
	vnetBody := func(space string, subnets ...string) string {
		return `{"location":"eastus","properties":{"addressSpace":{"addressPrefixes":[` + space + `]},"subnets":[` + strings.Join(subnets, ",") + `]}}`
	}
	subnet := func(name, prefix string) string {
		return fmt.Sprintf(`{"name":%q,"properties":{"addressPrefix":%q}}`, name, prefix)
	}
	long := strings.Repeat("a", 81)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
		msg                      string // a part of the message, when it matters
	}{
		{"table name too long", "PUT", tablePath(testRG, long), tableBody(), 400, "InvalidResourceName", long},
		{"table name bad start", "PUT", tablePath(testRG, "-rt"), tableBody(), 400, "InvalidResourceName", ""},
		{"table name bad end", "PUT", tablePath(testRG, "rt."), tableBody(), 400, "InvalidResourceName", ""},
		{"table name bad char", "PUT", tablePath(testRG, "r$t"), tableBody(), 400, "InvalidResourceName", ""},
		{"route name invalid", "PUT", tablePath(testRG, "rt"), tableBody(route("bad name", "10.0.0.0/8", "None", "")), 400, "InvalidResourceName", "bad name"},
		{"route child name invalid", "PUT", tablePath(testRG, "rt") + "/routes/bad~name", `{"properties":{"addressPrefix":"10.0.0.0/8","nextHopType":"None"}}`, 400, "InvalidResourceName", ""},
		{"host bits set", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.200.0.1/24", "None", "")), 400, "InvalidCIDRNotation", "should be 10.200.0.0/24"},
		{"not a prefix", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.200.0.0/33", "None", "")), 400, "InvalidAddressPrefixFormat", ""},
		{"bare address", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.200.0.1", "None", "")), 400, "InvalidAddressPrefixFormat", ""},
		{"missing prefix", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "", "None", "")), 400, "InvalidRequestFormat", "addressPrefix"},
		{"unknown next hop type", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.0.0.0/8", "Gateway", "")), 400, "InvalidRequestFormat", "Gateway"},
		{"missing next hop type", "PUT", tablePath(testRG, "rt"), `{"location":"eastus","properties":{"routes":[{"name":"r","properties":{"addressPrefix":"10.0.0.0/8"}}]}}`, 400, "InvalidRequestFormat", "nextHopType"},
		{"appliance without ip", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.0.0.0/8", "VirtualAppliance", "")), 400, "MissingNextHopIpAddress", "NextHopIpAddress cannot be Null or Empty in route r when NextHopType is VirtualAppliance."},
		{"appliance with bad ip", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.0.0.0/8", "VirtualAppliance", "10.0.0.300")), 400, "InvalidNextHopIpAddress", ""},
		{"ip with another hop type", "PUT", tablePath(testRG, "rt"), tableBody(route("r", "10.0.0.0/8", "Internet", "10.240.0.4")), 400, "NextHopIpAddressNotAllowed", ""},
		{"ip with another hop type (child)", "PUT", tablePath(testRG, "rt") + "/routes/r", `{"properties":{"addressPrefix":"10.0.0.0/8","nextHopType":"VnetLocal","nextHopIpAddress":"10.0.0.4"}}`, 400, "NextHopIpAddressNotAllowed", ""},
		{"duplicate prefix", "PUT", tablePath(testRG, "rt"), tableBody(route("a", "10.0.0.0/8", "None", ""), route("b", "10.0.0.0/8", "Internet", "")), 400, "RouteConflict", "Routes cannot have the same AddressPrefix"},
		{"duplicate prefix, other spelling", "PUT", tablePath(testRG, "rt"), tableBody(route("a", "2001:db8::/32", "None", ""), route("b", "2001:0db8::/32", "None", "")), 400, "RouteConflict", ""},
		{"duplicate service tag", "PUT", tablePath(testRG, "rt"), tableBody(route("a", "Storage", "Internet", ""), route("b", "storage", "None", "")), 400, "RouteConflict", ""},
		{"duplicate prefix (child)", "PUT", tablePath(testRG, "rt") + "/routes/other", `{"properties":{"addressPrefix":"10.200.0.0/24","nextHopType":"None"}}`, 400, "RouteConflict", "existing"},
		{"duplicate route name", "PUT", tablePath(testRG, "rt"), tableBody(route("a", "10.0.0.0/8", "None", ""), route("A", "10.1.0.0/16", "None", "")), 400, "DuplicateResourceName", ""},
		{"null route", "PUT", tablePath(testRG, "rt"), tableBody("null"), 400, "InvalidRequestFormat", ""},
		{"missing location", "PUT", tablePath(testRG, "new"), `{"properties":{}}`, 400, "LocationRequired", ""},
		{"location change", "PUT", tablePath(testRG, "rt"), `{"location":"westus"}`, 409, "InvalidResourceLocation", ""},
		{"tag name with a slash", "PUT", tablePath(testRG, "rt"), `{"location":"eastus","tags":{"example.io/cluster":"a"}}`, 400, "InvalidTagNameCharacters", "example.io/cluster"},
		{"tag name with a question mark (PATCH)", "PATCH", tablePath(testRG, "rt"), `{"tags":{"why?":"a"}}`, 400, "InvalidTagNameCharacters", "why?"},
		{"tag name with a percent (vnet)", "PUT", vnetPath + "v", `{"location":"eastus","tags":{"a%b":"x"},"properties":{"addressSpace":{"addressPrefixes":["10.9.0.0/16"]}}}`, 400, "InvalidTagNameCharacters", "a%b"},
		{"tag value too long", "PUT", tablePath(testRG, "rt"), `{"location":"eastus","tags":{"k":"` + strings.Repeat("v", 257) + `"}}`, 400, "InvalidTagValueLength", ""},
		{"bad json", "PUT", tablePath(testRG, "rt"), `{"location":`, 400, "InvalidRequestContent", ""},
		{"wrong json type", "PUT", tablePath(testRG, "rt"), `{"location":"eastus","properties":{"routes":{}}}`, 400, "InvalidRequestContent", ""},
		{"not an object", "PUT", tablePath(testRG, "rt"), `[]`, 400, "InvalidRequestContent", ""},
		{"empty body", "PUT", tablePath(testRG, "rt"), ``, 400, "InvalidRequestContent", ""},
		{"subnet outside the vnet", "PUT", vnetPath + "kubernetes-vnet/subnets/out", `{"properties":{"addressPrefix":"10.9.0.0/24"}}`, 400, "NetcfgSubnetRangeOutsideVnet", "Subnet 'out' is not valid because its IP address range is outside the IP address range of virtual network 'kubernetes-vnet'."},
		{"subnet overlapping a sibling", "PUT", vnetPath + "kubernetes-vnet/subnets/clash", `{"properties":{"addressPrefix":"10.240.0.128/25"}}`, 400, "NetcfgSubnetRangesOverlap", "kubernetes-subnet"},
		{"subnet host bits", "PUT", vnetPath + "kubernetes-vnet/subnets/odd", `{"properties":{"addressPrefix":"10.240.3.5/24"}}`, 400, "InvalidCIDRNotation", "10.240.3.0/24"},
		{"subnet without prefix", "PUT", vnetPath + "kubernetes-vnet/subnets/none", `{"properties":{}}`, 400, "NoAddressPrefixOrPoolProvided", ""},
		{"subnet too small", "PUT", vnetPath + "kubernetes-vnet/subnets/tiny", `{"properties":{"addressPrefix":"10.240.9.0/30"}}`, 400, "NetcfgInvalidSubnet", ""},
		{"subnet in a missing vnet", "PUT", vnetPath + "nope/subnets/s", `{"properties":{"addressPrefix":"10.240.9.0/24"}}`, 404, "ResourceNotFound", ""},
		{"vnet without address space", "PUT", vnetPath + "v", `{"location":"eastus","properties":{}}`, 400, "AddressSpaceMustHaveAtLeastOnePrefix", ""},
		{"vnet bad prefix", "PUT", vnetPath + "v", vnetBody(`"10.0.0.0/99"`), 400, "InvalidAddressPrefixFormat", ""},
		{"vnet overlapping spaces", "PUT", vnetPath + "v", vnetBody(`"10.0.0.0/16","10.0.1.0/24"`), 400, "VnetAddressSpacesOverlap", ""},
		{"vnet subnets overlap", "PUT", vnetPath + "v", vnetBody(`"10.0.0.0/16"`, subnet("a", "10.0.0.0/24"), subnet("b", "10.0.0.0/25")), 400, "NetcfgSubnetRangesOverlap", ""},
		{"vnet subnet outside", "PUT", vnetPath + "v", vnetBody(`"10.0.0.0/16"`, subnet("a", "10.1.0.0/24")), 400, "NetcfgSubnetRangeOutsideVnet", ""},
		{"vnet duplicate subnet", "PUT", vnetPath + "v", vnetBody(`"10.0.0.0/16"`, subnet("a", "10.0.0.0/24"), subnet("a", "10.0.1.0/24")), 400, "DuplicateResourceName", ""},
		{"missing resource group", "GET", tablePath("nope", "rt"), "", 404, "ResourceGroupNotFound", "Resource group 'nope' could not be found."},
		{"missing table", "GET", tablePath(testRG, "nope"), "", 404, "ResourceNotFound", "The Resource 'Microsoft.Network/routeTables/nope' under resource group 'kubernetes' was not found."},
		{"unknown type", "GET", "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/loadBalancers/lb", "", 404, "InvalidResourceType", "loadBalancers"},
		{"unknown child type", "GET", tablePath(testRG, "rt") + "/things/x", "", 404, "InvalidResourceType", ""},
		{"unknown namespace", "GET", "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/vm", "", 400, "InvalidResourceNamespace", ""},
		{"unknown path", "GET", "/foo/bar", "", 404, "InvalidRequestUri", ""},
		{"method not allowed", "POST", tablePath(testRG, "rt"), "{}", 405, "HttpMethodNotSupported", ""},
		{"missing operation", "GET", "/subscriptions/" + testSub + "/providers/Microsoft.Network/locations/eastus/operations/nope", "", 404, "OperationNotFound", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(tc.method, tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			m := decodeJSON(t, body)
			errObj, _ := m["error"].(map[string]any)
			if errObj == nil || errObj["code"] != tc.code {
				t.Fatalf("body = %s, want code %s", body, tc.code)
			}
			if msg, _ := errObj["message"].(string); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not contain %q", msg, tc.msg)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
	// None of the refused writes changed anything.
	got := e.getTable(ctx, testRG, "rt")
	if names := routeNames(got); len(names) != 1 || names[0] != "existing" {
		t.Errorf("routes after refused writes = %v", names)
	}
}

func TestAuthAndProtocol(t *testing.T) {
	e := newRGEnv(t, "loopback", Options{})
	req, _ := http.NewRequest("GET", e.endpoint+tablePath(testRG, "rt")+"?api-version=2024-05-01", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("x-ms-ratelimit-remaining-subscription-reads") == "" {
		t.Errorf("no Authorization = %d, want 401 with the quota headers (%v)", resp.StatusCode, resp.Header)
	}
	resp, body := e.do("GET", tablePath(testRG, "rt"), "", "Authorization", "Basic Zm9vOmJhcg==")
	if resp.StatusCode != 401 || decodeJSON(t, body)["error"].(map[string]any)["code"] != "AuthenticationFailed" {
		t.Errorf("Basic auth = %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", tablePath(testRG, "rt")+"?x=1&api-version=", "")
	if resp.StatusCode != 400 || decodeJSON(t, body)["error"].(map[string]any)["code"] != "MissingApiVersionParameter" {
		t.Errorf("no api-version = %d %s", resp.StatusCode, body)
	}
	// Any api-version is accepted.
	resp, _ = e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/"+testRG+"?api-version=1999-01-01", "")
	if resp.StatusCode != 200 {
		t.Errorf("odd api-version = %d", resp.StatusCode)
	}
	// Bodies are capped.
	big := `{"location":"eastus","tags":{"x":"` + strings.Repeat("a", MaxRequestBody) + `"}}`
	resp, body = e.do("PUT", tablePath(testRG, "big"), big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body = %d %.200s", resp.StatusCode, body)
	}
	// Standard headers.
	resp, _ = e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/"+testRG, "", "x-ms-client-request-id", "abc")
	for _, h := range []string{"x-ms-request-id", "x-ms-correlation-request-id", "x-ms-ratelimit-remaining-subscription-reads"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	if resp.Header.Get("x-ms-client-request-id") != "abc" {
		t.Errorf("client request id not echoed")
	}
	resp, _ = e.do("PUT", tablePath(testRG, "x"), `{"location":"eastus"}`)
	if resp.Header.Get("x-ms-ratelimit-remaining-subscription-writes") == "" {
		t.Errorf("write lacks x-ms-ratelimit-remaining-subscription-writes")
	}
}
