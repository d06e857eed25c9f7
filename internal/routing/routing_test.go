package routing

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/route"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

func udr(name, prefix string, hop route.NextHopType, ip string) route.Route {
	r := route.Route{Name: name, AddressPrefix: prefix, Prefix: pfx(prefix), NextHopType: hop}
	if ip != "" {
		r.NextHopIP = addr(ip)
	}
	return r
}

// docExample is the worked example of Azure's "Virtual network traffic
// routing" documentation: Subnet1 of VNet1 (10.0.0.0/16), VNet1 peered with
// VNet2 (10.1.0.0/16 and 10.2.0.0/16), a VPN gateway that learned
// 10.10.0.0/16 on premises, and Subnet1's route table sending most traffic
// through the appliance at 10.0.100.4.
var (
	docNetwork = Network{
		AddressSpace: []netip.Prefix{pfx("10.0.0.0/16")},
		Peerings:     []netip.Prefix{pfx("10.1.0.0/16"), pfx("10.2.0.0/16")},
		Gateway:      []netip.Prefix{pfx("10.10.0.0/16")},
	}
	docUDRs = []route.Route{
		udr("Within-VNet1", "10.0.0.0/16", route.VirtualAppliance, "10.0.100.4"),
		udr("Within-Subnet1", "10.0.0.0/24", route.VnetLocal, ""),
		udr("ToVNet2-1-Drop", "10.1.0.0/16", route.None, ""),
		udr("ToVNet2-2-Drop", "10.2.0.0/16", route.None, ""),
		udr("To-On-Prem", "10.10.0.0/16", route.VirtualAppliance, "10.0.100.4"),
		udr("Default-NVA", "0.0.0.0/0", route.VirtualAppliance, "10.0.100.4"),
	}
)

func TestEffectiveDocExample(t *testing.T) {
	got := Effective(docNetwork, docUDRs)
	// The documentation's table of Subnet1's routes (without the service
	// endpoint route, which is not modelled), plus the None routes of the
	// private ranges VNet1 does not cover, which Azure lists too: Invalid,
	// because Default-NVA replaces 0.0.0.0/0.
	want := []Route{
		{Source: "Default", State: "Invalid", Prefix: pfx("10.0.0.0/16"), NextHopType: VnetLocal},
		{Source: "Default", State: "Invalid", Prefix: pfx("10.1.0.0/16"), NextHopType: VNetPeering},
		{Source: "Default", State: "Invalid", Prefix: pfx("10.2.0.0/16"), NextHopType: VNetPeering},
		{Source: "Default", State: "Invalid", Prefix: pfx("0.0.0.0/0"), NextHopType: Internet},
		{Source: "Default", State: "Invalid", Prefix: pfx("10.0.0.0/8"), NextHopType: None},
		{Source: "Default", State: "Invalid", Prefix: pfx("172.16.0.0/12"), NextHopType: None},
		{Source: "Default", State: "Invalid", Prefix: pfx("192.168.0.0/16"), NextHopType: None},
		{Source: "Default", State: "Invalid", Prefix: pfx("100.64.0.0/10"), NextHopType: None},
		{Source: "VirtualNetworkGateway", State: "Invalid", Prefix: pfx("10.10.0.0/16"), NextHopType: VirtualNetworkGateway},
		{Name: "Within-VNet1", Source: "User", State: "Active", Prefix: pfx("10.0.0.0/16"), NextHopType: VirtualAppliance, NextHopIP: addr("10.0.100.4")},
		{Name: "Within-Subnet1", Source: "User", State: "Active", Prefix: pfx("10.0.0.0/24"), NextHopType: VnetLocal},
		{Name: "ToVNet2-1-Drop", Source: "User", State: "Active", Prefix: pfx("10.1.0.0/16"), NextHopType: None},
		{Name: "ToVNet2-2-Drop", Source: "User", State: "Active", Prefix: pfx("10.2.0.0/16"), NextHopType: None},
		{Name: "To-On-Prem", Source: "User", State: "Active", Prefix: pfx("10.10.0.0/16"), NextHopType: VirtualAppliance, NextHopIP: addr("10.0.100.4")},
		{Name: "Default-NVA", Source: "User", State: "Active", Prefix: pfx("0.0.0.0/0"), NextHopType: VirtualAppliance, NextHopIP: addr("10.0.100.4")},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("Effective (-want +got):\n%s", d)
	}
}

