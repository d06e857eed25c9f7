package ipplan

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"net/netip"
	"strconv"
)

// u128 is an address (or a count of addresses) of either family as a
// number: IPv4 in the low 32 bits, IPv6 in all 128.
type u128 struct{ hi, lo uint64 }

func u128From(a netip.Addr) u128 {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := a.As16()
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return u128{hi: hi, lo: lo}
}

// addr is the address of family v6 whose number is u.
func (u u128) addr(v6 bool) netip.Addr {
	if !v6 {
		return netip.AddrFrom4([4]byte{byte(u.lo >> 24), byte(u.lo >> 16), byte(u.lo >> 8), byte(u.lo)})
	}
	var b [16]byte
	for i := range 8 {
		b[7-i] = byte(u.hi >> (8 * i))
		b[15-i] = byte(u.lo >> (8 * i))
	}
	return netip.AddrFrom16(b)
}

func (u u128) add(v u128) u128 {
	lo, c := bits.Add64(u.lo, v.lo, 0)
	hi, _ := bits.Add64(u.hi, v.hi, c)
	return u128{hi, lo}
}

func (u u128) sub(v u128) u128 {
	lo, b := bits.Sub64(u.lo, v.lo, 0)
	hi, _ := bits.Sub64(u.hi, v.hi, b)
	return u128{hi, lo}
}

func (u u128) cmp(v u128) int {
	switch {
	case u.hi < v.hi || u.hi == v.hi && u.lo < v.lo:
		return -1
	case u == v:
		return 0
	}
	return 1
}

func (u u128) plus(n uint64) u128 { return u.add(u128{lo: n}) }

// float64 is u as a float: exact below 2^53, as IPv4 numbers always are.
func (u u128) float64() float64 { return float64(u.hi)*math.Exp2(64) + float64(u.lo) }

// pow2 is 2^n; 2^128 and beyond saturate at 2^128-1.
func pow2(n int) u128 {
	if n >= 128 {
		return u128{^uint64(0), ^uint64(0)}
	}
	if n >= 64 {
		return u128{hi: 1 << (n - 64)}
	}
	return u128{lo: 1 << n}
}

// bounds returns the first and last address of p as numbers.
func bounds(p netip.Prefix) (lo, hi u128) {
	lo = u128From(p.Masked().Addr())
	if p.Addr().BitLen()-p.Bits() >= 128 {
		return lo, u128{^uint64(0), ^uint64(0)}
	}
	return lo, lo.add(pow2(p.Addr().BitLen() - p.Bits())).sub(u128{lo: 1})
}

// Count is a number of addresses. An IPv6 range's does not fit in 64
// bits, so in JSON a Count is a number up to 2^53 and a decimal string
// above (a number that large would lose digits in most JSON readers).
type Count struct{ v u128 }

func countOf(u u128) Count   { return Count{u} }
func countInt(n int64) Count { return Count{u128{lo: uint64(n)}} }
func (c Count) IsZero() bool { return c.v == u128{} }
func (c Count) big() *big.Int {
	return new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(c.v.hi), 64), new(big.Int).SetUint64(c.v.lo))
}

// Int64 is the count, or math.MaxInt64 when it is larger.
func (c Count) Int64() int64 {
	if c.v.hi != 0 || c.v.lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(c.v.lo)
}

// String is the count with thousands separators ("65,536"), or a power of
// two ("2^64") when it does not fit in 63 bits.
func (c Count) String() string {
	if c.v.hi == 0 && c.v.lo <= math.MaxInt64 {
		return Thousands(int64(c.v.lo))
	}
	if b := c.big(); b.BitLen() > 0 && new(big.Int).And(b, new(big.Int).Sub(b, big.NewInt(1))).Sign() == 0 {
		return fmt.Sprintf("2^%d", b.BitLen()-1)
	}
	return c.big().String()
}

// MarshalJSON writes a number up to 2^53, a decimal string above.
func (c Count) MarshalJSON() ([]byte, error) {
	if c.v.hi == 0 && c.v.lo <= 1<<53 {
		return []byte(strconv.FormatUint(c.v.lo, 10)), nil
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
	c.v = u128{hi: new(big.Int).Rsh(n, 64).Uint64(), lo: lo}
	return nil
}

// size is the number of addresses of p.
func size(p netip.Prefix) Count { return countOf(pow2(p.Addr().BitLen() - p.Bits())) }
