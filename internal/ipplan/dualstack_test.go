package ipplan

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/finding"
)

// dualBase is a sound dual-stack Overlay plan; bad plans change one thing.
func dualBase() Plan {
	return Plan{
		VNet:         StringList{"172.16.0.0/16", "fd00:172:16::/48"},
		Subnets:      []Subnet{{Name: "nodes", Prefixes: []string{"172.16.0.0/23", "fd00:172:16::/64"}}},
		PodCIDR:      StringList{"100.64.0.0/15,fd12:3456:789a::/64"},
		ServiceCIDR:  StringList{"172.17.0.0/16", "fd12:3456:789a:1::/108"},
		DNSServiceIP: "172.17.0.10",
		Nodes:        300,
		Plugins:      []Plugin{Overlay},
	}
}

func TestDualStackPlans(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Plan)
		rule    string // "" : no error finding
		sev     finding.Severity
		plugins []Plugin
		says    string
	}{
		{name: "sound", change: func(*Plan) {}},
		{name: "AKS's dual-stack service defaults", change: func(p *Plan) { p.ServiceCIDR, p.DNSServiceIP = nil, "" }},
		{name: "IPv6 only", change: func(p *Plan) {
			p.PodCIDR, p.ServiceCIDR = StringList{"fd12:3456:789a::/64"}, StringList{"fd12:3456:789a:1::/108"}
			p.DNSServiceIP = "fd12:3456:789a:1::a"
		},
			rule: RuleIPv6Only, sev: finding.Error, says: "not IPv6-only ones"},
		{name: "families of pods and services differ", change: func(p *Plan) { p.ServiceCIDR = StringList{"172.17.0.0/16"} },
			rule: RuleIPFamiliesMismatch, sev: finding.Error, says: "not of the same IP families"},
		{name: "VNet without IPv6", change: func(p *Plan) { p.VNet = StringList{"172.16.0.0/16"}; p.Subnets[0].Prefixes = []string{"172.16.0.0/23"} },
			rule: RuleDualStackVNet, sev: finding.Error, says: "has no IPv6 prefix"},
		{name: "node subnet without IPv6", change: func(p *Plan) { p.Subnets[0].Prefixes = []string{"172.16.0.0/23"} },
			rule: RuleDualStackSubnet, sev: finding.Error, says: "node subnet nodes 172.16.0.0/23 has no IPv6 prefix"},
		{name: "IPv6 subnet not a /64", change: func(p *Plan) { p.Subnets[0].Prefixes[1] = "fd00:172:16::/72" },
			rule: RuleSubnetIPv6Size, sev: finding.Error, says: "exactly /64"},
		{name: "IPv6 subnet outside the VNet", change: func(p *Plan) { p.Subnets[0].Prefixes[1] = "fd00:1::/64" },
			rule: RuleSubnetOutsideVNet, sev: finding.Error, says: "fd00:1::/64"},
		{name: "IPv6 service range larger than /108", change: func(p *Plan) { p.ServiceCIDR[1] = "fd12:3456:789a:1::/96" },
			rule: RuleServiceCIDRTooLarge, sev: finding.Error, says: "no larger than /108"},
		{name: "IPv6 pod range inside the VNet", change: func(p *Plan) { p.PodCIDR = StringList{"100.64.0.0/15", "fd00:172:16:1::/64"} },
			rule: RuleOverlap, sev: finding.Error, says: "vnet fd00:172:16::/48 overlaps pod fd00:172:16:1::/64"},
		{name: "IPv6 pod range over an on-premises one", change: func(p *Plan) { p.OnPrem = StringList{"fd12::/16"} },
			rule: RuleOverlap, sev: finding.Error, says: "overlaps on-prem fd12::/16"},
		{name: "IPv6 pod range too small", change: func(p *Plan) { p.PodCIDR[0] = "100.64.0.0/15,fd12:3456:789a::/76" },
			rule: RulePodCIDRTooSmall, sev: finding.Error, plugins: []Plugin{Overlay}, says: "holds 16 /80 node ranges; 300 nodes + 1 surge need 301; smallest pod CIDR: /71"},
		{name: "Azure CNI has no dual-stack", change: func(p *Plan) { p.Plugins = []Plugin{AzureCNI} },
			rule: RulePluginIPv6, sev: finding.Error, plugins: []Plugin{AzureCNI}, says: "use Azure CNI Overlay"},
		{name: "dual-stack kubenet: two routes a node", change: func(p *Plan) { p.Plugins, p.RouteLimit = []Plugin{Kubenet}, 400 },
			rule: RuleRouteLimit, sev: finding.Error, plugins: []Plugin{Kubenet}, says: "two routes per node"},
		{name: "IPv6 DNS service IP in the IPv6 range", change: func(p *Plan) { p.DNSServiceIP = "fd12:3456:789a:1::1" },
			rule: RuleDNSIPReserved, sev: finding.Error, says: "kubernetes API service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := dualBase()
			tt.change(&p)
			r := analyze(t, p)
			if tt.rule == "" {
				if n := r.Errors(); n != 0 {
					t.Fatalf("%d errors: %+v", n, r.Findings)
				}
				return
			}
			i := slices.IndexFunc(r.Findings, func(f finding.Finding) bool { return f.Rule == tt.rule && f.Severity == tt.sev })
			if i < 0 {
				t.Fatalf("no %s %s finding in %+v", tt.sev, tt.rule, r.Findings)
			}
			f := r.Findings[i]
			if !strings.Contains(f.Message, tt.says) || !slices.Equal(pluginsOf(f), tt.plugins) {
				t.Errorf("finding %+v; want it to say %q, plugins %v", f, tt.says, tt.plugins)
			}
		})
	}
}

