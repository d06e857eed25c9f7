// Package armid is how routekeeper compares and takes apart Azure Resource
// Manager resource IDs. ARM compares IDs without regard to case and
// tolerates a trailing slash, so every comparison, map key and parent
// lookup of an ID in routekeeper goes through this package: one rule, in
// one place.
package armid

import (
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
)

// Key is the canonical form of an ID for maps: lower case, no trailing slash.
func Key(id string) string { return strings.ToLower(strings.TrimSuffix(id, "/")) }

// Same reports whether two IDs name the same resource.
func Same(a, b string) bool { return Key(a) == Key(b) }

// Contains reports whether ids holds id.
func Contains(ids []string, id string) bool {
	for _, x := range ids {
		if Same(x, id) {
			return true
		}
	}
	return false
}

// Name is the last segment of an ID: a route table's name for logs,
// metrics labels and messages.
func Name(id string) string {
	id = strings.TrimSuffix(id, "/")
	return id[strings.LastIndex(id, "/")+1:]
}

// Matches reports whether sel names the resource id: its whole ID or its
// name (both compared as ARM does).
func Matches(id, sel string) bool {
	sel = strings.TrimSuffix(sel, "/")
	return Same(id, sel) || strings.EqualFold(Name(id), sel)
}

// The resource types routekeeper parses IDs of.
const (
	RouteTable     = "Microsoft.Network/routeTables"
	VirtualNetwork = "Microsoft.Network/virtualNetworks"
	Subnet         = "Microsoft.Network/virtualNetworks/subnets"
)

// kinds name the types of Parse's errors and show their IDs' form.
var kinds = map[string]struct{ what, form string }{
	RouteTable:     {"route table", "/subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<name>"},
	VirtualNetwork: {"virtual network", "/subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<name>"},
	Subnet:         {"subnet", "/subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<name>"},
}

// Parse parses the ID of a resource of type typ (RouteTable, Subnet, ...)
// in a resource group; the error names the type and shows the form.
func Parse(id, typ string) (*arm.ResourceID, error) {
	k, ok := kinds[typ]
	if !ok {
		k.what, k.form = typ, "an ID of a "+typ
	}
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return nil, fmt.Errorf("%s ID %q: %w", k.what, id, err)
	}
	if !strings.EqualFold(r.ResourceType.String(), typ) || r.Parent == nil || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return nil, fmt.Errorf("%s ID %q: want %s", k.what, id, k.form)
	}
	return r, nil
}

// VNetOfSubnet returns the ID of the virtual network that holds a subnet.
func VNetOfSubnet(subnetID string) (string, error) {
	r, err := Parse(subnetID, Subnet)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s", r.SubscriptionID, r.ResourceGroupName, r.Parent.Name), nil
}

// ScopeOf returns the scope an extension resource of provider (a
// namespace, "Microsoft.Authorization", or a namespace and type,
// "Microsoft.Authorization/locks") is on: its ID up to the last
// /providers/{provider}/, "/" for the root; ok is false when id is not one.
func ScopeOf(id, provider string) (scope string, ok bool) {
	i := strings.LastIndex(strings.ToLower(id), "/providers/"+strings.ToLower(provider)+"/")
	switch {
	case i < 0:
		return "", false
	case i == 0:
		return "/", true
	}
	return id[:i], true
}

// Subscription returns the subscription of an ID, "" when it has none.
func Subscription(id string) string {
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return ""
	}
	return r.SubscriptionID
}

// ResourceGroupID returns the ID of the resource group that holds id
// ("/subscriptions/<s>/resourceGroups/<g>"), "" when id names none: a
// subscription scope, or not an ID.
func ResourceGroupID(id string) string {
	r, err := arm.ParseResourceID(strings.TrimSuffix(id, "/"))
	if err != nil || r.ResourceGroupName == "" || r.SubscriptionID == "" {
		return ""
	}
	return "/subscriptions/" + r.SubscriptionID + "/resourceGroups/" + r.ResourceGroupName
}

// Short keeps the part of an ID after Microsoft.Network's provider
// (routeTables/kubernetes-routes), for tables and messages where the
// subscription and resource group are the same on every line; other IDs
// are kept whole.
func Short(id string) string {
	const marker = "/providers/microsoft.network/"
	if i := strings.Index(strings.ToLower(id), marker); i >= 0 {
		return id[i+len(marker):]
	}
	return id
}
