package topology

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// The steps of Topology.Validate: a resource group's route tables and
// routes, then each virtual network's address space and subnets. Every
// problem is reported through bad with the field it is in.

// validateRouteTables checks the route tables of the resource group at
// field f and returns their locations, by key(name), for the subnets that
// name them.
func validateRouteTables(f string, rg TopologyResourceGroup, rgLoc string, bad func(field, format string, args ...any)) map[string]string {
	tables := map[string]string{} // name key -> location
	for j, rt := range rg.RouteTables {
		g := fmt.Sprintf("%s.routeTables[%d]", f, j)
		if !api.ValidName(rt.Name) {
			bad(g+".name", "%q is not a valid name (1-80 letters, digits, '_', '.', '-'; starting with a letter or digit, ending with a letter, digit or '_')", rt.Name)
		}
		if _, dup := tables[api.Key(rt.Name)]; dup {
			bad(g+".name", "%q is declared twice", rt.Name)
		}
		tables[api.Key(rt.Name)] = api.NormalizeLocation(cmp.Or(rt.Location, rgLoc))
		routeSeen, prefixSeen := nameSet{}, map[string]string{}
		for k, r := range rt.Routes {
			h := fmt.Sprintf("%s.routes[%d]", g, k)
			routeSeen.declare(bad, h+".name", r.Name)
			validateRoute(h, r, prefixSeen, bad)
		}
	}
	return tables
}

// validateRoute checks one route at field h: its prefix (a CIDR prefix or
// a service tag, not the prefix of an earlier route of the table, whose
// names prefixSeen holds by prefix) and its next hop.
func validateRoute(h string, r TopologyRoute, prefixSeen map[string]string, bad func(field, format string, args ...any)) {
	if r.AddressPrefix == "" {
		bad(h+".addressPrefix", "missing")
	} else if !api.ServiceTagRE.MatchString(r.AddressPrefix) {
		if _, code, want := api.PrefixProblem(r.AddressPrefix); code == "InvalidCIDRNotation" {
			bad(h+".addressPrefix", "%q has host bits set; did you mean %s?", r.AddressPrefix, want)
		} else if code != "" {
			bad(h+".addressPrefix", "%q is neither a CIDR prefix nor a service tag", r.AddressPrefix)
		}
	}
	if first, ok := prefixSeen[network.PrefixKey(r.AddressPrefix)]; ok && r.AddressPrefix != "" {
		bad(h+".addressPrefix", "%q is also the prefix of route %q; Azure refuses two routes with the same prefix (RouteConflict)", r.AddressPrefix, first)
	}
	prefixSeen[network.PrefixKey(r.AddressPrefix)] = r.Name
	hop, ok := network.CanonicalHop(r.NextHopType)
	if !ok {
		bad(h+".nextHopType", "%q is not one of VirtualAppliance, VnetLocal, Internet, VirtualNetworkGateway, None", r.NextHopType)
	}
	switch {
	case ok && hop == "VirtualAppliance" && r.NextHopIPAddress == "":
		bad(h+".nextHopIpAddress", "missing: required with nextHopType VirtualAppliance")
	case ok && hop != "VirtualAppliance" && r.NextHopIPAddress != "":
		bad(h+".nextHopIpAddress", "%q is only allowed with nextHopType VirtualAppliance, not %s", r.NextHopIPAddress, hop)
	case r.NextHopIPAddress != "":
		if _, err := netip.ParseAddr(r.NextHopIPAddress); err != nil {
			bad(h+".nextHopIpAddress", "%q is not an IP address", r.NextHopIPAddress)
		}
	}
}

// placedSubnet is a subnet prefix already checked, for the overlaps of
// the next ones.
type placedSubnet struct {
	name string
	p    netip.Prefix
}

// validateVNet checks the virtual network at field g of resource group
// rgName, in location vnLoc: its address space, then its subnets.
func validateVNet(g, rgName string, vn TopologyVirtualNetwork, vnLoc string, tables map[string]string, bad func(field, format string, args ...any)) {
	space := validateSpace(g, vn, bad)
	var siblings []placedSubnet
	subnetSeen := nameSet{}
	for k, sn := range vn.Subnets {
		h := fmt.Sprintf("%s.subnets[%d]", g, k)
		subnetSeen.declare(bad, h+".name", sn.Name)
		siblings = validateSubnetPrefixes(h, vn, sn, space, siblings, bad)
		validateSubnetTable(h, rgName, vn, sn, vnLoc, tables, bad)
	}
}

