package network

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Security rules of network security groups: Azure's validation of a rule
// and the six default rules every NSG carries. The fabric stores and
// returns the rules; it does not filter packets by them (docs/fabric.md).

const (
	minRulePriority = 100
	maxRulePriority = 4096
)

// buildSecurityRule validates a security rule as a client sent it (inline
// in an NSG, or as a child resource) and returns it as the NSG holds it.
// An unchanged rule keeps its etag.
func buildSecurityRule(nsgID, name string, in *armnetwork.SecurityRulePropertiesFormat, prev *armnetwork.SecurityRule, etag string) (*armnetwork.SecurityRule, error) {
	if !api.ValidName(name) {
		return nil, api.InvalidName(name)
	}
	if prev != nil {
		name = api.Str(prev.Name)
	}
	id := api.ChildID(nsgID, childSecurityRules, name)
	if in == nil {
		return nil, api.InvalidFormat("Security rule %s has no properties.", name)
	}
	p := *in
	p.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)

	if p.Protocol == nil {
		return nil, api.InvalidFormat("Security rule %s has no protocol.", name)
	}
	proto, ok := canonicalEnum(string(*p.Protocol), armnetwork.PossibleSecurityRuleProtocolValues())
	if !ok {
		return nil, api.InvalidFormat("Security rule %s has an unknown protocol %q; it must be one of Tcp, Udp, Icmp, Esp, Ah, *.", name, *p.Protocol)
	}
	p.Protocol = &proto
	if p.Access == nil {
		return nil, api.InvalidFormat("Security rule %s has no access.", name)
	}
	access, ok := canonicalEnum(string(*p.Access), armnetwork.PossibleSecurityRuleAccessValues())
	if !ok {
		return nil, api.InvalidFormat("Security rule %s has an unknown access %q; it must be Allow or Deny.", name, *p.Access)
	}
	p.Access = &access
	if p.Direction == nil {
		return nil, api.InvalidFormat("Security rule %s has no direction.", name)
	}
	dir, ok := canonicalEnum(string(*p.Direction), armnetwork.PossibleSecurityRuleDirectionValues())
	if !ok {
		return nil, api.InvalidFormat("Security rule %s has an unknown direction %q; it must be Inbound or Outbound.", name, *p.Direction)
	}
	p.Direction = &dir
	if p.Priority == nil || *p.Priority < minRulePriority || *p.Priority > maxRulePriority {
		got := "none"
		if p.Priority != nil {
			got = strconv.Itoa(int(*p.Priority))
		}
		return nil, api.BadRequest("SecurityRuleInvalidPriority",
			"Security rule %s has invalid Priority. Value provided: %s Allowed values are from %d to %d.", id, got, minRulePriority, maxRulePriority)
	}
	for _, f := range []struct {
		field string
		one   *string
		many  []*string
	}{
		{"sourcePortRange", p.SourcePortRange, p.SourcePortRanges},
		{"destinationPortRange", p.DestinationPortRange, p.DestinationPortRanges},
	} {
		ranges := f.many
		if f.one != nil {
			ranges = append(ranges, f.one)
		}
		for _, r := range ranges {
			if !validPortRange(api.Str(r)) {
				return nil, api.BadRequest("SecurityRuleInvalidPortRange",
					"Security rule %s has invalid Port range. Value provided: %s. Value should be an integer OR integer range with '-' delimiter. Valid range 0-65535.", id, api.Str(r))
			}
		}
		if len(ranges) == 0 {
			return nil, api.BadRequest("SecurityRuleParameterContainsUnsupportedValue", "Security rule %s has no %s.", id, f.field)
		}
	}
	if p.SourceAddressPrefix == nil && len(p.SourceAddressPrefixes) == 0 && len(p.SourceApplicationSecurityGroups) == 0 {
		return nil, api.BadRequest("SecurityRuleParameterContainsUnsupportedValue", "Security rule %s has no sourceAddressPrefix.", id)
	}
	if p.DestinationAddressPrefix == nil && len(p.DestinationAddressPrefixes) == 0 && len(p.DestinationApplicationSecurityGroups) == 0 {
		return nil, api.BadRequest("SecurityRuleParameterContainsUnsupportedValue", "Security rule %s has no destinationAddressPrefix.", id)
	}
	if p.SourcePortRanges == nil {
		p.SourcePortRanges = []*string{}
	}
	if p.DestinationPortRanges == nil {
		p.DestinationPortRanges = []*string{}
	}
	if p.SourceAddressPrefixes == nil {
		p.SourceAddressPrefixes = []*string{}
	}
	if p.DestinationAddressPrefixes == nil {
		p.DestinationAddressPrefixes = []*string{}
	}
	out := &armnetwork.SecurityRule{ID: api.Ptr(id), Name: api.Ptr(name), Type: api.Ptr(armTypeSecurityRule), Etag: api.Ptr(etag), Properties: &p}
	if prev != nil && sameRule(prev, out) {
		out.Etag = prev.Etag
	}
	return out, nil
}

