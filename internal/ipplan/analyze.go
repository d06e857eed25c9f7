package ipplan

import (
	"cmp"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Severity says how bad a finding is. Any Error makes `routekeeper ipplan`
// exit 3.
type Severity string

// The severities, worst first.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	default:
		return 2
	}
}

// Rule IDs: stable, kebab-case, documented in docs/ipplan.md.
const (
	RuleForbiddenRange          = "forbidden-range"
	RuleNonPrivateRange         = "non-private-range"
	RuleOverlap                 = "overlap"
	RuleSubnetOutsideVNet       = "subnet-outside-vnet"
	RuleSubnetTooSmall          = "subnet-too-small"
	RuleServiceCIDRTooLarge     = "service-cidr-too-large"
	RuleDNSIPOutsideServiceCIDR = "dns-ip-outside-service-cidr"
	RuleDNSIPReserved           = "dns-ip-reserved"
	RuleDNSIPNotTenth           = "dns-ip-not-tenth"
	RuleMaxPodsRange            = "max-pods-range"
	RuleNodeCIDRTooSmall        = "node-cidr-too-small"
	RulePoolPodMinimum          = "pool-pod-minimum"
	RulePodCIDRTooSmall         = "pod-cidr-too-small"
	RuleRouteLimit              = "route-limit"
	RuleNoSurge                 = "no-surge"
	RuleNodesNotGiven           = "nodes-not-given"
	RuleNoNodeSubnet            = "no-node-subnet"
	RulePodCIDRUnused           = "pod-cidr-unused"
)

// Kind is what a range on the address axis is.
type Kind string

// The kinds of ranges.
const (
	KindVNet      Kind = "vnet"
	KindSubnet    Kind = "subnet"
	KindPod       Kind = "pod"
	KindService   Kind = "service"
	KindOnPrem    Kind = "on-prem"
	KindForbidden Kind = "forbidden" // a reserved range that one of the others runs into
)

// Range is one range of the plan, placed on the IPv4 address axis.
type Range struct {
	Kind Kind `json:"kind"`
	// Name is the subnet name, or why a forbidden range is forbidden.
	Name      string       `json:"name,omitempty"`
	Prefix    netip.Prefix `json:"prefix"`
	First     netip.Addr   `json:"first"`
	Last      netip.Addr   `json:"last"`
	Addresses int64        `json:"addresses"`
	// Usable is, for a subnet, what is left after Azure's 5 reserved addresses.
	Usable int64 `json:"usable,omitempty"`
}

// Label names the range in messages: "subnet nodes 10.1.0.0/24".
func (r Range) Label() string {
	switch {
	case r.Kind == KindForbidden:
		return "reserved " + r.Prefix.String()
	case r.Name != "":
		return string(r.Kind) + " " + r.Name + " " + r.Prefix.String()
	default:
		return string(r.Kind) + " " + r.Prefix.String()
	}
}

// Overlap is two ranges of Report.Ranges that share addresses.
type Overlap struct {
	A int `json:"a"` // index in Report.Ranges
	B int `json:"b"` // index in Report.Ranges
	// Prefix is the shared part (for two CIDRs, the smaller of the two).
	Prefix netip.Prefix `json:"prefix"`
}

// Finding is one problem (or remark) about the plan.
type Finding struct {
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	// Plugins are the plugins the finding is about; empty when it is about
	// the plan whatever the plugin.
	Plugins []Plugin `json:"plugins,omitempty"`
	Message string   `json:"message"`
	// Values are the offending values, by what they are.
	Values map[string]string `json:"values,omitempty"`
}

