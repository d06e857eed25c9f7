package dataplane

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/source"
)

// FromState computes the Spec of a fabric's live state: every virtual
// network with its subnets and their effective routes, and a node for each
// of nodes (the fabric has no network interfaces yet: nodes come from an
// inventory or the cluster) in the subnet that holds its internal IP, with
// podsPerNode pods at the first addresses after .1 of its pod CIDR.
// A node whose address is in no subnet is left out and named in an
// *UnplacedError returned with the Spec of the others.
func FromState(st *fabric.State, nodes []source.Node, podsPerNode int) (Spec, error) {
	var spec Spec
	tables := map[string]*fabric.StateRouteTable{}
	for i := range st.RouteTables {
		tables[strings.ToLower(st.RouteTables[i].ID)] = &st.RouteTables[i]
	}
	type where struct{ vnet, subnet string }
	var placed []struct {
		p netip.Prefix
		w where
	}
	for _, v := range st.VirtualNetworks {
		var space []netip.Prefix
		for _, s := range v.AddressPrefixes {
			p, err := netip.ParsePrefix(s)
			if err != nil || !p.Addr().Is4() {
				continue // IPv6 space: the data plane is IPv4 only
			}
			space = append(space, p.Masked())
		}
		vn := VNet{Name: v.Name}
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
			var udrs []fabric.StateRoute
			if sn.RouteTable != "" {
				if t, ok := tables[strings.ToLower(sn.RouteTable)]; ok {
					udrs = t.Routes
				}
			}
			vn.Subnets = append(vn.Subnets, Subnet{Name: sn.Name, Prefix: prefix, Routes: EffectiveRoutes(space, udrs)})
			placed = append(placed, struct {
				p netip.Prefix
				w where
			}{prefix, where{v.Name, sn.Name}})
		}
		spec.VNets = append(spec.VNets, vn)
	}
	var errs []error
	for _, n := range nodes {
		ip, ok := firstIPv4(n.InternalIPs)
		if !ok {
			errs = append(errs, fmt.Errorf("node %q: no IPv4 internal address (the data plane is IPv4 only)", n.Name))
			continue
		}
		var w *where
		for i := range placed {
			if placed[i].p.Contains(ip) {
				w = &placed[i].w
				break
			}
		}
		if w == nil {
			errs = append(errs, fmt.Errorf("node %q: internal IP %s is in no subnet of the fabric", n.Name, ip))
			continue
		}
		node := Node{Name: n.Name, VNet: w.vnet, Subnet: w.subnet, IP: ip}
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
		spec.Nodes = append(spec.Nodes, node)
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, err
	}
	if len(errs) > 0 {
		return spec, &UnplacedError{Err: errors.Join(errs...)}
	}
	return spec, nil
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

// noneRanges are the private and shared ranges that Azure's system routes
// send to next hop None unless the VNet's address space holds them.
var noneRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
}

// EffectiveRoutes is the route selection of a subnet in a VNet with
// address space space whose route table holds udrs: Azure's system routes
// (the address space → VnetLocal, 0.0.0.0/0 → Internet, the private and
// shared ranges → None unless inside the address space) with each UDR
// replacing the system route of the same prefix; the router then takes the
// longest prefix that matches.
//
// TODO(routing): this is a local stand-in for internal/routing.Effective
// (issue 12), to be replaced by it when it lands: the data plane must
// forward by the same computation as trace and doctor. Service-tag
// prefixes are skipped (the fabric has no tag ranges).
func EffectiveRoutes(space []netip.Prefix, udrs []fabric.StateRoute) []Route {
	byPrefix := map[netip.Prefix]Route{}
	byPrefix[netip.MustParsePrefix("0.0.0.0/0")] = Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Kind: Unreachable, Name: "system: Internet"}
	for _, r := range noneRanges {
		inside := false
		for _, s := range space {
			if s.Bits() <= r.Bits() && s.Contains(r.Addr()) {
				inside = true
			}
		}
		if !inside {
			byPrefix[r] = Route{Prefix: r, Kind: Blackhole, Name: "system: None"}
		}
	}
	for _, s := range space {
		byPrefix[s] = Route{Prefix: s, Kind: Deliver, Name: "system: VnetLocal"}
	}
	for _, u := range udrs {
		p, err := netip.ParsePrefix(u.AddressPrefix)
		if err != nil || !p.Addr().Is4() {
			continue
		}
		p = p.Masked()
		r := Route{Prefix: p, Name: u.Name}
		switch strings.ToLower(u.NextHopType) {
		case "virtualappliance":
			r.Kind = Appliance
			r.Via, _ = netip.ParseAddr(u.NextHopIPAddress)
			if !r.Via.Is4() {
				r.Kind = Blackhole
			}
		case "vnetlocal":
			r.Kind = Deliver
		case "none":
			r.Kind = Blackhole
		default: // Internet, VirtualNetworkGateway: nothing leaves the lab
			r.Kind = Unreachable
		}
		byPrefix[p] = r
	}
	out := make([]Route, 0, len(byPrefix))
	for _, r := range byPrefix {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	return out
}
