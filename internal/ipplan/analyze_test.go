package ipplan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/routekeeper/routekeeper/internal/finding"
)

func intp(n int) *int { return &n }

func capacityOf(t *testing.T, r Report, pl Plugin) PluginCapacity {
	t.Helper()
	for _, c := range r.Capacity {
		if c.Plugin == pl {
			return c
		}
	}
	t.Fatalf("no capacity for %s in %+v", pl, r.Capacity)
	return PluginCapacity{}
}

func analyze(t *testing.T, p Plan) Report {
	t.Helper()
	r, err := Analyze(p)
	if err != nil {
		t.Fatalf("Analyze(%+v): %v", p, err)
	}
	return r
}

func deref(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

// The AKS kubenet article's /24 subnet ("Use kubenet networking with your
// own IP address ranges": VNet 192.168.0.0/16, myAKSSubnet 192.168.1.0/24)
// holds 251 kubenet nodes (27,610 pods at 110) but only 8 Azure CNI nodes
// (240 pods at 30).
func TestCapacityKubenetArticleSubnet(t *testing.T) {
	r := analyze(t, Plan{VNet: StringList{"192.168.0.0/16"}, Subnets: []Subnet{{Name: "myAKSSubnet", Prefix: "192.168.1.0/24"}}})
	tests := []struct {
		plugin            Plugin
		perNode           int
		maxNodes, maxPods int64
		limitedBy         string
	}{
		{Kubenet, 110, 251, 27_610, "subnet"},
		{AzureCNI, 30, 8, 240, "subnet"},
		{Overlay, 250, 251, 62_750, "subnet"},
	}
	for _, tt := range tests {
		t.Run(string(tt.plugin), func(t *testing.T) {
			c := capacityOf(t, r, tt.plugin)
			if c.MaxPodsPerNode != tt.perNode || deref(c.MaxNodes) != tt.maxNodes || deref(c.MaxPods) != tt.maxPods || c.LimitedBy != tt.limitedBy {
				t.Errorf("got pods/node %d, max nodes %d, max pods %d, limited by %q; want %d, %d, %d, %q",
					c.MaxPodsPerNode, deref(c.MaxNodes), deref(c.MaxPods), c.LimitedBy, tt.perNode, tt.maxNodes, tt.maxPods, tt.limitedBy)
			}
		})
	}
	if n := r.Errors(); n != 0 {
		t.Errorf("the kubenet article's plan has %d errors: %+v", n, r.Findings)
	}
}

// Microsoft's worked example: 50 nodes + 1 surge at 30 pods under Azure CNI
// need 51 + 51×30 = 1,581 addresses: a /21.
func TestMicrosoftWorkedExample(t *testing.T) {
	r := analyze(t, Plan{Nodes: 50, MaxPods: intp(30), Plugins: []Plugin{AzureCNI}})
	c := capacityOf(t, r, AzureCNI)
	if c.NodesWithSurge != 51 || c.AddressesConsumed != 1581 || c.SmallestSubnetPrefix != 21 {
		t.Errorf("got %d nodes with surge, %d addresses, /%d; want 51, 1581, /21", c.NodesWithSurge, c.AddressesConsumed, c.SmallestSubnetPrefix)
	}
	// A /22 (1,019 usable) is too small, a /21 (2,043 usable) fits.
	for _, tt := range []struct {
		subnet string
		fits   bool
	}{{"10.1.0.0/22", false}, {"10.1.0.0/21", true}} {
		r := analyze(t, Plan{Nodes: 50, MaxPods: intp(30), Plugins: []Plugin{AzureCNI}, Subnets: []Subnet{{Prefix: tt.subnet}}})
		c := capacityOf(t, r, AzureCNI)
		if c.Fits == nil || *c.Fits != tt.fits {
			t.Errorf("%s: fits = %v, want %v", tt.subnet, c.Fits, tt.fits)
		}
		if got := hasFinding(r, RuleSubnetTooSmall, finding.Error); got == tt.fits {
			t.Errorf("%s: subnet-too-small error = %v, want %v", tt.subnet, got, !tt.fits)
		}
	}
}

func TestCapacityFormulas(t *testing.T) {
	tests := []struct {
		name      string
		plan      Plan
		plugin    Plugin
		maxNodes  int64 // -1: unbounded
		limitedBy string
		maxPods   int64
	}{
		{"kubenet /27 subnet", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/27"}}}, Kubenet, 27, "subnet", 27 * 110},
		{"kubenet bounded by the /16 pod CIDR", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}}, Kubenet, 256, "pod-cidr", 256 * 110},
		{"AKS: kubenet bounded by AKS's 400 nodes, not the table", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}, PodCIDR: StringList{"10.240.0.0/14"}}, Kubenet, 400, "aks-kubenet", 400 * 110},
		{"self-managed: kubenet bounded by Azure's 1,000 routes per table", Plan{Platform: PlatformSelfManaged, Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}, PodCIDR: StringList{"10.240.0.0/14"}}, Kubenet, 1000, "route-limit", 1000 * 110},
		{"an older subscription's 400 routes bind before AKS's 400 nodes", Plan{RouteLimit: 400, Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}, PodCIDR: StringList{"10.240.0.0/14"}}, Kubenet, 400, "route-limit", 400 * 110},
		{"kubenet with a lower route limit", Plan{RouteLimit: 100}, Kubenet, 100, "route-limit", 100 * 110},
		{"kubenet /23 node ranges", Plan{NodeCIDRMaskSize: 23, Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}}, Kubenet, 128, "pod-cidr", 128 * 110},
		{"overlay ignores the route limit", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}, PodCIDR: StringList{"10.240.0.0/12"}}, Overlay, 4091, "subnet", 4091 * 250},
		{"overlay without subnet: pod CIDR", Plan{}, Overlay, 256, "pod-cidr", 256 * 250},
		{"azure without subnet is unbounded", Plan{}, AzureCNI, -1, "", -1},
		{"azure /20 at 110 pods", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/20"}}, MaxPods: intp(110)}, AzureCNI, 4091 / 111, "subnet", 4091 / 111 * 110},
		{"azure /29 holds no node", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/29"}}}, AzureCNI, 0, "subnet", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := capacityOf(t, analyze(t, tt.plan), tt.plugin)
			if deref(c.MaxNodes) != tt.maxNodes || c.LimitedBy != tt.limitedBy || deref(c.MaxPods) != tt.maxPods {
				t.Errorf("got max nodes %d (%q), max pods %d; want %d (%q), %d",
					deref(c.MaxNodes), c.LimitedBy, deref(c.MaxPods), tt.maxNodes, tt.limitedBy, tt.maxPods)
			}
		})
	}
}

