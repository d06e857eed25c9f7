package routing

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// naiveLookup is route selection by its definition: among the active
// routes that contain addr, the longest prefix; for equal prefixes user
// before BGP before system, then the first given.
func naiveLookup(routes []Route, addr netip.Addr) (Route, bool) {
	var best Route
	found := false
	for _, r := range routes {
		if r.State == StateInvalid || !r.Prefix.Contains(addr) {
			continue
		}
		if !found || r.Prefix.Bits() > best.Prefix.Bits() || r.Prefix.Bits() == best.Prefix.Bits() && rank(r) < rank(best) {
			best, found = r, true
		}
	}
	return best, found
}

// TestSelectorMatchesDefinition checks the bart-backed selector against
// the definition on random route sets of both families, dense in a small
// space so that prefixes nest and tie often.
func TestSelectorMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sources := []string{SourceUser, SourceBGP, SourceDefault}
	randAddr := func(v6 bool) netip.Addr {
		if v6 {
			var b [16]byte
			b[0], b[1] = 0xfd, 0x00
			b[2], b[3] = byte(rng.IntN(4)), byte(rng.IntN(256))
			b[15] = byte(rng.IntN(256))
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256))})
	}
	for round := range 200 {
		var routes []Route
		for range 1 + rng.IntN(60) {
			v6 := rng.IntN(3) == 0
			bits := 8 + rng.IntN(25)
			if v6 {
				bits = rng.IntN(129)
			}
			r := Route{Source: sources[rng.IntN(3)], State: StateActive, Prefix: netip.PrefixFrom(randAddr(v6), bits).Masked(), NextHopType: VirtualAppliance}
			if rng.IntN(5) == 0 {
				r.State = StateInvalid
			}
			r.NextHopIP = randAddr(false) // tells routes apart
			routes = append(routes, r)
		}
		sel := NewSelector(routes)
		for range 200 {
			a := randAddr(rng.IntN(3) == 0)
			want, wok := naiveLookup(routes, a)
			got, ok := sel.Lookup(a)
			if ok != wok || got != want {
				t.Fatalf("round %d, %s: Lookup = %+v %v, definition says %+v %v\nroutes: %+v", round, a, got, ok, want, wok, routes)
			}
		}
	}
}

// TestVNetRoutesBeatBGP checks Azure's rule on random networks: a packet to
// an address of the virtual network or of a peered one never follows a
// BGP route, however specific, unless a user route says otherwise.
func TestVNetRoutesBeatBGP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randPrefix := func(minBits int) netip.Prefix {
		a := netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), 0})
		return netip.PrefixFrom(a, minBits+rng.IntN(25-minBits)).Masked()
	}
	for round := range 300 {
		n := Network{AddressSpace: []netip.Prefix{randPrefix(12)}}
		for range rng.IntN(3) {
			n.Peerings = append(n.Peerings, randPrefix(12))
		}
		for range 1 + rng.IntN(6) {
			n.Gateway = append(n.Gateway, randPrefix(8))
		}
		sel := NewSelector(Effective(n, nil))
		for range 100 {
			a := netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256))})
			inVNet := false
			for _, p := range append(append([]netip.Prefix(nil), n.AddressSpace...), n.Peerings...) {
				inVNet = inVNet || p.Contains(a)
			}
			r, ok := sel.Lookup(a)
			if inVNet && (!ok || r.Source == SourceBGP) {
				t.Fatalf("round %d: %s is in the virtual network or a peered one, but Lookup chose %+v (network %+v)", round, a, r, n)
			}
		}
	}
}
