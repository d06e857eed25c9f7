package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Virtual network gateways and what they learn from on premises, with
// Azure's paths and JSON: virtualNetworkGateways (VPN or ExpressRoute, in a
// subnet named GatewaySubnet), localNetworkGateways (an on-premises site:
// its address prefixes) and connections (a gateway to a local network
// gateway, IPsec; to another gateway, Vnet2Vnet; to an ExpressRoute
// circuit, ExpressRoute). A gateway learns the prefixes of the local
// network gateways it has an IPsec connection to — Azure's routes
// "configured in the local network gateway" — and the prefixes an
// on-premises BGP peer advertises, which are not an ARM property: the
// fabric keeps them with the gateway, set with PUT /_fabric/bgp (bgp.go).
// POST .../getLearnedRoutes answers them as Azure does, a long-running
// action whose result (GatewayRouteListResult) is at its Location.

const (
	TypeVNetGateways  = "virtualNetworkGateways"
	TypeLocalGateways = "localNetworkGateways"
	TypeConnections   = "connections"

	armTypeVNetGateway  = "Microsoft.Network/virtualNetworkGateways"
	armTypeLocalGateway = "Microsoft.Network/localNetworkGateways"
	armTypeConnection   = "Microsoft.Network/connections"
	armTypeGatewayIPCfg = "Microsoft.Network/virtualNetworkGateways/ipConfigurations"

	actionLearnedRoutes = "getLearnedRoutes"

	// GatewaySubnetName is the subnet a virtual network gateway must sit in.
	GatewaySubnetName = "GatewaySubnet"
)

func renderPlain(_ *store.Txn, row *store.ResourceRow) (json.RawMessage, error) { return row.Doc, nil }

// FabricKey is the top-level key of a gateway document under which the
// fabric keeps what an on-premises BGP peer advertises (never returned).
const FabricKey = "routekeeperFabric"

// BgpAdvertisement is what the on-premises BGP peer of a gateway
// advertises: an ExpressRoute circuit's peer, or a VPN site with BGP.
type BgpAdvertisement struct {
	Prefixes    []string `json:"prefixes"`
	ASN         int64    `json:"asn,omitempty"`
	PeerAddress string   `json:"peerAddress,omitempty"`
}

// gatewayDoc is a stored gateway: the ARM document and the fabric's own
// part.
type gatewayDoc struct {
	gw  *armnetwork.VirtualNetworkGateway
	bgp *BgpAdvertisement
}

func decodeGateway(doc []byte) (*gatewayDoc, error) {
	var g armnetwork.VirtualNetworkGateway
	if err := json.Unmarshal(doc, &g); err != nil {
		return nil, fmt.Errorf("decoding stored virtual network gateway: %w", err)
	}
	if g.Properties == nil {
		g.Properties = &armnetwork.VirtualNetworkGatewayPropertiesFormat{}
	}
	var priv struct {
		BGP *BgpAdvertisement `json:"routekeeperFabric"`
	}
	if err := json.Unmarshal(doc, &priv); err != nil {
		return nil, fmt.Errorf("decoding stored virtual network gateway: %w", err)
	}
	return &gatewayDoc{gw: &g, bgp: priv.BGP}, nil
}

