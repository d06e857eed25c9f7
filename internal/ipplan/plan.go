// Package ipplan checks an address plan for a Kubernetes cluster on Azure and
// computes its capacity under the three network plugins people choose between:
// kubenet (nodes in the subnet, pods behind user-defined routes), Azure CNI
// (every pod takes a subnet address) and Azure CNI Overlay (pods in a private
// range, one /24 per node, no route table).
//
// It is pure: the caller hands in a Plan (from flags, a plan file or a live
// config) and gets back a Report with findings, capacity per plugin and the
// ranges on the address axis, which SVG draws. Plans are IPv4 or dual-stack
// (IPv4 and IPv6, as AKS's --ip-families ipv4,ipv6): one pod and one
// service range per family, IPv6 prefixes on the VNet and its subnets.
// CheckOverlayTarget (overlay.go) is the check of a move to Azure CNI
// Overlay against a cluster's networks and their interconnect.
package ipplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Plugin is a network plugin whose capacity is computed.
type Plugin string

// The plugins ipplan knows.
const (
	Kubenet  Plugin = "kubenet"
	AzureCNI Plugin = "azure"   // Azure CNI, flat (node subnet): every pod takes a subnet address
	Overlay  Plugin = "overlay" // Azure CNI Overlay: pods in a private range, a /24 per node
)

// AllPlugins lists every plugin in the order reports show them.
func AllPlugins() []Plugin { return []Plugin{Kubenet, AzureCNI, Overlay} }

// Azure's defaults (az aks create) and limits.
const (
	DefaultPodCIDR     = "10.244.0.0/16"
	DefaultServiceCIDR = "10.0.0.0/16"
	// AKS's IPv6 defaults of a dual-stack cluster (--pod-cidrs,
	// --service-cidrs) and the IPv6 pod range each node gets (/80, as AKS's
	// dual-stack documentation shows it: fd12:3456:789a:0:1::/80, ...).
	DefaultPodCIDRIPv6          = "fd12:3456:789a::/64"
	DefaultServiceCIDRIPv6      = "fd12:3456:789a:1::/108"
	DefaultNodeCIDRMaskSizeIPv6 = 80
	// LargestIPv6ServiceCIDR: the largest IPv6 service range AKS and
	// kube-apiserver accept is a /108.
	LargestIPv6ServiceCIDR = 108
	// IPv6SubnetBits is the only size of an IPv6 subnet Azure accepts.
	IPv6SubnetBits      = 64
	DefaultDNSServiceIP = "10.0.0.10"
	DefaultSurge        = "1"
	// DefaultRouteLimit is Azure's limit of routes per route table: 1,000
	// since Azure update 562695 (May 2026; the limits page, "User-defined
	// routes per route table"). routekeeper reads the subscription's from
	// the usages API; --route-limit plays another.
	DefaultRouteLimit = 1000
	// AKSKubenetMaxNodes is AKS's documented cap of a kubenet cluster
	// (AKS, "Use kubenet networking with your own IP address ranges":
	// 400 nodes). It is AKS's, not the route table's: a self-managed
	// cluster (PlatformSelfManaged) is bound by the table alone.
	AKSKubenetMaxNodes      = 400
	DefaultNodeCIDRMaskSize = 24 // each node's pod range (kube-controller-manager --node-cidr-mask-size)
	MinMaxPods              = 10
	MaxMaxPods              = 250
	MinPoolPods             = 30 // a node pool must fit at least this many pods
	SubnetReserved          = 5  // addresses Azure keeps in every subnet
	SmallestAzureSubnet     = 29 // the longest prefix Azure accepts for a subnet
	maxNodes                = 1_000_000
)

// Platform is who runs the cluster, which decides the caps of kubenet.
type Platform string

// The platforms.
const (
	PlatformAKS         Platform = "aks"
	PlatformSelfManaged Platform = "self-managed"
)

