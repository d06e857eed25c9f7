package azpolicy

import (
	"slices"
	"strings"
)

// alias maps a policy alias to the resource type it belongs to and the
// path of its value in the resource's ARM JSON.
type alias struct {
	name         string // as Azure spells it
	resourceType string
	path         string // dotted; a segment ending in [*] fans out over an array
}

// aliases are the aliases of the properties routekeeper writes and reads,
// with the paths Azure maps them to (the ARM wire form: a route's next hop
// is properties.routes[*].properties.nextHopType in a route table).
// Keyed by the lower-case alias.
var aliases = func() map[string]alias {
	m := map[string]alias{}
	add := func(typ, name, path string) {
		m[strings.ToLower(typ+"/"+name)] = alias{name: typ + "/" + name, resourceType: typ, path: path}
	}
	const rt, route = "Microsoft.Network/routeTables", "Microsoft.Network/routeTables/routes"
	add(rt, "disableBgpRoutePropagation", "properties.disableBgpRoutePropagation")
	add(rt, "routes", "properties.routes")
	add(rt, "routes[*]", "properties.routes[*]")
	for _, p := range []string{"name", "addressPrefix", "nextHopType", "nextHopIpAddress"} {
		path := "properties.routes[*].properties." + p
		if p == "name" {
			path = "properties.routes[*].name"
		}
		add(rt, "routes[*]."+p, path)
		if p != "name" {
			add(route, p, "properties."+p)
		}
	}
	const vnet, subnet = "Microsoft.Network/virtualNetworks", "Microsoft.Network/virtualNetworks/subnets"
	add(vnet, "addressSpace.addressPrefixes", "properties.addressSpace.addressPrefixes")
	add(vnet, "addressSpace.addressPrefixes[*]", "properties.addressSpace.addressPrefixes[*]")
	add(vnet, "subnets[*]", "properties.subnets[*]")
	add(vnet, "subnets[*].name", "properties.subnets[*].name")
	for _, p := range []string{"addressPrefix", "routeTable.id", "networkSecurityGroup.id", "natGateway.id"} {
		add(vnet, "subnets[*]."+p, "properties.subnets[*].properties."+p)
		add(subnet, p, "properties."+p)
	}
	add(subnet, "addressPrefixes[*]", "properties.addressPrefixes[*]")
	const nic = "Microsoft.Network/networkInterfaces"
	add(nic, "enableIPForwarding", "properties.enableIPForwarding")
	add(nic, "ipconfigurations[*].subnet.id", "properties.ipConfigurations[*].properties.subnet.id")
	add("Microsoft.Network/natGateways", "idleTimeoutInMinutes", "properties.idleTimeoutInMinutes")
	return m
}()

// aliasNames are the aliases as Azure spells them, sorted.
func aliasNames() []string {
	out := make([]string, 0, len(aliases))
	for _, a := range aliases {
		out = append(out, a.name)
	}
	slices.Sort(out)
	return out
}
