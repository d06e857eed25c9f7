package network

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// interconnect is what joins the clusters' networks to each other and to
// premises, read from the state in one go: every virtual network (with its peerings), gateway, local network
// gateway and connection, of every subscription. It turns them into
// internal/routing's model (routing.VNet) for the effective routes, the
// next hop and the data plane.
type interconnect struct {
	vnets    map[string]*armnetwork.VirtualNetwork // by key(ID)
	order    []string                              // keys of vnets, in the order read
	gateways []*interconnectGateway
	sitesBy  map[string]*armnetwork.LocalNetworkGateway // by key(ID)
	conns    []*armnetwork.VirtualNetworkGatewayConnection
}

type interconnectGateway struct {
	id, vnetID, subnetID string
	doc                  *gatewayDoc
}

// site is an on-premises site a gateway reaches: its prefixes and address.
type site struct {
	prefixes []netip.Prefix
	address  string
}

func newInterconnect() *interconnect {
	return &interconnect{vnets: map[string]*armnetwork.VirtualNetwork{}, sitesBy: map[string]*armnetwork.LocalNetworkGateway{}}
}

// add takes one stored document of a type the interconnect cares about; others are
// ignored.
func (a *interconnect) add(typ, id string, doc []byte) error {
	switch typ {
	case api.TypeVirtualNetworks:
		v, err := decodeVNet(doc)
		if err != nil {
			return err
		}
		if v.ID == nil {
			v.ID = api.Ptr(id)
		}
		a.vnets[api.Key(id)] = v
		a.order = append(a.order, api.Key(id))
	case TypeVNetGateways:
		d, err := decodeGateway(doc)
		if err != nil {
			return err
		}
		vnetID, subnetID := gatewayVNet(d.gw)
		a.gateways = append(a.gateways, &interconnectGateway{id: id, vnetID: vnetID, subnetID: subnetID, doc: d})
	case TypeLocalGateways:
		l, err := decodeLocalGateway(doc)
		if err != nil {
			return err
		}
		a.sitesBy[api.Key(id)] = l
	case TypeConnections:
		c, err := decodeConnection(doc)
		if err != nil {
			return err
		}
		a.conns = append(a.conns, c)
	}
	return nil
}

// readInterconnect reads the interconnect from a transaction.
func readInterconnect(tx *store.Txn) (*interconnect, error) {
	rows, err := tx.QueryContext(tx.Ctx, `SELECT id, type, doc FROM resources WHERE type IN (?, ?, ?, ?) ORDER BY key`,
		api.TypeVirtualNetworks, TypeVNetGateways, TypeLocalGateways, TypeConnections)
	if err != nil {
		return nil, fmt.Errorf("reading the interconnect: %w", err)
	}
	defer rows.Close()
	a := newInterconnect()
	for rows.Next() {
		var id, typ string
		var doc []byte
		if err := rows.Scan(&id, &typ, &doc); err != nil {
			return nil, fmt.Errorf("reading the interconnect: %w", err)
		}
		if err := a.add(typ, id, doc); err != nil {
			return nil, err
		}
	}
	return a, rows.Err()
}

func (a *interconnect) gateway(id string) *interconnectGateway {
	for _, g := range a.gateways {
		if api.Key(g.id) == api.Key(id) {
			return g
		}
	}
	return nil
}

// sites are the on-premises sites of a gateway: the local network
// gateways of its IPsec connections.
func (a *interconnect) sites(g *interconnectGateway) []site {
	var out []site
	for _, c := range a.conns {
		p := c.Properties
		if p.ConnectionType == nil || *p.ConnectionType != armnetwork.VirtualNetworkGatewayConnectionTypeIPsec ||
			p.VirtualNetworkGateway1 == nil || api.Key(api.Str(p.VirtualNetworkGateway1.ID)) != api.Key(g.id) || p.LocalNetworkGateway2 == nil {
			continue
		}
		l := a.sitesBy[api.Key(api.Str(p.LocalNetworkGateway2.ID))]
		if l == nil {
			continue
		}
		s := site{address: api.Str(l.Properties.GatewayIPAddress)}
		if s.address == "" {
			s.address = api.Str(l.Properties.Fqdn)
		}
		for _, sp := range SpaceOf(l.Properties.LocalNetworkAddressSpace) {
			if pf, err := netip.ParsePrefix(sp); err == nil {
				s.prefixes = append(s.prefixes, pf.Masked())
			}
		}
		out = append(out, s)
	}
	return out
}

