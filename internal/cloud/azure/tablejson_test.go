package azure

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/go-cmp/cmp"
)

// The lean decoding of a route table GET reads what armnetwork's models
// would have: the same route.Table from the same answer, property names in
// any case.
func TestTableJSONReadsWhatTheSDKReads(t *testing.T) {
	for name, body := range map[string]string{
		"full": `{"id":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/routeTables/rt","name":"rt","type":"Microsoft.Network/routeTables",
			"location":"eastus","etag":"W/\"e1\"","tags":{"routekeeper.io/cluster":"kthw","empty":""},
			"properties":{"provisioningState":"Succeeded","resourceGuid":"x","disableBgpRoutePropagation":true,
				"routes":[{"name":"worker-0____102000024","id":"/r0","etag":"W/\"r\"","properties":{"provisioningState":"Succeeded","addressPrefix":"10.200.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20"}},
				          {"name":"internet","properties":{"provisioningState":"Updating","addressPrefix":"AzureCloud","nextHopType":"Internet"}}],
				"subnets":[{"id":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a"}]}}`,
		"empty":      `{"id":"/t","name":"t","location":"westeurope","etag":"W/\"e\"","properties":{"provisioningState":"Succeeded","routes":[]}}`,
		"other case": `{"ID":"/t","Name":"t","Location":"westeurope","Etag":"W/\"e\"","Properties":{"Routes":[{"Name":"a","Properties":{"AddressPrefix":"10.0.0.0/8","NextHopType":"None"}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var sdk armnetwork.RouteTable
			if err := json.Unmarshal([]byte(body), &sdk); err != nil {
				t.Fatal(err)
			}
			var lean tableJSON
			if err := json.Unmarshal([]byte(body), &lean); err != nil {
				t.Fatal(err)
			}
			if name == "other case" {
				// armnetwork's models match names exactly; ARM (and the
				// lean decoding) do not: compare with the lower-case form.
				if got := lean.table("g"); got.Name != "t" || len(got.Routes) != 1 || got.Routes[0].AddressPrefix != "10.0.0.0/8" {
					t.Errorf("lean decoding of other-case names: %+v", got)
				}
				return
			}
			netips := cmp.Options{cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })}
			if d := cmp.Diff(tableFromARM(&sdk, "g"), lean.table("g"), netips); d != "" {
				t.Errorf("lean decoding differs from the SDK's (-sdk +lean):\n%s", d)
			}
		})
	}
}
