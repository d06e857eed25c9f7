package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"
)

// Network security groups: Azure's paths, JSON, etags and long-running
// PUT/DELETE, inline security rules and rules as child resources, the six
// default rules, and the read-only list of the subnets that use the group.
// A subnet names its NSG in properties.networkSecurityGroup.id; an NSG a
// subnet uses cannot be deleted. The rules are stored, not enforced.

const (
	typeNetworkSecurityGroups  = "networkSecurityGroups"
	armTypeNSG                 = "Microsoft.Network/networkSecurityGroups"
	armTypeSecurityRule        = "Microsoft.Network/networkSecurityGroups/securityRules"
	armTypeDefaultSecurityRule = "Microsoft.Network/networkSecurityGroups/defaultSecurityRules"
	childSecurityRules         = "securityRules"
	childDefaultSecurityRules  = "defaultSecurityRules"
)

func decodeNSG(doc []byte) (*armnetwork.SecurityGroup, error) {
	var g armnetwork.SecurityGroup
	if err := json.Unmarshal(doc, &g); err != nil {
		return nil, fmt.Errorf("decoding stored network security group: %w", err)
	}
	if g.Properties == nil {
		g.Properties = &armnetwork.SecurityGroupPropertiesFormat{}
	}
	return &g, nil
}

// settleNSG: see settleDoc.
func settleNSG(doc []byte, removeChild, etag string) ([]byte, error) {
	g, err := decodeNSG(doc)
	if err != nil {
		return nil, err
	}
	if etag != "" {
		g.Etag = ptr(etag)
		g.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateFailed)
		return encode(g)
	}
	g.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateSucceeded)
	rules := g.Properties.SecurityRules[:0]
	for _, r := range g.Properties.SecurityRules {
		if removeChild != "" && strings.EqualFold(str(r.Name), removeChild) {
			continue
		}
		r.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateSucceeded)
		rules = append(rules, r)
	}
	g.Properties.SecurityRules = rules
	return encode(g)
}

// renderNSG is a stored NSG as ARM returns it: with the subnets that use
// it, found in the virtual networks of its subscription.
func renderNSG(tx *txn, row *resourceRow) (json.RawMessage, error) {
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
		g.Properties.Subnets = append(g.Properties.Subnets, &armnetwork.Subnet{ID: ptr(id)})
	}
	return encode(g)
}

// subnetsUsingNSG lists the IDs of the subnets whose
// networkSecurityGroup is the NSG with key nsgKey.
func subnetsUsingNSG(tx *txn, subKey, nsgKey string) ([]string, error) {
	rows, err := tx.listResources(subKey, "", typeVirtualNetworks, "", 1<<30)
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
			if sn.Properties != nil && sn.Properties.NetworkSecurityGroup != nil && key(str(sn.Properties.NetworkSecurityGroup.ID)) == nsgKey {
				out = append(out, str(sn.ID))
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
func (s *Server) resolveNSG(tx *txn, ref, vnetID, subnetID, loc string) (*armnetwork.SecurityGroup, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, nil
	}
	sub, rg, name, ok := parseNSGID(ref)
	if !ok {
		return nil, badRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.networkSecurityGroup.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	v, _ := parseNetworkID(vnetID)
	if !strings.EqualFold(sub, v.Sub) {
		return nil, errInvalidReference(ref, subnetID)
	}
	row, err := tx.getResource(key(resourceID(sub, rg, typeNetworkSecurityGroups, name)))
	if err != nil {
		return nil, err
	}
	if row == nil {
		s.log.Warn("fabric: subnet references a network security group the fabric does not hold; kept as sent (Azure would refuse it)",
			"subnet", subnetID, "networkSecurityGroup", ref)
		return &armnetwork.SecurityGroup{ID: ptr(ref)}, nil
	}
	g, err := decodeNSG(row.Doc)
	if err != nil {
		return nil, err
	}
	if str(g.Location) != loc {
		return nil, errInvalidReference(ref, subnetID)
	}
	return &armnetwork.SecurityGroup{ID: ptr(row.ID)}, nil
}

// parseNSGID parses an NSG ID, case-insensitively.
func parseNSGID(id string) (sub, rg, name string, ok bool) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) != 8 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") ||
		!strings.EqualFold(segs[4], "providers") || !strings.EqualFold(segs[5], networkNamespace) ||
		!strings.EqualFold(segs[6], typeNetworkSecurityGroups) || segs[1] == "" || segs[3] == "" || segs[7] == "" {
		return "", "", "", false
	}
	return segs[1], segs[3], segs[7], true
}

