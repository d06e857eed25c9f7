package api

import (
	"strings"

	"github.com/routekeeper/routekeeper/internal/azpolicy"
)

// Spellings of the resource types the fabric knows, for actions and
// messages; other types keep the spelling of the request.
var typeSpelling = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{TypeRouteTables, ChildRoutes, TypeVirtualNetworks, ChildSubnets, "networkInterfaces",
		"networkWatchers", "natGateways", "networkSecurityGroups", "securityRules", "virtualNetworkPeerings",
		"publicIPAddresses", "locations", "operations", "operationResults", "resourceGroups", "subscriptions",
		"roleAssignments", "roleDefinitions", "locks", "policyAssignments", "policyDefinitions", "permissions"} {
		m[strings.ToLower(t)] = t
	}
	return m
}()

// Spell is a type segment as the fabric spells it.
func Spell(seg string) string {
	if s, ok := typeSpelling[strings.ToLower(seg)]; ok {
		return s
	}
	return seg
}

// ReferencedType is the resource type of a referenced Microsoft.Network
// ID: Microsoft.Network/routeTables, Microsoft.Network/virtualNetworks/subnets...
func ReferencedType(id string) (string, bool) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) < 8 || len(segs)%2 != 0 || !strings.EqualFold(segs[0], "subscriptions") ||
		!strings.EqualFold(segs[2], "resourceGroups") || !strings.EqualFold(segs[4], "providers") {
		return "", false
	}
	typ := segs[5] + "/" + Spell(segs[6])
	for i := 8; i+1 < len(segs); i += 2 {
		typ += "/" + Spell(segs[i])
	}
	return typ, true
}

// IDOf is the id of a reference ({"id": ...}), "" when it has none.
func IDOf(ref any) string {
	m, _ := ref.(map[string]any)
	id, _ := azpolicy.Field(m, "id").(string)
	return id
}

// SubscriptionOf is the subscription of a scope, "" for the root.
func SubscriptionOf(scope string) string {
	segs := strings.Split(strings.Trim(scope, "/"), "/")
	if len(segs) >= 2 && strings.EqualFold(segs[0], "subscriptions") {
		return segs[1]
	}
	return ""
}