func TestDualStackCapacity(t *testing.T) {
	r := analyze(t, dualBase())
	c := capacityOf(t, r, Overlay)
	if deref(c.MaxNodes) != 507 || c.LimitedBy != "subnet" || c.IPv6 == nil || c.IPv6.NodeRanges.String() != "65,536" ||
		c.IPv6.NodeCIDRMaskSize != 80 || c.IPv6.SmallestPodCIDRPrefix != 71 || c.IPv6.Fits == nil || !*c.IPv6.Fits {
		t.Errorf("overlay capacity: %+v %+v", c, c.IPv6)
	}
	if !slices.Equal(r.IPFamilies, []string{"IPv4", "IPv6"}) || r.NodeCIDRMaskSizeIPv6 != 80 {
		t.Errorf("families %v, IPv6 node mask %d", r.IPFamilies, r.NodeCIDRMaskSizeIPv6)
	}
	// The IPv6 pod range bounds the nodes when it is the smallest.
	p := dualBase()
	p.PodCIDR, p.NodeCIDRMaskSizeIPv6 = StringList{"100.64.0.0/12", "fd12:3456:789a::/64"}, 72
	p.Subnets[0].Prefixes[0] = "172.16.0.0/20"
	if c := capacityOf(t, analyze(t, p), Overlay); deref(c.MaxNodes) != 256 || c.LimitedBy != "pod-cidr-ipv6" {
		t.Errorf("IPv6-bound capacity: %d by %s", deref(c.MaxNodes), c.LimitedBy)
	}
	// Dual-stack kubenet: two routes a node, so 500 nodes at Azure's 1,000
	// routes (a self-managed cluster: AKS would cap it at 400 nodes).
	p = dualBase()
	p.Plugins, p.Nodes, p.Platform = []Plugin{Kubenet}, 150, PlatformSelfManaged
	r = analyze(t, p)
	if c := capacityOf(t, r, Kubenet); deref(c.MaxNodes) != 500 || c.LimitedBy != "route-limit" || c.Routes != 302 {
		t.Errorf("dual-stack kubenet: max %d by %s, %d routes", deref(c.MaxNodes), c.LimitedBy, c.Routes)
	}
	if !hasFinding(r, RuleKubenetDualStack, finding.Warning) {
		t.Errorf("no kubenet-dual-stack warning: %+v", r.Findings)
	}
}

func TestParseSubnets(t *testing.T) {
	got := ParseSubnets([]string{"nodes=10.1.0.0/24", "fd00:1::/64", "appgw=10.1.1.0/26", "10.1.2.0/24", "10.1.3.0/24"})
	want := []Subnet{{Name: "nodes", Prefix: "10.1.0.0/24,fd00:1::/64"}, {Name: "appgw", Prefix: "10.1.1.0/26"}, {Prefix: "10.1.2.0/24"}, {Prefix: "10.1.3.0/24"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseSubnets (-want +got):\n%s", d)
	}
}

func TestCountJSON(t *testing.T) {
	for _, tt := range []struct {
		p    string
		json string
		text string
	}{
		{"10.0.0.0/8", "16777216", "16,777,216"},
		{"fd00::/75", "9007199254740992", "9,007,199,254,740,992"},
		{"fd00::/74", `"18014398509481984"`, "18,014,398,509,481,984"},
		{"fd00::/64", `"18446744073709551616"`, "2^64"},
		{"::/0", `"340282366920938463463374607431768211455"`, "340282366920938463463374607431768211455"},
	} {
		c := size(netip.MustParsePrefix(tt.p))
		b, err := json.Marshal(c)
		if err != nil || string(b) != tt.json || c.String() != tt.text {
			t.Errorf("%s: %s %v %q; want %s %q", tt.p, b, err, c, tt.json, tt.text)
		}
		var back Count
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s: round trip %v %v", tt.p, back, err)
		}
	}
}

