package dataplane

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
)

// FromState computes the Spec of a fabric's live state: every virtual
// network with its subnets and their effective routes, and a node for each
// of nodes (from an inventory or the cluster: pod CIDRs are not an ARM
// property) in the subnet of the network interface that holds its internal
// IP (in the subnet whose prefix holds it when the fabric has no NICs;
// a NIC of no node is a node without pods), with podsPerNode pods at the first addresses after .1 of its pod CIDR.
// A node whose address is in no subnet is left out and named in an
// *UnplacedError returned with the Spec of the others.
func FromState(st *network.State, nodes []source.Node, podsPerNode int) (Spec, error) {
	var spec Spec
	var placed []placedPrefix
	spec.VNets, placed = vnetsOf(st)
	nicAt := nicPlaces(st)
	// With network interfaces in the fabric, they place the nodes, as NICs
	// do in Azure: a node is where the NIC holding its address is, a NIC
	// without a node of the inventory is a node without pods, and a node
	// no NIC holds is left out. Without any, a node is placed in the
	// subnet whose prefix holds its address.
	useNICs := len(st.NetworkInterfaces) > 0
	var errs []error
	covered := map[netip.Addr]bool{}
	for _, n := range nodes {
		node, err := placeNode(n, useNICs, nicAt, placed, podsPerNode)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		covered[node.IP] = true
		spec.Nodes = append(spec.Nodes, node)
	}
	for _, ip := range slices.SortedFunc(maps.Keys(nicAt), netip.Addr.Compare) {
		if !covered[ip] {
			at := nicAt[ip]
			spec.Nodes = append(spec.Nodes, Node{Name: at.name, VNet: at.w.vnet, Subnet: at.w.subnet, IP: ip, NoForwarding: !at.forwarding})
		}
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, err
	}
	if len(errs) > 0 {
		return spec, &UnplacedError{Err: errors.Join(errs...)}
	}
	return spec, nil
}

// where is a subnet of a virtual network, by their names.
type where struct{ vnet, subnet string }

// placedPrefix is the IPv4 prefix of a subnet.
type placedPrefix struct {
	p netip.Prefix
	w where
}

// nicPlace is where a NIC's address is, and whether the NIC forwards.
type nicPlace struct {
	name       string
	w          where
	forwarding bool
}

// vnetsOf is the state's virtual networks as the data plane builds them
// (IPv4 only): each network's space and peers, each subnet's prefix and
// the routes its route table and the interconnect give it; and the subnet
// prefixes, in order, for placing nodes by address.
func vnetsOf(st *network.State) ([]VNet, []placedPrefix) {
	tables := map[string]*network.StateRouteTable{}
	for i := range st.RouteTables {
		tables[strings.ToLower(st.RouteTables[i].ID)] = &st.RouteTables[i]
	}
	var vnets []VNet
	var placed []placedPrefix
	ic := newInterconnectOf(st) // peerings and gateways (convert_interconnect.go)
	for _, v := range st.VirtualNetworks {
		var space []netip.Prefix
		for _, s := range v.AddressPrefixes {
			p, err := netip.ParsePrefix(s)
			if err != nil || !p.Addr().Is4() {
				continue // IPv6 space: the data plane is IPv4 only
			}
			space = append(space, p.Masked())
		}
		vn := VNet{Name: v.Name, Space: space, Peers: ic.peers(v.ID)}
		for _, sn := range v.Subnets {
			var prefix netip.Prefix
			for _, s := range sn.AddressPrefixes {
				if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
					prefix = p.Masked()
					break
				}
			}
			if !prefix.IsValid() {
				continue
			}
			var udrs []network.StateRoute
			network := ic.network(v.ID, space)
			if sn.RouteTable != "" {
				if t, ok := tables[strings.ToLower(sn.RouteTable)]; ok {
					udrs = t.Routes
					if t.DisableBgpRoutePropagation {
						network.Gateway = nil
					}
				}
			}
			vn.Subnets = append(vn.Subnets, Subnet{Name: sn.Name, Prefix: prefix, Routes: ic.routes(v.ID, network, udrs)})
			placed = append(placed, placedPrefix{prefix, where{v.Name, sn.Name}})
		}
		vnets = append(vnets, vn)
	}
	return vnets, placed
}

