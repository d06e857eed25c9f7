package ipam

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/addrnum"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func mustNew(t testing.TB, cfg Config) *Allocator {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func allocate(t *testing.T, a *Allocator, node string) string {
	t.Helper()
	got, err := a.Allocate(node)
	if err != nil {
		t.Fatalf("Allocate(%s): %v", node, err)
	}
	s := make([]string, len(got))
	for i, p := range got {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func TestAllocateInOrderSkippingServiceRange(t *testing.T) {
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.200.1.0/23")}})
	want := []string{"10.200.2.0/24", "10.200.3.0/24", "10.200.4.0/24"}
	for i, w := range want {
		if got := allocate(t, a, fmt.Sprintf("n%d", i)); got != w {
			t.Errorf("allocation %d = %s, want %s (10.200.0.0/24 and 10.200.1.0/24 are in the service range 10.200.0.0/23)", i, got, w)
		}
	}
	// Allocate is idempotent for a node that holds a CIDR.
	if got := allocate(t, a, "n0"); got != "10.200.2.0/24" {
		t.Errorf("second Allocate(n0) = %s, want its CIDR again", got)
	}
	u := a.Usage()[0]
	if u.Blocks != 256 || u.Used != 5 {
		t.Errorf("usage = %+v, want 256 blocks, 5 used (2 service + 3 nodes)", u)
	}
}

func TestRoundRobinAfterRelease(t *testing.T) {
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/22")}})
	for _, n := range []string{"a", "b", "c"} {
		allocate(t, a, n)
	}
	a.Release("b") // frees 10.0.1.0/24
	if got := allocate(t, a, "d"); got != "10.0.3.0/24" {
		t.Errorf("d = %s, want 10.0.3.0/24: the scan starts after the last allocation, not at a freed block", got)
	}
	if got := allocate(t, a, "e"); got != "10.0.1.0/24" {
		t.Errorf("e = %s, want 10.0.1.0/24 after wrapping around", got)
	}
}

func TestExhaustion(t *testing.T) {
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/22")}, ServiceCIDRs: []netip.Prefix{pfx("10.0.3.0/24")}})
	for _, n := range []string{"a", "b", "c"} {
		allocate(t, a, n)
	}
	_, err := a.Allocate("d")
	if !errors.Is(err, ErrCIDRExhausted) {
		t.Fatalf("err = %v, want ErrCIDRExhausted", err)
	}
	var ee *ExhaustedError
	if !errors.As(err, &ee) || ee.ClusterCIDR != pfx("10.0.0.0/22") || ee.Blocks != 4 || ee.Node != "d" {
		t.Errorf("err = %#v", err)
	}
	for _, w := range []string{"10.0.0.0/22", "all 4 node CIDRs", "node d", "/24"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
	if len(a.CIDRs("d")) != 0 {
		t.Error("d holds a CIDR after exhaustion")
	}
}

func TestOccupy(t *testing.T) {
	cfg := Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.200.255.0/24")}}
	cases := []struct {
		name    string
		prior   map[string]string // node -> CIDR occupied before
		node    string
		cidr    string
		wantErr error
	}{
		{"inside", nil, "a", "10.200.5.0/24", nil},
		{"same node twice", map[string]string{"a": "10.200.5.0/24"}, "a", "10.200.5.0/24", nil},
		{"outside", nil, "a", "10.201.0.0/24", ErrOutsideClusterCIDR},
		{"other family", nil, "a", "fd00::/64", ErrOutsideClusterCIDR},
		{"holds the cluster CIDR", nil, "a", "10.0.0.0/8", ErrOutsideClusterCIDR},
		{"service range", nil, "a", "10.200.255.0/25", ErrServiceRange},
		{"another node's", map[string]string{"b": "10.200.5.0/24"}, "a", "10.200.5.0/24", ErrOverlap},
		{"inside another node's bigger CIDR", map[string]string{"b": "10.200.4.0/23"}, "a", "10.200.5.128/25", ErrOverlap},
		{"half of a block another node holds the other half of", map[string]string{"b": "10.200.5.0/25"}, "a", "10.200.5.128/25", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, cfg)
			for n, c := range tc.prior {
				if err := a.Occupy(n, pfx(c)); err != nil {
					t.Fatal(err)
				}
			}
			err := a.Occupy(tc.node, pfx(tc.cidr))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.cidr) && !strings.Contains(err.Error(), pfx(tc.cidr).Masked().String()) {
				t.Errorf("message %q does not name %s", err, tc.cidr)
			}
		})
	}

	// A CIDR larger than a block takes every block it covers.
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/22")}})
	if err := a.Occupy("big", pfx("10.0.0.0/23")); err != nil {
		t.Fatal(err)
	}
	if got := allocate(t, a, "x"); got != "10.0.2.0/24" {
		t.Errorf("x = %s, want 10.0.2.0/24 after a /23 took two blocks", got)
	}
	// A CIDR holding the whole cluster CIDR is outside, but still keeps
	// others from overlapping it.
	b := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/22")}})
	if err := b.Occupy("huge", pfx("10.0.0.0/8")); !errors.Is(err, ErrOutsideClusterCIDR) {
		t.Fatalf("err = %v", err)
	}
	if _, err := b.Allocate("y"); !errors.Is(err, ErrCIDRExhausted) {
		t.Errorf("allocation inside a node's /8: err = %v, want exhaustion", err)
	}
	// Releasing one of two nodes sharing a block keeps the block used.
	c := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/23")}})
	_ = c.Occupy("h1", pfx("10.0.0.0/25"))
	_ = c.Occupy("h2", pfx("10.0.0.128/25"))
	c.Release("h1")
	if got := allocate(t, c, "z"); got != "10.0.1.0/24" {
		t.Errorf("z = %s, want 10.0.1.0/24: 10.0.0.0/24 still holds h2's /25", got)
	}
}

