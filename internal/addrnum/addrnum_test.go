package addrnum

import (
	"net/netip"
	"testing"
)

func TestAddressesRoundTrip(t *testing.T) {
	for _, s := range []string{"0.0.0.0", "10.240.0.20", "255.255.255.255", "::", "fd00:10:240::20", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:10.0.0.1"} {
		a := netip.MustParseAddr(s)
		if got := Of(a).Addr(a.Is6()); got != a {
			t.Errorf("Of(%s).Addr = %s", a, got)
		}
	}
	if got := Of(netip.MustParseAddr("10.0.0.1")); got != (U128{Lo: 10<<24 | 1}) {
		t.Errorf("Of(10.0.0.1) = %+v", got)
	}
}

func TestArithmetic(t *testing.T) {
	one := U128{Lo: 1}
	if got := (U128{Lo: ^uint64(0)}).Add(one); got != (U128{Hi: 1}) {
		t.Errorf("carry: %+v", got)
	}
	if got := (U128{Hi: 1}).Sub(one); got != (U128{Lo: ^uint64(0)}) {
		t.Errorf("borrow: %+v", got)
	}
	for n := range 130 {
		p := Pow2(n)
		if n >= 128 {
			if p != Max() {
				t.Errorf("Pow2(%d) = %+v, want Max", n, p)
			}
			continue
		}
		if got := one.Shl(uint(n)); got != p {
			t.Errorf("1<<%d = %+v, want %+v", n, got, p)
		}
		if got := p.Shr(uint(n)); got != one {
			t.Errorf("2^%d>>%d = %+v", n, n, got)
		}
	}
	if one.Shl(128) != (U128{}) || Max().Shr(128) != (U128{}) {
		t.Error("shifts of 128 bits must give 0")
	}
	if one.Cmp(Pow2(64)) != -1 || Pow2(64).Cmp(one) != 1 || Max().Cmp(Max()) != 0 {
		t.Error("Cmp")
	}
	if got := Pow2(64).Plus(3).Float64(); got != 18446744073709551619 {
		t.Errorf("Float64 = %v", got)
	}
}
