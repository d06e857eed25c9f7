package network

import (
	"encoding/json"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Network security groups: Azure's paths, JSON, etags and long-running
// PUT/DELETE, inline security rules and rules as child resources, the six
// default rules, and the read-only list of the subnets that use the group.
// A subnet names its NSG in properties.networkSecurityGroup.id; an NSG a
// subnet uses cannot be deleted. The rules are stored, not enforced.

const (
	TypeNetworkSecurityGroups  = "networkSecurityGroups"
	ARMTypeNSG                 = "Microsoft.Network/networkSecurityGroups"
	armTypeSecurityRule        = "Microsoft.Network/networkSecurityGroups/securityRules"
	armTypeDefaultSecurityRule = "Microsoft.Network/networkSecurityGroups/defaultSecurityRules"
	childSecurityRules         = "securityRules"
	childDefaultSecurityRules  = "defaultSecurityRules"
)

func decodeNSG(doc []byte) (*armnetwork.SecurityGroup, error) {
	return decodeStored(doc, "network security group", func(g *armnetwork.SecurityGroup) {
		if g.Properties == nil {
			g.Properties = &armnetwork.SecurityGroupPropertiesFormat{}
		}
	})
}

func settleNSG(g *armnetwork.SecurityGroup, removeChild, etag string) {
	if settleState(etag, &g.Etag, &g.Properties.ProvisioningState) {
		return
	}
	rules := g.Properties.SecurityRules[:0]
	for _, r := range g.Properties.SecurityRules {
		if removeChild != "" && strings.EqualFold(api.Str(r.Name), removeChild) {
			continue
		}
		r.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateSucceeded)
		rules = append(rules, r)
	}
	g.Properties.SecurityRules = rules
}

// renderNSG is a stored NSG as ARM returns it: with the subnets that use
// it, found in the virtual networks of its subscription.
func renderNSG(tx *store.Txn, row *store.ResourceRow) (json.RawMessage, error) {
	subnets, err := subnetsUsingNSG(tx, row.SubKey, row.Key)
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return row.Doc, nil
	}
	g, err := decodeNSG(row.Doc)
	if err != nil {
		return nil, err
	}
	for _, id := range subnets {
		g.Properties.Subnets = append(g.Properties.Subnets, &armnetwork.Subnet{ID: api.Ptr(id)})
	}
	return api.Encode(g)
}

// subnetsUsingNSG lists the IDs of the subnets whose
// networkSecurityGroup is the NSG with key nsgKey.
func subnetsUsingNSG(tx *store.Txn, subKey, nsgKey string) ([]string, error) {
	rows, err := tx.ListResources(subKey, "", api.TypeVirtualNetworks, "", 1<<30)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		v, err := decodeVNet(r.Doc)
		if err != nil {
			return nil, err
		}
		for _, sn := range v.Properties.Subnets {
			if sn.Properties != nil && sn.Properties.NetworkSecurityGroup != nil && api.Key(api.Str(sn.Properties.NetworkSecurityGroup.ID)) == nsgKey {
				out = append(out, api.Str(sn.ID))
			}
		}
	}
	return out, nil
}

// resolveNSG checks a subnet's networkSecurityGroup.id and returns the
// reference as the subnet keeps it: the NSG's own ID. An NSG in another
// location or subscription than the virtual network is refused, as in
// Azure. A reference to an NSG the fabric does not hold is kept as sent,
// with a warning: Azure would refuse it (InvalidResourceReference), but
// tests of other packages use such stand-in IDs (docs/fabric.md).
func (s *Provider) resolveNSG(tx *store.Txn, ref, vnetID, subnetID, loc string) (*armnetwork.SecurityGroup, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, nil
	}
	a, ok := api.ParseTopID(ref, TypeNetworkSecurityGroups)
	if !ok {
		return nil, api.BadRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.networkSecurityGroup.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	v, _ := api.ParseNetworkID(vnetID)
	if !strings.EqualFold(a.Sub, v.Sub) {
		return nil, api.InvalidReference(ref, subnetID)
	}
	row, err := tx.GetResource(api.Key(a.ParentID()))
	if err != nil {
		return nil, err
	}
	if row == nil {
		s.log.Warn("fabric: subnet references a network security group the fabric does not hold; kept as sent (Azure would refuse it)",
			"subnet", subnetID, "networkSecurityGroup", ref)
		return &armnetwork.SecurityGroup{ID: api.Ptr(ref)}, nil
	}
	g, err := decodeNSG(row.Doc)
	if err != nil {
		return nil, err
	}
	if api.Str(g.Location) != loc {
		return nil, api.InvalidReference(ref, subnetID)
	}
	return &armnetwork.SecurityGroup{ID: api.Ptr(row.ID)}, nil
}