func TestDualStack(t *testing.T) {
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.244.0.0/16"), pfx("fd00:10:244::/56")}})
	if got := allocate(t, a, "a"); got != "10.244.0.0/24,fd00:10:244::/64" {
		t.Errorf("a = %s", got)
	}
	if got := allocate(t, a, "b"); got != "10.244.1.0/24,fd00:10:244:1::/64" {
		t.Errorf("b = %s", got)
	}
	// A node holding an IPv4 CIDR gets only an IPv6 one.
	if err := a.Occupy("c", pfx("10.244.9.0/24")); err != nil {
		t.Fatal(err)
	}
	if got := allocate(t, a, "c"); got != "10.244.9.0/24,fd00:10:244:2::/64" {
		t.Errorf("c = %s", got)
	}
	// All or nothing: when IPv6 is exhausted, no IPv4 is kept.
	small := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/16"), pfx("fd00::/63")}})
	allocate(t, small, "a")
	allocate(t, small, "b")
	if _, err := small.Allocate("c"); !errors.Is(err, ErrCIDRExhausted) || !strings.Contains(err.Error(), "fd00::/63") {
		t.Fatalf("err = %v", err)
	}
	if got := small.CIDRs("c"); len(got) != 0 {
		t.Errorf("c kept %v after failing", got)
	}
	if u := small.Usage()[0]; u.Used != 2 {
		t.Errorf("IPv4 blocks used = %d, want 2: c's IPv4 block must be freed again", u.Used)
	}
}

func TestIPv6Arithmetic(t *testing.T) {
	a := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("fd00:1::/48")}})
	s := a.sets[0]
	if s.n != 65536 {
		t.Fatalf("blocks = %d", s.n)
	}
	for i, want := range map[int]string{0: "fd00:1::/64", 1: "fd00:1:0:1::/64", 65535: "fd00:1:0:ffff::/64", 4660: "fd00:1:0:1234::/64"} {
		if got := s.block(i).String(); got != want {
			t.Errorf("block(%d) = %s, want %s", i, got, want)
		}
		if f, l, ok := s.span(pfx(want)); !ok || f != i || l != i {
			t.Errorf("span(%s) = %d..%d, want %d", want, f, l, i)
		}
	}
	// a /120 node mask at the far end of an IPv6 range
	b := mustNew(t, Config{ClusterCIDRs: []netip.Prefix{pfx("fd00::ff00/120")}, NodeMaskV6: 124})
	if got := b.sets[0].block(15).String(); got != "fd00::fff0/124" {
		t.Errorf("block 15 = %s", got)
	}
}

