package ipplan

import (
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"
)

// The rules between the ranges of a plan: reserved and private ranges,
// overlaps, subnets inside the VNet and of a size Azure accepts.

func (a *analysis) checkForbidden() {
	n := len(a.r.Ranges)
	hit := map[netip.Prefix]int{} // forbidden prefix -> its index in Ranges
	for i := range n {
		r := a.r.Ranges[i]
		if !a.checked(r) {
			continue
		}
		for _, f := range forbiddenRanges {
			if !r.Prefix.Overlaps(f.prefix) {
				continue
			}
			j, ok := hit[f.prefix]
			if !ok {
				j = len(a.r.Ranges)
				hit[f.prefix] = j
				a.r.Ranges = append(a.r.Ranges, newRange(KindForbidden, f.why, f.prefix))
			}
			a.r.Overlaps = append(a.r.Overlaps, Overlap{A: i, B: j, Prefix: intersection(r.Prefix, f.prefix)})
			a.add(finding.Error, RuleForbiddenRange, nil,
				map[string]string{string(r.Kind): r.Prefix.String(), "reserved": f.prefix.String()},
				"%s overlaps the reserved range %s (%s); no VNet, pod or service range may use it", r.Label(), f.prefix, f.why)
		}
	}
}

func (a *analysis) checkNonPrivate() {
	for _, r := range a.r.Ranges {
		if !a.checked(r) {
			continue
		}
		private := false
		for _, pr := range privateRanges {
			if contains(pr, r.Prefix) {
				private = true
				break
			}
		}
		if !private {
			a.add(finding.Warning, RuleNonPrivateRange, nil, map[string]string{string(r.Kind): r.Prefix.String()},
				"%s is not private address space (10/8, 172.16/12, 192.168/16, 100.64/10): "+
					"the cluster could no longer reach whoever owns those addresses on the internet", r.Label())
		}
	}
}

// checkOverlaps reports every pair of ranges that must be disjoint and is
// not. A subnet is expected inside its VNet; on-premises ranges may overlap
// one another. When a VNet prefix already overlaps a range, its subnets are
// not reported again for the same range.
func (a *analysis) checkOverlaps() {
	rs := a.r.Ranges
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			x, y := rs[i], rs[j]
			if x.Kind == KindForbidden || y.Kind == KindForbidden || !x.Prefix.Overlaps(y.Prefix) {
				continue
			}
			switch {
			case external(x.Kind) && external(y.Kind):
				continue // on-premises and peered ranges are the user's business
			case x.Kind == KindVNet && y.Kind == KindSubnet:
				continue // containment is checked by subnet-outside-vnet
			case x.Kind == KindSubnet && y.Kind != KindSubnet && a.vnetOverlapsToo(x.Prefix, y.Prefix):
				continue
			}
			inter := intersection(x.Prefix, y.Prefix)
			a.r.Overlaps = append(a.r.Overlaps, Overlap{A: i, B: j, Prefix: inter})
			kx, ky := laneKind(x), laneKind(y)
			if kx == ky { // two unnamed subnets, two VNet prefixes
				kx, ky = kx+" 1", ky+" 2"
			}
			values := map[string]string{kx: x.Prefix.String(), ky: y.Prefix.String(), "shared": inter.String()}
			a.add(finding.Error, RuleOverlap, nil, values, "%s overlaps %s (shared: %s, %s addresses)%s",
				x.Label(), y.Label(), inter, size(inter), overlapWhy(x.Kind, y.Kind))
		}
	}
}

// external reports whether a kind of range is outside the plan: on
// premises or a peered VNet.
func external(k Kind) bool { return k == KindOnPrem || k == KindPeered }

// vnetOverlapsToo reports whether a VNet prefix that holds subnet also
// overlaps other, so that the VNet's finding already says it.
func (a *analysis) vnetOverlapsToo(subnet, other netip.Prefix) bool {
	for _, v := range a.p.vnet {
		if contains(v, subnet) && v.Overlaps(other) {
			return true
		}
	}
	return false
}

func overlapWhy(x, y Kind) string {
	has := func(k Kind) bool { return x == k || y == k }
	switch {
	case has(KindPod) && has(KindService):
		return ": a pod address could also be a service address"
	case has(KindPod):
		return ": traffic for those pod addresses would go to the wrong place"
	case has(KindService):
		return ": kube-proxy would capture traffic meant for those addresses"
	case x == KindSubnet && y == KindSubnet:
		return ": Azure refuses overlapping subnets"
	case x == KindVNet && y == KindVNet:
		return ": a VNet's address prefixes must not overlap"
	default:
		return ": peering and routing need distinct ranges"
	}
}

func (a *analysis) checkSubnets() {
	for _, r := range a.r.Ranges {
		if r.Kind != KindSubnet {
			continue
		}
		if len(a.p.vnet) > 0 && !a.insideVNet(r.Prefix) {
			vs := make([]string, len(a.p.vnet))
			for i, v := range a.p.vnet {
				vs[i] = v.String()
			}
			a.add(finding.Error, RuleSubnetOutsideVNet, nil,
				map[string]string{"subnet": r.Prefix.String(), "vnet": strings.Join(vs, ",")},
				"%s is not inside the VNet address space %s", r.Label(), strings.Join(vs, ", "))
		}
		switch {
		case r.Prefix.Addr().Is4() && r.Prefix.Bits() > SmallestAzureSubnet:
			a.add(finding.Error, RuleSubnetTooSmall, nil, map[string]string{"subnet": r.Prefix.String()},
				"%s is smaller than /%d, the smallest subnet Azure accepts", r.Label(), SmallestAzureSubnet)
		case r.Prefix.Addr().Is6() && r.Prefix.Bits() != IPv6SubnetBits:
			a.add(finding.Error, RuleSubnetIPv6Size, nil, map[string]string{"subnet": r.Prefix.String()},
				"%s is a /%d; Azure accepts IPv6 subnets of exactly /%d", r.Label(), r.Prefix.Bits(), IPv6SubnetBits)
		}
	}
}
