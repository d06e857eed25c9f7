package network

import (
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Local network gateways (an on-premises site and its address prefixes)
// and connections (what links a gateway to a site, to another gateway or
// to an ExpressRoute circuit), as ARM serves them.

func decodeLocalGateway(doc []byte) (*armnetwork.LocalNetworkGateway, error) {
	return decodeStored(doc, "local network gateway", func(l *armnetwork.LocalNetworkGateway) {
		if l.Properties == nil {
			l.Properties = &armnetwork.LocalNetworkGatewayPropertiesFormat{}
		}
	})
}

func decodeConnection(doc []byte) (*armnetwork.VirtualNetworkGatewayConnection, error) {
	return decodeStored(doc, "connection", func(c *armnetwork.VirtualNetworkGatewayConnection) {
		if c.Properties == nil {
			c.Properties = &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{}
		}
	})
}

var localGatewayKind = modelKind(TypeLocalGateways, armTypeLocalGateway, decodeLocalGateway, renderPlain,
	func(l *armnetwork.LocalNetworkGateway) (*string, map[string]*string) { return l.Location, l.Tags })

type localGatewayPut = topPut[armnetwork.LocalNetworkGateway, *armnetwork.LocalNetworkGateway]

// buildLocalGateway makes the on-premises site a PUT stores: its address
// prefixes (valid CIDRs) and its address (gatewayIpAddress or fqdn, one
// is required).
func (s *Provider) buildLocalGateway(p *localGatewayPut) (*api.Response, error) {
	id := p.id
	if p.in.Properties == nil {
		return nil, api.InvalidFormat("Local network gateway %s has no properties.", id)
	}
	out := *p.in.Properties
	if api.Str(out.GatewayIPAddress) == "" && api.Str(out.Fqdn) == "" {
		return nil, api.BadRequest("LocalNetworkGatewayMustHaveIpAddressOrFqdn", "Local network gateway %s needs properties.gatewayIpAddress or properties.fqdn.", id)
	}
	if a := api.Str(out.GatewayIPAddress); a != "" {
		if _, err := netip.ParseAddr(a); err != nil {
			return nil, api.BadRequest("InvalidIPAddress", "The gatewayIpAddress %q of local network gateway %s is not an IP address.", a, id)
		}
	}
	if out.LocalNetworkAddressSpace == nil {
		out.LocalNetworkAddressSpace = &armnetwork.AddressSpace{AddressPrefixes: []*string{}}
	}
	var space []*string
	for _, pfx := range out.LocalNetworkAddressSpace.AddressPrefixes {
		pf, err := parseCIDR(api.Str(pfx), "local network gateway "+p.t.Name)
		if err != nil {
			return nil, err
		}
		space = append(space, api.Ptr(pf.String()))
	}
	out.LocalNetworkAddressSpace = &armnetwork.AddressSpace{AddressPrefixes: space}
	if space == nil {
		out.LocalNetworkAddressSpace.AddressPrefixes = []*string{}
	}
	out.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)
	out.ResourceGUID = api.Ptr(uuid.NewString())
	if p.cur != nil {
		out.ResourceGUID = p.cur.Properties.ResourceGUID
	}
	etag := api.NewEtag()
	l := &armnetwork.LocalNetworkGateway{ID: api.Ptr(id), Name: api.Ptr(armid.Name(id)), Type: api.Ptr(armTypeLocalGateway), Location: api.Ptr(p.loc),
		Tags: api.TagsOf(p.in.Tags), Etag: api.Ptr(etag), Properties: &out}
	return p.Store(s, etag, l)
}

// connectionsOf returns the connections that name a resource (a gateway
// or a local network gateway) as one of their ends.
func connectionsOf(tx *store.Txn, id string) ([]*armnetwork.VirtualNetworkGatewayConnection, error) {
	a := strings.Split(strings.Trim(id, "/"), "/")
	if len(a) < 2 {
		return nil, nil
	}
	rows, err := tx.ListResources(api.Key(a[1]), "", TypeConnections, "", 1<<30)
	if err != nil {
		return nil, err
	}
	var out []*armnetwork.VirtualNetworkGatewayConnection
	for _, r := range rows {
		c, err := decodeConnection(r.Doc)
		if err != nil {
			return nil, err
		}
		for _, end := range ConnectionEnds(c) {
			if api.Key(end) == api.Key(id) {
				out = append(out, c)
				break
			}
		}
	}
	return out, nil
}

// ConnectionEnds are the IDs a connection links.
func ConnectionEnds(c *armnetwork.VirtualNetworkGatewayConnection) []string {
	p := c.Properties
	var out []string
	if p.VirtualNetworkGateway1 != nil {
		out = append(out, api.Str(p.VirtualNetworkGateway1.ID))
	}
	if p.VirtualNetworkGateway2 != nil {
		out = append(out, api.Str(p.VirtualNetworkGateway2.ID))
	}
	if p.LocalNetworkGateway2 != nil {
		out = append(out, api.Str(p.LocalNetworkGateway2.ID))
	}
	return out
}

// loadTop reads a top-level resource of a type by ID: nil when missing.
func loadTop(tx *store.Txn, id, typ string) (*store.ResourceRow, error) {
	a, ok := api.ParseTopID(id, typ)
	if !ok {
		return nil, nil
	}
	row, err := tx.GetResourceForRead(api.Key(a.ParentID()))
	if err != nil || row == nil || row.Type != typ {
		return nil, err
	}
	return row, nil
}

