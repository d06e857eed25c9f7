package network

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Security rules and default security rules as child resources of an NSG:
// a rule PUT or DELETE changes the NSG (new etag, an operation on it), as a
// route does its route table.

// nsgParent is the NSG as the parent of its rules.
var nsgParent = parentKind[*armnetwork.SecurityGroup]{
	typ: TypeNetworkSecurityGroups, armType: ARMTypeNSG, decode: decodeNSG,
	location:  func(g *armnetwork.SecurityGroup) string { return api.Str(g.Location) },
	succeeded: func(g *armnetwork.SecurityGroup) bool { return succeeded(g.Properties.ProvisioningState) },
	updating: func(g *armnetwork.SecurityGroup, etag string) {
		g.Etag, g.Properties.ProvisioningState = api.Ptr(etag), api.Ptr(armnetwork.ProvisioningStateUpdating)
	},
}

// securityRuleKind and defaultRuleKind are an NSG's rules and its default
// rules (which can be read only).
var (
	securityRuleKind = ruleKind(childSecurityRules, func(g *armnetwork.SecurityGroup) *[]*armnetwork.SecurityRule {
		return &g.Properties.SecurityRules
	})
	defaultRuleKind = ruleKind(childDefaultSecurityRules, func(g *armnetwork.SecurityGroup) *[]*armnetwork.SecurityRule {
		return &g.Properties.DefaultSecurityRules
	})
)

func ruleKind(child string, items func(*armnetwork.SecurityGroup) *[]*armnetwork.SecurityRule) childKind[*armnetwork.SecurityGroup, *armnetwork.SecurityRule] {
	return childKind[*armnetwork.SecurityGroup, *armnetwork.SecurityRule]{
		parent: &nsgParent, child: child, items: items,
		name:    func(r *armnetwork.SecurityRule) string { return api.Str(r.Name) },
		id:      func(r *armnetwork.SecurityRule) string { return api.Str(r.ID) },
		etag:    func(r *armnetwork.SecurityRule) string { return api.Str(r.Etag) },
		setEtag: func(r *armnetwork.SecurityRule, etag string) { r.Etag = api.Ptr(etag) },
		deleting: func(r *armnetwork.SecurityRule) {
			r.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		},
	}
}

type rulePut = childPut[armnetwork.SecurityRule, *armnetwork.SecurityGroup, *armnetwork.SecurityRule]

func (s *Provider) putSecurityRule(ctx context.Context, q *api.Request) (*api.Response, error) {
	return s.put(ctx, q, &rulePut{
		kind: &securityRuleKind, body: api.DecodeModel,
		build: func(p *rulePut) (*armnetwork.SecurityRule, error) {
			return buildSecurityRule(p.row.ID, p.t.ChildName, p.in.Properties, p.prev, p.etag)
		},
		same:  sameRule,
		check: func(_ *rulePut, rules []*armnetwork.SecurityRule) error { return checkRulePriorities(rules) },
	})
}
