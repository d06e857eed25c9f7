package dataplane

import (
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// interconnectOf is the interconnect in a fabric's state, for FromState:
// the peerings and gateways in internal/routing's model, and which network
// holds an address.
type interconnectOf struct {
	vnets []routing.VNet
}

func newInterconnectOf(st *network.State) *interconnectOf {
	return &interconnectOf{vnets: st.RoutingVNets()}
}

func (a *interconnectOf) find(id string) *routing.VNet {
	for i := range a.vnets {
		if strings.EqualFold(a.vnets[i].ID, id) {
			return &a.vnets[i]
		}
	}
	return nil
}

// network is what the system routes of the network's subnets depend on:
// its address space (IPv4: the data plane's), peerings and gateway routes.
func (a *interconnectOf) network(id string, space []netip.Prefix) routing.Network {
	n, ok := routing.NetworkOf(a.vnets, id)
	if !ok {
		return routing.Network{AddressSpace: space}
	}
	n.AddressSpace = space
	return n
}

// peers are the networks the network has a Connected peering with.
func (a *interconnectOf) peers(id string) []Peer {
	v := a.find(id)
	if v == nil {
		return nil
	}
	var out []Peer
	for _, p := range v.Peerings {
		if r := a.find(p.RemoteVNetID); r != nil && p.Connected() {
			out = append(out, Peer{VNet: r.Name, AllowForwarded: p.AllowForwardedTraffic})
		}
	}
	return out
}

// holder is the network whose address space holds addr.
func (a *interconnectOf) holder(addr netip.Addr) *routing.VNet {
	for i := range a.vnets {
		for _, p := range a.vnets[i].AddressSpace {
			if p.Contains(addr) {
				return &a.vnets[i]
			}
		}
	}
	return nil
}

// routes are the effective routes of a subnet of network id, with the
// peer each route leads into: a VNetPeering route's peer, or the peer
// that holds a virtual appliance. An appliance in a network that is not
// peered cannot be reached: the route drops.
func (a *interconnectOf) routes(id string, n routing.Network, udrs []network.StateRoute) []Route {
	self := a.find(id)
	byPrefix := map[netip.Prefix]Route{}
	for p, r := range activeIPv4(n, udrs) {
		pr := planeRoute(r)
		switch {
		case self == nil:
		case r.NextHopType == routing.VNetPeering:
			for _, peer := range self.Peerings {
				if !peer.Connected() {
					continue
				}
				for _, s := range peer.RemoteAddressSpace {
					if s.Bits() <= p.Bits() && s.Contains(p.Addr()) {
						if rv := a.find(peer.RemoteVNetID); rv != nil {
							pr.Peer = rv.Name
						}
					}
				}
			}
		case pr.Kind == Appliance:
			h := a.holder(r.NextHopIP)
			if h == nil || strings.EqualFold(h.ID, self.ID) {
				break
			}
			pr.Kind, pr.Via = Blackhole, netip.Addr{}
			for _, peer := range self.Peerings {
				if peer.Connected() && strings.EqualFold(peer.RemoteVNetID, h.ID) {
					pr.Kind, pr.Via, pr.Peer = Appliance, r.NextHopIP, h.Name
				}
			}
		}
		byPrefix[p] = pr
	}
	return sortedRoutes(byPrefix)
}
