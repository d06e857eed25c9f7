package ipplan

import (
	"strconv"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"
)

// checkFamilies applies the rules of IPv6 and dual-stack plans, each from
// Azure's documentation:
//
//   - AKS runs IPv4 or dual-stack clusters, never IPv6 only: "Single stack
//     IPv6-only isn't supported for node or pod IP addresses" (AKS,
//     "Use dual-stack networking"; --ip-families takes ipv4 or ipv4,ipv6).
//   - --pod-cidrs and --service-cidrs must have the IP families of
//     --ip-families, in its order: the pod and service ranges have the same
//     families.
//   - "Dual-stack networking is required for the Azure virtual network":
//     the VNet and the node subnet need an IPv6 prefix, since nodes get an
//     IPv4 and an IPv6 address from the subnet.
//   - Azure CNI (flat) gives pods addresses of the node's NIC, and a NIC
//     has at most one private IPv6 address; AKS's dual-stack clusters use
//     Azure CNI Overlay (or kubenet).
//   - Dual-stack kubenet needs two routes per node, one per family
//     (capacity counts them: 500 nodes at 1,000 routes), and AKS supports no
//     Azure or Calico network policies, NAT Gateway, virtual nodes or
//     Windows node pools with it ("Use dual-stack kubenet networking").
//     It is allowed, with a warning: Azure documents it.
//
// IPv6 subnets must be exactly /64 (Azure's virtual network FAQ): checked
// with the other subnet rules.
func (a *analysis) checkFamilies() {
	p := a.p
	if !p.dual() {
		return
	}
	switch {
	case p.pod6.IsValid() && !p.pod.IsValid() && a.usesPodCIDR():
		a.add(finding.Error, RuleIPv6Only, nil, map[string]string{"podCIDR": p.pod6.String()},
			"pod CIDR %s is IPv6 only; AKS runs IPv4 or dual-stack clusters (--ip-families ipv4 or ipv4,ipv6), not IPv6-only ones: add an IPv4 pod CIDR", p.pod6)
	case p.service6.IsValid() && !p.service.IsValid():
		a.add(finding.Error, RuleIPv6Only, nil, map[string]string{"serviceCIDR": p.service6.String()},
			"service CIDR %s is IPv6 only; AKS runs IPv4 or dual-stack clusters, not IPv6-only ones: add an IPv4 service CIDR", p.service6)
	}
	if a.usesPodCIDR() && p.pod6.IsValid() != p.service6.IsValid() {
		a.add(finding.Error, RuleIPFamiliesMismatch, nil, map[string]string{"podCIDR": joinValid(p.pod, p.pod6), "serviceCIDR": joinValid(p.service, p.service6)},
			"pod CIDRs %s and service CIDRs %s are not of the same IP families; AKS takes one of each per family of --ip-families",
			joinValid(p.pod, p.pod6), joinValid(p.service, p.service6))
	}
	if len(p.vnet) > 0 && !hasIPv6(a.r.Ranges, KindVNet, "") {
		a.add(finding.Error, RuleDualStackVNet, nil, map[string]string{"vnet": joinRanges(a.r.Ranges, KindVNet)},
			"the VNet %s has no IPv6 prefix; a dual-stack cluster needs a dual-stack VNet", joinRanges(a.r.Ranges, KindVNet))
	}
	if a.r.NodeSubnet >= 0 {
		node := a.r.Ranges[a.r.NodeSubnet]
		if !a.nodeSubnetHasIPv6() {
			a.add(finding.Error, RuleDualStackSubnet, nil, map[string]string{"subnet": node.Prefix.String()},
				"node %s has no IPv6 prefix; nodes of a dual-stack cluster get an IPv6 address from it", node.Label())
		}
	}
	if a.uses(Kubenet) && p.pod6.IsValid() {
		a.add(finding.Warning, RuleKubenetDualStack, []Plugin{Kubenet}, map[string]string{"routeLimit": strconv.Itoa(p.routeLimit)},
			"dual-stack kubenet needs two routes per node, one per IP family (at most %s nodes with a %s-route table), and AKS supports no Azure or Calico network policies, NAT Gateway, virtual nodes or Windows node pools with it",
			Thousands(int64(p.routeLimit/2)), Thousands(int64(p.routeLimit)))
	}
	if a.uses(AzureCNI) {
		a.add(finding.Error, RulePluginIPv6, []Plugin{AzureCNI}, nil,
			"Azure CNI (flat) gives pods addresses of the node's NIC, which holds one private IPv6 address: it has no dual-stack mode; use Azure CNI Overlay")
	}
}

// nodeSubnetHasIPv6 reports whether the node subnet (the plan's first)
// has an IPv6 prefix.
func (a *analysis) nodeSubnetHasIPv6() bool {
	for _, s := range a.p.subnets {
		if s.index == 0 && s.prefix.Addr().Is6() {
			return true
		}
	}
	return false
}

func hasIPv6(rs []Range, k Kind, name string) bool {
	for _, r := range rs {
		if r.Kind == k && r.Name == name && r.Prefix.Addr().Is6() {
			return true
		}
	}
	return false
}

func joinRanges(rs []Range, k Kind) string {
	var out []string
	for _, r := range rs {
		if r.Kind == k {
			out = append(out, r.Prefix.String())
		}
	}
	return strings.Join(out, ",")
}

func joinValid(ps ...interface {
	IsValid() bool
	String() string
}) string {
	var out []string
	for _, p := range ps {
		if p.IsValid() {
			out = append(out, p.String())
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}