// validateSpace checks the address space of the virtual network at field
// g and returns its prefixes that parse.
func validateSpace(g string, vn TopologyVirtualNetwork, bad func(field, format string, args ...any)) []netip.Prefix {
	var space []netip.Prefix
	if len(vn.AddressPrefixes) == 0 {
		bad(g+".addressPrefixes", "missing: a virtual network needs at least one address prefix")
	}
	for k, s := range vn.AddressPrefixes {
		p, ok := topoPrefix(bad, fmt.Sprintf("%s.addressPrefixes[%d]", g, k), s)
		if !ok {
			continue
		}
		for _, o := range space {
			if o.Overlaps(p) {
				bad(fmt.Sprintf("%s.addressPrefixes[%d]", g, k), "%q overlaps %s", s, o)
			}
		}
		space = append(space, p)
	}
	return space
}

// validateSubnetPrefixes checks the prefixes of the subnet at field h: one
// of addressPrefix and addressPrefixes, each at most a /29 (IPv4), inside
// the network's space and clear of its siblings; it returns the siblings
// with the subnet's prefixes added.
func validateSubnetPrefixes(h string, vn TopologyVirtualNetwork, sn TopologySubnet, space []netip.Prefix, siblings []placedSubnet, bad func(field, format string, args ...any)) []placedSubnet {
	prefixes := sn.AddressPrefixes
	field := h + ".addressPrefixes"
	switch {
	case sn.AddressPrefix != "" && len(sn.AddressPrefixes) > 0:
		bad(h, "set addressPrefix or addressPrefixes, not both")
	case sn.AddressPrefix != "":
		prefixes, field = []string{sn.AddressPrefix}, h+".addressPrefix"
	case len(prefixes) == 0:
		bad(h+".addressPrefix", "missing")
	}
	for _, s := range prefixes {
		p, ok := topoPrefix(bad, field, s)
		if !ok {
			continue
		}
		if p.Addr().Is4() && p.Bits() > 29 {
			bad(field, "%q is smaller than /29, the smallest subnet Azure allows", s)
		}
		inside := false
		for _, sp := range space {
			if sp.Bits() <= p.Bits() && sp.Contains(p.Addr()) {
				inside = true
			}
		}
		if !inside && len(space) > 0 {
			bad(field, "%q is outside the address space %v of virtual network %q", s, vn.AddressPrefixes, vn.Name)
		}
		for _, o := range siblings {
			if o.p.Overlaps(p) {
				bad(field, "%q overlaps subnet %q (%s)", s, o.name, o.p)
			}
		}
		siblings = append(siblings, placedSubnet{sn.Name, p})
	}
	return siblings
}

// validateSubnetTable checks the route table the subnet at field h names:
// a route table ID, or a table of its resource group in the network's
// location.
func validateSubnetTable(h, rgName string, vn TopologyVirtualNetwork, sn TopologySubnet, vnLoc string, tables map[string]string, bad func(field, format string, args ...any)) {
	if sn.RouteTable == "" {
		return
	}
	if strings.HasPrefix(sn.RouteTable, "/") {
		a, ok := api.ParseNetworkID(sn.RouteTable)
		if !ok || a.Type != api.TypeRouteTables || a.Child != "" {
			bad(h+".routeTable", "%q is not a route table ID (/subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Network/routeTables/<name>)", sn.RouteTable)
		}
	} else if loc, ok := tables[api.Key(sn.RouteTable)]; !ok {
		bad(h+".routeTable", "%q is not a route table of resource group %q; declare it there or give its full ID", sn.RouteTable, rgName)
	} else if loc != vnLoc {
		bad(h+".routeTable", "route table %q is in %s but virtual network %q is in %s; Azure associates only tables of the same location", sn.RouteTable, loc, vn.Name, vnLoc)
	}
}