func TestRequestedNodes(t *testing.T) {
	// 399 nodes + 1 surge = 400 node ranges: a /15 pod CIDR, 400 routes (at the limit).
	r := analyze(t, Plan{Nodes: 399, PodCIDR: StringList{"10.244.0.0/15"}, Plugins: []Plugin{Kubenet}})
	c := capacityOf(t, r, Kubenet)
	if c.NodesWithSurge != 400 || c.Routes != 400 || c.SmallestPodCIDRPrefix != 15 || c.PodCIDRAddressesConsumed != 400*256 ||
		c.AddressesConsumed != 400 || c.SmallestSubnetPrefix != 23 || c.Fits == nil || !*c.Fits {
		t.Errorf("got %+v", c)
	}
	if r.Errors() != 0 {
		t.Errorf("want no errors, got %+v", r.Findings)
	}
	// Surge as a percentage is rounded up: 33% of 10 nodes is 4.
	r = analyze(t, Plan{Nodes: 10, Surge: "33%"})
	if r.Surge != 4 || capacityOf(t, r, Overlay).NodesWithSurge != 14 {
		t.Errorf("surge 33%% of 10: got %d", r.Surge)
	}
	r = analyze(t, Plan{Nodes: 10, Surge: "0"})
	if r.Surge != 0 || !hasFinding(r, RuleNoSurge, finding.Warning) {
		t.Errorf("surge 0: got %d and %+v", r.Surge, r.Findings)
	}
}

