package observe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// InterconnectReader is the optional part of a Reader that reads the
// interconnect of the cluster's virtual networks: their peerings and
// gateways (internal/cloud/azure has it). Reading them takes rights routekeeper's
// role does not grant by default: a refusal is noted, not fatal.
type InterconnectReader interface {
	ListPeerings(ctx context.Context, vnetID string) ([]Peering, error)
	VirtualNetworkGateways(ctx context.Context, vnetID string, notOnPremises []string) ([]Gateway, error)
}

// interconnect is what links the cluster's networks with others, as read:
// the peered networks, the peerings and the gateways.
type interconnect struct {
	// vnets are the cluster's networks and their peers, with peerings and
	// gateways, in the order they were met.
	vnets []routing.VNet
	// subnets are the peered networks' subnets (Peered set).
	subnets []routing.Subnet
	// unread names what the identity may not read.
	unread []string
	err    error
}

// readInterconnect reads, for Scope.Routing, each network's peerings, the
// subnets (and the route tables they use) of the peered networks, and the
// gateways of all of them with the on-premises prefixes they learned, so
// that a trace can start in a peered network or on premises and cross
// peerings as Azure does. Peers of peers are not read. A read the
// identity may not do is named in unread; a network that is gone is left
// out; any other error is kept for RoutingState.
func (o *Observation) readInterconnect(ctx context.Context, c Reader) {
	ir, ok := c.(InterconnectReader)
	if !ok {
		return
	}
	ic := &o.interconnect
	index := map[string]int{}
	add := func(id, name string, space []netip.Prefix) int {
		k := armid.Key(id)
		if i, ok := index[k]; ok {
			return i
		}
		index[k] = len(ic.vnets)
		ic.vnets = append(ic.vnets, routing.VNet{ID: id, Name: name, AddressSpace: space})
		return index[k]
	}
	skip := func(what string, err error) bool {
		if errors.Is(err, armerr.ErrDenied) {
			ic.unread = append(ic.unread, what)
			return true
		}
		return errors.Is(err, armerr.ErrNotFound)
	}
	peerings := func(i int) error {
		v := &ic.vnets[i]
		ps, err := ir.ListPeerings(ctx, v.ID)
		switch {
		case skip("the peerings of "+v.Name, err):
			return nil
		case err != nil:
			return err // it names the operation and the network
		}
		for _, p := range ps {
			v.Peerings = append(v.Peerings, routing.Peering{Name: p.Name, RemoteVNetID: p.RemoteVNetID, State: p.State,
				RemoteAddressSpace:        parsePrefixes(p.RemoteAddressPrefixes),
				AllowVirtualNetworkAccess: p.AllowVirtualNetworkAccess, AllowForwardedTraffic: p.AllowForwardedTraffic,
				AllowGatewayTransit: p.AllowGatewayTransit, UseRemoteGateways: p.UseRemoteGateways})
		}
		return nil
	}
	for _, n := range o.Networks() {
		if n.Network != nil {
			add(n.Network.ID, n.Network.Name, parsePrefixes(n.Network.AddressPrefixes))
		}
	}
	cluster := len(ic.vnets)
	for i := range cluster {
		if ic.err = peerings(i); ic.err != nil {
			return
		}
		for _, p := range slices.Clone(ic.vnets[i].Peerings) {
			if _, seen := index[armid.Key(p.RemoteVNetID)]; seen {
				continue
			}
			rv, err := c.GetVirtualNetwork(ctx, p.RemoteVNetID)
			switch {
			case skip("virtual network "+p.RemoteVNetID, err):
				continue
			case err != nil:
				ic.err = fmt.Errorf("reading virtual network %s peered with %s: %w", p.RemoteVNetID, ic.vnets[i].Name, err)
				return
			}
			peer := add(rv.ID, rv.Name, parsePrefixes(rv.AddressPrefixes))
			for _, s := range RoutingSubnets(rv) {
				s.VNetID, s.Peered = rv.ID, true
				ic.subnets = append(ic.subnets, s)
				if s.RouteTableID != "" {
					if t := o.readTable(ctx, c, s.RouteTableID); skip("route table "+s.RouteTableID, t.Err) {
						delete(o.tables, armid.Key(s.RouteTableID))
					}
				}
			}
			if ic.err = peerings(peer); ic.err != nil {
				return
			}
		}
	}
	for i := range ic.vnets {
		v := &ic.vnets[i]
		var notOnPrem []string
		for _, p := range v.AddressSpace {
			notOnPrem = append(notOnPrem, p.String())
		}
		for _, p := range v.Peerings {
			for _, q := range p.RemoteAddressSpace {
				notOnPrem = append(notOnPrem, q.String())
			}
		}
		gws, err := ir.VirtualNetworkGateways(ctx, v.ID, notOnPrem)
		switch {
		case skip("the gateways of "+v.Name, err):
			continue
		case err != nil:
			ic.err = err
			return
		}
		for _, g := range gws {
			v.Gateways = append(v.Gateways, routing.Gateway{ID: g.ID, Name: g.Name, Type: g.Type, SubnetID: g.SubnetID, Learned: g.OnPremises})
		}
	}
}
