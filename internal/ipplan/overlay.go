package ipplan

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"
)

// OverlayTarget is what a move to Azure CNI Overlay is checked against
// (`routekeeper doctor --target overlay`): the target pod CIDR, the
// cluster's size, and the ranges pods must not shadow: the cluster's own
// (VNet, node subnets, services) and its interconnect's (peered networks,
// on-premises prefixes behind gateways). Azure's rule: the pod CIDR "must
// not overlap with the cluster subnet range" nor "with directly connected
// networks (like VNet peering, ExpressRoute, or VPN)" (AKS, "Azure CNI
// Overlay networking overview", IP address planning).
type OverlayTarget struct {
	// PodCIDRs is the target pod CIDR: one per IP family, IPv4 first-class
	// (AKS runs no IPv6-only cluster).
	PodCIDRs []netip.Prefix
	// ServiceCIDRs and DNSServiceIP are the cluster's; optional: without
	// them the service range (or the DNS service IP) is not checked.
	ServiceCIDRs []netip.Prefix
	DNSServiceIP netip.Addr
	// Nodes is the node count to plan for (0: capacity only); Surge the
	// extra nodes of an upgrade (0 means AKS's default, 1).
	Nodes, Surge int
	// MaxPods is the maximum pods per node; 0 means Overlay's default, 250.
	MaxPods int
	// NodeCIDRMaskSizeIPv6 is each node's IPv6 pod range; 0 means /80.
	NodeCIDRMaskSizeIPv6 int
	// VNet is the cluster's virtual network address space; NodeSubnets its
	// node subnets (the first one bounds the node count), each with one
	// prefix per family.
	VNet        []netip.Prefix
	NodeSubnets []NamedRange
	// Peered are the peered virtual networks (name, address space as
	// peered); OnPrem the on-premises prefixes (name: where they were
	// learned, a gateway's name for instance).
	Peered []NamedRange
	OnPrem []NamedRange
}

// NamedRange is a named set of prefixes: a subnet, a peered network, the
// prefixes a gateway learned.
type NamedRange struct {
	Name     string         `json:"name"`
	Prefixes []netip.Prefix `json:"prefixes"`
}

// OverlayConflict is a target pod CIDR sharing addresses with a range of
// the cluster's networks or their interconnect: packets for those addresses
// would not reach it.
type OverlayConflict struct {
	PodCIDR netip.Prefix `json:"podCIDR"`
	// Kind is vnet, subnet, service, peered or on-prem; Name is the named
	// range's (subnet, peered network, on-premises source).
	Kind   Kind         `json:"kind"`
	Name   string       `json:"name,omitempty"`
	Prefix netip.Prefix `json:"prefix"`
	Shared netip.Prefix `json:"shared"`
}

// OverlayCheck is CheckOverlayTarget's answer.
type OverlayCheck struct {
	// Capacity is Overlay's, with the IPv6 pod CIDR's when dual-stack.
	Capacity PluginCapacity `json:"capacity"`
	// Conflicts are the target pod CIDRs' overlaps with the cluster's
	// networks and their interconnect.
	Conflicts []OverlayConflict `json:"conflicts"`
	// Findings are the findings of the target plan (errors first): the
	// conflicts again as overlap findings, sizes, IP families.
	Findings []finding.Finding `json:"findings"`
	// Report is the whole analysis (for output and SVG).
	Report Report `json:"report"`
}

// OK reports whether the target has no error finding.
func (c OverlayCheck) OK() bool { return c.Report.Errors() == 0 }

// CheckOverlayTarget checks a target pod CIDR for Azure CNI Overlay against
// the cluster's size, its networks and their interconnect. It is pure: the
// caller reads the network (peerings, gateways' learned prefixes) and
// passes it.
func CheckOverlayTarget(t OverlayTarget) (OverlayCheck, error) {
	if len(t.PodCIDRs) == 0 {
		return OverlayCheck{}, errors.New("overlay target: no pod CIDR given")
	}
	strs := func(ps []netip.Prefix) StringList {
		var out StringList
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	plan := Plan{Plugins: []Plugin{Overlay}, PodCIDR: strs(t.PodCIDRs), ServiceCIDR: strs(t.ServiceCIDRs),
		VNet: strs(t.VNet), Nodes: t.Nodes, NodeCIDRMaskSizeIPv6: t.NodeCIDRMaskSizeIPv6}
	if t.DNSServiceIP.IsValid() {
		plan.DNSServiceIP = t.DNSServiceIP.String()
	}
	if t.MaxPods > 0 {
		plan.MaxPods = &t.MaxPods
	}
	if t.Surge > 0 {
		plan.Surge = Surge(strconv.Itoa(t.Surge))
	}
	for _, s := range t.NodeSubnets {
		plan.Subnets = append(plan.Subnets, Subnet{Name: s.Name, Prefixes: strs(s.Prefixes)})
	}
	for _, r := range t.Peered {
		plan.Peered = append(plan.Peered, strs(r.Prefixes)...)
	}
	for _, r := range t.OnPrem {
		plan.OnPrem = append(plan.OnPrem, strs(r.Prefixes)...)
	}
	report, err := Analyze(plan)
	if err != nil {
		return OverlayCheck{}, err
	}
	noService := len(t.ServiceCIDRs) == 0
	if noService { // the default service range is not the cluster's
		report.Findings = slices.DeleteFunc(report.Findings, func(f finding.Finding) bool {
			_, svc := f.Evidence.Value("service")
			return svc || f.Rule == RuleServiceCIDRTooLarge || strings.HasPrefix(f.Rule, "dns-ip")
		})
	}
	if !t.DNSServiceIP.IsValid() { // the default DNS IP is not the cluster's either
		report.Findings = slices.DeleteFunc(report.Findings, func(f finding.Finding) bool { return strings.HasPrefix(f.Rule, "dns-ip") })
	}
	out := OverlayCheck{Report: report, Findings: report.Findings, Conflicts: []OverlayConflict{}}
	if len(report.Capacity) > 0 {
		out.Capacity = report.Capacity[0]
	}
	name := func(rg Range) string {
		var list []NamedRange
		switch rg.Kind {
		case KindSubnet:
			return rg.Name
		case KindPeered:
			list = t.Peered
		case KindOnPrem:
			list = t.OnPrem
		}
		for _, n := range list {
			if slices.Contains(n.Prefixes, rg.Prefix) {
				return n.Name
			}
		}
		return ""
	}
	for _, o := range report.Overlaps {
		a, b := report.Ranges[o.A], report.Ranges[o.B]
		if b.Kind == KindPod {
			a, b = b, a
		}
		if a.Kind != KindPod || b.Kind == KindForbidden || noService && b.Kind == KindService {
			continue
		}
		out.Conflicts = append(out.Conflicts, OverlayConflict{PodCIDR: a.Prefix, Kind: b.Kind, Name: name(b), Prefix: b.Prefix, Shared: o.Prefix})
	}
	return out, nil
}
