package authz

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Built-in policy definitions: Azure serves them at the tenant scope,
// /providers/Microsoft.Authorization/policyDefinitions/{guid}, to anyone
// in the tenant, and any scope may assign them. The fabric serves the few
// that bear on what routekeeper writes, with Azure's IDs, names, modes,
// parameters and rules (Azure/azure-policy, built-in-policies/
// policyDefinitions/General/AllowedLocations_Deny.json and
// Network/NetworkIPForwardingNic_Deny.json; descriptions in the fabric's
// words); they cannot be written or deleted.
var builtinPolicyDefinitions = sync.OnceValue(func() map[string]*PolicyDefinition {
	defs := []struct {
		guid, displayName, description, category string
		parameters                               string
		rule                                     string
	}{
		{
			guid:        "e56962a6-4747-49cd-b67b-bf8b01975c4c",
			displayName: "Allowed locations",
			description: "Restricts the locations resources may be deployed to; resource groups, Microsoft.AzureActiveDirectory/b2cDirectories and the 'global' region are not restricted.",
			category:    "General",
			parameters:  `{"listOfAllowedLocations":{"type":"Array","metadata":{"displayName":"Allowed locations","strongType":"location"}}}`,
			rule: `{"if":{"allOf":[{"field":"location","notIn":"[parameters('listOfAllowedLocations')]"},{"field":"location","notEquals":"global"},
				{"field":"type","notEquals":"Microsoft.AzureActiveDirectory/b2cDirectories"}]},"then":{"effect":"deny"}}`,
		},
		{
			guid:        "88c0b9da-ce96-4b03-9635-f29a937e2900",
			displayName: "Network interfaces should disable IP forwarding",
			description: "Denies network interfaces that enable IP forwarding, which turns off Azure's source and destination check.",
			category:    "Network",
			parameters:  `{}`,
			rule: `{"if":{"allOf":[{"field":"type","equals":"Microsoft.Network/networkInterfaces"},
				{"field":"Microsoft.Network/networkInterfaces/enableIpForwarding","equals":"true"}]},"then":{"effect":"deny"}}`,
		},
	}
	out := map[string]*PolicyDefinition{}
	for _, b := range defs {
		d := &PolicyDefinition{ID: "/providers/Microsoft.Authorization/policyDefinitions/" + b.guid, Name: b.guid, Type: "Microsoft.Authorization/policyDefinitions",
			Properties: PolicyDefProperties{PolicyType: "BuiltIn", Mode: "Indexed", DisplayName: b.displayName, Description: b.description,
				Metadata: json.RawMessage(`{"category":"` + b.category + `"}`), PolicyRule: json.RawMessage(b.rule)}}
		if err := json.Unmarshal([]byte(b.parameters), &d.Properties.Parameters); err != nil {
			panic("fabric: built-in policy " + b.guid + ": " + err.Error())
		}
		if err := d.Compile(); err != nil {
			panic("fabric: built-in policy " + b.guid + ": " + err.Error())
		}
		out[api.Key(d.ID)] = d
	}
	return out
})

// builtinPolicyDefinition is the built-in definition with that ID, nil
// when there is none.
func builtinPolicyDefinition(id string) *PolicyDefinition {
	return builtinPolicyDefinitions()[api.Key(id)]
}

// isBuiltinPolicyRead reports whether a request reads the tenant's
// built-in policy definitions (GET /providers/Microsoft.Authorization/
// policyDefinitions[/{guid}]): Azure answers them to any authenticated
// caller, so no role is checked.
func isBuiltinPolicyRead(method string, segs []string) bool {
	return (method == "GET" || method == "HEAD") && len(segs) >= 3 && len(segs) <= 4 &&
		strings.EqualFold(segs[0], "providers") && strings.EqualFold(segs[1], authorizationNamespace) && strings.EqualFold(segs[2], "policyDefinitions")
}
