// Package armid is how routekeeper compares and takes apart Azure Resource
// Manager resource IDs. ARM compares IDs without regard to case and
// tolerates a trailing slash, so every comparison, map key and parent
// lookup of an ID in routekeeper goes through this package: one rule, in
// one place.
package armid

import (
	"fmt"
	"strings"
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

// ID is a parsed ID of a resource in a resource group: its
// subscription, group, provider namespace, and the types and names from
// the top-level resource down to it (one of each for a route table, two
// for a subnet: virtualNetworks/v, subnets/s).
type ID struct {
	Subscription  string
	ResourceGroup string
	Namespace     string
	Types, Names  []string
}

// Type is the resource's full type (Microsoft.Network/virtualNetworks/subnets).
func (r *ID) Type() string { return r.Namespace + "/" + strings.Join(r.Types, "/") }

// Name is the resource's own name.
func (r *ID) Name() string { return r.Names[len(r.Names)-1] }

// ParentName is the name of the resource's parent (a subnet's network),
// "" for a top-level resource.
func (r *ID) ParentName() string {
	if len(r.Names) < 2 {
		return ""
	}
	return r.Names[len(r.Names)-2]
}

// parse takes apart /subscriptions/{s}/resourceGroups/{g}/providers/{ns}/{type}/{name}[/{type}/{name}...];
// the keywords compare without regard to case, as ARM compares them.
func parse(id string) (*ID, error) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if !strings.HasPrefix(id, "/") || len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") || segs[1] == "" {
		return nil, fmt.Errorf("not an ARM resource ID: it starts with /subscriptions/<subscription>")
	}
	r := &ID{Subscription: segs[1]}
	rest := segs[2:]
	if len(rest) >= 2 && strings.EqualFold(rest[0], "resourceGroups") {
		r.ResourceGroup, rest = rest[1], rest[2:]
		if r.ResourceGroup == "" {
			return nil, fmt.Errorf("not an ARM resource ID: an empty resource group name")
		}
	}
	if len(rest) == 0 {
		return r, nil
	}
	if len(rest) < 4 || !strings.EqualFold(rest[0], "providers") || len(rest[2:])%2 != 0 {
		return nil, fmt.Errorf("not an ARM resource ID: want .../providers/<namespace>/<type>/<name>")
	}
	r.Namespace = rest[1]
	for i := 2; i < len(rest); i += 2 {
		if rest[i] == "" || rest[i+1] == "" {
			return nil, fmt.Errorf("not an ARM resource ID: an empty type or name")
		}
		r.Types, r.Names = append(r.Types, rest[i]), append(r.Names, rest[i+1])
	}
	return r, nil
}

// Parse parses the ID of a resource of type typ (RouteTable, Subnet, ...)
// in a resource group; the error names the type and shows the form.
func Parse(id, typ string) (*ID, error) {
	k, ok := kinds[typ]
	if !ok {
		k.what, k.form = typ, "an ID of a "+typ
	}
	r, err := parse(id)
	if err != nil {
		return nil, fmt.Errorf("%s ID %q: %w", k.what, id, err)
	}
	if len(r.Types) == 0 || !strings.EqualFold(r.Type(), typ) || r.ResourceGroup == "" {
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
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s", r.Subscription, r.ResourceGroup, r.ParentName()), nil
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
	r, err := parse(id)
	if err != nil {
		return ""
	}
	return r.Subscription
}

// ResourceGroupID returns the ID of the resource group that holds id
// ("/subscriptions/<s>/resourceGroups/<g>"), "" when id names none: a
// subscription scope, or not an ID.
func ResourceGroupID(id string) string {
	r, err := parse(strings.TrimSuffix(id, "/"))
	if err != nil || r.ResourceGroup == "" {
		return ""
	}
	return "/subscriptions/" + r.Subscription + "/resourceGroups/" + r.ResourceGroup
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
