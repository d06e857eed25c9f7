package inventory

import (
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Reservations are what pod CIDRs must stay away from, from an
// observation of the cluster's network (the observer's, with the node
// networks and the guarded subnets read): the prefixes held by the routes
// that are not this cluster's (own says which are) in every route table
// read — the one routekeeper keeps and those it was migrated to, and the
// table each guarded subnet really uses (after a swap, not the configured
// one) — and the address spaces of the node networks. A table that could
// not be read is an error naming it; a network that could not be read is a
// note (its address space is not avoided); one that does not exist
// reserves nothing.
func Reservations(o *observe.Observation, own route.Ownership) (rs []ipam.Reservation, notes []string, err error) {
	var out []ipam.Reservation
	for _, n := range o.Networks() {
		switch {
		case n.Err != nil:
			notes = append(notes, fmt.Sprintf("pod CIDR allocation cannot avoid the address space of virtual network %s, which could not be read: %v", n.ID, n.Err))
		case n.Network != nil:
			rs, err := AddressSpaces(n.Network.Name, n.Network.AddressPrefixes)
			if err != nil {
				return nil, notes, err
			}
			out = append(out, rs...)
		}
	}
	for _, tr := range o.Tables() {
		if tr.Err != nil {
			return nil, notes, fmt.Errorf("reading route table %s for the prefixes its other routes hold: %w", tr.ID, tr.Err)
		}
		if t := tr.Table; t != nil {
			out = append(out, foreignRoutes(t, own)...)
		}
	}
	return out, notes, nil
}

// foreignRoutes reserves the prefixes of t's routes that are not this
// cluster's (custom routes such as a firewall's, another cluster's).
func foreignRoutes(t *route.Table, own route.Ownership) []ipam.Reservation {
	var out []ipam.Reservation
	for i, c := range own.ClassifyTable(t) {
		if c.Owner == route.OwnerThisCluster || !c.Prefix.IsValid() {
			continue
		}
		rt := &t.Routes[i]
		out = append(out, ipam.Reservation{
			Prefix:  c.Prefix,
			What:    fmt.Sprintf("route %s (%s, next hop %s %s) in route table %s, not routekeeper's (%s)", rt.Name, rt.AddressPrefix, rt.NextHopType, hopAddr(rt.NextHopIP), t.Name, c.Why),
			Route:   true,
			NextHop: rt.NextHopIP,
		})
	}
	return out
}

func hopAddr(a netip.Addr) string {
	if a.IsValid() {
		return a.String()
	}
	return "-"
}

// AddressSpaces turns the address prefixes of a virtual network into
// reservations: pod CIDRs must not overlap the network they are routed
// in. A prefix that is not a CIDR is an error naming the network and value.
func AddressSpaces(vnet string, prefixes []string) ([]ipam.Reservation, error) {
	var out []ipam.Reservation
	for i, s := range prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("virtual network %s: addressSpace.addressPrefixes[%d] %q is not a CIDR", vnet, i, s)
		}
		out = append(out, ipam.Reservation{Prefix: p.Masked(), What: "address space " + p.Masked().String() + " of virtual network " + vnet})
	}
	return out, nil
}