// canonicalEnum finds s among an SDK enum's values without regard to case.
func canonicalEnum[T ~string](s string, values []T) (T, bool) {
	for _, v := range values {
		if strings.EqualFold(string(v), s) {
			return v, true
		}
	}
	return "", false
}

// validPortRange: "*", a port, or "low-high", ports 0-65535.
func validPortRange(s string) bool {
	if s == "*" {
		return true
	}
	lo, hi, isRange := strings.Cut(s, "-")
	port := func(t string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		return n, err == nil && n >= 0 && n <= 65535
	}
	a, ok := port(lo)
	if !ok {
		return false
	}
	if !isRange {
		return true
	}
	b, ok := port(hi)
	return ok && a <= b
}

// sameRule compares two rules apart from etag and provisioning state.
func sameRule(a, b *armnetwork.SecurityRule) bool {
	strip := func(r *armnetwork.SecurityRule) string {
		c := *r
		p := *r.Properties
		p.ProvisioningState = nil
		c.Properties, c.Etag = &p, nil
		b, _ := api.Encode(&c)
		return string(b)
	}
	return strip(a) == strip(b)
}

// checkRulePriorities refuses two rules with the same priority and
// direction.
func checkRulePriorities(rules []*armnetwork.SecurityRule) error {
	seen := map[string]string{}
	for _, r := range rules {
		k := fmt.Sprintf("%s/%d", *r.Properties.Direction, *r.Properties.Priority)
		if first, ok := seen[k]; ok {
			return api.BadRequest("SecurityRuleConflict",
				"Security rule %s conflicts with rule %s. Rules cannot have the same Priority and Direction. To learn more, see aka.ms/nsgrules.", api.Str(r.Name), first)
		}
		seen[k] = api.Str(r.Name)
	}
	return nil
}

// defaultSecurityRules are the rules Azure puts in every NSG, lowest
// precedence: traffic inside the virtual network and from the load
// balancer is allowed in, outbound to the VNet and the Internet is allowed,
// everything else is denied.
func defaultSecurityRules(nsgID, etag string) []*armnetwork.SecurityRule {
	type def struct {
		name, desc, src, dst string
		prio                 int32
		allow                bool
		dir                  armnetwork.SecurityRuleDirection
	}
	in, out := armnetwork.SecurityRuleDirectionInbound, armnetwork.SecurityRuleDirectionOutbound
	defs := []def{
		{"AllowVnetInBound", "Allow inbound traffic from all VMs in VNET", "VirtualNetwork", "VirtualNetwork", 65000, true, in},
		{"AllowAzureLoadBalancerInBound", "Allow inbound traffic from azure load balancer", "AzureLoadBalancer", "*", 65001, true, in},
		{"DenyAllInBound", "Deny all inbound traffic", "*", "*", 65500, false, in},
		{"AllowVnetOutBound", "Allow outbound traffic from all VMs to all VMs in VNET", "VirtualNetwork", "VirtualNetwork", 65000, true, out},
		{"AllowInternetOutBound", "Allow outbound traffic from all VMs to Internet", "*", "Internet", 65001, true, out},
		{"DenyAllOutBound", "Deny all outbound traffic", "*", "*", 65500, false, out},
	}
	rules := make([]*armnetwork.SecurityRule, 0, len(defs))
	for _, d := range defs {
		access := armnetwork.SecurityRuleAccessDeny
		if d.allow {
			access = armnetwork.SecurityRuleAccessAllow
		}
		rules = append(rules, &armnetwork.SecurityRule{
			ID: api.Ptr(api.ChildID(nsgID, childDefaultSecurityRules, d.name)), Name: api.Ptr(d.name), Type: api.Ptr(armTypeDefaultSecurityRule),
			Etag: api.Ptr(etag),
			Properties: &armnetwork.SecurityRulePropertiesFormat{
				Description: api.Ptr(d.desc), Protocol: api.Ptr(armnetwork.SecurityRuleProtocolAsterisk),
				SourcePortRange: api.Ptr("*"), DestinationPortRange: api.Ptr("*"),
				SourceAddressPrefix: api.Ptr(d.src), DestinationAddressPrefix: api.Ptr(d.dst),
				Access: api.Ptr(access), Priority: api.Ptr(d.prio), Direction: api.Ptr(d.dir),
				SourcePortRanges: []*string{}, DestinationPortRanges: []*string{},
				SourceAddressPrefixes: []*string{}, DestinationAddressPrefixes: []*string{},
				ProvisioningState: api.Ptr(armnetwork.ProvisioningStateSucceeded),
			},
		})
	}
	return rules
}
