package routing

import (
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// The interconnect of a cluster: the virtual networks peered with its own,
// with their peerings and their virtual network gateways. A State that
// carries them (State.VNets) lets a trace start in a peered virtual network
// (or on premises, behind a gateway) and cross peerings the way Azure does.
// The rules and their sources:
//
//   - A Connected peering adds a system route (source Default, next hop
//     VNetPeering) for each prefix of the remote address space as peered
//     ("Virtual network traffic routing", optional default routes). Only a
//     peering in state Connected carries traffic: one whose other side does
//     not exist (Initiated) or was deleted (Disconnected) adds nothing
//     ("Create, change, or delete a virtual network peering").
//   - A virtual network gateway adds a route (source and next hop
//     VirtualNetworkGateway) for each prefix it learned from on premises by
//     BGP or that its local network gateways declare, to every subnet whose
//     route table does not disable gateway route propagation
//     (disableBgpRoutePropagation; same document, "Border gateway
//     protocol").
//   - Gateway transit: a virtual network whose peering has
//     useRemoteGateways, with the remote side's peering allowing gateway
//     transit (allowGatewayTransit), gets the remote gateway's routes as if
//     the gateway were its own. Azure refuses useRemoteGateways on a
//     network that has a gateway of its own, and on more than one peering
//     ("Configure VPN gateway transit for virtual network peering").
//   - Forwarded traffic: a packet that crosses a peering into virtual
//     network B from A and did not originate in A (its source address is
//     outside A's address space: a pod's, forwarded by a node acting as a
//     virtual appliance) is accepted only when B's peering to A allows
//     forwarded traffic (allowForwardedTraffic; "Create, change, or delete
//     a virtual network peering", setting "Traffic forwarded from remote
//     virtual network"). Traffic a VPN gateway forwards does not need it
//     (same document).
//   - A VirtualAppliance next hop may be an address in a peered virtual
//     network ("Virtual network peering", service chaining); one in a
//     network that is not peered cannot be reached ("Virtual network traffic
//     routing": a next hop needs direct connectivity).

// Peering states, as ARM spells them.
const (
	PeeringConnected    = "Connected"
	PeeringInitiated    = "Initiated"
	PeeringDisconnected = "Disconnected"
)

// Gateway types, as ARM spells them (gatewayType).
const (
	GatewayVpn          = "Vpn"
	GatewayExpressRoute = "ExpressRoute"
)

// VNet is a virtual network as routing sees it: its address space, its
// peerings and its virtual network gateways.
type VNet struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	AddressSpace []netip.Prefix `json:"addressSpace"`
	Peerings     []Peering      `json:"peerings,omitempty"`
	Gateways     []Gateway      `json:"gateways,omitempty"`
}

// Peering is one side of a virtual network peering: the resource
// virtualNetworks/{vnet}/virtualNetworkPeerings/{name} of the local network.
type Peering struct {
	Name         string `json:"name"`
	RemoteVNetID string `json:"remoteVirtualNetwork"`
	// RemoteAddressSpace is the remote address space as peered
	// (remoteAddressSpace): what the peering's system routes cover.
	RemoteAddressSpace        []netip.Prefix `json:"remoteAddressSpace"`
	State                     string         `json:"peeringState"`
	AllowVirtualNetworkAccess bool           `json:"allowVirtualNetworkAccess"`
	AllowForwardedTraffic     bool           `json:"allowForwardedTraffic"`
	AllowGatewayTransit       bool           `json:"allowGatewayTransit"`
	UseRemoteGateways         bool           `json:"useRemoteGateways"`
}

// Connected reports whether the peering carries traffic.
func (p Peering) Connected() bool { return strings.EqualFold(p.State, PeeringConnected) }

// Gateway is a virtual network gateway (VPN or ExpressRoute) in a network's
// GatewaySubnet and the on-premises prefixes it learned.
type Gateway struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Type is Vpn or ExpressRoute.
	Type string `json:"gatewayType"`
	// SubnetID is the GatewaySubnet the gateway sits in: where traffic
	// from on premises enters the virtual network.
	SubnetID string `json:"subnetId,omitempty"`
	// Learned are the on-premises prefixes: learned by BGP or declared by
	// the local network gateways of its connections.
	Learned []netip.Prefix `json:"learned"`
}

// findVNet returns the virtual network with the ID (any case).
func findVNet(vnets []VNet, id string) *VNet {
	for i := range vnets {
		if armid.Same(vnets[i].ID, id) {
			return &vnets[i]
		}
	}
	return nil
}

// peeringTo returns v's peering to the network with ID remote.
func (v *VNet) peeringTo(remote string) *Peering {
	if v == nil {
		return nil
	}
	for i := range v.Peerings {
		if armid.Same(v.Peerings[i].RemoteVNetID, remote) {
			return &v.Peerings[i]
		}
	}
	return nil
}

// contains reports whether a lies in the network's address space.
func (v *VNet) contains(a netip.Addr) bool {
	if v == nil {
		return false
	}
	for _, p := range v.AddressSpace {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// RemoteGateways returns the gateways whose routes reach the subnets of
// the network with ID id through gateway transit, and the peering that
// carries them: the peering with useRemoteGateways whose remote side
// allows gateway transit. A network with a gateway of its own uses none
// (Azure refuses the setting there).
func RemoteGateways(vnets []VNet, id string) ([]Gateway, *Peering) {
	v := findVNet(vnets, id)
	if v == nil || len(v.Gateways) > 0 {
		return nil, nil
	}
	for i := range v.Peerings {
		p := &v.Peerings[i]
		if !p.UseRemoteGateways || !p.Connected() {
			continue
		}
		r := findVNet(vnets, p.RemoteVNetID)
		back := r.peeringTo(v.ID)
		if r == nil || back == nil || !back.AllowGatewayTransit || len(r.Gateways) == 0 {
			continue
		}
		return r.Gateways, p
	}
	return nil, nil
}

// NetworkOf returns what the system routes of a subnet of the network
// with ID id depend on: its address space, the address spaces of its
// Connected peerings, and the prefixes learned by its gateways or, through
// gateway transit, by the gateways of a peered network. ok is false when
// vnets does not hold the network.
func NetworkOf(vnets []VNet, id string) (n Network, ok bool) {
	v := findVNet(vnets, id)
	if v == nil {
		return Network{}, false
	}
	n.AddressSpace = append(n.AddressSpace, v.AddressSpace...)
	for _, p := range v.Peerings {
		if p.Connected() {
			n.Peerings = append(n.Peerings, p.RemoteAddressSpace...)
		}
	}
	gws := v.Gateways
	if len(gws) == 0 {
		gws, _ = RemoteGateways(vnets, id)
	}
	seen := map[netip.Prefix]bool{}
	for _, g := range gws {
		for _, p := range g.Learned {
			if p = p.Masked(); p.IsValid() && !seen[p] {
				seen[p] = true
				n.Gateway = append(n.Gateway, p)
			}
		}
	}
	return n, true
}

// OnPremises returns every prefix the gateways of vnets learned from on
// premises, each once, in the order found.
func OnPremises(vnets []VNet) []netip.Prefix {
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, v := range vnets {
		for _, g := range v.Gateways {
			for _, p := range g.Learned {
				if p = p.Masked(); p.IsValid() && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}