func TestLookup(t *testing.T) {
	kthw := Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}}
	kthwUDRs := []route.Route{
		udr("worker-0____102000024", "10.200.0.0/24", route.VirtualAppliance, "10.240.0.20"),
		udr("worker-1____102001024", "10.200.1.0/24", route.VirtualAppliance, "10.240.0.21"),
	}
	dual := Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16"), pfx("fd00:10:240::/48")}}
	dualUDRs := append(kthwUDRs, udr("worker-1____fd00102001164", "fd00:10:200:1::/64", route.VirtualAppliance, "fd00:10:240::21"))
	// The documentation's rule for overlapping prefixes: with 10.0.0.0/16
	// (virtual network) and 10.0.0.0/24 (virtual network gateway), 10.0.0.5
	// goes to the gateway and 10.0.1.5 stays in the virtual network.
	overlap := []route.Route{udr("to-gw", "10.0.0.0/24", route.VirtualNetworkGateway, "")}

	tests := []struct {
		name    string
		n       Network
		udrs    []route.Route
		dst     string
		want    NextHopType
		wantIP  string
		wantSrc string
		wantPfx string
		noRoute bool
	}{
		// The documentation's worked example.
		{name: "doc: own subnet stays local", n: docNetwork, udrs: docUDRs, dst: "10.0.0.9", want: VnetLocal, wantSrc: "User", wantPfx: "10.0.0.0/24"},
		{name: "doc: rest of VNet1 through the NVA", n: docNetwork, udrs: docUDRs, dst: "10.0.5.9", want: VirtualAppliance, wantIP: "10.0.100.4", wantSrc: "User", wantPfx: "10.0.0.0/16"},
		{name: "doc: peered VNet2 dropped", n: docNetwork, udrs: docUDRs, dst: "10.1.3.4", want: None, wantSrc: "User", wantPfx: "10.1.0.0/16"},
		{name: "doc: VNet2 second range dropped", n: docNetwork, udrs: docUDRs, dst: "10.2.3.4", want: None, wantSrc: "User", wantPfx: "10.2.0.0/16"},
		{name: "doc: on premises through the NVA, not the gateway", n: docNetwork, udrs: docUDRs, dst: "10.10.1.1", want: VirtualAppliance, wantIP: "10.0.100.4", wantSrc: "User", wantPfx: "10.10.0.0/16"},
		{name: "doc: Internet through the NVA", n: docNetwork, udrs: docUDRs, dst: "8.8.8.8", want: VirtualAppliance, wantIP: "10.0.100.4", wantSrc: "User", wantPfx: "0.0.0.0/0"},
		{name: "doc: other private range through the NVA (0/0 UDR replaces the None routes)", n: docNetwork, udrs: docUDRs, dst: "192.168.1.1", want: VirtualAppliance, wantIP: "10.0.100.4", wantSrc: "User", wantPfx: "0.0.0.0/0"},
		{name: "doc: other private range dropped without the UDRs", n: docNetwork, dst: "192.168.1.1", want: None, wantSrc: "Default", wantPfx: "192.168.0.0/16"},
		{name: "doc: gateway route wins without the UDR", n: docNetwork, dst: "10.10.1.1", want: VirtualNetworkGateway, wantSrc: "VirtualNetworkGateway", wantPfx: "10.10.0.0/16"},
		{name: "doc: peering without the UDR", n: docNetwork, dst: "10.1.3.4", want: VNetPeering, wantSrc: "Default", wantPfx: "10.1.0.0/16"},
		{name: "doc overlap: /24 gateway beats /16 VNet", n: Network{AddressSpace: []netip.Prefix{pfx("10.0.0.0/16")}}, udrs: overlap, dst: "10.0.0.5", want: VirtualNetworkGateway, wantSrc: "User", wantPfx: "10.0.0.0/24"},
		{name: "doc overlap: rest of /16 stays in VNet", n: Network{AddressSpace: []netip.Prefix{pfx("10.0.0.0/16")}}, udrs: overlap, dst: "10.0.1.5", want: VnetLocal, wantSrc: "Default", wantPfx: "10.0.0.0/16"},

		// Kubernetes the hard way.
		{name: "kthw: pod route", n: kthw, udrs: kthwUDRs, dst: "10.200.1.7", want: VirtualAppliance, wantIP: "10.240.0.21", wantSrc: "User", wantPfx: "10.200.1.0/24"},
		{name: "kthw: no table, pod dropped by 10/8", n: kthw, dst: "10.200.1.7", want: None, wantSrc: "Default", wantPfx: "10.0.0.0/8"},
		{name: "kthw: node in VNet", n: kthw, udrs: kthwUDRs, dst: "10.240.0.21", want: VnetLocal, wantSrc: "Default", wantPfx: "10.240.0.0/16"},
		{name: "kthw: Internet", n: kthw, dst: "1.1.1.1", want: Internet, wantSrc: "Default", wantPfx: "0.0.0.0/0"},
		{name: "VNet covering 10/8 removes the None route", n: Network{AddressSpace: []netip.Prefix{pfx("10.0.0.0/8")}}, dst: "10.200.0.1", want: VnetLocal, wantSrc: "Default", wantPfx: "10.0.0.0/8"},
		{name: "UDR replaces 10/8 None", n: kthw, udrs: []route.Route{udr("pods", "10.0.0.0/8", route.VirtualAppliance, "10.240.0.4")}, dst: "10.9.9.9", want: VirtualAppliance, wantIP: "10.240.0.4", wantSrc: "User", wantPfx: "10.0.0.0/8"},

		// IPv6.
		{name: "ipv6: pod route", n: dual, udrs: dualUDRs, dst: "fd00:10:200:1::5", want: VirtualAppliance, wantIP: "fd00:10:240::21", wantSrc: "User", wantPfx: "fd00:10:200:1::/64"},
		{name: "ipv6: VNet local", n: dual, udrs: dualUDRs, dst: "fd00:10:240::20", want: VnetLocal, wantSrc: "Default", wantPfx: "fd00:10:240::/48"},
		{name: "ipv6: Internet ::/0", n: dual, udrs: dualUDRs, dst: "2001:db8::1", want: Internet, wantSrc: "Default", wantPfx: "::/0"},
		{name: "ipv6: IPv4-only VNet has no IPv6 route", n: kthw, dst: "2001:db8::1", noRoute: true},
		{name: "IPv4-mapped IPv6 is looked up as IPv4", n: kthw, udrs: kthwUDRs, dst: "::ffff:10.200.1.7", want: VirtualAppliance, wantIP: "10.240.0.21", wantSrc: "User", wantPfx: "10.200.1.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NewSelector(Effective(tt.n, tt.udrs)).Lookup(addr(tt.dst))
			if tt.noRoute {
				if ok {
					t.Fatalf("Lookup(%s) = %+v, want no route", tt.dst, got)
				}
				return
			}
			if !ok {
				t.Fatalf("Lookup(%s): no route", tt.dst)
			}
			if got.NextHopType != tt.want || got.Source != tt.wantSrc || got.Prefix != pfx(tt.wantPfx) || got.State != StateActive {
				t.Errorf("Lookup(%s) = %s %s %s %s, want %s %s %s Active", tt.dst, got.Source, got.Prefix, got.NextHopType, got.State, tt.wantSrc, tt.wantPfx, tt.want)
			}
			wantIP := netip.Addr{}
			if tt.wantIP != "" {
				wantIP = addr(tt.wantIP)
			}
			if got.NextHopIP != wantIP {
				t.Errorf("Lookup(%s) next hop IP = %v, want %v", tt.dst, got.NextHopIP, wantIP)
			}
		})
	}
}

