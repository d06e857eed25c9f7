package observe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/source"
)

// The networks peered with the node networks. Azure accepts a
// VirtualAppliance next hop in a network peered with the subnet's own
// ("Virtual network peering", service chaining), so a node whose IP lies
// in a peered network is a valid next hop, not NextHopOutsideVNet.
//
// What it costs: a node network's GET already carries its side of each
// peering (properties.virtualNetworkPeerings), so the peerings themselves
// cost no read. The peered networks' subnets cost one GET per network, and
// they are read only when a next hop lies outside the node networks and
// inside a Connected peering's remote address space — in a steady state
// (every node in a guarded network) nothing more is read. A reconcile of
// the KTHW example reads 3 resources (table, subnet, network) either way;
// with a node in a peered hub, 4 (docs/trace.md, "Next hops in a peered
// network"; internal/observe's TestPeeredNextHopReads).

// PeeredNetwork is a network peered (Connected) with a node network whose
// subnets were read, because a next hop lay in its address space or the
// interconnect was read (Scope.Routing).
type PeeredNetwork struct {
	Network *VirtualNetwork
	// From is the node network's name, Peering the name of its peering.
	From, Peering string
}

// peered is what an observation read of the peered networks.
type peered struct {
	networks []PeeredNetwork
	// unread names what the identity may not read.
	unread []string
	err    error
}

// NextHops are the addresses the nodes' routes point to (their internal
// IPs), for Scope.NextHops.
func NextHops(nodes []source.Node) []netip.Addr {
	var out []netip.Addr
	for _, n := range nodes {
		out = append(out, n.InternalIPs...)
	}
	return out
}

// readPeered reads the subnets of the Connected peers of the node networks
// whose remote address space holds a next hop that lies in no node
// network's subnet (see the comment at the top of this file).
func (o *Observation) readPeered(ctx context.Context, c Reader) {
	own, err := o.ownNodeNetworks()
	if err != nil || own == nil {
		return // next hops go unchecked anyway
	}
	var outside []netip.Addr
	for _, h := range o.scope.NextHops {
		if h.IsValid() && !inAny(own, h) {
			outside = append(outside, h)
		}
	}
	if len(outside) == 0 {
		return
	}
	read := map[string]bool{}
	for _, n := range o.nodeNetworkReads() {
		read[armid.Key(n.ID)] = true
	}
	for _, n := range o.nodeNetworkReads() {
		for _, p := range n.Network.Peerings {
			space := parsePrefixes(p.RemoteAddressPrefixes)
			if !connected(p) || read[armid.Key(p.RemoteVNetID)] || !holdsAny(space, outside) {
				continue
			}
			read[armid.Key(p.RemoteVNetID)] = true
			if s := o.interconnectNetwork(p.RemoteVNetID); s != nil {
				// Scope.Routing read it already.
				o.peered.networks = append(o.peered.networks, PeeredNetwork{Network: s, From: n.Network.Name, Peering: p.Name})
				continue
			}
			v, err := c.GetVirtualNetwork(ctx, p.RemoteVNetID)
			switch {
			case errors.Is(err, armerr.ErrDenied):
				o.peered.unread = append(o.peered.unread, "virtual network "+armid.Name(p.RemoteVNetID))
				continue
			case errors.Is(err, armerr.ErrNotFound):
				continue
			case err != nil:
				o.peered.err = fmt.Errorf("reading virtual network %s, peered with %s: %w", p.RemoteVNetID, n.Network.Name, err)
				return
			}
			o.peered.networks = append(o.peered.networks, PeeredNetwork{Network: v, From: n.Network.Name, Peering: p.Name})
		}
	}
}

// interconnectNetwork is the peered network id, with its subnets, as the
// interconnect holds it (Scope.Routing), nil when it was not read there.
func (o *Observation) interconnectNetwork(id string) *VirtualNetwork {
	var v *VirtualNetwork
	for _, an := range o.interconnect.vnets {
		if armid.Same(an.ID, id) {
			v = &VirtualNetwork{ID: an.ID, Name: an.Name}
		}
	}
	if v == nil {
		return nil
	}
	for _, s := range o.interconnect.subnets {
		if armid.Same(s.VNetID, id) {
			sn := Subnet{ID: s.ID, Name: s.Name, RouteTableID: s.RouteTableID}
			for _, p := range s.Prefixes {
				sn.AddressPrefixes = append(sn.AddressPrefixes, p.String())
			}
			v.Subnets = append(v.Subnets, sn)
		}
	}
	return v
}

// nodeNetworkReads are the node networks read: the guarded subnets'.
func (o *Observation) nodeNetworkReads() []NetworkRead {
	var out []NetworkRead
	seen := map[string]bool{}
	for _, id := range o.scope.Subnets {
		vid, err := armid.VNetOfSubnet(id)
		if err != nil || seen[armid.Key(vid)] {
			continue
		}
		seen[armid.Key(vid)] = true
		if n, ok := o.networks[armid.Key(vid)]; ok && n.Network != nil {
			out = append(out, n)
		}
	}
	return out
}

// PeeredNetworks are the peered networks whose subnets count as node
// networks (a next hop in them is valid), in the order they were read.
func (o *Observation) PeeredNetworks() []PeeredNetwork {
	return append([]PeeredNetwork(nil), o.peered.networks...)
}

// NodeNetworksNote says, for a NextHopOutsideVNet message, what the node
// networks cover beyond the guarded networks: the peered networks read, or
// the ones that could not be. "" when neither.
func (o *Observation) NodeNetworksNote() string {
	var b strings.Builder
	if len(o.peered.networks) > 0 {
		var names []string
		for _, p := range o.peered.networks {
			names = append(names, p.Network.Name)
		}
		fmt.Fprintf(&b, " or of the networks peered with them (%s)", strings.Join(names, ", "))
	}
	if len(o.peered.unread) > 0 {
		fmt.Fprintf(&b, "; %s could not be read (Microsoft.Network/virtualNetworks/read), so a node there is not recognised", strings.Join(o.peered.unread, ", "))
	}
	return b.String()
}

func connected(p Peering) bool { return strings.EqualFold(p.State, "Connected") }

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func holdsAny(ps []netip.Prefix, as []netip.Addr) bool {
	for _, a := range as {
		if inAny(ps, a) {
			return true
		}
	}
	return false
}