// PluginCapacity is what the plan holds under one plugin.
type PluginCapacity struct {
	Plugin         Plugin `json:"plugin"`
	MaxPodsPerNode int    `json:"maxPodsPerNode"`
	// MaxNodes is the most nodes the plan holds; nil when nothing in the
	// plan bounds it (Azure CNI without a node subnet).
	MaxNodes *int64 `json:"maxNodes"`
	// LimitedBy says what bounds MaxNodes: "subnet", "pod-cidr" or "route-limit".
	LimitedBy string `json:"limitedBy,omitempty"`
	// MaxPods is MaxNodes × MaxPodsPerNode.
	MaxPods *int64 `json:"maxPods"`

	// The rest is for the requested nodes plus surge; zero when no node
	// count was given.
	NodesWithSurge int `json:"nodesWithSurge,omitempty"`
	// AddressesConsumed are the node subnet's addresses that the nodes and
	// surge take (Azure CNI: their pods too).
	AddressesConsumed int64 `json:"addressesConsumed,omitempty"`
	// PodCIDRAddressesConsumed are the pod CIDR's addresses they take (one
	// node range each; kubenet and Overlay).
	PodCIDRAddressesConsumed int64 `json:"podCIDRAddressesConsumed,omitempty"`
	// Routes is the number of pod routes (kubenet: one per node).
	Routes int `json:"routes,omitempty"`
	// SmallestSubnetPrefix is the longest prefix length of a subnet that
	// holds AddressesConsumed after the 5 reserved addresses (21 for /21).
	SmallestSubnetPrefix int `json:"smallestSubnetPrefix,omitempty"`
	// SmallestPodCIDRPrefix is the longest prefix length of a pod CIDR with
	// a node range for each node (kubenet, Overlay).
	SmallestPodCIDRPrefix int `json:"smallestPodCIDRPrefix,omitempty"`
	// Fits says whether the requested nodes and surge fit the plan.
	Fits *bool `json:"fits,omitempty"`
}

// Report is the result of Analyze.
type Report struct {
	Plugins []Plugin `json:"plugins"`
	// Compare is true when no plugin was chosen: all three are compared and
	// plugin-specific problems are warnings, not errors.
	Compare          bool       `json:"compare"`
	Nodes            int        `json:"nodes"`
	Surge            int        `json:"surge"`
	RouteLimit       int        `json:"routeLimit"`
	NodeCIDRMaskSize int        `json:"nodeCIDRMaskSize"`
	DNSServiceIP     netip.Addr `json:"dnsServiceIP"`
	// NodeSubnet is the index in Ranges of the node subnet, -1 when none.
	NodeSubnet int              `json:"nodeSubnet"`
	Ranges     []Range          `json:"ranges"`
	Overlaps   []Overlap        `json:"overlaps"`
	Findings   []Finding        `json:"findings"`
	Capacity   []PluginCapacity `json:"capacity"`
}

// Errors counts the findings of severity Error.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// reserved is a range no plan may use, and why.
type reserved struct {
	prefix netip.Prefix
	why    string
}

// forbiddenRanges are refused by AKS for the VNet, pod and service ranges,
// or by Azure for any VNet.
var forbiddenRanges = []reserved{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, refused by AKS and Azure"},
	{netip.MustParsePrefix("168.63.129.16/32"), "Azure platform address (DNS, DHCP, health probes)"},
	{netip.MustParsePrefix("172.30.0.0/16"), "reserved by AKS"},
	{netip.MustParsePrefix("172.31.0.0/16"), "reserved by AKS"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved by AKS"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast, refused by Azure"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast, refused by Azure"},
}

// privateRanges are the ranges meant for private networks (RFC 1918 and the
// shared address space of RFC 6598).
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
}

// analysis accumulates a Report.
type analysis struct {
	p *parsed
	r Report
}

// Analyze checks the plan and computes its capacity. It returns a
// *FieldError when the plan is malformed (see Validate); a sound or unsound
// plan alike gives a Report, whose findings say what is wrong.
func Analyze(plan Plan) (Report, error) {
	p, err := plan.parse()
	if err != nil {
		return Report{}, err
	}
	a := &analysis{p: p, r: Report{
		Plugins:          p.plugins,
		Compare:          p.compare,
		Nodes:            p.nodes,
		Surge:            p.surge,
		RouteLimit:       p.routeLimit,
		NodeCIDRMaskSize: p.nodeCIDRMaskSize,
		DNSServiceIP:     p.dns,
		NodeSubnet:       -1,
		Overlaps:         []Overlap{},
		Findings:         []Finding{},
	}}
	a.ranges()
	a.checkForbidden()
	a.checkNonPrivate()
	a.checkOverlaps()
	a.checkSubnets()
	a.checkService()
	a.checkMaxPods()
	a.capacity()
	a.remarks()
	slices.SortStableFunc(a.r.Findings, func(x, y Finding) int {
		return cmp.Compare(x.Severity.rank(), y.Severity.rank())
	})
	return a.r, nil
}

