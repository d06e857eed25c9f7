package observe

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestNodeNetworks(t *testing.T) {
	got, err := NodeNetworks(
		Subnet{ID: "/s/a", AddressPrefixes: []string{"10.0.1.0/24", "fd00:0:0:1::/64"}},
		Subnet{ID: "/s/b", AddressPrefixes: []string{"10.0.0.0/24"}},
		Subnet{ID: "/s/c", AddressPrefixes: []string{" 10.0.1.0/24"}}, // listed by two VNets' reads
		Subnet{ID: "/s/d"}, // no prefix yet
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{pfx("10.0.0.0/24"), pfx("10.0.1.0/24"), pfx("fd00:0:0:1::/64")}
	if !slices.Equal(got, want) {
		t.Errorf("NodeNetworks = %v, want %v", got, want)
	}
	_, err = NodeNetworks(Subnet{ID: "/s/bad", AddressPrefixes: []string{"10.0.0.0/24", "10.0.300.0/24"}})
	if err == nil || !strings.Contains(err.Error(), "/s/bad") || !strings.Contains(err.Error(), `addressPrefixes[1] "10.0.300.0/24"`) {
		t.Errorf("bad prefix: err = %v, want it to name the subnet, field and value", err)
	}
}
