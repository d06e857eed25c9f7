package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// The interconnect of a cluster's networks: the peerings of a virtual
// network and its virtual network gateways with what they learned from on
// premises. Both are optional reads for routekeeper (trace, doctor's
// pre-flights): they need
// Microsoft.Network/virtualNetworks/virtualNetworkPeerings/read and
// Microsoft.Network/virtualNetworkGateways/read (and .../getLearnedRoutes/
// action), which routekeeper's role does not grant by default; a refusal
// comes back as an error IsForbidden recognises.

// Peering, Gateway and GatewayRoute are the cloud package's (the
// observer reads them; nothing above the adapter imports it).
type (
	Peering      = observe.Peering
	Gateway      = observe.Gateway
	GatewayRoute = observe.GatewayRoute
)

// ListPeerings lists the peerings of a virtual network (its side of each).
func (c *Client) ListPeerings(ctx context.Context, vnetID string) ([]Peering, error) {
	ref, sc, err := c.resolve(vnetID, armid.VirtualNetwork)
	if err != nil {
		return nil, err
	}
	var out []Peering
	pager := sc.peerings.NewListPager(ref.group, ref.name, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the peerings of virtual network "+vnetID, vnetID, err)
		}
		for _, p := range page.Value {
			if p != nil {
				out = append(out, peeringFromARM(p))
			}
		}
	}
	return out, nil
}

func peeringFromARM(p *armnetwork.VirtualNetworkPeering) Peering {
	out := Peering{ID: str(p.ID), Name: str(p.Name)}
	pp := p.Properties
	if pp == nil {
		return out
	}
	flag := func(b *bool) bool { return b != nil && *b }
	out.AllowVirtualNetworkAccess, out.AllowForwardedTraffic = flag(pp.AllowVirtualNetworkAccess), flag(pp.AllowForwardedTraffic)
	out.AllowGatewayTransit, out.UseRemoteGateways = flag(pp.AllowGatewayTransit), flag(pp.UseRemoteGateways)
	if pp.RemoteVirtualNetwork != nil {
		out.RemoteVNetID = str(pp.RemoteVirtualNetwork.ID)
	}
	if pp.PeeringState != nil {
		out.State = string(*pp.PeeringState)
	}
	if pp.PeeringSyncLevel != nil {
		out.SyncLevel = string(*pp.PeeringSyncLevel)
	}
	out.RemoteAddressPrefixes = space(pp.RemoteAddressSpace)
	out.RemoteCurrentPrefixes = space(pp.RemoteVirtualNetworkAddressSpace)
	return out
}

func space(as *armnetwork.AddressSpace) []string {
	if as == nil {
		return nil
	}
	out := make([]string, 0, len(as.AddressPrefixes))
	for _, p := range as.AddressPrefixes {
		out = append(out, str(p))
	}
	return out
}

// VirtualNetworkGateways returns the gateways of a virtual network (those
// of its resource group whose IP configuration is in its GatewaySubnet)
// with what each learned (getLearnedRoutes, a long-running action).
// notOnPremises are prefixes whose origin-Network routes are not on
// premises: the network's own address space and its peers'.
func (c *Client) VirtualNetworkGateways(ctx context.Context, vnetID string, notOnPremises []string) ([]Gateway, error) {
	ref, sc, err := c.resolve(vnetID, armid.VirtualNetwork)
	if err != nil {
		return nil, err
	}
	var own []netip.Prefix
	for _, s := range notOnPremises {
		if p, err := netip.ParsePrefix(s); err == nil {
			own = append(own, p.Masked())
		}
	}
	var out []Gateway
	pager := sc.gateways.NewListPager(ref.group, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the virtual network gateways of resource group "+ref.group, vnetID, err)
		}
		for _, g := range page.Value {
			gw, ok := gatewayFromARM(g, vnetID)
			if !ok {
				continue
			}
			if gw.Routes, err = c.GatewayLearnedRoutes(ctx, gw.ID); err != nil {
				return nil, err
			}
			for _, r := range gw.Routes {
				if r.Origin == "Network" && covered(own, r.Network) {
					continue
				}
				if !containsPrefix(gw.OnPremises, r.Network) {
					gw.OnPremises = append(gw.OnPremises, r.Network)
				}
			}
			out = append(out, gw)
		}
	}
	return out, nil
}

func gatewayFromARM(g *armnetwork.VirtualNetworkGateway, vnetID string) (Gateway, bool) {
	if g == nil || g.Properties == nil {
		return Gateway{}, false
	}
	out := Gateway{ID: str(g.ID), Name: str(g.Name), BGPEnabled: g.Properties.EnableBgp != nil && *g.Properties.EnableBgp}
	if g.Properties.GatewayType != nil {
		out.Type = string(*g.Properties.GatewayType)
	}
	for _, cfg := range g.Properties.IPConfigurations {
		if cfg == nil || cfg.Properties == nil || cfg.Properties.Subnet == nil {
			continue
		}
		sid := str(cfg.Properties.Subnet.ID)
		if v, err := armid.VNetOfSubnet(sid); err == nil && armid.Same(v, vnetID) {
			out.VNetID, out.SubnetID = v, sid
			return out, true
		}
	}
	return out, false
}

// GatewayLearnedRoutes asks a gateway for the routes it learned.
func (c *Client) GatewayLearnedRoutes(ctx context.Context, gatewayID string) ([]GatewayRoute, error) {
	r, err := arm.ParseResourceID(gatewayID)
	if err != nil || !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/virtualNetworkGateways") {
		return nil, fmt.Errorf("virtual network gateway ID %q: want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworkGateways/<name>", gatewayID)
	}
	sc, err := c.clients(r.SubscriptionID)
	if err != nil {
		return nil, err
	}
	// A POST that only reads: retried as a read (outcome.go).
	ctx = readOnly(ctx)
	p, err := sc.gateways.BeginGetLearnedRoutes(ctx, r.ResourceGroupName, r.Name, nil)
	if err != nil {
		return nil, classify("asking gateway "+gatewayID+" for its learned routes", gatewayID, err)
	}
	resp, err := pollUntilDone(ctx, c, "the learned routes of gateway "+gatewayID, p)
	if err != nil {
		return nil, classify("waiting for the learned routes of gateway "+gatewayID, gatewayID, err)
	}
	var out []GatewayRoute
	for _, g := range resp.Value {
		if g == nil {
			continue
		}
		pf, err := netip.ParsePrefix(str(g.Network))
		if err != nil {
			continue // not a prefix (Azure lists none such)
		}
		gr := GatewayRoute{Network: pf.Masked(), Origin: str(g.Origin), NextHop: str(g.NextHop), SourcePeer: str(g.SourcePeer), AsPath: str(g.AsPath)}
		if g.Weight != nil {
			gr.Weight = *g.Weight
		}
		out = append(out, gr)
	}
	return out, nil
}

func covered(space []netip.Prefix, p netip.Prefix) bool {
	for _, s := range space {
		if s.Bits() <= p.Bits() && s.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// IsForbidden reports whether err is ARM refusing the caller the right to
// do what it tried (403, AuthorizationFailed): an optional read may then
// be skipped.
func IsForbidden(err error) bool {
	var ae *armError
	return errors.As(err, &ae) && ae.status == http.StatusForbidden
}
