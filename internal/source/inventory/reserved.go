package inventory

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/route"
)

// TableReader reads a route table; the cloud client is one.
type TableReader interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
}

// TableReservations returns an Options.Reserved that reads the route table
// tableID on every call and reserves the prefixes of its routes that own
// says are not this cluster's (custom routes such as a firewall's, another
// cluster's), together with fixed (the address spaces of the virtual
// networks, read once by the caller). A table that does not exist yet holds
// no routes; any other read error is returned.
func TableReservations(r TableReader, tableID string, own route.Ownership, fixed []ipam.Reservation) func(context.Context) ([]ipam.Reservation, error) {
	return func(ctx context.Context) ([]ipam.Reservation, error) {
		out := append([]ipam.Reservation(nil), fixed...)
		t, err := r.GetRouteTable(ctx, tableID)
		if errors.Is(err, armerr.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading route table %s for the prefixes its other routes hold: %w", tableID, err)
		}
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
		return out, nil
	}
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