// DefaultMaxPods returns the maximum pods per node a plugin gets when none is
// given: 110 for kubenet, 30 for Azure CNI, 250 for Overlay.
func DefaultMaxPods(p Plugin) int {
	switch p {
	case AzureCNI:
		return 30
	case Overlay:
		return 250
	default:
		return 110
	}
}

// Plan is an address plan to check. It is also the format of a plan file
// (`routekeeper ipplan -f plan.yaml`). Addresses are kept as the user wrote
// them, so that errors can quote them; Validate parses them. Empty fields get
// Azure's defaults.
type Plan struct {
	// VNet is the virtual network's address space (one or more prefixes).
	VNet StringList `json:"vnet,omitempty"`
	// Subnets are the subnets of the VNet that matter. The first one is the
	// node subnet: capacity is computed for it.
	Subnets []Subnet `json:"subnets,omitempty"`
	// PodCIDR is the cluster CIDR from which each node gets a /24 (kubenet,
	// Overlay). Azure CNI does not use it. Default 10.244.0.0/16. One range
	// per IP family (a list, or "IPv4,IPv6" as AKS's --pod-cidrs): with an
	// IPv6 range the cluster is dual-stack, and each node also gets a /80
	// (NodeCIDRMaskSizeIPv6) of it.
	PodCIDR StringList `json:"podCIDR,omitempty"`
	// ServiceCIDR is the Kubernetes service range, one per IP family.
	// Default 10.0.0.0/16, and fd12:3456:789a:1::/108 for a dual-stack
	// cluster.
	ServiceCIDR StringList `json:"serviceCIDR,omitempty"`
	// DNSServiceIP is the cluster DNS service address. Default 10.0.0.10.
	DNSServiceIP string `json:"dnsServiceIP,omitempty"`
	// Nodes is the node count to plan for; 0 means "not given": only the
	// capacity is computed.
	Nodes int `json:"nodes,omitempty"`
	// MaxPods is the maximum pods per node; nil means each plugin's default.
	MaxPods *int `json:"maxPods,omitempty"`
	// Surge is the number of extra nodes an upgrade adds ("1", the default)
	// or a percentage of Nodes ("33%"), rounded up as AKS does.
	Surge Surge `json:"surge,omitempty"`
	// OnPrem are ranges reachable from the VNet: on-premises networks behind
	// ExpressRoute or VPN (and peered VNets, when not given as Peered).
	OnPrem StringList `json:"onPrem,omitempty"`
	// Peered are the address spaces of peered VNets.
	Peered StringList `json:"peered,omitempty"`
	// Plugins are the plugins to plan for; empty compares all three.
	Plugins []Plugin `json:"plugins,omitempty"`
	// RouteLimit is the number of routes a route table holds. Default
	// 1,000, Azure's.
	RouteLimit int `json:"routeLimit,omitempty"`
	// Platform is who runs the cluster: PlatformAKS (the default: AKS caps
	// a kubenet cluster at 400 nodes) or PlatformSelfManaged (Kubernetes on
	// Azure VMs: only the route table limits kubenet).
	Platform Platform `json:"platform,omitempty"`
	// NodeCIDRMaskSize is the prefix length of each node's pod range under
	// kubenet (kube-controller-manager --node-cidr-mask-size). Default 24.
	// Overlay always uses /24.
	NodeCIDRMaskSize int `json:"nodeCIDRMaskSize,omitempty"`
	// NodeCIDRMaskSizeIPv6 is the prefix length of each node's IPv6 pod
	// range (kube-controller-manager --node-cidr-mask-size-ipv6). Default
	// 80, AKS's.
	NodeCIDRMaskSizeIPv6 int `json:"nodeCIDRMaskSizeIPv6,omitempty"`
}

