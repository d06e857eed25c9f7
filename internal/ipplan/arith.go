package ipplan

import (
	"math"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// Address arithmetic of either family (package addrnum holds the numbers).

// usable is what Azure leaves of an IPv4 subnet: all but 5 addresses.
func usable(p netip.Prefix) int64 { return max(size(p).Int64()-SubnetReserved, 0) }

// contains reports whether outer holds all of inner.
func contains(outer, inner netip.Prefix) bool {
	return outer.Addr().BitLen() == inner.Addr().BitLen() && outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// intersection of two overlapping prefixes: the longer one.
func intersection(x, y netip.Prefix) netip.Prefix {
	if x.Bits() >= y.Bits() {
		return x
	}
	return y
}

// blocks is the number of /bitsN node ranges in p, math.MaxInt64 when it
// is more (an IPv6 range can hold more than 2^63).
func blocks(p netip.Prefix, bitsN int) int64 {
	switch {
	case !p.IsValid() || p.Bits() > bitsN:
		return 0
	case bitsN-p.Bits() >= 63:
		return math.MaxInt64
	}
	return int64(1) << (bitsN - p.Bits())
}

func ceilLog2(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}

// smallestSubnet is the longest prefix length (at most /29) of an IPv4
// subnet that has n usable addresses.
func smallestSubnet(n int64) int {
	for l := SmallestAzureSubnet; l >= 0; l-- {
		if int64(1)<<(32-l)-SubnetReserved >= n {
			return l
		}
	}
	return 0
}

// Thousands formats n with comma separators: 27610 -> "27,610".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
