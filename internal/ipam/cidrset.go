package ipam

import (
	"math/bits"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/addrnum"
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
	base := addrnum.Of(s.cluster.Addr())
	a := base.Add(addrnum.U128{Lo: uint64(i)}.Shl(s.shift))
	return netip.PrefixFrom(a.Addr(s.cluster.Addr().Is6()), s.mask)
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
	base := addrnum.Of(s.cluster.Addr())
	lo := addrnum.Of(p.Addr()).Sub(base)
	size := addrnum.U128{Lo: 1}.Shl(uint(p.Addr().BitLen() - p.Bits()))
	hi := lo.Add(size).Sub(addrnum.U128{Lo: 1})
	return int(lo.Shr(s.shift).Lo), int(hi.Shr(s.shift).Lo), true
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
