package ipam

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// cidrSet is one cluster CIDR cut into node-mask blocks, with a bitmap of
// the blocks in use, as kube-controller-manager's cidrset does.
type cidrSet struct {
	cluster netip.Prefix
	mask    int
	shift   uint // address bits below the node mask
	n       int  // number of blocks
	// used has a bit per block that is taken (by a node, the service
	// range or a reservation); reserved a bit per block overlapping the
	// service range or a Reservation.
	used, reserved []uint64
	// owners are the nodes holding each block; usually one. Two nodes share
	// a block only when both hold CIDRs smaller than the block.
	owners map[int][]string
	next   int // where the next scan starts: after the last allocation
	inUse  int // number of used blocks
}

func newCIDRSet(cluster netip.Prefix, mask int) *cidrSet {
	n := 1 << (mask - cluster.Bits())
	words := (n + 63) / 64
	return &cidrSet{
		cluster:  cluster,
		mask:     mask,
		shift:    uint(cluster.Addr().BitLen() - mask),
		n:        n,
		used:     make([]uint64, words),
		reserved: make([]uint64, words),
		owners:   map[int][]string{},
	}
}

func (s *cidrSet) isUsed(i int) bool { return s.used[i/64]&(1<<(i%64)) != 0 }

func (s *cidrSet) setUsed(i int, on bool) {
	was := s.isUsed(i)
	if on {
		s.used[i/64] |= 1 << (i % 64)
	} else {
		s.used[i/64] &^= 1 << (i % 64)
	}
	switch {
	case on && !was:
		s.inUse++
	case !on && was:
		s.inUse--
	}
}

func (s *cidrSet) isReserved(i int) bool { return s.reserved[i/64]&(1<<(i%64)) != 0 }

// reserve marks blocks first..last reserved (never handed out, never freed).
func (s *cidrSet) reserve(first, last int) {
	for i := first; i <= last; i++ {
		s.reserved[i/64] |= 1 << (i % 64)
		s.setUsed(i, true)
	}
}

// block returns the i-th node CIDR.
func (s *cidrSet) block(i int) netip.Prefix {
	base := toU128(s.cluster.Addr())
	a := base.add(u128{lo: uint64(i)}.shl(s.shift))
	return netip.PrefixFrom(a.addr(s.cluster.Addr().Is4()), s.mask)
}

// span returns the blocks that p overlaps; ok is false when it overlaps
// none.
func (s *cidrSet) span(p netip.Prefix) (first, last int, ok bool) {
	if !s.cluster.Overlaps(p) {
		return 0, 0, false
	}
	if p.Bits() <= s.cluster.Bits() {
		return 0, s.n - 1, true // p holds the whole cluster CIDR
	}
	base := toU128(s.cluster.Addr())
	lo := toU128(p.Addr()).sub(base)
	size := u128{lo: 1}.shl(uint(p.Addr().BitLen() - p.Bits()))
	hi := lo.add(size).sub(u128{lo: 1})
	return int(lo.shr(s.shift).lo), int(hi.shr(s.shift).lo), true
}

// free returns the first free block at or after start, wrapping around,
// or -1 when every block is used.
func (s *cidrSet) free(start int) int {
	if i := s.scan(start, s.n); i >= 0 {
		return i
	}
	return s.scan(0, start)
}

// scan returns the first free block in [from, to), or -1. It skips full
// 64-block words at a time.
func (s *cidrSet) scan(from, to int) int {
	for i := from; i < to; {
		if w := ^s.used[i/64] >> (i % 64); w != 0 {
			if j := i + bits.TrailingZeros64(w); j < to {
				return j
			}
			return -1
		}
		i = (i/64 + 1) * 64
	}
	return -1
}

// u128 is an unsigned 128-bit integer, enough for IPv6 address arithmetic.
type u128 struct{ hi, lo uint64 }

func toU128(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (u u128) addr(is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(u.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.hi)
	binary.BigEndian.PutUint64(b[8:], u.lo)
	return netip.AddrFrom16(b)
}

func (u u128) add(v u128) u128 {
	lo, carry := bits.Add64(u.lo, v.lo, 0)
	hi, _ := bits.Add64(u.hi, v.hi, carry)
	return u128{hi, lo}
}

func (u u128) sub(v u128) u128 {
	lo, borrow := bits.Sub64(u.lo, v.lo, 0)
	hi, _ := bits.Sub64(u.hi, v.hi, borrow)
	return u128{hi, lo}
}

func (u u128) shl(n uint) u128 {
	switch {
	case n == 0:
		return u
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{hi: u.lo << (n - 64)}
	default:
		return u128{hi: u.hi<<n | u.lo>>(64-n), lo: u.lo << n}
	}
}

func (u u128) shr(n uint) u128 {
	switch {
	case n == 0:
		return u
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{lo: u.hi >> (n - 64)}
	default:
		return u128{hi: u.hi >> n, lo: u.lo>>n | u.hi<<(64-n)}
	}
}
