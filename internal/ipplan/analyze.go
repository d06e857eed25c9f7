package ipplan

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/routekeeper/routekeeper/internal/finding"
)

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
	RuleAKSKubenetNodes         = "aks-kubenet-nodes"
	RuleNoSurge                 = "no-surge"
	RuleNodesNotGiven           = "nodes-not-given"
	RuleNoNodeSubnet            = "no-node-subnet"
	RulePodCIDRUnused           = "pod-cidr-unused"
	// IPv6 and dual-stack (families.go).
	RuleIPv6Only           = "ipv6-only"
	RuleIPFamiliesMismatch = "ip-families-mismatch"
	RuleDualStackVNet      = "dual-stack-vnet"
	RuleDualStackSubnet    = "dual-stack-subnet"
	RuleSubnetIPv6Size     = "subnet-ipv6-size"
	RulePluginIPv6         = "plugin-ipv6"
	RuleKubenetDualStack   = "kubenet-dual-stack"
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
	KindPeered    Kind = "peered"    // the address space of a peered VNet
	KindForbidden Kind = "forbidden" // a reserved range that one of the others runs into
)

// Range is one range of the plan, placed on the address axis of its family.
type Range struct {
	Kind Kind `json:"kind"`
	// Name is the subnet name, or why a forbidden range is forbidden.
	Name      string       `json:"name,omitempty"`
	Prefix    netip.Prefix `json:"prefix"`
	First     netip.Addr   `json:"first"`
	Last      netip.Addr   `json:"last"`
	Addresses Count        `json:"addresses"`
	// Usable is, for an IPv4 subnet, what is left after Azure's 5 reserved
	// addresses.
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
	// IPv6 is the capacity of the IPv6 pod CIDR of a dual-stack plan
	// (kubenet, Overlay).
	IPv6 *FamilyCapacity `json:"ipv6,omitempty"`
}

// FamilyCapacity is what the IPv6 pod CIDR of a dual-stack plan holds.
type FamilyCapacity struct {
	PodCIDR          netip.Prefix `json:"podCIDR"`
	NodeCIDRMaskSize int          `json:"nodeCIDRMaskSize"`
	// NodeRanges is the number of node ranges the pod CIDR holds.
	NodeRanges Count `json:"nodeRanges"`
	// SmallestPodCIDRPrefix is the longest prefix length of a pod CIDR
	// with a node range for each requested node and surge.
	SmallestPodCIDRPrefix int   `json:"smallestPodCIDRPrefix,omitempty"`
	Fits                  *bool `json:"fits,omitempty"`
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
	Platform         Platform   `json:"platform"`
	NodeCIDRMaskSize int        `json:"nodeCIDRMaskSize"`
	DNSServiceIP     netip.Addr `json:"dnsServiceIP"`
	// IPFamilies is IPv4 then IPv6 for a dual-stack plan (omitted for
	// IPv4), as AKS's --ip-families.
	IPFamilies []string `json:"ipFamilies,omitempty"`
	// NodeCIDRMaskSizeIPv6 is the IPv6 node range of a dual-stack plan.
	NodeCIDRMaskSizeIPv6 int `json:"nodeCIDRMaskSizeIPv6,omitempty"`
	// NodeSubnet is the index in Ranges of the node subnet, -1 when none.
	NodeSubnet int               `json:"nodeSubnet"`
	Ranges     []Range           `json:"ranges"`
	Overlaps   []Overlap         `json:"overlaps"`
	Findings   []finding.Finding `json:"findings"`
	Capacity   []PluginCapacity  `json:"capacity"`
}

// Errors counts the findings of severity finding.Error.
func (r Report) Errors() int { return finding.Errors(r.Findings) }

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
		Platform:         p.platform,
		NodeCIDRMaskSize: p.nodeCIDRMaskSize,
		DNSServiceIP:     p.dns,
		NodeSubnet:       -1,
		Overlaps:         []Overlap{},
		Findings:         []finding.Finding{},
	}}
	if p.dual() {
		a.r.IPFamilies, a.r.NodeCIDRMaskSizeIPv6 = []string{"IPv4", "IPv6"}, p.nodeCIDRMaskSize6
	}
	a.ranges()
	a.checkForbidden()
	a.checkNonPrivate()
	a.checkOverlaps()
	a.checkSubnets()
	a.checkService()
	a.checkMaxPods()
	a.checkFamilies()
	a.capacity()
	a.remarks()
	finding.Sort(a.r.Findings)
	return a.r, nil
}

func (a *analysis) usesPodCIDR() bool {
	return slices.Contains(a.p.plugins, Kubenet) || slices.Contains(a.p.plugins, Overlay)
}

func (a *analysis) uses(pl Plugin) bool { return slices.Contains(a.p.plugins, pl) }

func newRange(k Kind, name string, p netip.Prefix) Range {
	lo, hi := bounds(p)
	v6 := p.Addr().Is6()
	r := Range{Kind: k, Name: name, Prefix: p, First: lo.Addr(v6), Last: hi.Addr(v6), Addresses: size(p)}
	if k == KindSubnet && !v6 {
		r.Usable = usable(p)
	}
	return r
}