func (s *Server) networkSecurityGroups(ctx context.Context, q *request, n int) (*response, error) {
	seg := q.segs
	switch {
	case n == 7:
		return s.methods(q, map[string]handler{"GET": s.listNSGs})(ctx, q)
	case n == 8:
		return s.methods(q, map[string]handler{
			"GET": s.getNSG, "PUT": s.putNSG, "PATCH": s.patchNSG, "DELETE": s.deleteNSG,
		})(ctx, q)
	case n == 9 && strings.EqualFold(seg[8], childSecurityRules):
		return s.methods(q, map[string]handler{"GET": s.listSecurityRules})(ctx, q)
	case n == 10 && strings.EqualFold(seg[8], childSecurityRules):
		return s.methods(q, map[string]handler{"GET": s.getSecurityRule, "PUT": s.putSecurityRule, "DELETE": s.deleteSecurityRule})(ctx, q)
	case n == 9 && strings.EqualFold(seg[8], childDefaultSecurityRules):
		return s.methods(q, map[string]handler{"GET": s.listDefaultSecurityRules})(ctx, q)
	case n == 10 && strings.EqualFold(seg[8], childDefaultSecurityRules):
		return s.methods(q, map[string]handler{"GET": s.getDefaultSecurityRule})(ctx, q)
	}
	if n >= 9 {
		return nil, errResourceType(q, typeNetworkSecurityGroups+"/"+seg[8])
	}
	return nil, errNoRoute(q)
}

func (s *Server) listNSGs(ctx context.Context, q *request) (*response, error) {
	return s.listTop(ctx, q, typeNetworkSecurityGroups, renderNSG)
}

func (s *Server) getNSG(ctx context.Context, q *request) (*response, error) {
	var resp *response
	err := s.readTop(ctx, q, typeNetworkSecurityGroups, armTypeNSG, func(tx *txn, row *resourceRow) error {
		body, err := renderNSG(tx, row)
		resp = &response{status: http.StatusOK, body: body, header: withEtag(row.Etag)}
		return err
	})
	return resp, err
}

func (s *Server) patchNSG(ctx context.Context, q *request) (*response, error) {
	return s.patchTags(ctx, q, typeNetworkSecurityGroups, armTypeNSG, renderNSG)
}

func (s *Server) deleteNSG(ctx context.Context, q *request) (*response, error) {
	return s.deleteTop(ctx, q, typeNetworkSecurityGroups, func(tx *txn, row *resourceRow) error {
		subnets, err := subnetsUsingNSG(tx, row.SubKey, row.Key)
		if err != nil {
			return err
		}
		if len(subnets) > 0 {
			return badRequest("InUseNetworkSecurityGroupCannotBeDeleted",
				"Network security group %s cannot be deleted because it is in use by the following resources: %s. In order to delete the Network security group, remove the association with the resource(s).",
				row.ID, strings.Join(subnets, ", "))
		}
		return nil
	})
}

func (s *Server) putNSG(ctx context.Context, q *request) (*response, error) {
	var in armnetwork.SecurityGroup
	if err := decodeModel(q.body, &in); err != nil {
		return nil, err
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	t := q.target()
	if !validName(t.name) {
		return nil, errInvalidName(t.name)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeNetworkSecurityGroups, func(tx *txn, rg *rgRow, row, fresh *resourceRow) error {
		id, curEtag := fresh.ID, ""
		var cur *armnetwork.SecurityGroup
		if row != nil {
			var err error
			if cur, err = decodeNSG(row.Doc); err != nil {
				return err
			}
			id, curEtag = row.ID, row.Etag
		}
		if err := checkPreconditions(q, id, row != nil, curEtag); err != nil {
			return err
		}
		curLoc := ""
		if cur != nil {
			curLoc = str(cur.Location)
		}
		loc, err := locationOf(in.Location, curLoc, t.name, rg.Name)
		if err != nil {
			return err
		}
		etag := newEtag()
		out := armnetwork.SecurityGroupPropertiesFormat{
			ProvisioningState: ptr(armnetwork.ProvisioningStateUpdating),
			ResourceGUID:      ptr(uuid.NewString()),
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
			return err
		}
		g := &armnetwork.SecurityGroup{
			ID: ptr(id), Name: ptr(nameOf(id)), Type: ptr(armTypeNSG), Location: ptr(loc),
			Tags: tagsOf(in.Tags), Properties: &out,
		}
		if cur != nil && succeeded(cur.Properties.ProvisioningState) && sameContent(row.Doc, g) {
			body, err := renderNSG(tx, row)
			resp = unchanged(body, row.Etag)
			return err
		}
		g.Etag = ptr(etag)
		resp, err = s.storeTopPut(tx, q, rg, row, fresh, id, loc, etag, g)
		if err == nil && resp.body != nil {
			resp.body, err = renderNSG(tx, row0(row, fresh))
		}
		return err
	})
	return resp, err
}

// row0 is the row a top-level PUT stored: the existing one, or fresh.
func row0(row, fresh *resourceRow) *resourceRow {
	if row != nil {
		return row
	}
	return fresh
}

// buildSecurityRules fills out.SecurityRules from the inline rules of a
// PUT: each validated, names unique, no two rules with the same priority
// and direction.
func buildSecurityRules(out *armnetwork.SecurityGroupPropertiesFormat, nsgID string, in *armnetwork.SecurityGroupPropertiesFormat, cur []*armnetwork.SecurityRule, etag string) error {
	if in == nil {
		return nil
	}
	seen := map[string]bool{}
	for i, r := range in.SecurityRules {
		if r == nil {
			return errInvalidFormat("properties.securityRules[%d] is null.", i)
		}
		name := str(r.Name)
		if seen[key(name)] {
			return badRequest("DuplicateResourceName", "Network security group %s has more than one security rule named %s.", nameOf(nsgID), name)
		}
		seen[key(name)] = true
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
		if strings.EqualFold(str(r.Name), name) {
			return r
		}
	}
	return nil
}
