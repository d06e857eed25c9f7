// Package ipplan checks an address plan for a Kubernetes cluster on Azure and
// computes its capacity under the three network plugins people choose between:
// kubenet (nodes in the subnet, pods behind user-defined routes), Azure CNI
// (every pod takes a subnet address) and Azure CNI Overlay (pods in a private
// range, one /24 per node, no route table).
//
// It is pure: the caller hands in a Plan (from flags, a plan file or a live
// config) and gets back a Report with findings, capacity per plugin and the
// ranges on the address axis, which SVG draws. Only IPv4 is handled.
package ipplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
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
	DefaultPodCIDR          = "10.244.0.0/16"
	DefaultServiceCIDR      = "10.0.0.0/16"
	DefaultDNSServiceIP     = "10.0.0.10"
	DefaultSurge            = "1"
	DefaultRouteLimit       = 400 // routes per route table
	DefaultNodeCIDRMaskSize = 24  // each node's pod range (kube-controller-manager --node-cidr-mask-size)
	MinMaxPods              = 10
	MaxMaxPods              = 250
	MinPoolPods             = 30 // a node pool must fit at least this many pods
	SubnetReserved          = 5  // addresses Azure keeps in every subnet
	SmallestAzureSubnet     = 29 // the longest prefix Azure accepts for a subnet
	maxNodes                = 1_000_000
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
	// Overlay). Azure CNI does not use it. Default 10.244.0.0/16.
	PodCIDR string `json:"podCIDR,omitempty"`
	// ServiceCIDR is the Kubernetes service range. Default 10.0.0.0/16.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
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
	// ExpressRoute or VPN, and peered VNets.
	OnPrem StringList `json:"onPrem,omitempty"`
	// Plugins are the plugins to plan for; empty compares all three.
	Plugins []Plugin `json:"plugins,omitempty"`
	// RouteLimit is the number of routes a route table holds. Default 400.
	RouteLimit int `json:"routeLimit,omitempty"`
	// NodeCIDRMaskSize is the prefix length of each node's pod range under
	// kubenet (kube-controller-manager --node-cidr-mask-size). Default 24.
	// Overlay always uses /24.
	NodeCIDRMaskSize int `json:"nodeCIDRMaskSize,omitempty"`
}

// Subnet is one subnet of the plan.
type Subnet struct {
	Name   string `json:"name,omitempty"`
	Prefix string `json:"prefix"`
}

