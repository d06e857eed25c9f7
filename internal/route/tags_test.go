package route

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestTags(t *testing.T) {
	tb := &Table{Tags: map[string]string{"RouteKeeper-Migrated-To": "x", "env": "prod"}}
	if got := tb.Tag(MigratedToTag); got != "x" {
		t.Errorf("Tag(%s) = %q, want x (keys compare case-insensitively)", MigratedToTag, got)
	}
	if got := (*Table)(nil).Tag(ClaimTag); got != "" {
		t.Errorf("nil table Tag = %q", got)
	}
	SetTag(tb.Tags, MigratedToTag, "y")
	SetTag(tb.Tags, MigratedFromTag, "z")
	DeleteTag(tb.Tags, "ENV")
	want := map[string]string{"RouteKeeper-Migrated-To": "y", MigratedFromTag: "z"}
	if !reflect.DeepEqual(tb.Tags, want) {
		t.Errorf("tags = %v, want %v", tb.Tags, want)
	}
}

func TestCIDRsTag(t *testing.T) {
	cidrs := []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00::/56")}
	s := FormatCIDRs(cidrs)
	if s != "10.244.0.0/16,fd00::/56" {
		t.Errorf("FormatCIDRs = %q", s)
	}
	got, err := ParseCIDRs(s + ", ")
	if err != nil || !reflect.DeepEqual(got, cidrs) {
		t.Errorf("ParseCIDRs(%q) = %v, %v", s, got, err)
	}
	if _, err := ParseCIDRs("10.0.0.0/8,bad"); err == nil {
		t.Error("ParseCIDRs accepted bad")
	}
	tests := []struct {
		a, b string
		want []netip.Prefix
	}{
		{"10.244.0.0/16", "10.244.3.0/24", []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}},
		{"10.244.0.0/16", "10.245.0.0/16", nil},
		{"10.0.0.0/8,fd00::/56", "fd00:0:0:1::/64", []netip.Prefix{netip.MustParsePrefix("fd00::/56")}},
	}
	for _, tc := range tests {
		a, _ := ParseCIDRs(tc.a)
		b, _ := ParseCIDRs(tc.b)
		if got := OverlappingCIDRs(a, b); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("OverlappingCIDRs(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