// The picture puts IPv6 ranges on an axis of their own, after IPv4's.
func TestSVGDualStack(t *testing.T) {
	r := analyze(t, dualBase())
	regions := layoutRegions(r)
	seen6 := false
	for _, g := range regions {
		if seen6 && !g.v6 {
			t.Errorf("an IPv4 region after an IPv6 one")
		}
		seen6 = seen6 || g.v6
		for _, i := range g.lanes {
			if r.Ranges[i].Prefix.Addr().Is6() != g.v6 {
				t.Errorf("range %s on a region of the other family", r.Ranges[i].Prefix)
			}
		}
		for j := 1; j < len(g.xs); j++ {
			if g.xs[j] <= g.xs[j-1] {
				t.Errorf("axis not increasing: %v", g.xs)
			}
		}
	}
	if !seen6 {
		t.Fatal("no IPv6 region")
	}
	if texts, _ := svgTexts(t, SVG(r)); !strings.Contains(texts, "fd00:172:16::/64") || !strings.Contains(texts, "2^64") {
		t.Errorf("the IPv6 subnet is not drawn: %s", texts)
	}
}

func TestCheckOverlayTarget(t *testing.T) {
	p := netip.MustParsePrefix
	target := OverlayTarget{
		PodCIDRs:     []netip.Prefix{p("10.244.0.0/16")},
		ServiceCIDRs: []netip.Prefix{p("10.0.0.0/16")},
		DNSServiceIP: netip.MustParseAddr("10.0.0.10"),
		Nodes:        100,
		VNet:         []netip.Prefix{p("10.240.0.0/16")},
		NodeSubnets:  []NamedRange{{Name: "kubernetes-subnet", Prefixes: []netip.Prefix{p("10.240.0.0/24")}}},
		Peered:       []NamedRange{{Name: "hub-vnet", Prefixes: []netip.Prefix{p("10.250.0.0/16")}}},
		OnPrem:       []NamedRange{{Name: "hub-vpn", Prefixes: []netip.Prefix{p("10.244.128.0/17"), p("192.168.50.0/24")}}},
	}
	got, err := CheckOverlayTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	want := []OverlayConflict{{PodCIDR: p("10.244.0.0/16"), Kind: KindOnPrem, Name: "hub-vpn", Prefix: p("10.244.128.0/17"), Shared: p("10.244.128.0/17")}}
	if d := cmp.Diff(want, got.Conflicts, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("conflicts (-want +got):\n%s", d)
	}
	if got.OK() || got.Capacity.Plugin != Overlay || deref(got.Capacity.MaxNodes) != 251 {
		t.Errorf("OK %v, capacity %+v", got.OK(), got.Capacity)
	}

	// A dual-stack target clear of everything, without the service range
	// (not checked then), and a target peered over.
	target.PodCIDRs = []netip.Prefix{p("100.64.0.0/14"), p("fd12:3456:789a::/64")}
	target.ServiceCIDRs, target.DNSServiceIP = nil, netip.Addr{}
	target.VNet = append(target.VNet, p("fd00:10:240::/48"))
	target.NodeSubnets[0].Prefixes = append(target.NodeSubnets[0].Prefixes, p("fd00:10:240::/64"))
	got, err = CheckOverlayTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Conflicts) != 0 || !got.OK() || got.Capacity.IPv6 == nil {
		t.Errorf("clear target: conflicts %+v, findings %+v", got.Conflicts, got.Findings)
	}
	target.PodCIDRs = []netip.Prefix{p("10.250.128.0/17")}
	got, _ = CheckOverlayTarget(target)
	if len(got.Conflicts) != 1 || got.Conflicts[0].Kind != KindPeered || got.Conflicts[0].Name != "hub-vnet" {
		t.Errorf("peered conflict: %+v", got.Conflicts)
	}
	if _, err := CheckOverlayTarget(OverlayTarget{}); err == nil {
		t.Error("no pod CIDR accepted")
	}
	// A service range without its DNS service IP: the range is checked,
	// the DNS IP (unknown, not AKS's default 10.0.0.10) is not.
	got, _ = CheckOverlayTarget(OverlayTarget{PodCIDRs: []netip.Prefix{p("192.168.0.0/16")}, ServiceCIDRs: []netip.Prefix{p("10.32.0.0/24")},
		VNet: []netip.Prefix{p("10.240.0.0/16")}, NodeSubnets: []NamedRange{{Name: "nodes", Prefixes: []netip.Prefix{p("10.240.0.0/24")}}}})
	if !got.OK() {
		t.Errorf("no DNS service IP given: findings %+v", got.Findings)
	}
	got, _ = CheckOverlayTarget(OverlayTarget{PodCIDRs: []netip.Prefix{p("10.32.0.0/16")}, ServiceCIDRs: []netip.Prefix{p("10.32.0.0/24")},
		VNet: []netip.Prefix{p("10.240.0.0/16")}, NodeSubnets: []NamedRange{{Name: "nodes", Prefixes: []netip.Prefix{p("10.240.0.0/24")}}}})
	if len(got.Conflicts) != 1 || got.Conflicts[0].Kind != KindService {
		t.Errorf("the service range overlapping the pod CIDR: conflicts %+v", got.Conflicts)
	}
}
