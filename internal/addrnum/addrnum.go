// Package addrnum does address arithmetic of either IP family: an address,
// or a count of addresses, as an unsigned 128-bit number (IPv4 in the low
// 32 bits, IPv6 in all 128). The IPAM's block arithmetic and the address
// planner's ranges and counts use it.
package addrnum

import (
	"encoding/binary"
	"math"
	"math/bits"
	"net/netip"
)

// U128 is an unsigned 128-bit number.
type U128 struct{ Hi, Lo uint64 }

// Max is 2^128-1, the largest U128.
func Max() U128 { return U128{^uint64(0), ^uint64(0)} }

// Of is the number of address a: its 4 bytes for an IPv4 address, its 16
// for any other (an IPv4-mapped IPv6 address included; unmap it first to
// count it as IPv4).
func Of(a netip.Addr) U128 {
	if a.Is4() {
		b := a.As4()
		return U128{Lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return U128{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}
}

// Addr is the address whose number is u: an IPv6 address when v6, else
// an IPv4 one (of u's low 32 bits).
func (u U128) Addr(v6 bool) netip.Addr {
	if !v6 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(u.Lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.Hi)
	binary.BigEndian.PutUint64(b[8:], u.Lo)
	return netip.AddrFrom16(b)
}

// Add is u+v, modulo 2^128.
func (u U128) Add(v U128) U128 {
	lo, carry := bits.Add64(u.Lo, v.Lo, 0)
	hi, _ := bits.Add64(u.Hi, v.Hi, carry)
	return U128{hi, lo}
}

// Sub is u-v, modulo 2^128.
func (u U128) Sub(v U128) U128 {
	lo, borrow := bits.Sub64(u.Lo, v.Lo, 0)
	hi, _ := bits.Sub64(u.Hi, v.Hi, borrow)
	return U128{hi, lo}
}

// Plus is u+n.
func (u U128) Plus(n uint64) U128 { return u.Add(U128{Lo: n}) }

// Shl is u shifted left by n bits.
func (u U128) Shl(n uint) U128 {
	switch {
	case n == 0:
		return u
	case n >= 128:
		return U128{}
	case n >= 64:
		return U128{Hi: u.Lo << (n - 64)}
	default:
		return U128{Hi: u.Hi<<n | u.Lo>>(64-n), Lo: u.Lo << n}
	}
}

// Shr is u shifted right by n bits.
func (u U128) Shr(n uint) U128 {
	switch {
	case n == 0:
		return u
	case n >= 128:
		return U128{}
	case n >= 64:
		return U128{Lo: u.Hi >> (n - 64)}
	default:
		return U128{Hi: u.Hi >> n, Lo: u.Lo>>n | u.Hi<<(64-n)}
	}
}

// Cmp is -1, 0 or 1 as u is less than, equal to or greater than v.
func (u U128) Cmp(v U128) int {
	switch {
	case u.Hi < v.Hi || u.Hi == v.Hi && u.Lo < v.Lo:
		return -1
	case u == v:
		return 0
	}
	return 1
}

// Float64 is u as a float: exact below 2^53, as IPv4 numbers always are.
func (u U128) Float64() float64 { return float64(u.Hi)*math.Exp2(64) + float64(u.Lo) }

// Pow2 is 2^n; 2^128 and beyond saturate at Max.
func Pow2(n int) U128 {
	if n >= 128 {
		return Max()
	}
	if n >= 64 {
		return U128{Hi: 1 << (n - 64)}
	}
	return U128{Lo: 1 << n}
}