// ParseSubnet reads the --subnet syntax: "NAME=CIDR" or "CIDR".
func ParseSubnet(s string) Subnet {
	if name, prefix, ok := strings.Cut(s, "="); ok {
		return Subnet{Name: strings.TrimSpace(name), Prefix: strings.TrimSpace(prefix)}
	}
	return Subnet{Prefix: strings.TrimSpace(s)}
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

// parsed is a validated Plan with defaults applied.
type parsed struct {
	vnet             []netip.Prefix
	subnets          []namedPrefix
	pod              netip.Prefix
	service          netip.Prefix
	dns              netip.Addr
	onPrem           []netip.Prefix
	nodes            int
	surge            int
	maxPods          int // 0: each plugin's default
	plugins          []Plugin
	compare          bool
	podCIDRGiven     bool
	routeLimit       int
	nodeCIDRMaskSize int
}

type namedPrefix struct {
	name   string
	prefix netip.Prefix
}

// Validate checks that every field of p is well formed (addresses, prefixes
// without host bits, IPv4, counts in range) and returns a *FieldError naming
// the first bad one. Whether the plan is sound is Analyze's business.
func (p Plan) Validate() error {
	_, err := p.parse()
	return err
}

func (p Plan) parse() (*parsed, error) {
	out := &parsed{}
	var err error
	for i, s := range p.VNet {
		pr, err := parsePrefix("vnet", i, "", s)
		if err != nil {
			return nil, err
		}
		out.vnet = append(out.vnet, pr)
	}
	names := map[string]int{}
	for i, s := range p.Subnets {
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				return nil, &FieldError{Field: "subnets", Index: i, Sub: "name", Value: s.Name,
					Reason: fmt.Sprintf("is used twice (also subnets[%d])", j)}
			}
			names[s.Name] = i
		}
		pr, err := parsePrefix("subnets", i, "prefix", s.Prefix)
		if err != nil {
			return nil, err
		}
		out.subnets = append(out.subnets, namedPrefix{name: s.Name, prefix: pr})
	}
	out.podCIDRGiven = p.PodCIDR != ""
	if out.pod, err = parsePrefix("podCIDR", -1, "", orDefault(p.PodCIDR, DefaultPodCIDR)); err != nil {
		return nil, err
	}
	if out.service, err = parsePrefix("serviceCIDR", -1, "", orDefault(p.ServiceCIDR, DefaultServiceCIDR)); err != nil {
		return nil, err
	}
	dns := orDefault(p.DNSServiceIP, DefaultDNSServiceIP)
	a, perr := netip.ParseAddr(strings.TrimSpace(dns))
	switch {
	case perr != nil:
		return nil, &FieldError{Field: "dnsServiceIP", Index: -1, Value: dns, Reason: "is not an IP address"}
	case a.Zone() != "" || !a.Unmap().Is4():
		return nil, &FieldError{Field: "dnsServiceIP", Index: -1, Value: dns, Reason: "is not an IPv4 address (only IPv4 is supported)"}
	}
	out.dns = a.Unmap()
	for i, s := range p.OnPrem {
		pr, err := parsePrefix("onPrem", i, "", s)
		if err != nil {
			return nil, err
		}
		out.onPrem = append(out.onPrem, pr)
	}
	if p.Nodes < 0 || p.Nodes > maxNodes {
		return nil, &FieldError{Field: "nodes", Index: -1, Value: strconv.Itoa(p.Nodes),
			Reason: fmt.Sprintf("must be between 0 and %d", maxNodes)}
	}
	out.nodes = p.Nodes
	if p.MaxPods != nil {
		if *p.MaxPods < 1 {
			return nil, &FieldError{Field: "maxPods", Index: -1, Value: strconv.Itoa(*p.MaxPods), Reason: "must be a positive number"}
		}
		out.maxPods = *p.MaxPods
	}
	if out.surge, err = p.Surge.count(p.Nodes); err != nil {
		return nil, &FieldError{Field: "surge", Index: -1, Value: string(p.Surge), Reason: err.Error()}
	}
	seen := map[Plugin]bool{}
	for i, pl := range p.Plugins {
		pl = Plugin(strings.ToLower(strings.TrimSpace(string(pl))))
		switch pl {
		case Kubenet, AzureCNI, Overlay:
		default:
			return nil, &FieldError{Field: "plugins", Index: i, Value: string(p.Plugins[i]),
				Reason: "is not one of kubenet, azure, overlay"}
		}
		seen[pl] = true
	}
	for _, pl := range AllPlugins() { // keep the report order stable
		if seen[pl] {
			out.plugins = append(out.plugins, pl)
		}
	}
	if len(out.plugins) == 0 {
		out.plugins = AllPlugins()
		out.compare = true
	}
	out.routeLimit = p.RouteLimit
	if out.routeLimit == 0 {
		out.routeLimit = DefaultRouteLimit
	}
	if out.routeLimit < 1 {
		return nil, &FieldError{Field: "routeLimit", Index: -1, Value: strconv.Itoa(p.RouteLimit), Reason: "must be a positive number"}
	}
	out.nodeCIDRMaskSize = p.NodeCIDRMaskSize
	if out.nodeCIDRMaskSize == 0 {
		out.nodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
	if out.nodeCIDRMaskSize < 8 || out.nodeCIDRMaskSize > 30 {
		return nil, &FieldError{Field: "nodeCIDRMaskSize", Index: -1, Value: strconv.Itoa(p.NodeCIDRMaskSize),
			Reason: "must be between 8 and 30"}
	}
	return out, nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// parsePrefix parses an IPv4 CIDR and refuses host bits, so that a typo such
// as 10.0.0.1/16 is caught instead of silently widened.
func parsePrefix(field string, index int, sub, s string) (netip.Prefix, error) {
	fe := func(reason string) error {
		return &FieldError{Field: field, Index: index, Sub: sub, Value: s, Reason: reason}
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return netip.Prefix{}, fe("is empty; want a CIDR such as 10.1.0.0/16")
	}
	if strings.HasPrefix(strings.ToLower(t), "/subscriptions/") {
		return netip.Prefix{}, fe("is an ARM resource ID, not a CIDR (read subnets from the cloud with --config)")
	}
	p, err := netip.ParsePrefix(t)
	if err != nil {
		if a, aerr := netip.ParseAddr(t); aerr == nil && a.Is4() {
			return netip.Prefix{}, fe(fmt.Sprintf("has no prefix length; want a CIDR such as %s/24", t))
		}
		return netip.Prefix{}, fe("is not a CIDR such as 10.1.0.0/16")
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fe("is not IPv4 (only IPv4 is supported)")
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fe(fmt.Sprintf("has host bits set; did you mean %s?", m))
	}
	return p, nil
}
