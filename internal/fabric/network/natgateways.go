package network

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// NAT gateways: enough of Microsoft.Network/natGateways for a subnet to
// reference one (properties.natGateway.id), so that a subnet write needs
// natGateways/join/action on it as in Azure. CRUD with Azure's paths,
// etags and long-running PUT/DELETE; the read-only subnets list is
// computed from the virtual networks; a gateway a subnet uses cannot be
// deleted. Public IP addresses and prefixes are kept as sent, unchecked.

const (
	TypeNatGateways   = "natGateways"
	armTypeNatGateway = "Microsoft.Network/natGateways"
)

// natGatewayDoc is a NAT gateway as ARM returns it.
type natGatewayDoc struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Location   string            `json:"location"`
	Tags       map[string]string `json:"tags,omitempty"`
	Etag       string            `json:"etag"`
	Sku        *natSku           `json:"sku,omitempty"`
	Zones      []string          `json:"zones,omitempty"`
	Properties natGatewayProps   `json:"properties"`
}

type natSku struct {
	Name string `json:"name"`
}

type natGatewayProps struct {
	IdleTimeoutInMinutes int     `json:"idleTimeoutInMinutes"`
	ProvisioningState    string  `json:"provisioningState"`
	ResourceGUID         string  `json:"resourceGuid"`
	PublicIPAddresses    []idRef `json:"publicIpAddresses"`
	PublicIPPrefixes     []idRef `json:"publicIpPrefixes"`
	Subnets              []idRef `json:"subnets,omitempty"`
}

func decodeNatGateway(doc []byte) (*natGatewayDoc, error) {
	var g natGatewayDoc
	if err := json.Unmarshal(doc, &g); err != nil {
		return nil, fmt.Errorf("decoding stored NAT gateway: %w", err)
	}
	return &g, nil
}

func settleNatGateway(g *natGatewayDoc, _, etag string) {
	g.Properties.ProvisioningState = StateSucceeded
	if etag != "" {
		g.Etag, g.Properties.ProvisioningState = etag, stateFailed
	}
}

// renderNatGateway adds the subnets that use the gateway.
func renderNatGateway(tx *store.Txn, row *store.ResourceRow) (json.RawMessage, error) {
	g, err := decodeNatGateway(row.Doc)
	if err != nil {
		return nil, err
	}
	subnets, err := subnetsUsing(tx, row.SubKey, "natGateway", row.ID)
	if err != nil {
		return nil, err
	}
	g.Properties.Subnets = nil
	for _, id := range subnets {
		g.Properties.Subnets = append(g.Properties.Subnets, idRef{ID: id})
	}
	return api.Encode(g)
}

// subnetsUsing lists the subnets of a subscription whose property (natGateway,
// networkSecurityGroup) references id.
func subnetsUsing(tx *store.Txn, subKey, property, id string) ([]string, error) {
	rows, err := tx.ListResources(subKey, "", api.TypeVirtualNetworks, "", 1<<30)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, row := range rows {
		var v map[string]any
		if err := json.Unmarshal(row.Doc, &v); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", row.ID, err)
		}
		props, _ := azpolicy.Field(v, "properties").(map[string]any)
		subnets, _ := azpolicy.Field(props, "subnets").([]any)
		for _, sn := range subnets {
			m, _ := sn.(map[string]any)
			p, _ := azpolicy.Field(m, "properties").(map[string]any)
			if ref := api.IDOf(azpolicy.Field(p, property)); ref != "" && strings.EqualFold(ref, id) {
				snID, _ := azpolicy.Field(m, "id").(string)
				out = append(out, snID)
			}
		}
	}
	return out, nil
}

// checkNatGatewayNotInUse refuses to delete a NAT gateway a subnet uses.
func checkNatGatewayNotInUse(tx *store.Txn, row *store.ResourceRow) error {
	subnets, err := subnetsUsing(tx, row.SubKey, "natGateway", row.ID)
	if err != nil {
		return err
	}
	if len(subnets) > 0 {
		return api.BadRequest("InUseNatGatewayCannotBeDeleted",
			"NAT gateway %s is in use by subnet(s) %s and cannot be deleted. Remove the NAT gateway from the subnet(s) first.", row.ID, strings.Join(subnets, ", "))
	}
	return nil
}