// nicPlaces is where the IPv4 addresses of the state's network interfaces
// are, by address.
func nicPlaces(st *network.State) map[netip.Addr]nicPlace {
	byID := map[string]where{}
	for _, v := range st.VirtualNetworks {
		for _, sn := range v.Subnets {
			byID[strings.ToLower(sn.ID)] = where{v.Name, sn.Name}
		}
	}
	nicAt := map[netip.Addr]nicPlace{}
	for _, nic := range st.NetworkInterfaces {
		for _, a := range nic.IPs {
			ip, err := netip.ParseAddr(a.Address)
			w, ok := byID[strings.ToLower(a.Subnet)]
			if err != nil || !ip.Is4() || !ok {
				continue
			}
			nicAt[ip] = nicPlace{nic.Name, w, nic.IPForwarding}
		}
	}
	return nicAt
}

// placeNode places node n by its first IPv4 internal address: where the
// NIC holding it is (useNICs), else in the subnet whose prefix holds it;
// the node gets its IPv4 pod CIDR and podsPerNode pod addresses.
func placeNode(n source.Node, useNICs bool, nicAt map[netip.Addr]nicPlace, placed []placedPrefix, podsPerNode int) (Node, error) {
	ip, ok := firstIPv4(n.InternalIPs)
	if !ok {
		return Node{}, fmt.Errorf("node %q: no IPv4 internal address (the data plane is IPv4 only)", n.Name)
	}
	var w *where
	if useNICs {
		if at, ok := nicAt[ip]; ok {
			w = &at.w
		}
	} else {
		for i := range placed {
			if placed[i].p.Contains(ip) {
				w = &placed[i].w
				break
			}
		}
	}
	if w == nil {
		if useNICs {
			return Node{}, fmt.Errorf("node %q: no network interface of the fabric holds its internal IP %s", n.Name, ip)
		}
		return Node{}, fmt.Errorf("node %q: internal IP %s is in no subnet of the fabric", n.Name, ip)
	}
	node := Node{Name: n.Name, VNet: w.vnet, Subnet: w.subnet, IP: ip}
	if at, ok := nicAt[ip]; useNICs && ok {
		node.NoForwarding = !at.forwarding
	}
	for _, c := range n.PodCIDRs {
		if c.Addr().Is4() {
			node.PodCIDR = c.Masked()
			break
		}
	}
	if node.PodCIDR.IsValid() {
		a := gateway(node.PodCIDR).Next()
		for i := 0; i < podsPerNode && node.PodCIDR.Contains(a); i++ {
			node.Pods = append(node.Pods, a)
			a = a.Next()
		}
	}
	return node, nil
}

// UnplacedError lists the nodes FromState could not place (no IPv4
// address, or none in a subnet of the fabric: the VNet may not exist yet).
// The Spec returned with it holds every other node.
type UnplacedError struct{ Err error }

func (e *UnplacedError) Error() string { return "nodes left out of the data plane: " + e.Err.Error() }
func (e *UnplacedError) Unwrap() error { return e.Err }