func TestEqualPrefixPreference(t *testing.T) {
	p := pfx("10.200.0.0/24")
	sys := Route{Source: SourceDefault, State: StateActive, Prefix: p, NextHopType: None}
	bgp := Route{Source: SourceBGP, State: StateActive, Prefix: p, NextHopType: VirtualNetworkGateway}
	user := Route{Name: "u", Source: SourceUser, State: StateActive, Prefix: p, NextHopType: VirtualAppliance, NextHopIP: addr("10.240.0.20")}
	invalidUser := user
	invalidUser.State = StateInvalid
	tests := []struct {
		name   string
		routes []Route
		want   Route
	}{
		{"user over BGP over system", []Route{sys, bgp, user}, user},
		{"order of input does not matter", []Route{user, sys, bgp}, user},
		{"BGP over system", []Route{sys, bgp}, bgp},
		{"system alone", []Route{sys}, sys},
		{"invalid never chosen", []Route{invalidUser, sys}, sys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSelector(tt.routes)
			got, ok := s.Lookup(addr("10.200.0.9"))
			if !ok || got != tt.want {
				t.Errorf("Lookup = %+v, %v; want %+v", got, ok, tt.want)
			}
			m := s.Matches(addr("10.200.0.9"))
			if len(m) != len(tt.routes) || m[0] != tt.want {
				t.Errorf("Matches = %+v, want %d routes starting with the winner", m, len(tt.routes))
			}
		})
	}
}

func TestMatchesLongestFirst(t *testing.T) {
	s := NewSelector(Effective(Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}},
		[]route.Route{udr("fw", "0.0.0.0/0", route.VirtualAppliance, "10.240.1.4"), udr("w1", "10.200.1.0/24", route.VirtualAppliance, "10.240.0.21")}))
	var got []string
	for _, r := range s.Matches(addr("10.200.1.5")) {
		got = append(got, r.Prefix.String()+" "+r.Source+" "+r.State)
	}
	want := []string{"10.200.1.0/24 User Active", "10.0.0.0/8 Default Invalid", "0.0.0.0/0 User Active", "0.0.0.0/0 Default Invalid"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Matches (-want +got):\n%s", d)
	}
}

func TestEffectiveSkipsServiceTags(t *testing.T) {
	got := Effective(Network{AddressSpace: []netip.Prefix{pfx("10.240.0.0/16")}},
		[]route.Route{{Name: "tag", AddressPrefix: "AzureCloud", NextHopType: route.Internet}, {Name: "text", AddressPrefix: "10.200.0.0/24", NextHopType: route.None}})
	for _, r := range got {
		if r.Name == "tag" {
			t.Errorf("service tag route kept: %+v", r)
		}
	}
	if r := got[len(got)-1]; r.Name != "text" || r.Prefix != pfx("10.200.0.0/24") {
		t.Errorf("route with only AddressPrefix: got %+v", r)
	}
}