func (a *analysis) usesPodCIDR() bool {
	return slices.Contains(a.p.plugins, Kubenet) || slices.Contains(a.p.plugins, Overlay)
}

func (a *analysis) uses(pl Plugin) bool { return slices.Contains(a.p.plugins, pl) }

func newRange(k Kind, name string, p netip.Prefix) Range {
	lo, hi := bounds(p)
	r := Range{Kind: k, Name: name, Prefix: p, First: addrOf(lo), Last: addrOf(hi), Addresses: size(p)}
	if k == KindSubnet {
		r.Usable = usable(p)
	}
	return r
}

// ranges lays out the plan's ranges in a fixed order: VNet, subnets, pod,
// service, on-premises.
func (a *analysis) ranges() {
	add := func(k Kind, name string, p netip.Prefix) { a.r.Ranges = append(a.r.Ranges, newRange(k, name, p)) }
	for _, v := range a.p.vnet {
		add(KindVNet, "", v)
	}
	for i, s := range a.p.subnets {
		if i == 0 {
			a.r.NodeSubnet = len(a.r.Ranges)
		}
		add(KindSubnet, s.name, s.prefix)
	}
	if a.usesPodCIDR() {
		add(KindPod, "", a.p.pod)
	}
	add(KindService, "", a.p.service)
	for _, o := range a.p.onPrem {
		add(KindOnPrem, "", o)
	}
}

// add records a finding. In compare mode an error about some plugins only is
// lowered to a warning: it says which plugin the plan does not suit, not
// that the plan is wrong.
func (a *analysis) add(sev Severity, rule string, plugins []Plugin, values map[string]string, format string, args ...any) {
	if a.p.compare && len(plugins) > 0 && sev == Error {
		sev = Warning
	}
	a.r.Findings = append(a.r.Findings, Finding{
		Severity: sev, Rule: rule, Plugins: plugins,
		Message: fmt.Sprintf(format, args...), Values: values,
	})
}

// insideVNet reports whether the range lies inside one of the VNet's prefixes.
func (a *analysis) insideVNet(p netip.Prefix) bool {
	for _, v := range a.p.vnet {
		if contains(v, p) {
			return true
		}
	}
	return false
}

// checked reports whether a range is one the plan owns (not on-premises) and
// is not covered by the check of its VNet already.
func (a *analysis) checked(r Range) bool {
	switch r.Kind {
	case KindOnPrem, KindForbidden:
		return false
	case KindSubnet:
		return !a.insideVNet(r.Prefix)
	}
	return true
}

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
			a.add(Error, RuleForbiddenRange, nil,
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
			a.add(Warning, RuleNonPrivateRange, nil, map[string]string{string(r.Kind): r.Prefix.String()},
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
			case x.Kind == KindOnPrem && y.Kind == KindOnPrem:
				continue
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
			a.add(Error, RuleOverlap, nil, values, "%s overlaps %s (shared: %s, %s addresses)%s",
				x.Label(), y.Label(), inter, Thousands(size(inter)), overlapWhy(x.Kind, y.Kind))
		}
	}
}

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
			a.add(Error, RuleSubnetOutsideVNet, nil,
				map[string]string{"subnet": r.Prefix.String(), "vnet": strings.Join(vs, ",")},
				"%s is not inside the VNet address space %s", r.Label(), strings.Join(vs, ", "))
		}
		if r.Prefix.Bits() > SmallestAzureSubnet {
			a.add(Error, RuleSubnetTooSmall, nil, map[string]string{"subnet": r.Prefix.String()},
				"%s is smaller than /%d, the smallest subnet Azure accepts", r.Label(), SmallestAzureSubnet)
		}
	}
}

