package ipplan

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// parsed is a validated Plan with defaults applied.
type parsed struct {
	vnet    []netip.Prefix
	subnets []namedPrefix
	// pod and service are the IPv4 ranges (invalid when the plan gives
	// only IPv6), pod6 and service6 the IPv6 ones (invalid when none).
	pod, pod6         netip.Prefix
	service, service6 netip.Prefix
	dns               netip.Addr
	onPrem            []netip.Prefix
	peered            []netip.Prefix
	nodes             int
	surge             int
	maxPods           int // 0: each plugin's default
	plugins           []Plugin
	compare           bool
	podCIDRGiven      bool
	routeLimit        int
	platform          Platform
	nodeCIDRMaskSize  int
	nodeCIDRMaskSize6 int
}

// dual reports whether the plan is dual-stack: it has an IPv6 pod or
// service range.
func (p *parsed) dual() bool { return p.pod6.IsValid() || p.service6.IsValid() }

type namedPrefix struct {
	name   string
	prefix netip.Prefix
	index  int // the subnet's position in Plan.Subnets; 0 is the node subnet
}

// Validate checks that every field of p is well formed (addresses, prefixes
// without host bits, one range per IP family, counts in range) and returns
// a *FieldError naming the first bad one. Whether the plan is sound is
// Analyze's business.
func (p Plan) Validate() error {
	_, err := p.parse()
	return err
}

func (p Plan) parse() (*parsed, error) {
	out := &parsed{}
	for i, s := range p.VNet.split() {
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
		if s.Prefix != "" && len(s.Prefixes) > 0 {
			return nil, &FieldError{Field: "subnets", Index: i, Sub: "prefixes", Value: strings.Join(s.Prefixes, ","),
				Reason: "is given with prefix; give prefix or prefixes, not both"}
		}
		sub := "prefix"
		if len(s.Prefixes) > 0 {
			sub = "prefixes"
		}
		list := s.prefixes()
		if len(list) == 0 {
			list = []string{""}
		}
		prs, err := perFamily("subnets", i, sub, list)
		if err != nil {
			return nil, err
		}
		for _, pr := range prs {
			out.subnets = append(out.subnets, namedPrefix{name: s.Name, prefix: pr, index: i})
		}
	}
	out.podCIDRGiven = len(p.PodCIDR.split()) > 0
	pods, services := p.PodCIDR.split(), p.ServiceCIDR.split()
	// Dual-stack when either range list has IPv6; the other then gets
	// AKS's dual-stack defaults.
	dualAsked := false
	for _, s := range append(append([]string(nil), pods...), services...) {
		dualAsked = dualAsked || isIPv6(s)
	}
	if len(pods) == 0 {
		pods = []string{DefaultPodCIDR}
		if dualAsked {
			pods = append(pods, DefaultPodCIDRIPv6)
		}
	}
	if len(services) == 0 {
		services = []string{DefaultServiceCIDR}
		if dualAsked {
			services = append(services, DefaultServiceCIDRIPv6)
		}
	}
	var err error
	if out.pod, out.pod6, err = twoFamilies("podCIDR", pods); err != nil {
		return nil, err
	}
	if out.service, out.service6, err = twoFamilies("serviceCIDR", services); err != nil {
		return nil, err
	}
	dns := orDefault(p.DNSServiceIP, DefaultDNSServiceIP)
	a, perr := netip.ParseAddr(strings.TrimSpace(dns))
	switch {
	case perr != nil:
		return nil, &FieldError{Field: "dnsServiceIP", Index: -1, Value: dns, Reason: "is not an IP address"}
	case a.Zone() != "":
		return nil, &FieldError{Field: "dnsServiceIP", Index: -1, Value: dns, Reason: "has a zone; want a plain address"}
	}
	out.dns = a.Unmap()
	for i, s := range p.OnPrem.split() {
		pr, err := parsePrefix("onPrem", i, "", s)
		if err != nil {
			return nil, err
		}
		out.onPrem = append(out.onPrem, pr)
	}
	for i, s := range p.Peered.split() {
		pr, err := parsePrefix("peered", i, "", s)
		if err != nil {
			return nil, err
		}
		out.peered = append(out.peered, pr)
	}
	if err := p.parseCounts(out); err != nil {
		return nil, err
	}
	return out, nil
}

