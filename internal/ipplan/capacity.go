package ipplan

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"

	"github.com/routekeeper/routekeeper/internal/addrnum"
	"github.com/routekeeper/routekeeper/internal/finding"
)

// routesPerNode is the number of pod routes a kubenet node needs: one per
// IP family (AKS: "each node in a dual-stack cluster requires two routes").
func (a *analysis) routesPerNode() int {
	if a.p.pod6.IsValid() {
		return 2
	}
	return 1
}

// capacity computes each plugin's capacity and the size findings.
func (a *analysis) capacity() {
	var subnet *Range
	if a.r.NodeSubnet >= 0 && a.r.Ranges[a.r.NodeSubnet].Prefix.Addr().Is4() {
		subnet = &a.r.Ranges[a.r.NodeSubnet]
	}
	need := a.p.nodes + a.p.surge
	podSmall := map[int][]Plugin{} // node range bits -> plugins whose IPv4 pod CIDR is too small
	var pod6Small []Plugin         // plugins whose IPv6 pod CIDR is too small
	var subnetSmall []shortfall    // plugins whose node subnet is too small
	routes := a.routesPerNode()
	for _, pl := range a.p.plugins {
		c := PluginCapacity{Plugin: pl, MaxPodsPerNode: a.maxPods(pl)}
		var limits []limit
		if subnet != nil {
			per := int64(1) // kubenet, Overlay: one subnet address per node
			if pl == AzureCNI {
				per = int64(c.MaxPodsPerNode) + 1 // the node and each of its pods
			}
			limits = append(limits, limit{"subnet", subnet.Usable / per})
		}
		usesPods := pl != AzureCNI
		if usesPods && a.p.pod.IsValid() {
			limits = append(limits, limit{"pod-cidr", blocks(a.p.pod, a.nodeCIDRBits(pl))})
		}
		if usesPods && a.p.pod6.IsValid() {
			limits = append(limits, limit{"pod-cidr-ipv6", blocks(a.p.pod6, a.p.nodeCIDRMaskSize6)})
			c.IPv6 = &FamilyCapacity{PodCIDR: a.p.pod6, NodeCIDRMaskSize: a.p.nodeCIDRMaskSize6, NodeRanges: ranges6(a.p.pod6, a.p.nodeCIDRMaskSize6)}
		}
		if pl == Kubenet {
			// Two caps, told apart: the route table's (Azure's limit of
			// routes per table) and, on AKS, AKS's own of a kubenet
			// cluster. The lower binds.
			limits = append(limits, limit{"route-limit", int64(a.p.routeLimit / routes)})
			if a.p.platform == PlatformAKS {
				limits = append(limits, limit{"aks-kubenet", AKSKubenetMaxNodes})
			}
		}
		if len(limits) > 0 {
			m := slices.MinFunc(limits, func(x, y limit) int { return cmp.Compare(x.n, y.n) })
			c.MaxNodes, c.LimitedBy = &m.n, m.by
			pods := m.n * int64(c.MaxPodsPerNode)
			if m.n > math.MaxInt64/int64(max(c.MaxPodsPerNode, 1)) {
				pods = math.MaxInt64
			}
			c.MaxPods = &pods
		}
		if a.p.nodes > 0 {
			c.NodesWithSurge = need
			c.AddressesConsumed = int64(need)
			if pl == AzureCNI {
				c.AddressesConsumed = int64(need) * int64(c.MaxPodsPerNode+1)
			}
			c.SmallestSubnetPrefix = smallestSubnet(c.AddressesConsumed)
			fits := true
			if subnet != nil && c.AddressesConsumed > subnet.Usable {
				fits = false
				subnetSmall = append(subnetSmall, shortfall{pl, c.AddressesConsumed})
			}
			if usesPods && a.p.pod.IsValid() {
				bitsN := a.nodeCIDRBits(pl)
				c.PodCIDRAddressesConsumed = int64(need) << (32 - bitsN)
				c.SmallestPodCIDRPrefix = bitsN - ceilLog2(int64(need))
				if blocks(a.p.pod, bitsN) < int64(need) {
					fits = false
					podSmall[bitsN] = append(podSmall[bitsN], pl)
				}
			}
			if c.IPv6 != nil {
				c.IPv6.SmallestPodCIDRPrefix = a.p.nodeCIDRMaskSize6 - ceilLog2(int64(need))
				ok := blocks(a.p.pod6, a.p.nodeCIDRMaskSize6) >= int64(need)
				c.IPv6.Fits = &ok
				if !ok {
					fits = false
					pod6Small = append(pod6Small, pl)
				}
			}
			if pl == Kubenet {
				c.Routes = need * routes
				if c.Routes > a.p.routeLimit || a.p.platform == PlatformAKS && need > AKSKubenetMaxNodes {
					fits = false
				}
			}
			c.Fits = &fits
		}
		a.r.Capacity = append(a.r.Capacity, c)
	}
	if a.p.nodes == 0 {
		return
	}
	for _, bitsN := range []int{a.p.nodeCIDRMaskSize, 24} {
		pls := podSmall[bitsN]
		if len(pls) == 0 {
			continue
		}
		delete(podSmall, bitsN)
		a.podCIDRTooSmall(pls, a.p.pod, bitsN, need)
	}
	if len(pod6Small) > 0 {
		a.podCIDRTooSmall(pod6Small, a.p.pod6, a.p.nodeCIDRMaskSize6, need)
	}
	if a.uses(Kubenet) && need*routes > a.p.routeLimit {
		per := "one route per node"
		if routes == 2 {
			per = "two routes per node in a dual-stack cluster, one per IP family"
		}
		a.add(finding.Error, RuleRouteLimit, []Plugin{Kubenet},
			map[string]string{"routes": strconv.Itoa(need * routes), "routeLimit": strconv.Itoa(a.p.routeLimit)},
			"kubenet needs %s: %s need %s routes, more than the route table limit of %s",
			per, a.nodesPhrase(), Thousands(int64(need*routes)), Thousands(int64(a.p.routeLimit)))
	}
	if a.uses(Kubenet) && a.p.platform == PlatformAKS && need > AKSKubenetMaxNodes {
		a.add(finding.Error, RuleAKSKubenetNodes, []Plugin{Kubenet},
			map[string]string{"nodes": strconv.Itoa(need), "aksKubenetMaxNodes": strconv.Itoa(AKSKubenetMaxNodes)},
			"AKS supports at most %d nodes in a kubenet cluster (AKS's documented cap, not the route table's: Azure allows %s routes per table); %s need more: use Azure CNI Overlay on AKS, or --platform self-managed for Kubernetes on Azure VMs",
			AKSKubenetMaxNodes, Thousands(int64(a.p.routeLimit)), a.nodesPhrase())
	}
	// Group plugins that need the same number of addresses (kubenet and Overlay).
	for len(subnetSmall) > 0 {
		n := subnetSmall[0].need
		var pls []Plugin
		rest := subnetSmall[:0]
		for _, s := range subnetSmall {
			if s.need == n {
				pls = append(pls, s.pl)
			} else {
				rest = append(rest, s)
			}
		}
		subnetSmall = rest
		what := ""
		if len(pls) == 1 && pls[0] == AzureCNI {
			what = fmt.Sprintf(", %d per node (the node and its %d pods)", a.maxPods(AzureCNI)+1, a.maxPods(AzureCNI))
		}
		a.add(finding.Error, RuleSubnetTooSmall, pls,
			map[string]string{"subnet": subnet.Prefix.String(), "usable": strconv.FormatInt(subnet.Usable, 10), "needed": strconv.FormatInt(n, 10)},
			"%s has %s usable addresses (after Azure's %d reserved); %s need %s%s; smallest subnet: /%d",
			subnet.Label(), Thousands(subnet.Usable), SubnetReserved, a.nodesPhrase(), Thousands(n), what, smallestSubnet(n))
	}
}