// learned are a gateway's on-premises prefixes: its sites' and what its
// BGP peer advertises.
func (a *interconnect) learned(g *interconnectGateway) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range a.sites(g) {
		out = append(out, s.prefixes...)
	}
	out = append(out, g.doc.bgp.parsed()...)
	slices.SortStableFunc(out, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	return slices.Compact(out)
}

// routingVNets is the interconnect in internal/routing's model, with
// every peering's state as ARM shows it.
func (a *interconnect) routingVNets() []routing.VNet {
	out := make([]routing.VNet, 0, len(a.order))
	for _, k := range a.order {
		v := a.vnets[k]
		rv := routing.VNet{ID: api.Str(v.ID), Name: api.Str(v.Name), AddressSpace: vnetSpace(v)}
		for _, p := range v.Properties.VirtualNetworkPeerings {
			if p == nil {
				continue
			}
			viewPeering(v, p, a.vnets[api.Key(PeeringRemote(p))])
			rv.Peerings = append(rv.Peerings, routingPeering(p))
		}
		for _, g := range a.gateways {
			if api.Key(g.vnetID) != k {
				continue
			}
			typ := ""
			if t := g.doc.gw.Properties.GatewayType; t != nil {
				typ = string(*t)
			}
			rv.Gateways = append(rv.Gateways, routing.Gateway{ID: g.id, Name: armid.Name(g.id), Type: typ, SubnetID: g.subnetID, Learned: a.learned(g)})
		}
		out = append(out, rv)
	}
	return out
}

func routingPeering(p *armnetwork.VirtualNetworkPeering) routing.Peering {
	pp := p.Properties
	flag := func(b *bool) bool { return b != nil && *b }
	out := routing.Peering{Name: api.Str(p.Name), RemoteVNetID: PeeringRemote(p),
		AllowVirtualNetworkAccess: flag(pp.AllowVirtualNetworkAccess), AllowForwardedTraffic: flag(pp.AllowForwardedTraffic),
		AllowGatewayTransit: flag(pp.AllowGatewayTransit), UseRemoteGateways: flag(pp.UseRemoteGateways)}
	if pp.PeeringState != nil {
		out.State = string(*pp.PeeringState)
	}
	for _, s := range SpaceOf(pp.RemoteAddressSpace) {
		if pf, err := netip.ParsePrefix(s); err == nil {
			out.RemoteAddressSpace = append(out.RemoteAddressSpace, pf.Masked())
		}
	}
	return out
}

// networkOf is the routing model's Network of the subnets of a virtual
// network: its address space, peerings and gateway routes.
func (a *interconnect) networkOf(vnetID string) routing.Network {
	n, ok := routing.NetworkOf(a.routingVNets(), vnetID)
	if !ok {
		if v := a.vnets[api.Key(vnetID)]; v != nil {
			n.AddressSpace = vnetSpace(v)
		}
	}
	return n
}

// stateGateways are the gateways for State (Store.Networks).
func (a *interconnect) stateGateways() []StateGateway {
	var out []StateGateway
	for _, g := range a.gateways {
		sg := StateGateway{ID: g.id, Name: armid.Name(g.id), VirtualNetwork: g.vnetID, Subnet: g.subnetID}
		if t := g.doc.gw.Properties.GatewayType; t != nil {
			sg.Type = string(*t)
		}
		for _, p := range a.learned(g) {
			sg.LearnedPrefixes = append(sg.LearnedPrefixes, p.String())
		}
		out = append(out, sg)
	}
	return out
}

// fill completes a State read from raw documents: the peerings' states as
// ARM shows them, and the gateways with what they learned.
func (a *interconnect) fill(st *State) {
	for i := range st.VirtualNetworks {
		sv := &st.VirtualNetworks[i]
		v := a.vnets[api.Key(sv.ID)]
		if v == nil {
			continue
		}
		sv.Peerings = nil
		for _, p := range v.Properties.VirtualNetworkPeerings {
			if p == nil {
				continue
			}
			viewPeering(v, p, a.vnets[api.Key(PeeringRemote(p))])
			sv.Peerings = append(sv.Peerings, statePeering(p))
		}
	}
	st.Gateways = a.stateGateways()
}

