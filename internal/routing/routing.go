// Package routing models how Azure chooses the route of a packet that
// leaves a subnet: the subnet's effective routes are the system routes of
// its virtual network plus the user-defined routes of the route table the
// subnet really uses, and the route of a destination is the longest prefix
// that contains it; for equal prefixes a user route wins over a BGP route,
// which wins over a system route (the system route is then shown Invalid,
// as Azure's effective routes show it).
//
// The package is pure: callers read the network (CLI, doctor, the fabric)
// and pass it in. trace, doctor, the fabric's effectiveRouteTable and
// nextHop APIs and its data plane all decide with it, so they agree.
package routing

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/gaissmai/bart"

	"github.com/routekeeper/routekeeper/internal/route"
)

// NextHopType is where a route sends a packet, as ARM spells it in
// effective routes and next-hop answers.
type NextHopType string

// The next hop types of effective routes.
const (
	VirtualAppliance      NextHopType = "VirtualAppliance"
	VnetLocal             NextHopType = "VnetLocal"
	Internet              NextHopType = "Internet"
	None                  NextHopType = "None"
	VirtualNetworkGateway NextHopType = "VirtualNetworkGateway"
	VNetPeering           NextHopType = "VNetPeering"
)

// Sources of an effective route, as ARM spells them.
const (
	SourceDefault = "Default" // a system route
	SourceUser    = "User"    // a route of the subnet's route table
	// SourceBGP is a route learned from a virtual network gateway.
	SourceBGP = "VirtualNetworkGateway"
)

// States of an effective route.
const (
	StateActive  = "Active"
	StateInvalid = "Invalid" // replaced by a route of the same prefix
)

// Route is one effective route of a subnet.
type Route struct {
	// Name is the user route's name; "" for system routes.
	Name        string       `json:"name,omitempty"`
	Source      string       `json:"source"`
	State       string       `json:"state"`
	Prefix      netip.Prefix `json:"addressPrefix"`
	NextHopType NextHopType  `json:"nextHopType"`
	NextHopIP   netip.Addr   `json:"nextHopIpAddress,omitzero"`
}

// IsSystem reports whether r is one of Azure's system routes.
func (r Route) IsSystem() bool { return r.Source == SourceDefault }

// Network is what the system routes of a subnet depend on: its virtual
// network's address space and, when known, the address spaces of the
// peered virtual networks.
type Network struct {
	AddressSpace []netip.Prefix
	// Peerings are the prefixes of peered virtual networks (VNetPeering).
	// Optional: nil leaves peering routes out.
	Peerings []netip.Prefix
	// Gateway are the prefixes a virtual network gateway learned by BGP
	// (next hop VirtualNetworkGateway, source VirtualNetworkGateway).
	// Optional.
	Gateway []netip.Prefix
}

// The prefixes Azure drops by default (RFC 1918 and RFC 6598), unless the
// virtual network's address space covers them.
var noneRoutes = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
}

var (
	default4 = netip.MustParsePrefix("0.0.0.0/0")
	default6 = netip.MustParsePrefix("::/0")
)

// System returns the system routes of a subnet of n, in the order Azure
// lists them: the address space (VnetLocal), peerings (VNetPeering), the
// default route to the Internet (also ::/0 when the address space has IPv6),
// then the private ranges that are dropped (None) unless the address space
// covers them.
func System(n Network) []Route {
	var out []Route
	seen := map[netip.Prefix]bool{}
	add := func(p netip.Prefix, hop NextHopType) {
		p = p.Masked()
		if !p.IsValid() || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, Route{Source: SourceDefault, State: StateActive, Prefix: p, NextHopType: hop})
	}
	has6 := false
	for _, p := range n.AddressSpace {
		add(p, VnetLocal)
		has6 = has6 || p.Addr().Is6()
	}
	for _, p := range n.Peerings {
		add(p, VNetPeering)
	}
	add(default4, Internet)
	if has6 {
		add(default6, Internet)
	}
	for _, p := range noneRoutes {
		covered := slices.ContainsFunc(n.AddressSpace, func(a netip.Prefix) bool {
			return a.Addr().Is4() && a.Bits() <= p.Bits() && a.Masked().Contains(p.Addr())
		})
		if !covered {
			add(p, None)
		}
	}
	return out
}