func (a *analysis) podCIDRTooSmall(pls []Plugin, p netip.Prefix, bitsN, need int) {
	have := blocks(p, bitsN)
	a.add(finding.Error, RulePodCIDRTooSmall, pls,
		map[string]string{"podCIDR": p.String(), "nodeRanges": strconv.FormatInt(have, 10), "needed": strconv.Itoa(need)},
		"pod CIDR %s holds %s /%d node ranges; %s need %s; smallest pod CIDR: /%d",
		p, Thousands(have), bitsN, a.nodesPhrase(), Thousands(int64(need)), bitsN-ceilLog2(int64(need)))
}

// ranges6 is the number of /bits node ranges of an IPv6 pod CIDR.
func ranges6(p netip.Prefix, bits int) Count {
	if p.Bits() > bits {
		return Count{}
	}
	return countOf(addrnum.Pow2(bits - p.Bits()))
}

type limit struct {
	by string
	n  int64
}

// shortfall is a plugin that needs more addresses than the node subnet has.
type shortfall struct {
	pl   Plugin
	need int64
}

// nodesPhrase is "50 nodes + 1 surge".
func (a *analysis) nodesPhrase() string {
	return fmt.Sprintf("%s nodes + %d surge", Thousands(int64(a.p.nodes)), a.p.surge)
}