func statePeering(p *armnetwork.VirtualNetworkPeering) StatePeering {
	rp := routingPeering(p)
	sp := StatePeering{Name: rp.Name, RemoteVirtualNetwork: rp.RemoteVNetID, PeeringState: rp.State,
		AllowVirtualNetworkAccess: rp.AllowVirtualNetworkAccess, AllowForwardedTraffic: rp.AllowForwardedTraffic,
		AllowGatewayTransit: rp.AllowGatewayTransit, UseRemoteGateways: rp.UseRemoteGateways}
	for _, pf := range rp.RemoteAddressSpace {
		sp.RemoteAddressPrefixes = append(sp.RemoteAddressPrefixes, pf.String())
	}
	return sp
}

// RoutingVNets converts the virtual networks and gateways of a State
// (Store.Networks) to internal/routing's model.
func (st *State) RoutingVNets() []routing.VNet {
	out := make([]routing.VNet, 0, len(st.VirtualNetworks))
	for _, v := range st.VirtualNetworks {
		rv := routing.VNet{ID: v.ID, Name: v.Name}
		for _, s := range v.AddressPrefixes {
			if p, err := netip.ParsePrefix(s); err == nil {
				rv.AddressSpace = append(rv.AddressSpace, p.Masked())
			}
		}
		for _, p := range v.Peerings {
			rp := routing.Peering{Name: p.Name, RemoteVNetID: p.RemoteVirtualNetwork, State: p.PeeringState,
				AllowVirtualNetworkAccess: p.AllowVirtualNetworkAccess, AllowForwardedTraffic: p.AllowForwardedTraffic,
				AllowGatewayTransit: p.AllowGatewayTransit, UseRemoteGateways: p.UseRemoteGateways}
			for _, s := range p.RemoteAddressPrefixes {
				if pf, err := netip.ParsePrefix(s); err == nil {
					rp.RemoteAddressSpace = append(rp.RemoteAddressSpace, pf.Masked())
				}
			}
			rv.Peerings = append(rv.Peerings, rp)
		}
		for _, g := range st.Gateways {
			if !strings.EqualFold(g.VirtualNetwork, v.ID) {
				continue
			}
			rg := routing.Gateway{ID: g.ID, Name: g.Name, Type: g.Type, SubnetID: g.Subnet}
			for _, s := range g.LearnedPrefixes {
				if pf, err := netip.ParsePrefix(s); err == nil {
					rg.Learned = append(rg.Learned, pf.Masked())
				}
			}
			rv.Gateways = append(rv.Gateways, rg)
		}
		out = append(out, rv)
	}
	return out
}

// addDoc is add for a document whose ID is its "id" property.
func (a *interconnect) addDoc(typ string, doc []byte) error {
	switch typ {
	case api.TypeVirtualNetworks, TypeVNetGateways, TypeLocalGateways, TypeConnections:
	default:
		return nil
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return fmt.Errorf("decoding stored %s: %w", typ, err)
	}
	return a.add(typ, d.ID, doc)
}

// StatePeering is one side of a virtual network peering, with its state as
// ARM shows it.
type StatePeering struct {
	Name                      string   `json:"name"`
	RemoteVirtualNetwork      string   `json:"remoteVirtualNetwork"` // ID
	RemoteAddressPrefixes     []string `json:"remoteAddressPrefixes"`
	PeeringState              string   `json:"peeringState"`
	AllowVirtualNetworkAccess bool     `json:"allowVirtualNetworkAccess"`
	AllowForwardedTraffic     bool     `json:"allowForwardedTraffic"`
	AllowGatewayTransit       bool     `json:"allowGatewayTransit"`
	UseRemoteGateways         bool     `json:"useRemoteGateways"`
}

// StateGateway is a virtual network gateway and the on-premises prefixes it
// learned (its sites' and its BGP peer's).
type StateGateway struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Type            string   `json:"gatewayType"`
	VirtualNetwork  string   `json:"virtualNetwork"` // ID
	Subnet          string   `json:"subnet"`         // ID of its GatewaySubnet
	LearnedPrefixes []string `json:"learnedPrefixes"`
}
