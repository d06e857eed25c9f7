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
