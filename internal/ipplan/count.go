package ipplan

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"

	"github.com/routekeeper/routekeeper/internal/addrnum"
)

// number is a's number, an IPv4-mapped address counted as IPv4.
func number(a netip.Addr) addrnum.U128 { return addrnum.Of(a.Unmap()) }

// bounds returns the first and last address of p as numbers.
func bounds(p netip.Prefix) (lo, hi addrnum.U128) {
	lo = number(p.Masked().Addr())
	if p.Addr().BitLen()-p.Bits() >= 128 {
		return lo, addrnum.Max()
	}
	return lo, lo.Add(addrnum.Pow2(p.Addr().BitLen() - p.Bits())).Sub(addrnum.U128{Lo: 1})
}

// Count is a number of addresses. An IPv6 range's does not fit in 64
// bits, so in JSON a Count is a number up to 2^53 and a decimal string
// above (a number that large would lose digits in most JSON readers).
type Count struct{ v addrnum.U128 }

func countOf(u addrnum.U128) Count { return Count{u} }
func (c Count) IsZero() bool       { return c.v == addrnum.U128{} }
func (c Count) big() *big.Int {
	return new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(c.v.Hi), 64), new(big.Int).SetUint64(c.v.Lo))
}

// Int64 is the count, or math.MaxInt64 when it is larger.
func (c Count) Int64() int64 {
	if c.v.Hi != 0 || c.v.Lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(c.v.Lo)
}

// String is the count with thousands separators ("65,536"), or a power of
// two ("2^64") when it does not fit in 63 bits.
func (c Count) String() string {
	if c.v.Hi == 0 && c.v.Lo <= math.MaxInt64 {
		return Thousands(int64(c.v.Lo))
	}
	if b := c.big(); b.BitLen() > 0 && new(big.Int).And(b, new(big.Int).Sub(b, big.NewInt(1))).Sign() == 0 {
		return fmt.Sprintf("2^%d", b.BitLen()-1)
	}
	return c.big().String()
}

// MarshalJSON writes a number up to 2^53, a decimal string above.
func (c Count) MarshalJSON() ([]byte, error) {
	if c.v.Hi == 0 && c.v.Lo <= 1<<53 {
		return []byte(strconv.FormatUint(c.v.Lo, 10)), nil
	}
	return json.Marshal(c.big().String())
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Count) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 128 {
		return fmt.Errorf("address count %s: want a non-negative integer below 2^128", b)
	}
	lo := new(big.Int).And(n, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	c.v = addrnum.U128{Hi: new(big.Int).Rsh(n, 64).Uint64(), Lo: lo}
	return nil
}

// size is the number of addresses of p.
func size(p netip.Prefix) Count { return countOf(addrnum.Pow2(p.Addr().BitLen() - p.Bits())) }