// encodeGateway is the stored document of a gateway: the ARM document
// with the fabric's part.
func encodeGateway(d *gatewayDoc) ([]byte, error) {
	b, err := api.Encode(d.gw)
	if err != nil || d.bgp == nil {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m[FabricKey], err = json.Marshal(d.bgp); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// renderGateway is a gateway as ARM returns it: without the fabric's part.
func renderGateway(_ *store.Txn, row *store.ResourceRow) (json.RawMessage, error) {
	if !strings.Contains(string(row.Doc), `"`+FabricKey+`"`) {
		return row.Doc, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(row.Doc, &m); err != nil {
		return nil, fmt.Errorf("decoding stored virtual network gateway: %w", err)
	}
	delete(m, FabricKey)
	return json.Marshal(m)
}

// gatewayVNet is the ID of the network whose GatewaySubnet holds the
// gateway, and the subnet's ID.
func gatewayVNet(g *armnetwork.VirtualNetworkGateway) (vnetID, subnetID string) {
	for _, c := range g.Properties.IPConfigurations {
		if c == nil || c.Properties == nil || c.Properties.Subnet == nil {
			continue
		}
		if a, ok := api.ParseNetworkID(api.Str(c.Properties.Subnet.ID)); ok && a.Child == api.ChildSubnets {
			return a.ParentID(), api.Str(c.Properties.Subnet.ID)
		}
	}
	return "", ""
}

// gatewaysOfVNet returns the gateways whose GatewaySubnet is in the
// network with ID vnetID.
func gatewaysOfVNet(tx *store.Txn, vnetID string) ([]*armnetwork.VirtualNetworkGateway, error) {
	a, ok := api.ParseNetworkID(vnetID)
	if !ok {
		return nil, nil
	}
	rows, err := tx.ListResources(api.Key(a.Sub), "", TypeVNetGateways, "", 1<<30)
	if err != nil {
		return nil, err
	}
	var out []*armnetwork.VirtualNetworkGateway
	for _, r := range rows {
		d, err := decodeGateway(r.Doc)
		if err != nil {
			return nil, err
		}
		if v, _ := gatewayVNet(d.gw); api.Key(v) == api.Key(vnetID) {
			out = append(out, d.gw)
		}
	}
	return out, nil
}

// checkSubnetsFreeOfGateways refuses to delete a subnet that holds a
// gateway's IP configuration (gone: lower-case subnet IDs).
func checkSubnetsFreeOfGateways(tx *store.Txn, sub string, gone map[string]string) error {
	rows, err := tx.ListResources(api.Key(sub), "", TypeVNetGateways, "", 1<<30)
	if err != nil {
		return err
	}
	for _, r := range rows {
		d, err := decodeGateway(r.Doc)
		if err != nil {
			return err
		}
		if _, subnetID := gatewayVNet(d.gw); subnetID != "" {
			if id, ok := gone[api.Key(subnetID)]; ok {
				return api.BadRequest("InUseSubnetCannotBeDeleted",
					"Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.",
					armid.Name(id), r.ID)
			}
		}
	}
	return nil
}

// notConnected refuses to delete a gateway or a local network gateway a
// connection uses, with Azure's code and message (format takes the
// resource's ID, then the connection's).
func notConnected(code, format string) func(*store.Txn, *store.ResourceRow) error {
	return func(tx *store.Txn, row *store.ResourceRow) error {
		conns, err := connectionsOf(tx, row.ID)
		if err != nil {
			return err
		}
		if len(conns) > 0 {
			return api.BadRequest(code, format, row.ID, api.Str(conns[0].ID))
		}
		return nil
	}
}

var gatewayKind = topKind[armnetwork.VirtualNetworkGateway, *gatewayDoc]{
	typ: TypeVNetGateways, armType: armTypeVNetGateway, render: renderGateway, body: api.DecodeModel, stored: decodeGateway,
	meta:  func(g *armnetwork.VirtualNetworkGateway) (*string, map[string]*string) { return g.Location, g.Tags },
	where: func(d *gatewayDoc) string { return api.Str(d.gw.Location) },
}

type gatewayPut = topPut[armnetwork.VirtualNetworkGateway, *gatewayDoc]

// buildGateway makes the virtual network gateway a PUT stores. Azure's
// checks kept here: gatewayType Vpn or ExpressRoute; IP configurations in
// a subnet named GatewaySubnet of a network in the gateway's location; one
// gateway of each type per network; none in a network whose peering uses
// a remote gateway.
func (s *Provider) buildGateway(p *gatewayPut) (*api.Response, error) {
	out, vnetID, err := gatewayProperties(p.tx, p.id, p.loc, p.in.Properties, p.cur)
	if err != nil {
		return nil, err
	}
	if err := checkGatewayVNet(p.tx, p.id, vnetID, *out.GatewayType); err != nil {
		return nil, err
	}
	d := &gatewayDoc{gw: &armnetwork.VirtualNetworkGateway{
		ID: api.Ptr(p.id), Name: api.Ptr(armid.Name(p.id)), Type: api.Ptr(armTypeVNetGateway), Location: api.Ptr(p.loc),
		Tags: api.TagsOf(p.in.Tags), Etag: api.Ptr(api.NewEtag()), Properties: out,
	}}
	if p.cur != nil {
		d.bgp = p.cur.bgp // the on-premises side's advertisement is not the client's to change
	}
	doc, err := encodeGateway(d)
	if err != nil {
		return nil, err
	}
	resp, err := p.Store(s, api.Str(d.gw.Etag), json.RawMessage(doc))
	if err == nil {
		if body, rerr := renderGateway(p.tx, &store.ResourceRow{Doc: doc}); rerr == nil {
			resp.Body = body
		}
	}
	return resp, err
}

// gatewayProperties checks a gateway's properties and returns them as stored,
// with the ID of the network it is in.
func gatewayProperties(tx *store.Txn, id, loc string, in *armnetwork.VirtualNetworkGatewayPropertiesFormat, cur *gatewayDoc) (*armnetwork.VirtualNetworkGatewayPropertiesFormat, string, error) {
	if in == nil {
		return nil, "", api.InvalidFormat("Virtual network gateway %s has no properties.", id)
	}
	out := *in
	switch {
	case out.GatewayType == nil:
		return nil, "", api.BadRequest("InvalidGatewayType", "Virtual network gateway %s has no properties.gatewayType; want Vpn or ExpressRoute.", id)
	case strings.EqualFold(string(*out.GatewayType), "Vpn"):
		out.GatewayType = api.Ptr(armnetwork.VirtualNetworkGatewayTypeVPN)
		if out.VPNType == nil {
			out.VPNType = api.Ptr(armnetwork.VPNTypeRouteBased)
		}
	case strings.EqualFold(string(*out.GatewayType), "ExpressRoute"):
		out.GatewayType = api.Ptr(armnetwork.VirtualNetworkGatewayTypeExpressRoute)
	default:
		return nil, "", api.BadRequest("InvalidGatewayType", "Virtual network gateway %s: gatewayType %q is not Vpn or ExpressRoute.", id, *out.GatewayType)
	}
	if len(out.IPConfigurations) == 0 {
		return nil, "", api.BadRequest("VirtualNetworkGatewayMustHaveAtLeastOneIpConfiguration", "Virtual network gateway %s must have at least one IP configuration.", id)
	}
	vnetID := ""
	cfgs := make([]*armnetwork.VirtualNetworkGatewayIPConfiguration, 0, len(out.IPConfigurations))
	for i, c := range out.IPConfigurations {
		if c == nil || c.Properties == nil || c.Properties.Subnet == nil || api.Str(c.Properties.Subnet.ID) == "" {
			return nil, "", api.BadRequest("IpConfigurationSubnetMissing", "properties.ipConfigurations[%d] of virtual network gateway %s has no subnet.", i, id)
		}
		ref := api.Str(c.Properties.Subnet.ID)
		sn, _, err := lookupSubnet(tx, ref)
		if err != nil {
			return nil, "", err
		}
		if sn == nil {
			return nil, "", api.InvalidReference(ref, id)
		}
		if !strings.EqualFold(api.Str(sn.Name), GatewaySubnetName) {
			return nil, "", api.BadRequest("InvalidGatewaySubnet",
				"Subnet %s referenced by virtual network gateway %s is not named GatewaySubnet: a gateway can only be deployed in the subnet GatewaySubnet.", ref, id)
		}
		a, _ := api.ParseNetworkID(ref)
		if vnetID != "" && api.Key(vnetID) != api.Key(a.ParentID()) {
			return nil, "", api.BadRequest("GatewayIpConfigurationsInDifferentVirtualNetworks", "The IP configurations of virtual network gateway %s are in different virtual networks.", id)
		}
		vnetID = a.ParentID()
		v, err := loadVNet(tx, vnetID)
		if err != nil {
			return nil, "", err
		}
		if v == nil || api.Str(v.Location) != loc {
			return nil, "", api.InvalidReference(ref, id)
		}
		name := api.Str(c.Name)
		if name == "" {
			name = fmt.Sprintf("ipconfig%d", i+1)
		}
		p := *c.Properties
		p.Subnet = &armnetwork.SubResource{ID: sn.ID}
		if p.PrivateIPAllocationMethod == nil {
			p.PrivateIPAllocationMethod = api.Ptr(armnetwork.IPAllocationMethodDynamic)
		}
		p.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)
		cfgs = append(cfgs, &armnetwork.VirtualNetworkGatewayIPConfiguration{
			ID: api.Ptr(api.ChildID(id, "ipConfigurations", name)), Name: api.Ptr(name), Properties: &p,
		})
	}
	out.IPConfigurations = cfgs
	if out.EnableBgp == nil {
		out.EnableBgp = api.Ptr(false)
	}
	if out.Active == nil {
		out.Active = api.Ptr(false)
	}
	out.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)
	out.ResourceGUID = api.Ptr(uuid.NewString())
	if cur != nil {
		out.ResourceGUID = cur.gw.Properties.ResourceGUID
	}
	return &out, vnetID, nil
}

// checkGatewayVNet applies the rules between a gateway and its network.
func checkGatewayVNet(tx *store.Txn, id, vnetID string, typ armnetwork.VirtualNetworkGatewayType) error {
	others, err := gatewaysOfVNet(tx, vnetID)
	if err != nil {
		return err
	}
	for _, o := range others {
		if api.Key(api.Str(o.ID)) != api.Key(id) && o.Properties.GatewayType != nil && *o.Properties.GatewayType == typ {
			return api.BadRequest("VirtualNetworkAlreadyHasGatewayOfThisType",
				"Virtual network %s already has gateway %s of type %s.", vnetID, api.Str(o.ID), typ)
		}
	}
	v, err := loadVNet(tx, vnetID)
	if err != nil || v == nil {
		return err
	}
	for _, p := range v.Properties.VirtualNetworkPeerings {
		if p != nil && p.Properties != nil && p.Properties.UseRemoteGateways != nil && *p.Properties.UseRemoteGateways {
			return api.BadRequest("VirtualNetworkGatewayCannotBeCreatedWhenPeeringUsesRemoteGateways",
				"Virtual network %s cannot have a gateway because its peering %s uses the remote virtual network's gateway.", vnetID, api.Str(p.Name))
		}
	}
	return nil
}

func (s *Provider) postLearnedRoutes(ctx context.Context, q *api.Request) (*api.Response, error) {
	var id, loc string
	err := s.readTop(ctx, q, TypeVNetGateways, armTypeVNetGateway, func(tx *store.Txn, row *store.ResourceRow) error {
		d, err := decodeGateway(row.Doc)
		if err != nil {
			return err
		}
		id, loc = row.ID, api.Str(d.gw.Location)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.startAction(ctx, q, actionLearnedRoutes, id, loc, nil)
}

// gatewayRoute is one route of GatewayRouteListResult, in Azure's JSON.
type gatewayRoute struct {
	LocalAddress string  `json:"localAddress"`
	Network      string  `json:"network"`
	NextHop      *string `json:"nextHop"`
	SourcePeer   string  `json:"sourcePeer"`
	Origin       string  `json:"origin"`
	AsPath       string  `json:"asPath"`
	Weight       int32   `json:"weight"`
}

// gatewayAddress is the address the fabric gives a gateway in its
// GatewaySubnet: the first one Azure does not reserve (x.x.x.4).
func gatewayAddress(tx *store.Txn, subnetID string) string {
	_, prefixes, err := lookupSubnet(tx, subnetID)
	if err != nil {
		return ""
	}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			a := p.Masked().Addr()
			for range 4 {
				a = a.Next()
			}
			return a.String()
		}
	}
	return ""
}

// learnedRoutesResult answers getLearnedRoutes from the state now: the
// network's own prefixes (origin Network, as Azure lists them), the
// prefixes of the local network gateways of its IPsec connections (origin
// Network, next hop the site's address) and what on-premises BGP peers
// advertise (origin EBgp).
func learnedRoutesResult(tx *store.Txn, gatewayID string) (any, error) {
	ix, err := readInterconnect(tx)
	if err != nil {
		return nil, err
	}
	g := ix.gateway(gatewayID)
	if g == nil {
		return nil, api.NewError(http.StatusNotFound, "NotFound", "Resource %s not found.", gatewayID)
	}
	local := gatewayAddress(tx, g.subnetID)
	value := []gatewayRoute{}
	if v := ix.vnets[api.Key(g.vnetID)]; v != nil {
		for _, p := range SpaceOf(v.Properties.AddressSpace) {
			value = append(value, gatewayRoute{LocalAddress: local, Network: p, SourcePeer: local, Origin: "Network", Weight: 32768})
		}
	}
	for _, site := range ix.sites(g) {
		for _, p := range site.prefixes {
			value = append(value, gatewayRoute{LocalAddress: local, Network: p.String(), NextHop: api.Ptr(site.address), SourcePeer: local, Origin: "Network", Weight: 32768})
		}
	}
	if b := g.doc.bgp; b != nil {
		asn, peer := b.ASN, b.PeerAddress
		if asn == 0 {
			asn = defaultOnPremASN
		}
		if peer == "" {
			peer = defaultOnPremPeer
		}
		for _, p := range b.Prefixes {
			value = append(value, gatewayRoute{LocalAddress: local, Network: p, NextHop: api.Ptr(peer), SourcePeer: peer, Origin: "EBgp", AsPath: fmt.Sprint(asn), Weight: 32768})
		}
	}
	return map[string]any{"value": value}, nil
}

// The on-premises BGP peer's defaults: a private ASN and an address of
// the APIPA range Azure VPN gateways use for BGP.
const (
	defaultOnPremASN  = 65020
	defaultOnPremPeer = "169.254.21.1"
)

// parseLearned parses an advertisement's prefixes, for the routing model.
func (b *BgpAdvertisement) parsed() []netip.Prefix {
	if b == nil {
		return nil
	}
	var out []netip.Prefix
	for _, s := range b.Prefixes {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