func TestNewRejectsBadLayouts(t *testing.T) {
	for name, cfg := range map[string]Config{
		"none":               {},
		"not masked":         {ClusterCIDRs: []netip.Prefix{pfx("10.0.0.1/16")}},
		"two IPv4":           {ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/16"), pfx("10.1.0.0/16")}},
		"mask shorter":       {ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/16")}, NodeMaskV4: 15},
		"mask too far":       {ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")}, NodeMaskV4: 25},
		"IPv6 /32 with /64s": {ClusterCIDRs: []netip.Prefix{pfx("fd00::/32")}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRandomOperations: random sequences of occupy, allocate and release
// never hand out overlapping CIDRs, CIDRs outside the cluster CIDR, or CIDRs
// in the service range, and the used-block count matches the holdings.
func TestRandomOperations(t *testing.T) {
	layouts := []Config{
		{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/20")}, ServiceCIDRs: []netip.Prefix{pfx("10.200.3.0/24"), pfx("10.200.8.0/22")}},
		{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/22"), pfx("fd00::/60")}, ServiceCIDRs: []netip.Prefix{pfx("fd00::/64")}, NodeMaskV4: 26},
		{ClusterCIDRs: []netip.Prefix{pfx("172.16.0.0/12")}, NodeMaskV4: 20},
	}
	for li, cfg := range layouts {
		for seed := uint64(1); seed <= 25; seed++ {
			t.Run(fmt.Sprintf("layout%d/seed%d", li, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(li)))
				a := mustNew(t, cfg)
				for step := range 250 {
					node := fmt.Sprintf("n%d", rng.IntN(40))
					switch op := rng.IntN(10); {
					case op < 5:
						_, err := a.Allocate(node)
						if err != nil && !errors.Is(err, ErrCIDRExhausted) {
							t.Fatalf("step %d: Allocate(%s): %v", step, node, err)
						}
					case op < 7:
						a.Release(node)
					default:
						// occupy a random CIDR near the cluster CIDR: some
						// fit, some overlap, some are outside
						c := cfg.ClusterCIDRs[rng.IntN(len(cfg.ClusterCIDRs))]
						bitsLen := c.Addr().BitLen()
						l := c.Bits() - 1 + rng.IntN(min(bitsLen, c.Bits()+14)-c.Bits()+2)
						addr := addrnum.Of(c.Addr()).Add(addrnum.U128{Lo: rng.Uint64N(1 << 20)}.Shl(uint(bitsLen - min(bitsLen, c.Bits()+20))))
						p, _ := addr.Addr(c.Addr().Is6()).Prefix(l)
						before := slices.Clone(a.CIDRs(node))
						err := a.Occupy(node, p)
						if err != nil && !errors.Is(err, ErrOutsideClusterCIDR) && !slices.Equal(before, a.CIDRs(node)) {
							t.Fatalf("step %d: failed Occupy(%s, %s) changed the holdings: %v", step, node, p, err)
						}
					}
					checkInvariants(t, a, cfg, step)
				}
			})
		}
	}
}

func checkInvariants(t *testing.T, a *Allocator, cfg Config, step int) {
	t.Helper()
	type held struct {
		node string
		p    netip.Prefix
	}
	var all []held
	for _, n := range a.Nodes() {
		for _, p := range a.CIDRs(n) {
			all = append(all, held{n, p})
		}
	}
	for i, h := range all {
		for _, o := range all[i+1:] {
			if h.node != o.node && h.p.Overlaps(o.p) {
				t.Fatalf("step %d: %s of %s overlaps %s of %s", step, h.p, h.node, o.p, o.node)
			}
		}
		// (a CIDR larger than the cluster CIDR is outside: Occupy said so)
		if set := a.setFor(h.p); !set.cluster.Contains(h.p.Addr()) || h.p.Bits() < set.cluster.Bits() {
			continue
		}
		for _, s := range cfg.ServiceCIDRs {
			if s.Overlaps(h.p) {
				t.Fatalf("step %d: %s of %s overlaps the service range %s", step, h.p, h.node, s)
			}
		}
	}
	// allocated (node-mask) CIDRs lie inside the cluster CIDR
	for _, h := range all {
		s := a.setFor(h.p)
		if h.p.Bits() == s.mask && !s.cluster.Contains(h.p.Addr()) {
			t.Fatalf("step %d: %s of %s is outside %s", step, h.p, h.node, s.cluster)
		}
	}
	// the bitmap agrees with the holdings and the service range
	for _, s := range a.sets {
		used := 0
		for i := range s.n {
			b := s.block(i)
			want := false
			for _, h := range all {
				want = want || h.p.Overlaps(b)
			}
			for _, svc := range cfg.ServiceCIDRs {
				want = want || svc.Overlaps(b)
			}
			if s.isUsed(i) != want {
				t.Fatalf("step %d: block %s used=%v, want %v", step, b, s.isUsed(i), want)
			}
			if want {
				used++
			}
		}
		if used != s.inUse {
			t.Fatalf("step %d: inUse = %d, want %d", step, s.inUse, used)
		}
	}
}

func BenchmarkAllocate5000(b *testing.B) {
	cfg := Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")}, ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/12")}}
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		a := mustNew(b, cfg)
		for _, n := range names {
			if _, err := a.Allocate(n); err != nil {
				b.Fatal(err)
			}
		}
	}
}