func renderConnection(tx *store.Txn, row *store.ResourceRow) (json.RawMessage, error) {
	c, err := decodeConnection(row.Doc)
	if err != nil {
		return nil, err
	}
	status := armnetwork.VirtualNetworkGatewayConnectionStatusConnected
	for _, end := range ConnectionEnds(c) {
		typ := TypeVNetGateways
		if strings.Contains(strings.ToLower(end), "/"+strings.ToLower(TypeLocalGateways)+"/") {
			typ = TypeLocalGateways
		}
		r, err := loadTop(tx, end, typ)
		if err != nil {
			return nil, err
		}
		if r == nil {
			status = armnetwork.VirtualNetworkGatewayConnectionStatusNotConnected
		}
	}
	c.Properties.ConnectionStatus = api.Ptr(status)
	return api.Encode(c)
}

var connectionKind = modelKind(TypeConnections, armTypeConnection, decodeConnection, renderConnection, func(c *armnetwork.VirtualNetworkGatewayConnection) (*string, map[string]*string) {
	return c.Location, c.Tags
})

type connectionPut = topPut[armnetwork.VirtualNetworkGatewayConnection, *armnetwork.VirtualNetworkGatewayConnection]

// buildConnection makes the connection a PUT stores: IPsec between a VPN
// gateway and a local network gateway, Vnet2Vnet between two gateways, or
// ExpressRoute between an ExpressRoute gateway and a circuit (peer.id;
// circuits are not modelled, the ID is kept as sent). The shared key is
// not stored (Azure does not return it on GET either).
func (s *Provider) buildConnection(p *connectionPut) (*api.Response, error) {
	out, err := connectionProperties(p.tx, p.id, p.in.Properties)
	if err != nil {
		return nil, err
	}
	if p.cur != nil {
		out.ResourceGUID = p.cur.Properties.ResourceGUID
	}
	etag := api.NewEtag()
	c := &armnetwork.VirtualNetworkGatewayConnection{ID: api.Ptr(p.id), Name: api.Ptr(armid.Name(p.id)), Type: api.Ptr(armTypeConnection), Location: api.Ptr(p.loc),
		Tags: api.TagsOf(p.in.Tags), Etag: api.Ptr(etag), Properties: out}
	return p.Store(s, etag, c)
}

func connectionProperties(tx *store.Txn, id string, in *armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat) (*armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat, error) {
	if in == nil || in.ConnectionType == nil {
		return nil, api.BadRequest("InvalidConnectionType", "Connection %s has no properties.connectionType; want IPsec, Vnet2Vnet or ExpressRoute.", id)
	}
	gatewayRef := func(field string, g *armnetwork.VirtualNetworkGateway) (string, *gatewayDoc, error) {
		ref := ""
		if g != nil {
			ref = api.Str(g.ID)
		}
		if ref == "" {
			return "", nil, api.BadRequest("InvalidRequestFormat", "Cannot parse the request. Connection %s has no properties.%s.id.", id, field)
		}
		row, err := loadTop(tx, ref, TypeVNetGateways)
		if err != nil {
			return "", nil, err
		}
		if row == nil {
			return "", nil, api.InvalidReference(ref, id)
		}
		d, err := decodeGateway(row.Doc)
		return row.ID, d, err
	}
	out := armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{
		EnableBgp:         api.Ptr(in.EnableBgp != nil && *in.EnableBgp),
		RoutingWeight:     in.RoutingWeight,
		ProvisioningState: api.Ptr(armnetwork.ProvisioningStateUpdating),
		ResourceGUID:      api.Ptr(uuid.NewString()),
	}
	gw1, d1, err := gatewayRef("virtualNetworkGateway1", in.VirtualNetworkGateway1)
	if err != nil {
		return nil, err
	}
	out.VirtualNetworkGateway1 = &armnetwork.VirtualNetworkGateway{ID: api.Ptr(gw1)}
	wantType := armnetwork.VirtualNetworkGatewayTypeVPN
	switch typ := strings.ToLower(string(*in.ConnectionType)); typ {
	case "ipsec":
		out.ConnectionType = api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeIPsec)
		ref := ""
		if in.LocalNetworkGateway2 != nil {
			ref = api.Str(in.LocalNetworkGateway2.ID)
		}
		row, err := loadTop(tx, ref, TypeLocalGateways)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return nil, api.InvalidReference(ref, id)
		}
		out.LocalNetworkGateway2 = &armnetwork.LocalNetworkGateway{ID: api.Ptr(row.ID)}
	case "vnet2vnet":
		out.ConnectionType = api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeVnet2Vnet)
		gw2, _, err := gatewayRef("virtualNetworkGateway2", in.VirtualNetworkGateway2)
		if err != nil {
			return nil, err
		}
		out.VirtualNetworkGateway2 = &armnetwork.VirtualNetworkGateway{ID: api.Ptr(gw2)}
	case "expressroute":
		out.ConnectionType = api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeExpressRoute)
		wantType = armnetwork.VirtualNetworkGatewayTypeExpressRoute
		if in.Peer == nil || api.Str(in.Peer.ID) == "" {
			return nil, api.BadRequest("InvalidRequestFormat", "Cannot parse the request. ExpressRoute connection %s has no properties.peer.id (the circuit).", id)
		}
		out.Peer = &armnetwork.SubResource{ID: in.Peer.ID}
	default:
		return nil, api.BadRequest("InvalidConnectionType", "Connection %s: connectionType %q is not IPsec, Vnet2Vnet or ExpressRoute.", id, *in.ConnectionType)
	}
	if t := d1.gw.Properties.GatewayType; t == nil || *t != wantType {
		return nil, api.BadRequest("ConnectionTypeDoesNotMatchGatewayType",
			"Connection %s of type %s needs a gateway of type %s; %s is not one.", id, *out.ConnectionType, wantType, gw1)
	}
	return &out, nil
}