// ranges lays out the plan's ranges in a fixed order: VNet, subnets, pod,
// service, on-premises, peered; in each, IPv4 before IPv6.
func (a *analysis) ranges() {
	add := func(k Kind, name string, p netip.Prefix) {
		if p.IsValid() {
			a.r.Ranges = append(a.r.Ranges, newRange(k, name, p))
		}
	}
	for _, v := range a.p.vnet {
		add(KindVNet, "", v)
	}
	for _, s := range a.p.subnets {
		if s.index == 0 && (a.r.NodeSubnet < 0 || s.prefix.Addr().Is4() && a.r.Ranges[a.r.NodeSubnet].Prefix.Addr().Is6()) {
			a.r.NodeSubnet = len(a.r.Ranges)
		}
		add(KindSubnet, s.name, s.prefix)
	}
	if a.usesPodCIDR() {
		add(KindPod, "", a.p.pod)
		add(KindPod, "", a.p.pod6)
	}
	add(KindService, "", a.p.service)
	add(KindService, "", a.p.service6)
	for _, o := range a.p.onPrem {
		add(KindOnPrem, "", o)
	}
	for _, o := range a.p.peered {
		add(KindPeered, "", o)
	}
}

// add records a finding. In compare mode an error about some plugins only is
// lowered to a warning: it says which plugin the plan does not suit, not
// that the plan is wrong.
func (a *analysis) add(sev finding.Severity, rule string, plugins []Plugin, values map[string]string, format string, args ...any) {
	if a.p.compare && len(plugins) > 0 && sev == finding.Error {
		sev = finding.Warning
	}
	f := finding.Finding{Severity: sev, Rule: rule, Message: fmt.Sprintf(format, args...)}
	if len(plugins) > 0 || len(values) > 0 {
		f.Evidence = &finding.Evidence{Values: values}
		for _, p := range plugins {
			f.Evidence.Plugins = append(f.Evidence.Plugins, string(p))
		}
	}
	a.r.Findings = append(a.r.Findings, f)
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

// checked reports whether a range is one the plan owns (not on-premises or
// peered), is IPv4 (the reserved and private ranges are IPv4's) and is not
// covered by the check of its VNet already.
func (a *analysis) checked(r Range) bool {
	if r.Prefix.Addr().Is6() {
		return false
	}
	switch r.Kind {
	case KindOnPrem, KindPeered, KindForbidden:
		return false
	case KindSubnet:
		return !a.insideVNet(r.Prefix)
	}
	return true
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
		a.add(finding.Error, RuleMaxPodsRange, nil, map[string]string{"maxPods": strconv.Itoa(mp)},
			"max pods per node %d is outside %d–%d", mp, MinMaxPods, MaxMaxPods)
	}
	if a.uses(Kubenet) {
		bitsN := a.nodeCIDRBits(Kubenet)
		// host-local IPAM keeps the network, bridge (.1) and broadcast addresses.
		room := int64(1)<<(32-bitsN) - 3
		if mp := int64(a.maxPods(Kubenet)); mp > room {
			a.add(finding.Error, RuleNodeCIDRTooSmall, []Plugin{Kubenet},
				map[string]string{"maxPods": strconv.FormatInt(mp, 10), "nodeCIDRMaskSize": strconv.Itoa(bitsN)},
				"a /%d node pod range holds %d pods, fewer than the %d max pods per node", bitsN, max(room, 0), mp)
		}
	}
	if a.p.nodes > 0 {
		for _, pl := range a.p.plugins {
			if total := a.p.nodes * a.maxPods(pl); total < MinPoolPods {
				a.add(finding.Warning, RulePoolPodMinimum, []Plugin{pl},
					map[string]string{"nodes": strconv.Itoa(a.p.nodes), "maxPods": strconv.Itoa(a.maxPods(pl))},
					"%d nodes × %d max pods = %d pods; AKS wants a node pool to hold at least %d",
					a.p.nodes, a.maxPods(pl), total, MinPoolPods)
			}
		}
	}
}

// remarks adds the findings about what the plan leaves out.
func (a *analysis) remarks() {
	if a.p.nodes == 0 {
		a.add(finding.Info, RuleNodesNotGiven, nil, nil,
			"no node count given: only the capacity is shown; give one to check the subnet, pod CIDR and route limit")
	} else if a.p.surge == 0 {
		a.add(finding.Warning, RuleNoSurge, nil, map[string]string{"surge": "0"},
			"no surge: an upgrade adds at least one node (AKS default max surge 1); leave addresses for it")
	}
	if a.r.NodeSubnet < 0 {
		a.add(finding.Info, RuleNoNodeSubnet, nil, nil,
			"no subnet given: capacity is not bounded by a node subnet; give one to check it")
	}
	if a.p.podCIDRGiven && !a.usesPodCIDR() {
		a.add(finding.Info, RulePodCIDRUnused, []Plugin{AzureCNI}, map[string]string{"podCIDR": a.p.pod.String()},
			"Azure CNI takes pod addresses from the subnet; the pod CIDR %s is not used", a.p.pod)
	}
}