func TestSmallestSubnet(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want int
	}{{1, 29}, {3, 29}, {4, 28}, {11, 28}, {12, 27}, {251, 24}, {252, 23}, {1581, 21}, {2043, 21}, {2044, 20}} {
		if got := smallestSubnet(tt.n); got != tt.want {
			t.Errorf("smallestSubnet(%d) = /%d, want /%d", tt.n, got, tt.want)
		}
	}
}

func hasFinding(r Report, rule string, sev finding.Severity) bool {
	return slices.ContainsFunc(r.Findings, func(f finding.Finding) bool { return f.Rule == rule && f.Severity == sev })
}

// goodBase is a sound kubenet plan; bad plans change one thing in it.
func goodBase() Plan {
	return Plan{
		VNet:         StringList{"172.16.0.0/16"},
		Subnets:      []Subnet{{Name: "nodes", Prefix: "172.16.0.0/24"}, {Name: "appgw", Prefix: "172.16.1.0/27"}},
		PodCIDR:      StringList{"10.244.0.0/16"},
		ServiceCIDR:  StringList{"10.0.0.0/16"},
		DNSServiceIP: "10.0.0.10",
		Nodes:        20,
		OnPrem:       StringList{"192.168.0.0/16"},
		Plugins:      []Plugin{Kubenet},
	}
}