// Effective returns the effective routes of a subnet of n that uses a route
// table holding udrs (nil when the subnet has no route table): the system
// routes, then the user routes. A system or BGP route whose prefix a user
// route also has is Invalid. User routes whose prefix is a service tag rather than
// a CIDR are left out: they cannot be resolved offline. So are user routes
// whose provisioning state is Failed: their write did not complete, and
// routekeeper's verdict does not count them either (a route Updating under
// another writer's operation still carries traffic).
func Effective(n Network, udrs []route.Route) []Route {
	sys := System(n)
	for _, p := range n.Gateway {
		sys = append(sys, Route{Source: SourceBGP, State: StateActive, Prefix: p.Masked(), NextHopType: VirtualNetworkGateway})
	}
	user := make([]Route, 0, len(udrs))
	byPrefix := map[netip.Prefix]bool{}
	for _, r := range udrs {
		p, ok := udrPrefix(r)
		if !ok || r.ProvisioningState == "Failed" {
			continue
		}
		byPrefix[p] = true
		user = append(user, Route{
			Name: r.Name, Source: SourceUser, State: StateActive, Prefix: p,
			NextHopType: NextHopType(r.NextHopType), NextHopIP: r.NextHopIP,
		})
	}
	// A default route of the user (or the gateway: forced tunnelling)
	// replaces the Internet route and also the None routes of the private
	// ranges: with 0.0.0.0/0 -> firewall, traffic to other private ranges
	// goes to the firewall, which is how hub-and-spoke networks route
	// between spokes. Azure shows those None routes Invalid.
	forced := byPrefix[default4]
	for _, p := range n.Gateway {
		forced = forced || p.Masked() == default4
	}
	for i := range sys {
		r := &sys[i]
		if byPrefix[r.Prefix] || r.Source == SourceDefault && forced && r.NextHopType == None || r.Source == SourceBGP && inVNetRoute(sys, r.Prefix) {
			r.State = StateInvalid
		}
	}
	return append(sys, user...)
}

// inVNetRoute reports whether p lies inside the prefix of a system route
// to the virtual network or a peered one. Azure prefers those system
// routes "even if BGP routes are more specific" ("Virtual network traffic
// routing", how Azure selects a route): a gateway route for such a prefix
// never carries traffic, and is shown Invalid here.
func inVNetRoute(sys []Route, p netip.Prefix) bool {
	for _, r := range sys {
		if r.Source == SourceDefault && (r.NextHopType == VnetLocal || r.NextHopType == VNetPeering) &&
			r.Prefix.Addr().BitLen() == p.Addr().BitLen() && r.Prefix.Bits() <= p.Bits() && r.Prefix.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func udrPrefix(r route.Route) (netip.Prefix, bool) {
	p := r.Prefix
	if !p.IsValid() {
		var err error
		if p, err = netip.ParsePrefix(r.AddressPrefix); err != nil {
			return netip.Prefix{}, false
		}
	}
	return p.Masked(), true
}

// rank orders routes of one prefix: active before invalid, then user before
// BGP before system.
func rank(r Route) int {
	n := 0
	if r.State == StateInvalid {
		n = 10
	}
	switch r.Source {
	case SourceUser:
	case SourceBGP:
		n++
	default:
		n += 2
	}
	return n
}

// Selector chooses the route of a destination among a subnet's effective
// routes. It is immutable and safe for concurrent use.
type Selector struct {
	// best holds the winning route of each prefix that has an active one;
	// all holds every route of each prefix, winner first.
	best bart.Table[Route]
	all  bart.Table[[]Route]
}

// NewSelector compiles routes (usually Effective's result) for lookups.
func NewSelector(routes []Route) *Selector {
	by := map[netip.Prefix][]Route{}
	for _, r := range routes {
		p := r.Prefix.Masked()
		by[p] = append(by[p], r)
	}
	s := &Selector{}
	for p, rs := range by {
		slices.SortStableFunc(rs, func(a, b Route) int { return cmp.Compare(rank(a), rank(b)) })
		s.all.Insert(p, rs)
		if rs[0].State != StateInvalid {
			s.best.Insert(p, rs[0])
		}
	}
	return s
}

// Lookup returns the route Azure uses for a packet to addr: the longest
// prefix that contains it, and for equal prefixes user before BGP before
// system; Invalid routes are never chosen. ok is false when no route
// contains addr (a packet Azure drops).
func (s *Selector) Lookup(addr netip.Addr) (Route, bool) {
	return s.best.Lookup(addr.Unmap())
}

// Matches returns every route that contains addr, the one Lookup chooses
// first, then the routes it shadows: those of the same prefix that lose,
// then the less specific ones, longest first.
func (s *Selector) Matches(addr netip.Addr) []Route {
	addr = addr.Unmap()
	var out []Route
	for _, rs := range s.all.Supernets(netip.PrefixFrom(addr, addr.BitLen())) {
		out = append(out, rs...)
	}
	return out
}