func firstIPv4(as []netip.Addr) (netip.Addr, bool) {
	for _, a := range as {
		if a.Is4() || a.Is4In6() {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// EffectiveRoutes is the route selection of a subnet in a VNet with
// address space space whose route table holds udrs, as internal/routing
// computes it for trace, doctor and the fabric's effectiveRouteTable and
// nextHop: Azure's system routes with the user routes that replace them.
// Only the Active IPv4 routes are programmed (the data plane is IPv4
// only); service-tag prefixes are skipped (the fabric has no tag ranges).
func EffectiveRoutes(space []netip.Prefix, udrs []network.StateRoute) []Route {
	best := activeIPv4(routing.Network{AddressSpace: space}, udrs)
	byPrefix := make(map[netip.Prefix]Route, len(best))
	for p, r := range best {
		byPrefix[p] = planeRoute(r)
	}
	return sortedRoutes(byPrefix)
}

// activeIPv4 are the Active IPv4 effective routes of a subnet, one per
// prefix: the one Azure uses.
func activeIPv4(n routing.Network, udrs []network.StateRoute) map[netip.Prefix]routing.Route {
	rs := make([]route.Route, 0, len(udrs))
	for _, u := range udrs {
		rs = append(rs, stateRoute(u))
	}
	// Azure's order for routes of the same prefix: user, then BGP, then
	// system (routing marks system routes a user route replaces Invalid).
	rank := map[string]int{routing.SourceUser: 0, routing.SourceBGP: 1, routing.SourceDefault: 2}
	best := map[netip.Prefix]routing.Route{}
	for _, r := range routing.Effective(n, rs) {
		if r.State != routing.StateActive || !r.Prefix.Addr().Is4() {
			continue
		}
		if b, dup := best[r.Prefix]; dup && rank[b.Source] <= rank[r.Source] {
			continue
		}
		best[r.Prefix] = r
	}
	return best
}

// sortedRoutes lists routes in address order.
func sortedRoutes(byPrefix map[netip.Prefix]Route) []Route {
	out := make([]Route, 0, len(byPrefix))
	for _, r := range byPrefix {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	return out
}

// planeRoute is how the VNet router forwards by an effective route.
func planeRoute(r routing.Route) Route {
	out := Route{Prefix: r.Prefix, Name: r.Name}
	if r.IsSystem() {
		out.Name = "system: " + string(r.NextHopType)
	}
	switch r.NextHopType {
	case routing.VirtualAppliance:
		out.Kind, out.Via = Appliance, r.NextHopIP
		if !r.NextHopIP.Is4() {
			out.Kind = Blackhole
		}
	case routing.VnetLocal, routing.VNetPeering:
		out.Kind = Deliver
	case routing.None:
		out.Kind = Blackhole
	default: // Internet, VirtualNetworkGateway: nothing leaves the lab
		out.Kind = Unreachable
	}
	return out
}

// stateRoute is a route of the fabric's state in routekeeper's model.
func stateRoute(u network.StateRoute) route.Route {
	r := route.Route{Name: u.Name, AddressPrefix: u.AddressPrefix, NextHopType: route.NextHopType(u.NextHopType), ProvisioningState: u.ProvisioningState}
	if p, err := netip.ParsePrefix(u.AddressPrefix); err == nil {
		r.Prefix = p.Masked()
	}
	r.NextHopIP, _ = netip.ParseAddr(u.NextHopIPAddress)
	return r
}

// RoutingState is the fabric's live state as internal/routing traces it
// (what `routekeeper trace` reads through ARM, the interconnect
// included), with nodes.
func RoutingState(st *network.State, nodes []source.Node) routing.State {
	rs := routing.State{Nodes: nodes, VNets: st.RoutingVNets()}
	for _, t := range st.RouteTables {
		tbl := &route.Table{ID: t.ID, Name: t.Name, ResourceGroup: t.ResourceGroup, Location: t.Location, Tags: t.Tags}
		for _, r := range t.Routes {
			tbl.Routes = append(tbl.Routes, stateRoute(r))
		}
		rs.Tables = append(rs.Tables, tbl)
	}
	for _, v := range st.VirtualNetworks {
		var n routing.Network
		for _, s := range v.AddressPrefixes {
			if p, err := netip.ParsePrefix(s); err == nil {
				n.AddressSpace = append(n.AddressSpace, p.Masked())
			}
		}
		for _, sn := range v.Subnets {
			sub := routing.Subnet{ID: sn.ID, Name: sn.Name, VNetName: v.Name, VNet: n, RouteTableID: sn.RouteTable, VNetID: v.ID}
			for _, s := range sn.AddressPrefixes {
				if p, err := netip.ParsePrefix(s); err == nil {
					sub.Prefixes = append(sub.Prefixes, p.Masked())
				}
			}
			rs.Subnets = append(rs.Subnets, sub)
		}
	}
	return rs
}
