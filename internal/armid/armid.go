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

// VNetOfSubnet returns the ID of the virtual network that holds a subnet.
func VNetOfSubnet(subnetID string) (string, error) {
	r, err := arm.ParseResourceID(subnetID)
	if err != nil {
		return "", fmt.Errorf("subnet ID %q: %w", subnetID, err)
	}
	if !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/virtualNetworks/subnets") || r.Parent == nil || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return "", fmt.Errorf("subnet ID %q: want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<name>", subnetID)
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s", r.SubscriptionID, r.ResourceGroupName, r.Parent.Name), nil
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