func TestBadPlans(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*Plan)
		rule     string
		severity finding.Severity
		plugins  []Plugin // the finding's plugins; nil: plan-wide
	}{
		{"VNet in an AKS-reserved range", func(p *Plan) {
			p.VNet = StringList{"172.31.0.0/16"}
			p.Subnets = []Subnet{{Prefix: "172.31.0.0/24"}}
		}, RuleForbiddenRange, finding.Error, nil},
		{"pod CIDR in link-local", func(p *Plan) { p.PodCIDR = StringList{"169.254.0.0/16"} }, RuleForbiddenRange, finding.Error, nil},
		{"service CIDR over the documentation range", func(p *Plan) {
			p.ServiceCIDR = StringList{"192.0.0.0/16"}
			p.DNSServiceIP = "192.0.0.10"
		}, RuleForbiddenRange, finding.Error, nil},
		{"service CIDR in 172.30/16", func(p *Plan) {
			p.ServiceCIDR = StringList{"172.30.0.0/16"}
			p.DNSServiceIP = "172.30.0.10"
		}, RuleForbiddenRange, finding.Error, nil},
		{"subnet without VNet over Azure's platform address", func(p *Plan) {
			p.VNet = nil
			p.Subnets = []Subnet{{Prefix: "168.63.129.0/24"}}
		}, RuleForbiddenRange, finding.Error, nil},
		{"public pod CIDR", func(p *Plan) { p.PodCIDR = StringList{"20.0.0.0/16"} }, RuleNonPrivateRange, finding.Warning, nil},
		{"pod CIDR overlaps the VNet", func(p *Plan) { p.PodCIDR = StringList{"172.16.0.0/16"} }, RuleOverlap, finding.Error, nil},
		{"pod CIDR overlaps the service CIDR", func(p *Plan) { p.PodCIDR = StringList{"10.0.0.0/16"} }, RuleOverlap, finding.Error, nil},
		{"pod CIDR overlaps on-premises 10/8", func(p *Plan) { p.OnPrem = StringList{"10.0.0.0/8"} }, RuleOverlap, finding.Error, nil},
		{"service CIDR overlaps the VNet", func(p *Plan) {
			p.ServiceCIDR = StringList{"172.16.128.0/17"}
			p.DNSServiceIP = "172.16.128.10"
		}, RuleOverlap, finding.Error, nil},
		{"VNet overlaps a peered VNet", func(p *Plan) { p.OnPrem = StringList{"172.16.0.0/12"} }, RuleOverlap, finding.Error, nil},
		{"subnets overlap", func(p *Plan) { p.Subnets[1].Prefix = "172.16.0.128/27" }, RuleOverlap, finding.Error, nil},
		{"VNet prefixes overlap", func(p *Plan) { p.VNet = StringList{"172.16.0.0/16", "172.16.0.0/12"} }, RuleOverlap, finding.Error, nil},
		{"subnet outside the VNet", func(p *Plan) { p.Subnets[1].Prefix = "172.17.0.0/24" }, RuleSubnetOutsideVNet, finding.Error, nil},
		{"subnet smaller than /29", func(p *Plan) { p.Subnets[1].Prefix = "172.16.1.0/30" }, RuleSubnetTooSmall, finding.Error, nil},
		{"service CIDR /12", func(p *Plan) {
			p.ServiceCIDR = StringList{"10.16.0.0/12"}
			p.DNSServiceIP = "10.16.0.10"
		}, RuleServiceCIDRTooLarge, finding.Error, nil},
		{"DNS IP outside the service CIDR", func(p *Plan) { p.DNSServiceIP = "10.1.0.10" }, RuleDNSIPOutsideServiceCIDR, finding.Error, nil},
		{"DNS IP is the network address", func(p *Plan) { p.DNSServiceIP = "10.0.0.0" }, RuleDNSIPReserved, finding.Error, nil},
		{"DNS IP is the API server's .1", func(p *Plan) { p.DNSServiceIP = "10.0.0.1" }, RuleDNSIPReserved, finding.Error, nil},
		{"DNS IP is the broadcast address", func(p *Plan) { p.DNSServiceIP = "10.0.255.255" }, RuleDNSIPReserved, finding.Error, nil},
		{"DNS IP not .10", func(p *Plan) { p.DNSServiceIP = "10.0.0.53" }, RuleDNSIPNotTenth, finding.Info, nil},

		{"pod CIDR too small for the nodes", func(p *Plan) { p.PodCIDR = StringList{"10.244.0.0/20"} }, RulePodCIDRTooSmall, finding.Error, []Plugin{Kubenet}},
		{"pod CIDR too small for the surge only", func(p *Plan) {
			p.PodCIDR = StringList{"10.244.0.0/20"}
			p.Nodes = 16
		}, RulePodCIDRTooSmall, finding.Error, []Plugin{Kubenet}},
		{"pod CIDR longer than a node range", func(p *Plan) { p.PodCIDR = StringList{"10.244.0.0/25"} }, RulePodCIDRTooSmall, finding.Error, []Plugin{Kubenet}},
		{"more nodes than routes", func(p *Plan) {
			p.Subnets[0].Prefix = "172.16.0.0/20"
			p.Subnets[1].Prefix = "172.16.16.0/27"
			p.PodCIDR = StringList{"10.240.0.0/13"}
			p.Nodes, p.Platform = 1100, PlatformSelfManaged
		}, RuleRouteLimit, finding.Error, []Plugin{Kubenet}},
		{"the surge node breaks the route limit", func(p *Plan) {
			p.Subnets[0].Prefix = "172.16.0.0/20"
			p.Subnets[1].Prefix = "172.16.16.0/27"
			p.PodCIDR = StringList{"10.240.0.0/13"}
			p.Nodes, p.Platform = 1000, PlatformSelfManaged
		}, RuleRouteLimit, finding.Error, []Plugin{Kubenet}},
		{"AKS: more kubenet nodes than AKS supports, though the table holds them", func(p *Plan) {
			p.Subnets[0].Prefix = "172.16.0.0/22"
			p.Subnets[1].Prefix = "172.16.4.0/27"
			p.PodCIDR = StringList{"10.244.0.0/14"}
			p.Nodes = 450
		}, RuleAKSKubenetNodes, finding.Error, []Plugin{Kubenet}},
		{"the surge node breaks AKS's 400 kubenet nodes", func(p *Plan) {
			p.Subnets[0].Prefix = "172.16.0.0/22"
			p.Subnets[1].Prefix = "172.16.4.0/27"
			p.PodCIDR = StringList{"10.244.0.0/14"}
			p.Nodes = 400
		}, RuleAKSKubenetNodes, finding.Error, []Plugin{Kubenet}},
		{"max pods above 250", func(p *Plan) { p.MaxPods = intp(251) }, RuleMaxPodsRange, finding.Error, nil},
		{"max pods below 10", func(p *Plan) { p.MaxPods = intp(9) }, RuleMaxPodsRange, finding.Error, nil},
		{"max pods do not fit a /26 node range", func(p *Plan) { p.NodeCIDRMaskSize = 26 }, RuleNodeCIDRTooSmall, finding.Error, []Plugin{Kubenet}},
		{"pool below 30 pods", func(p *Plan) {
			p.Nodes = 2
			p.MaxPods = intp(10)
		}, RulePoolPodMinimum, finding.Warning, []Plugin{Kubenet}},
		{"node subnet too small for nodes + surge", func(p *Plan) { p.Nodes = 251 }, RuleSubnetTooSmall, finding.Error, []Plugin{Kubenet}},
		{"node subnet too small under Azure CNI", func(p *Plan) { p.Plugins = []Plugin{AzureCNI} }, RuleSubnetTooSmall, finding.Error, []Plugin{AzureCNI}},
		{"no surge", func(p *Plan) { p.Surge = "0" }, RuleNoSurge, finding.Warning, nil},
		{"no node count", func(p *Plan) { p.Nodes = 0 }, RuleNodesNotGiven, finding.Info, nil},
		{"no subnet", func(p *Plan) { p.Subnets = nil }, RuleNoNodeSubnet, finding.Info, nil},
		{"pod CIDR with Azure CNI", func(p *Plan) {
			p.Plugins = []Plugin{AzureCNI}
			p.Nodes = 5
		}, RulePodCIDRUnused, finding.Info, []Plugin{AzureCNI}},
		// Without --plugin, a plugin-specific error is a warning.
		{"compare mode: Azure CNI does not fit", func(p *Plan) { p.Plugins = nil }, RuleSubnetTooSmall, finding.Warning, []Plugin{AzureCNI}},
		{"compare mode: pod CIDR too small", func(p *Plan) {
			p.Plugins = nil
			p.PodCIDR = StringList{"10.244.0.0/20"}
		}, RulePodCIDRTooSmall, finding.Warning, []Plugin{Kubenet, Overlay}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodBase()
			tt.change(&p)
			r := analyze(t, p)
			i := slices.IndexFunc(r.Findings, func(f finding.Finding) bool { return f.Rule == tt.rule })
			if i < 0 {
				t.Fatalf("no %s finding; got %+v", tt.rule, r.Findings)
			}
			f := r.Findings[i]
			if f.Severity != tt.severity || !slices.Equal(pluginsOf(f), tt.plugins) {
				t.Errorf("got %s %v, want %s %v: %s", f.Severity, pluginsOf(f), tt.severity, tt.plugins, f.Message)
			}
			if f.Message == "" {
				t.Errorf("finding without a message: %+v", f)
			}
			if (tt.severity == finding.Error) != (r.Errors() > 0) {
				t.Errorf("Errors() = %d with a %s finding", r.Errors(), tt.severity)
			}
		})
	}
}