// checkNSGNotInUse refuses to delete an NSG a subnet uses.
func checkNSGNotInUse(tx *store.Txn, row *store.ResourceRow) error {
	subnets, err := subnetsUsingNSG(tx, row.SubKey, row.Key)
	if err != nil {
		return err
	}
	if len(subnets) > 0 {
		return api.BadRequest("InUseNetworkSecurityGroupCannotBeDeleted",
			"Network security group %s cannot be deleted because it is in use by the following resources: %s. In order to delete the Network security group, remove the association with the resource(s).",
			row.ID, strings.Join(subnets, ", "))
	}
	return nil
}

var nsgKind = modelKind(TypeNetworkSecurityGroups, ARMTypeNSG, decodeNSG, renderNSG,
	func(g *armnetwork.SecurityGroup) (*string, map[string]*string) { return g.Location, g.Tags })

type nsgPut = topPut[armnetwork.SecurityGroup, *armnetwork.SecurityGroup]

// buildNSG makes the NSG a PUT stores: its inline rules, and the default
// rules it got when it was created.
func (s *Provider) buildNSG(p *nsgPut) (*api.Response, error) {
	in, cur, id := &p.in, p.cur, p.id
	etag := api.NewEtag()
	out := armnetwork.SecurityGroupPropertiesFormat{
		ProvisioningState: api.Ptr(armnetwork.ProvisioningStateUpdating),
		ResourceGUID:      api.Ptr(uuid.NewString()),
		SecurityRules:     []*armnetwork.SecurityRule{},
	}
	if in.Properties != nil {
		out.FlushConnection = in.Properties.FlushConnection
	}
	var curRules []*armnetwork.SecurityRule
	if cur != nil {
		out.ResourceGUID = cur.Properties.ResourceGUID
		out.DefaultSecurityRules = cur.Properties.DefaultSecurityRules
		curRules = cur.Properties.SecurityRules
	} else {
		out.DefaultSecurityRules = defaultSecurityRules(id, etag)
	}
	if err := buildSecurityRules(&out, id, in.Properties, curRules, etag); err != nil {
		return nil, err
	}
	g := &armnetwork.SecurityGroup{
		ID: api.Ptr(id), Name: api.Ptr(armid.Name(id)), Type: api.Ptr(ARMTypeNSG), Location: api.Ptr(p.loc),
		Tags: api.TagsOf(in.Tags), Properties: &out,
	}
	if cur != nil && succeeded(cur.Properties.ProvisioningState) && api.SameContent(p.row.Doc, g) {
		body, err := renderNSG(p.tx, p.row)
		return api.Unchanged(body, p.row.Etag), err
	}
	g.Etag = api.Ptr(etag)
	resp, err := p.Store(s, etag, g)
	if err == nil && resp.Body != nil {
		resp.Body, err = renderNSG(p.tx, p.stored())
	}
	return resp, err
}

// buildSecurityRules fills out.SecurityRules from the inline rules of a
// PUT: each validated, names unique, no two rules with the same priority
// and direction.
func buildSecurityRules(out *armnetwork.SecurityGroupPropertiesFormat, nsgID string, in *armnetwork.SecurityGroupPropertiesFormat, cur []*armnetwork.SecurityRule, etag string) error {
	if in == nil {
		return nil
	}
	seen := api.InlineNames{}
	for i, r := range in.SecurityRules {
		if r == nil {
			return api.InvalidFormat("properties.securityRules[%d] is null.", i)
		}
		name := api.Str(r.Name)
		if err := seen.Add(name, "Network security group %s has more than one security rule named %s.", armid.Name(nsgID)); err != nil {
			return err
		}
		nr, err := buildSecurityRule(nsgID, name, r.Properties, findRule(cur, name), etag)
		if err != nil {
			return err
		}
		out.SecurityRules = append(out.SecurityRules, nr)
	}
	return checkRulePriorities(out.SecurityRules)
}

func findRule(rules []*armnetwork.SecurityRule, name string) *armnetwork.SecurityRule {
	for _, r := range rules {
		if strings.EqualFold(api.Str(r.Name), name) {
			return r
		}
	}
	return nil
}