// twoFamilies parses one range per IP family: the IPv4 one and the IPv6
// one (either may be missing).
func twoFamilies(field string, list []string) (v4, v6 netip.Prefix, err error) {
	for i, s := range list {
		index := i
		if len(list) == 1 {
			index = -1 // one range: the field itself, as before dual-stack
		}
		pr, err := parsePrefix(field, index, "", s)
		if err != nil {
			return v4, v6, err
		}
		slot, fam := &v4, "IPv4"
		if pr.Addr().Is6() {
			slot, fam = &v6, "IPv6"
		}
		if slot.IsValid() {
			return v4, v6, &FieldError{Field: field, Index: i, Value: s,
				Reason: fmt.Sprintf("is a second %s range (also %s); give one range per IP family, as AKS's --pod-cidrs and --service-cidrs take them", fam, *slot)}
		}
		*slot = pr
	}
	return v4, v6, nil
}

// perFamily parses the prefixes of a subnet: one per IP family.
func perFamily(field string, index int, sub string, list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		pr, err := parsePrefix(field, index, sub, s)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Addr().Is4() == pr.Addr().Is4() {
				return nil, &FieldError{Field: field, Index: index, Sub: sub, Value: s,
					Reason: fmt.Sprintf("is a second prefix of the same IP family as %s; a subnet has one prefix per family", o)}
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// parseCounts reads the numbers of the plan.
func (p Plan) parseCounts(out *parsed) error {
	if p.Nodes < 0 || p.Nodes > maxNodes {
		return &FieldError{Field: "nodes", Index: -1, Value: strconv.Itoa(p.Nodes),
			Reason: fmt.Sprintf("must be between 0 and %d", maxNodes)}
	}
	out.nodes = p.Nodes
	if p.MaxPods != nil {
		if *p.MaxPods < 1 {
			return &FieldError{Field: "maxPods", Index: -1, Value: strconv.Itoa(*p.MaxPods), Reason: "must be a positive number"}
		}
		out.maxPods = *p.MaxPods
	}
	var err error
	if out.surge, err = p.Surge.count(p.Nodes); err != nil {
		return &FieldError{Field: "surge", Index: -1, Value: string(p.Surge), Reason: err.Error()}
	}
	seen := map[Plugin]bool{}
	for i, pl := range p.Plugins {
		pl = Plugin(strings.ToLower(strings.TrimSpace(string(pl))))
		switch pl {
		case Kubenet, AzureCNI, Overlay:
		default:
			return &FieldError{Field: "plugins", Index: i, Value: string(p.Plugins[i]),
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
		return &FieldError{Field: "routeLimit", Index: -1, Value: strconv.Itoa(p.RouteLimit), Reason: "must be a positive number"}
	}
	switch out.platform = Platform(strings.ToLower(strings.TrimSpace(string(p.Platform)))); out.platform {
	case "":
		out.platform = PlatformAKS
	case PlatformAKS, PlatformSelfManaged:
	default:
		return &FieldError{Field: "platform", Index: -1, Value: string(p.Platform), Reason: "is not one of aks, self-managed"}
	}
	out.nodeCIDRMaskSize = p.NodeCIDRMaskSize
	if out.nodeCIDRMaskSize == 0 {
		out.nodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
	if out.nodeCIDRMaskSize < 8 || out.nodeCIDRMaskSize > 30 {
		return &FieldError{Field: "nodeCIDRMaskSize", Index: -1, Value: strconv.Itoa(p.NodeCIDRMaskSize),
			Reason: "must be between 8 and 30"}
	}
	out.nodeCIDRMaskSize6 = p.NodeCIDRMaskSizeIPv6
	if out.nodeCIDRMaskSize6 == 0 {
		out.nodeCIDRMaskSize6 = DefaultNodeCIDRMaskSizeIPv6
	}
	if out.nodeCIDRMaskSize6 < 64 || out.nodeCIDRMaskSize6 > 120 {
		return &FieldError{Field: "nodeCIDRMaskSizeIPv6", Index: -1, Value: strconv.Itoa(p.NodeCIDRMaskSizeIPv6),
			Reason: "must be between 64 and 120"}
	}
	return nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// parsePrefix parses a CIDR of either family and refuses host bits, so that
// a typo such as 10.0.0.1/16 is caught instead of silently widened.
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
		if a, aerr := netip.ParseAddr(t); aerr == nil {
			bits := 24
			if a.Is6() {
				bits = 64
			}
			return netip.Prefix{}, fe(fmt.Sprintf("has no prefix length; want a CIDR such as %s/%d", t, bits))
		}
		return netip.Prefix{}, fe("is not a CIDR such as 10.1.0.0/16 or fd00:1::/64")
	}
	if p.Addr().Zone() != "" {
		return netip.Prefix{}, fe("has a zone; want a plain CIDR")
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fe("is an IPv4-mapped IPv6 prefix; write the IPv4 prefix")
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fe(fmt.Sprintf("has host bits set; did you mean %s?", m))
	}
	return p, nil
}
