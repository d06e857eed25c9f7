package route

import (
	"net/netip"
	"strings"
	"testing"
)

func mustRoute(name, prefix string, typ NextHopType, hop string) Route {
	r := Route{Name: name, AddressPrefix: prefix, NextHopType: typ}
	if p, err := netip.ParsePrefix(prefix); err == nil {
		r.Prefix = p
	}
	if hop != "" {
		r.NextHopIP = netip.MustParseAddr(hop)
	}
	return r
}

func TestClassify(t *testing.T) {
	own := Ownership{Cluster: "prod", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")}}
	legacy := own
	legacy.LegacyNames = true
	va := VirtualAppliance
	cases := []struct {
		name  string
		own   Ownership
		r     Route
		claim string
		want  Owner
		node  string
	}{
		{"scheme route in claimed table", own, mustRoute("worker-0____102440024", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerThisCluster, "worker-0"},
		{"scheme route in unclaimed table (adopted)", own, mustRoute("worker-0____102440024", "10.244.0.0/24", va, "10.0.0.4"), "", OwnerThisCluster, "worker-0"},
		{"scheme route in a table of another cluster", own, mustRoute("worker-0____102440024", "10.244.0.0/24", va, "10.0.0.4"), "staging", OwnerOtherCluster, "worker-0"},
		{"claim value is case-sensitive", own, mustRoute("worker-0____102440024", "10.244.0.0/24", va, "10.0.0.4"), "Prod", OwnerOtherCluster, "worker-0"},
		{"scheme route outside cluster CIDRs", own, mustRoute("dev-0____102450024", "10.245.0.0/24", va, "10.1.0.4"), "prod", OwnerOtherCluster, "dev-0"},
		{"scheme route wider than the cluster CIDR", own, mustRoute("x____100008", "10.0.0.0/8", va, "10.1.0.4"), "prod", OwnerOtherCluster, "x"},
		{"next hop type does not matter", own, mustRoute("worker-0____102440024", "10.244.0.0/24", None, ""), "prod", OwnerThisCluster, "worker-0"},
		{"IPv6 scheme route", own, mustRoute("worker-0____fd001024464", "fd00:10:244::/64", va, "fd00::4"), "prod", OwnerThisCluster, "worker-0"},
		{"IPv6 mangled name in upper case", own, mustRoute("worker-0____FD001024464", "fd00:10:244::/64", va, "fd00::4"), "prod", OwnerThisCluster, "worker-0"},
		{"name does not match the prefix", own, mustRoute("worker-0____102440024", "10.244.1.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"IPv6 prefix text not in canonical form", own, mustRoute("worker-0____fd001024464", "FD00:0010:0244:0000::/64", va, "fd00::4"), "prod", OwnerThisCluster, "worker-0"},
		{"IPv4 prefix text not masked", own, mustRoute("worker-0____102440024", "10.244.0.7/24", va, "10.0.0.4"), "prod", OwnerThisCluster, "worker-0"},
		{"prefix text only (decoded from JSON)", own, Route{Name: "worker-0____102440024", AddressPrefix: "10.244.0.0/24", NextHopType: va}, "prod", OwnerThisCluster, "worker-0"},
		{"name mangled CIDR is a prefix of the real one", own, mustRoute("worker-0____10244002", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"name mangled CIDR longer than the real one", own, mustRoute("worker-0____1024400240", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"name without separator", own, mustRoute("worker-0", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"hand-made route (the hard way)", own, mustRoute("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"service tag", own, mustRoute("worker-0____AzureCloud", "AzureCloud", Internet, ""), "prod", OwnerCustom, ""},
		{"default route to a firewall", own, mustRoute("default", "0.0.0.0/0", va, "10.0.100.4"), "prod", OwnerCustom, ""},
		{"empty separator tail", own, mustRoute("worker-0____", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerCustom, ""},
		{"legacy name with LegacyNames", legacy, mustRoute("worker-0", "10.244.0.0/24", va, "10.0.0.4"), "prod", OwnerThisCluster, "worker-0"},
		{"legacy name with LegacyNames, not VirtualAppliance", legacy, mustRoute("worker-0", "10.244.0.0/24", None, ""), "prod", OwnerCustom, ""},
		{"legacy name with LegacyNames, outside", legacy, mustRoute("default", "0.0.0.0/0", va, "10.0.100.4"), "prod", OwnerCustom, ""},
		{"legacy name with LegacyNames, other claim", legacy, mustRoute("worker-0", "10.244.0.0/24", va, "10.0.0.4"), "staging", OwnerOtherCluster, "worker-0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.own.Classify(tc.r, tc.claim)
			if c.Owner != tc.want || c.Node != tc.node {
				t.Errorf("Classify = %s node %q (%s), want %s node %q", c.Owner, c.Node, c.Why, tc.want, tc.node)
			}
			if c.Why == "" {
				t.Errorf("Classify gave no reason")
			}
			if got := tc.own.Owns(tc.r, tc.claim); got != (tc.want == OwnerThisCluster) {
				t.Errorf("Owns = %v", got)
			}
		})
	}
}

func TestOwnerString(t *testing.T) {
	for o, want := range map[Owner]string{OwnerThisCluster: "this cluster", OwnerOtherCluster: "other cluster", OwnerCustom: "custom"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(o), o.String(), want)
		}
		if b, _ := o.MarshalText(); string(b) != want {
			t.Errorf("MarshalText = %q", b)
		}
	}
}

func TestCIDR(t *testing.T) {
	cases := []struct {
		r    Route
		want string
	}{
		{Route{AddressPrefix: "10.244.0.0/24"}, "10.244.0.0/24"},
		{Route{AddressPrefix: "10.244.0.7/24"}, "10.244.0.0/24"},
		{Route{AddressPrefix: "10.244.0.0/24", Prefix: netip.MustParsePrefix("10.1.0.0/16")}, "10.244.0.0/24"}, // the text ARM holds wins
		{Route{Prefix: netip.MustParsePrefix("10.1.0.0/16")}, "10.1.0.0/16"},
		{Route{AddressPrefix: "AzureCloud"}, ""},
		{Route{}, ""},
	}
	for _, tc := range cases {
		p, ok := tc.r.CIDR()
		if got := map[bool]string{true: p.String(), false: ""}[ok]; got != tc.want {
			t.Errorf("%+v.CIDR() = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestMangleAndName(t *testing.T) {
	for _, tc := range []struct{ cidr, mangled string }{
		{"10.200.0.0/24", "102000024"},
		{"10.244.1.0/24", "102441024"},
		{"fd00:10:244::/64", "fd001024464"},
		{"10.244.1.9/24", "102441024"},
	} {
		p := netip.MustParsePrefix(tc.cidr)
		if got := MangleCIDR(p); got != tc.mangled {
			t.Errorf("MangleCIDR(%s) = %q, want %q", tc.cidr, got, tc.mangled)
		}
		if !mangledEqual(tc.mangled, p) || !mangledEqual(strings.ToUpper(tc.mangled), p) {
			t.Errorf("mangledEqual(%q, %s) = false", tc.mangled, tc.cidr)
		}
		if mangledEqual(tc.mangled+"0", p) || mangledEqual(tc.mangled[1:], p) {
			t.Errorf("mangledEqual accepts a wrong name for %s", tc.cidr)
		}
	}
	if got := Name("worker-0", netip.MustParsePrefix("10.200.0.0/24")); got != "worker-0____102000024" {
		t.Errorf("Name = %q (the example of DESIGN.md)", got)
	}
}

func TestValidateName(t *testing.T) {
	ok := []string{"a", "worker-0____102000024", "x_", "a.b-c_d", strings.Repeat("a", 80), "0abc"}
	bad := []string{"", strings.Repeat("a", 81), "-abc", "_abc", ".abc", "abc-", "abc.", "a b", "wörker", "a/b"}
	for _, n := range ok {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		err := ValidateName(n)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", n)
			continue
		}
		if n != "" && !strings.Contains(err.Error(), n) {
			t.Errorf("ValidateName(%q) error %q does not name the value", n, err)
		}
	}
}

func TestClaimValues(t *testing.T) {
	tb := &Table{Tags: map[string]string{"RouteKeeper-CLUSTER": "b", ClaimTag: "a", "other": "x", "routekeeper-cluster ": "c"}}
	if got := tb.ClaimValues(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("ClaimValues = %v, want [a b]", got)
	}
	if got := (&Table{Tags: map[string]string{ClaimTag: ""}}).ClaimValues(); len(got) != 0 {
		t.Errorf("empty claim value counts as a claim: %v", got)
	}
	var nilTable *Table
	if nilTable.ClaimValues() != nil || nilTable.Claim() != "" {
		t.Errorf("nil table has a claim")
	}
}

func TestClassifyTable(t *testing.T) {
	own := Ownership{Cluster: "prod", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	routes := []Route{
		mustRoute("worker-0____102440024", "10.244.0.0/24", VirtualAppliance, "10.0.0.4"),
		mustRoute("default", "0.0.0.0/0", VirtualAppliance, "10.0.100.4"),
	}
	for _, tc := range []struct {
		name string
		tags map[string]string
		want []Owner
	}{
		{"claimed by us", map[string]string{ClaimTag: "prod"}, []Owner{OwnerThisCluster, OwnerCustom}},
		{"unclaimed", nil, []Owner{OwnerThisCluster, OwnerCustom}},
		{"claimed by another", map[string]string{"ROUTEKEEPER-CLUSTER": "staging"}, []Owner{OwnerOtherCluster, OwnerCustom}},
		{"ambiguous claim", map[string]string{ClaimTag: "prod", "RouteKeeper-cluster": "staging"}, []Owner{OwnerOtherCluster, OwnerCustom}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := own.ClassifyTable(&Table{Tags: tc.tags, Routes: routes})
			for i, c := range got {
				if c.Owner != tc.want[i] {
					t.Errorf("route %s: %s, want %s", routes[i].Name, c.Owner, tc.want[i])
				}
			}
		})
	}
	if own.ClassifyTable(nil) != nil {
		t.Error("nil table classified")
	}
}