func TestGoodPlans(t *testing.T) {
	tests := []struct {
		name string
		plan Plan
	}{
		{"kubenet base", goodBase()},
		{"the kubenet article's /24 with its 3 nodes", Plan{VNet: StringList{"192.168.0.0/16"}, Subnets: []Subnet{{Prefix: "192.168.1.0/24"}}, Nodes: 3}},
		{"azure CNI in a /21", Plan{VNet: StringList{"10.1.0.0/16"}, Subnets: []Subnet{{Prefix: "10.1.0.0/21"}}, ServiceCIDR: StringList{"10.2.0.0/16"},
			DNSServiceIP: "10.2.0.10", Nodes: 50, MaxPods: intp(30), Plugins: []Plugin{AzureCNI}}},
		{"overlay 1000 nodes", Plan{VNet: StringList{"10.1.0.0/16"}, Subnets: []Subnet{{Prefix: "10.1.0.0/21"}}, PodCIDR: StringList{"100.64.0.0/13"},
			ServiceCIDR: StringList{"10.2.0.0/16"}, DNSServiceIP: "10.2.0.10", Nodes: 1000, Surge: "10%", Plugins: []Plugin{Overlay}}},
		{"two VNet prefixes, subnet in the second", Plan{VNet: StringList{"172.16.0.0/16", "172.17.0.0/16"},
			Subnets: []Subnet{{Prefix: "172.17.0.0/24"}}, Nodes: 10, Plugins: []Plugin{Kubenet, Overlay}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := analyze(t, tt.plan)
			if len(r.Findings) != 0 || len(r.Overlaps) != 0 {
				t.Errorf("want no findings, got %+v", r.Findings)
			}
			for _, c := range r.Capacity {
				if c.Fits == nil || !*c.Fits {
					t.Errorf("%s does not fit: %+v", c.Plugin, c)
				}
			}
		})
	}
}