// Subnet is one subnet of the plan: one prefix, or one per IP family (a
// dual-stack subnet), in Prefix ("IPv4,IPv6" works too) or Prefixes.
type Subnet struct {
	Name     string   `json:"name,omitempty"`
	Prefix   string   `json:"prefix,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
}

// ParseSubnet reads the --subnet syntax: "NAME=CIDR[,CIDR]" or "CIDR[,CIDR]".
func ParseSubnet(s string) Subnet {
	if name, prefix, ok := strings.Cut(s, "="); ok {
		return Subnet{Name: strings.TrimSpace(name), Prefix: strings.TrimSpace(prefix)}
	}
	return Subnet{Prefix: strings.TrimSpace(s)}
}

// ParseSubnets reads the values of --subnet, which a command line splits
// at commas: an unnamed value of an IP family the previous subnet lacks is
// that subnet's other prefix, so "nodes=10.1.0.0/24,fd00:1::/64" is one
// dual-stack subnet, while "a=10.1.0.0/24,b=10.1.1.0/24" stays two.
func ParseSubnets(values []string) []Subnet {
	var out []Subnet
	for _, v := range values {
		sn := ParseSubnet(v)
		if n := len(out); n > 0 && sn.Name == "" && !strings.Contains(sn.Prefix, ",") {
			prev := &out[n-1]
			have := prev.prefixes()
			if len(have) == 1 && isIPv6(have[0]) != isIPv6(sn.Prefix) {
				prev.Prefix = have[0] + "," + sn.Prefix
				continue
			}
		}
		out = append(out, sn)
	}
	return out
}

// prefixes are the subnet's prefixes as written, split at commas.
func (s Subnet) prefixes() []string {
	var out []string
	for _, list := range append([]string{s.Prefix}, s.Prefixes...) {
		for _, p := range strings.Split(list, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func isIPv6(prefix string) bool { return strings.Contains(prefix, ":") }

// split is a list of ranges as written, each element split at commas.
func (l StringList) split() []string {
	var out []string
	for _, e := range l {
		for _, p := range strings.Split(e, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// StringList is a list of strings that a plan file may also give as one
// string ("vnet: 10.0.0.0/16").
type StringList []string

// UnmarshalJSON accepts a string or a list of strings.
func (l *StringList) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*l = list
	return nil
}

// Surge is a node count ("1") or a percentage of the nodes ("33%").
type Surge string

// UnmarshalJSON accepts a number or a string.
func (s *Surge) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		*s = Surge(n.String())
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("want a node count or a percentage such as \"33%%\": %w", err)
	}
	*s = Surge(str)
	return nil
}

// count resolves the surge for a node count: a percentage is rounded up.
func (s Surge) count(nodes int) (int, error) {
	str := strings.TrimSpace(string(s))
	if str == "" {
		str = DefaultSurge
	}
	if pct, ok := strings.CutSuffix(str, "%"); ok {
		p, err := strconv.Atoi(strings.TrimSpace(pct))
		if err != nil || p < 1 || p > 100 {
			return 0, fmt.Errorf("a percentage must be between 1%% and 100%%")
		}
		return (nodes*p + 99) / 100, nil
	}
	n, err := strconv.Atoi(str)
	if err != nil {
		return 0, fmt.Errorf("not a node count or a percentage such as 33%%")
	}
	if n < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return n, nil
}

// FieldError is bad input: which field of the Plan, its value and why.
type FieldError struct {
	// Field is the Plan field's JSON name ("podCIDR", "subnets").
	Field string
	// Index is the position in a list field, -1 for a scalar.
	Index int
	// Sub names the part of a list element ("prefix", "name"), if any.
	Sub    string
	Value  string
	Reason string
}

// Path is the field as a plan file spells it: "subnets[1].prefix".
func (e *FieldError) Path() string {
	p := e.Field
	if e.Index >= 0 {
		p += fmt.Sprintf("[%d]", e.Index)
	}
	if e.Sub != "" {
		p += "." + e.Sub
	}
	return p
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %q %s", e.Path(), e.Value, e.Reason)
}