func (a *analysis) checkService() {
	svc, dns := a.p.service, a.p.dns
	if svc.Bits() <= 12 {
		a.add(Error, RuleServiceCIDRTooLarge, nil, map[string]string{"serviceCIDR": svc.String()},
			"service CIDR %s is /%d; it must be smaller than /12 (a prefix length of 13 or more)", svc, svc.Bits())
	}
	values := map[string]string{"dnsServiceIP": dns.String(), "serviceCIDR": svc.String()}
	lo, hi := bounds(svc)
	d := uint64(toU32(dns))
	switch {
	case !svc.Contains(dns):
		a.add(Error, RuleDNSIPOutsideServiceCIDR, nil, values,
			"DNS service IP %s is outside the service CIDR %s", dns, svc)
	case d == lo:
		a.add(Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the network address of the service CIDR %s", dns, svc)
	case d == lo+1:
		a.add(Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the first address of the service CIDR %s, which the kubernetes API service takes", dns, svc)
	case d == hi && svc.Bits() < 31:
		a.add(Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the broadcast address of the service CIDR %s, which Kubernetes never hands out", dns, svc)
	case d != lo+10 && lo+10 <= hi:
		a.add(Info, RuleDNSIPNotTenth, nil, values,
			"DNS service IP %s is valid, but by convention it is the .10 address of the service CIDR (%s)", dns, addrOf(lo+10))
	}
}

// maxPods returns the maximum pods per node for a plugin.
func (a *analysis) maxPods(pl Plugin) int {
	if a.p.maxPods > 0 {
		return a.p.maxPods
	}
	return DefaultMaxPods(pl)
}

// nodeCIDRBits is the prefix length of a node's pod range under a plugin.
func (a *analysis) nodeCIDRBits(pl Plugin) int {
	if pl == Overlay {
		return 24
	}
	return a.p.nodeCIDRMaskSize
}

func (a *analysis) checkMaxPods() {
	if mp := a.p.maxPods; mp > 0 && (mp < MinMaxPods || mp > MaxMaxPods) {
		a.add(Error, RuleMaxPodsRange, nil, map[string]string{"maxPods": strconv.Itoa(mp)},
			"max pods per node %d is outside %d–%d", mp, MinMaxPods, MaxMaxPods)
	}
	if a.uses(Kubenet) {
		bitsN := a.nodeCIDRBits(Kubenet)
		// host-local IPAM keeps the network, bridge (.1) and broadcast addresses.
		room := int64(1)<<(32-bitsN) - 3
		if mp := int64(a.maxPods(Kubenet)); mp > room {
			a.add(Error, RuleNodeCIDRTooSmall, []Plugin{Kubenet},
				map[string]string{"maxPods": strconv.FormatInt(mp, 10), "nodeCIDRMaskSize": strconv.Itoa(bitsN)},
				"a /%d node pod range holds %d pods, fewer than the %d max pods per node", bitsN, max(room, 0), mp)
		}
	}
	if a.p.nodes > 0 {
		for _, pl := range a.p.plugins {
			if total := a.p.nodes * a.maxPods(pl); total < MinPoolPods {
				a.add(Warning, RulePoolPodMinimum, []Plugin{pl},
					map[string]string{"nodes": strconv.Itoa(a.p.nodes), "maxPods": strconv.Itoa(a.maxPods(pl))},
					"%d nodes × %d max pods = %d pods; AKS wants a node pool to hold at least %d",
					a.p.nodes, a.maxPods(pl), total, MinPoolPods)
			}
		}
	}
}

// capacity computes each plugin's capacity and the size findings.
func (a *analysis) capacity() {
	var subnet *Range
	if a.r.NodeSubnet >= 0 {
		subnet = &a.r.Ranges[a.r.NodeSubnet]
	}
	need := a.p.nodes + a.p.surge
	podSmall := map[int][]Plugin{} // node range bits -> plugins whose pod CIDR is too small
	var subnetSmall []shortfall    // plugins whose node subnet is too small
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
		if pl != AzureCNI {
			limits = append(limits, limit{"pod-cidr", blocks(a.p.pod, a.nodeCIDRBits(pl))})
		}
		if pl == Kubenet {
			limits = append(limits, limit{"route-limit", int64(a.p.routeLimit)})
		}
		if len(limits) > 0 {
			m := slices.MinFunc(limits, func(x, y limit) int { return cmp.Compare(x.n, y.n) })
			c.MaxNodes, c.LimitedBy = &m.n, m.by
			pods := m.n * int64(c.MaxPodsPerNode)
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
			if pl != AzureCNI {
				bitsN := a.nodeCIDRBits(pl)
				c.PodCIDRAddressesConsumed = int64(need) << (32 - bitsN)
				c.SmallestPodCIDRPrefix = bitsN - ceilLog2(int64(need))
				if blocks(a.p.pod, bitsN) < int64(need) {
					fits = false
					podSmall[bitsN] = append(podSmall[bitsN], pl)
				}
			}
			if pl == Kubenet {
				c.Routes = need
				if need > a.p.routeLimit {
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
		have := blocks(a.p.pod, bitsN)
		a.add(Error, RulePodCIDRTooSmall, pls,
			map[string]string{"podCIDR": a.p.pod.String(), "nodeRanges": strconv.FormatInt(have, 10), "needed": strconv.Itoa(need)},
			"pod CIDR %s holds %s /%d node ranges; %s need %s; smallest pod CIDR: /%d",
			a.p.pod, Thousands(have), bitsN, a.nodesPhrase(), Thousands(int64(need)), bitsN-ceilLog2(int64(need)))
	}
	if a.uses(Kubenet) && need > a.p.routeLimit {
		a.add(Error, RuleRouteLimit, []Plugin{Kubenet},
			map[string]string{"routes": strconv.Itoa(need), "routeLimit": strconv.Itoa(a.p.routeLimit)},
			"kubenet needs one route per node: %s need %s routes, more than the route table limit of %d",
			a.nodesPhrase(), Thousands(int64(need)), a.p.routeLimit)
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
		a.add(Error, RuleSubnetTooSmall, pls,
			map[string]string{"subnet": subnet.Prefix.String(), "usable": strconv.FormatInt(subnet.Usable, 10), "needed": strconv.FormatInt(n, 10)},
			"%s has %s usable addresses (after Azure's %d reserved); %s need %s%s; smallest subnet: /%d",
			subnet.Label(), Thousands(subnet.Usable), SubnetReserved, a.nodesPhrase(), Thousands(n), what, smallestSubnet(n))
	}
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

// remarks adds the findings about what the plan leaves out.
func (a *analysis) remarks() {
	if a.p.nodes == 0 {
		a.add(Info, RuleNodesNotGiven, nil, nil,
			"no node count given: only the capacity is shown; give one to check the subnet, pod CIDR and route limit")
	} else if a.p.surge == 0 {
		a.add(Warning, RuleNoSurge, nil, map[string]string{"surge": "0"},
			"no surge: an upgrade adds at least one node (AKS default max surge 1); leave addresses for it")
	}
	if a.r.NodeSubnet < 0 {
		a.add(Info, RuleNoNodeSubnet, nil, nil,
			"no subnet given: capacity is not bounded by a node subnet; give one to check it")
	}
	if a.p.podCIDRGiven && !a.usesPodCIDR() {
		a.add(Info, RulePodCIDRUnused, []Plugin{AzureCNI}, map[string]string{"podCIDR": a.p.pod.String()},
			"Azure CNI takes pod addresses from the subnet; the pod CIDR %s is not used", a.p.pod)
	}
}

// --- IPv4 arithmetic -------------------------------------------------------

func toU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addrOf(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// bounds returns the first and last address of p as numbers.
func bounds(p netip.Prefix) (lo, hi uint64) {
	lo = uint64(toU32(p.Masked().Addr()))
	return lo, lo + uint64(size(p)) - 1
}

func size(p netip.Prefix) int64 { return int64(1) << (32 - p.Bits()) }

// usable is what Azure leaves of a subnet: all but 5 addresses.
func usable(p netip.Prefix) int64 { return max(size(p)-SubnetReserved, 0) }

// contains reports whether outer holds all of inner.
func contains(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// intersection of two overlapping prefixes: the longer one.
func intersection(x, y netip.Prefix) netip.Prefix {
	if x.Bits() >= y.Bits() {
		return x
	}
	return y
}

// blocks is the number of /bitsN node ranges in p.
func blocks(p netip.Prefix, bitsN int) int64 {
	if p.Bits() > bitsN {
		return 0
	}
	return int64(1) << (bitsN - p.Bits())
}

func ceilLog2(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}

// smallestSubnet is the longest prefix length (at most /29) of a subnet
// that has n usable addresses.
func smallestSubnet(n int64) int {
	for l := SmallestAzureSubnet; l >= 0; l-- {
		if int64(1)<<(32-l)-SubnetReserved >= n {
			return l
		}
	}
	return 0
}

// Thousands formats n with comma separators: 27610 -> "27,610".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