// A subnet inside a VNet that overlaps a range is not reported twice.
func TestOverlapNotRepeatedForSubnets(t *testing.T) {
	p := goodBase()
	p.OnPrem = StringList{"172.16.0.0/12"}
	r := analyze(t, p)
	var n int
	for _, f := range r.Findings {
		if f.Rule == RuleOverlap {
			n++
			if !strings.Contains(f.Message, "vnet 172.16.0.0/16") {
				t.Errorf("overlap not about the VNet: %s", f.Message)
			}
		}
	}
	if n != 1 || len(r.Overlaps) != 1 {
		t.Errorf("want 1 overlap, got %d findings and %+v", n, r.Overlaps)
	}
	o := r.Overlaps[0]
	if r.Ranges[o.A].Kind != KindVNet || r.Ranges[o.B].Kind != KindOnPrem || o.Prefix.String() != "172.16.0.0/16" {
		t.Errorf("overlap = %+v", o)
	}
}

// A service range too small to have a .10 gets no ".10 by convention" remark.
func TestDNSInSmallServiceRange(t *testing.T) {
	p := goodBase()
	p.ServiceCIDR = StringList{"10.0.0.0/29"}
	p.DNSServiceIP = "10.0.0.5"
	for _, f := range analyze(t, p).Findings {
		if strings.HasPrefix(f.Rule, "dns-") {
			t.Errorf("unexpected %s: %s", f.Rule, f.Message)
		}
	}
	p.ServiceCIDR = StringList{"10.0.0.0/28"}
	if !hasFinding(analyze(t, p), RuleDNSIPNotTenth, finding.Info) {
		t.Error("a /28 has a .10; want the remark")
	}
}

func TestFindingsSortedBySeverity(t *testing.T) {
	p := goodBase()
	p.DNSServiceIP = "10.0.0.53"          // info
	p.Surge = "0"                         // warning
	p.PodCIDR = StringList{"10.0.0.0/16"} // error
	r := analyze(t, p)
	last := -1
	for _, f := range r.Findings {
		if f.Severity.Rank() < last {
			t.Fatalf("findings not sorted by severity: %+v", r.Findings)
		}
		last = f.Severity.Rank()
	}
}