// natGatewayIn is a NAT gateway as a client sends it.
type natGatewayIn struct {
	Location   *string            `json:"location"`
	Tags       map[string]*string `json:"tags"`
	Sku        *natSku            `json:"sku"`
	Zones      []string           `json:"zones"`
	Properties *struct {
		IdleTimeoutInMinutes *int    `json:"idleTimeoutInMinutes"`
		PublicIPAddresses    []idRef `json:"publicIpAddresses"`
		PublicIPPrefixes     []idRef `json:"publicIpPrefixes"`
	} `json:"properties"`
}

var natGatewayKind = topKind[natGatewayIn, *natGatewayDoc]{
	typ: TypeNatGateways, armType: armTypeNatGateway, render: renderNatGateway, body: api.DecodeObject, stored: decodeNatGateway,
	meta:  func(in *natGatewayIn) (*string, map[string]*string) { return in.Location, in.Tags },
	where: func(g *natGatewayDoc) string { return g.Location },
}

type natGatewayPut = topPut[natGatewayIn, *natGatewayDoc]

// buildNatGateway makes the NAT gateway a PUT stores, with Azure's
// defaults (sku Standard, idle timeout 4 minutes).
func (s *Provider) buildNatGateway(p *natGatewayPut) (*api.Response, error) {
	in, cur, id, name := &p.in, p.cur, p.id, p.t.Name
	guid := uuid.NewString()
	if cur != nil {
		guid = cur.Properties.ResourceGUID
	}
	g := &natGatewayDoc{ID: id, Name: armid.Name(id), Type: armTypeNatGateway, Location: p.loc, Tags: PlainTags(in.Tags),
		Sku: &natSku{Name: "Standard"}, Zones: in.Zones,
		Properties: natGatewayProps{IdleTimeoutInMinutes: 4, ProvisioningState: stateUpdating, ResourceGUID: guid,
			PublicIPAddresses: []idRef{}, PublicIPPrefixes: []idRef{}}}
	if in.Sku != nil && in.Sku.Name != "" {
		if !strings.EqualFold(in.Sku.Name, "Standard") && !strings.EqualFold(in.Sku.Name, "StandardV2") {
			return nil, api.BadRequest("InvalidNatGatewaySku", "NAT gateway %s: sku %q is not Standard or StandardV2.", name, in.Sku.Name)
		}
		g.Sku.Name = in.Sku.Name
	}
	if props := in.Properties; props != nil {
		if props.IdleTimeoutInMinutes != nil {
			if *props.IdleTimeoutInMinutes < 4 || *props.IdleTimeoutInMinutes > 120 {
				return nil, api.BadRequest("NatGatewayInvalidIdleTimeoutInMinutes",
					"NAT gateway %s: idleTimeoutInMinutes %d is outside 4 to 120.", name, *props.IdleTimeoutInMinutes)
			}
			g.Properties.IdleTimeoutInMinutes = *props.IdleTimeoutInMinutes
		}
		if props.PublicIPAddresses != nil {
			g.Properties.PublicIPAddresses = props.PublicIPAddresses
		}
		if props.PublicIPPrefixes != nil {
			g.Properties.PublicIPPrefixes = props.PublicIPPrefixes
		}
	}
	if cur != nil && cur.Properties.ProvisioningState == StateSucceeded {
		g.Etag = cur.Etag
		same := *g
		same.Properties.ProvisioningState = StateSucceeded
		if api.SameContent(p.row.Doc, &same) {
			b, err := renderNatGateway(p.tx, p.row)
			return api.Unchanged(b, p.row.Etag), err
		}
	}
	g.Etag = api.NewEtag()
	return p.Store(s, g.Etag, g)
}

// resolveNatGateway checks a subnet's natGateway.id: a NAT gateway that
// exists in the virtual network's subscription and location.
func resolveNatGateway(tx *store.Txn, ref, vnetID, subnetID, loc string) (string, error) {
	typ, ok := api.ReferencedType(ref)
	if !ok || !strings.EqualFold(typ, armTypeNatGateway) {
		return "", api.BadRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.natGateway.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	if !strings.EqualFold(api.SubscriptionOf(ref), api.SubscriptionOf(vnetID)) {
		return "", api.InvalidReference(ref, subnetID)
	}
	row, err := tx.GetResource(api.Key(ref))
	if err != nil {
		return "", err
	}
	if row == nil {
		return "", api.InvalidReference(ref, subnetID)
	}
	g, err := decodeNatGateway(row.Doc)
	if err != nil {
		return "", err
	}
	if api.NormalizeLocation(g.Location) != api.NormalizeLocation(loc) {
		return "", api.InvalidReference(ref, subnetID)
	}
	return row.ID, nil
}
