package iac

import (
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/route"
)

// ids resolves resource IDs for a plan: a created resource has no id yet,
// so it is made from its name and group, in the configured table's
// subscription.
type ids struct{ subscription string }

func (x ids) of(m map[string]any, typ string) string {
	if id := str(m, "id"); id != "" {
		return id
	}
	rg, name := str(m, "resource_group_name"), str(m, "name")
	if rg == "" || name == "" {
		return ""
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/%s/%s", x.subscription, rg, typ, name)
}

// tableOf makes the route table an azurerm_route_table's values describe.
func tableOf(id string, m map[string]any) *route.Table {
	t := &route.Table{ID: id, Name: str(m, "name"), Location: str(m, "location"), ResourceGroup: str(m, "resource_group_name"), Tags: map[string]string{}}
	if tags, ok := m["tags"].(map[string]any); ok {
		for k, v := range tags {
			if s, ok := v.(string); ok {
				t.Tags[k] = s
			}
		}
	}
	if b, ok := m["bgp_route_propagation_enabled"].(bool); ok {
		t.DisableBGPRoutePropagation = !b
	}
	for _, r := range objects(m, "route") {
		t.Routes = append(t.Routes, routeOf(r))
	}
	return t
}

// routeOf makes a route from an inline route block or an azurerm_route.
// An address_prefix that is not a CIDR is a service tag (AzureCloud,
// Internet), which Azure takes in a route: the route keeps it with no
// Prefix, a foreign route to the verdict, like one read from ARM. So is a
// next_hop_in_ip_address that is not an address (the provider sends none
// for a next hop other than VirtualAppliance).
func routeOf(m map[string]any) route.Route {
	r := route.Route{Name: str(m, "name"), AddressPrefix: str(m, "address_prefix"), NextHopType: route.NextHopType(str(m, "next_hop_type")), ProvisioningState: "Succeeded"}
	if p, err := netip.ParsePrefix(r.AddressPrefix); err == nil {
		r.Prefix = p
	}
	if a, err := netip.ParseAddr(str(m, "next_hop_in_ip_address")); err == nil {
		r.NextHopIP = a
	}
	return r
}

// subnetPrefixes are a subnet block's or azurerm_subnet's prefixes.
func subnetPrefixes(m map[string]any) []string {
	if ps := strs(m, "address_prefixes"); len(ps) > 0 {
		return ps
	}
	if p := str(m, "address_prefix"); p != "" {
		return []string{p}
	}
	return nil
}