func TestInvalidInput(t *testing.T) {
	tests := []struct {
		name   string
		plan   Plan
		path   string
		reason string
	}{
		{"bad CIDR", Plan{PodCIDR: StringList{"10.244.0.0/33"}}, "podCIDR", "not a CIDR"},
		{"host bits", Plan{ServiceCIDR: StringList{"10.0.0.1/16"}}, "serviceCIDR", "did you mean 10.0.0.0/16"},
		{"address without length", Plan{VNet: StringList{"10.0.0.0"}}, "vnet[0]", "no prefix length"},
		{"two IPv4 pod CIDRs", Plan{PodCIDR: StringList{"10.244.0.0/16,10.245.0.0/16"}}, "podCIDR[1]", "second IPv4 range (also 10.244.0.0/16)"},
		{"two IPv6 service CIDRs", Plan{ServiceCIDR: StringList{"10.0.0.0/16", "fd00::/108", "fd01::/108"}}, "serviceCIDR[2]", "second IPv6 range"},
		{"two IPv6 subnet prefixes", Plan{Subnets: []Subnet{{Name: "a", Prefix: "fd00::/64,fd00:1::/64"}}}, "subnets[0].prefix", "same IP family"},
		{"prefix and prefixes", Plan{Subnets: []Subnet{{Name: "a", Prefix: "10.1.0.0/24", Prefixes: []string{"fd00::/64"}}}}, "subnets[0].prefixes", "not both"},
		{"IPv6 node mask", Plan{NodeCIDRMaskSizeIPv6: 121}, "nodeCIDRMaskSizeIPv6", "between 64 and 120"},
		{"DNS not an address", Plan{DNSServiceIP: "10.0.0.300"}, "dnsServiceIP", "not an IP address"},
		{"DNS with a zone", Plan{DNSServiceIP: "fe80::10%eth0"}, "dnsServiceIP", "zone"},
		{"subnet prefix", Plan{Subnets: []Subnet{{Prefix: "10.1.0.0/24"}, {Name: "b", Prefix: "banana"}}}, "subnets[1].prefix", "not a CIDR"},
		{"empty subnet", Plan{Subnets: []Subnet{{Name: "a"}}}, "subnets[0].prefix", "empty"},
		{"duplicate subnet names", Plan{Subnets: []Subnet{{Name: "a", Prefix: "10.1.0.0/24"}, {Name: "a", Prefix: "10.1.1.0/24"}}}, "subnets[1].name", "twice"},
		{"on-prem", Plan{OnPrem: StringList{"10.0.0.0/8", "x"}}, "onPrem[1]", "not a CIDR"},
		{"negative nodes", Plan{Nodes: -1}, "nodes", "between"},
		{"zero max pods", Plan{MaxPods: intp(0)}, "maxPods", "positive"},
		{"surge word", Plan{Surge: "one"}, "surge", "percentage"},
		{"surge percent", Plan{Surge: "150%"}, "surge", "between 1% and 100%"},
		{"negative surge", Plan{Surge: "-1"}, "surge", "negative"},
		{"plugin", Plan{Plugins: []Plugin{"calico"}}, "plugins[0]", "kubenet, azure, overlay"},
		{"route limit", Plan{RouteLimit: -5}, "routeLimit", "positive"},
		{"platform", Plan{Platform: "gke"}, "platform", "aks, self-managed"},
		{"node mask", Plan{NodeCIDRMaskSize: 31}, "nodeCIDRMaskSize", "between 8 and 30"},
		{"ARM ID as a subnet", Plan{Subnets: []Subnet{{Prefix: "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/n"}}},
			"subnets[0].prefix", "ARM resource ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyze(tt.plan)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FieldError, got %v", err)
			}
			if fe.Path() != tt.path || !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("got %s: %s; want %s: …%s…", fe.Path(), fe.Reason, tt.path, tt.reason)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %s", err, tt.path)
			}
			if err := tt.plan.Validate(); err == nil {
				t.Errorf("Validate accepted it")
			}
		})
	}
}

func TestPlanFileFormat(t *testing.T) {
	src := `
vnet: 192.168.0.0/16
subnets:
  - name: myAKSSubnet
    prefix: 192.168.1.0/24
podCIDR: 10.244.0.0/16
nodes: 50
maxPods: 30
surge: 33%
onPrem: [10.0.0.0/8]
plugins: [kubenet, overlay]
`
	var p Plan
	if err := yaml.UnmarshalStrict([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.VNet, StringList{"192.168.0.0/16"}) || p.Subnets[0].Name != "myAKSSubnet" || *p.MaxPods != 30 ||
		p.Surge != "33%" || !slices.Equal(p.OnPrem, StringList{"10.0.0.0/8"}) || len(p.Plugins) != 2 {
		t.Errorf("got %+v", p)
	}
	var q Plan
	if err := yaml.UnmarshalStrict([]byte("surge: 2\nvnet: [10.0.0.0/16, 10.1.0.0/16]\n"), &q); err != nil {
		t.Fatal(err)
	}
	if q.Surge != "2" || len(q.VNet) != 2 {
		t.Errorf("got %+v", q)
	}
	if err := yaml.UnmarshalStrict([]byte("podRange: 10.0.0.0/16\n"), &q); err == nil {
		t.Error("a misspelt field was accepted")
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 27610: "27,610", 16777216: "16,777,216", -1581: "-1,581"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	p := goodBase()
	p.Plugins = nil
	p.OnPrem = StringList{"10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"}
	for b.Loop() {
		if _, err := Analyze(p); err != nil {
			b.Fatal(err)
		}
	}
}

// pluginsOf are the plugins a finding is about.
func pluginsOf(f finding.Finding) []Plugin {
	var out []Plugin
	if f.Evidence != nil {
		for _, p := range f.Evidence.Plugins {
			out = append(out, Plugin(p))
		}
	}
	return out
}
