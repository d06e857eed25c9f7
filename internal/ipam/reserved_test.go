package ipam

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func route(prefix, hop string) Reservation {
	return Reservation{Prefix: pfx(prefix), What: "route " + prefix, Route: true, NextHop: netip.MustParseAddr(hop)}
}

func TestReservationsKeepAllocationsAway(t *testing.T) {
	cluster := Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/22"), pfx("fd00:200::/62")}}
	for _, tc := range []struct {
		name     string
		reserved []Reservation
		want     []string // the CIDRs of four nodes a..d, in order, "" = none left
	}{
		{"nothing reserved", nil,
			[]string{"10.200.0.0/24,fd00:200::/64", "10.200.1.0/24,fd00:200:0:1::/64", "10.200.2.0/24,fd00:200:0:2::/64", "10.200.3.0/24,fd00:200:0:3::/64"}},
		{"a custom route with a node CIDR's prefix", []Reservation{route("10.200.0.0/24", "10.240.0.100")},
			[]string{"10.200.1.0/24,fd00:200::/64", "10.200.2.0/24,fd00:200:0:1::/64", "10.200.3.0/24,fd00:200:0:2::/64", ""}},
		{"a narrower custom route takes its node CIDR", []Reservation{route("10.200.1.128/25", "10.240.0.100"), route("fd00:200:0:2::/80", "fd00::100")},
			[]string{"10.200.0.0/24,fd00:200::/64", "10.200.2.0/24,fd00:200:0:1::/64", "10.200.3.0/24,fd00:200:0:3::/64", ""}},
		{"wider custom routes block nothing", []Reservation{route("0.0.0.0/0", "10.240.0.100"), route("10.200.0.0/23", "10.240.0.100"), route("10.0.0.0/8", "10.240.0.100"), route("::/0", "fd00::100")},
			[]string{"10.200.0.0/24,fd00:200::/64", "10.200.1.0/24,fd00:200:0:1::/64", "10.200.2.0/24,fd00:200:0:2::/64", "10.200.3.0/24,fd00:200:0:3::/64"}},
		{"a range blocks every node CIDR it overlaps", []Reservation{{Prefix: pfx("10.200.2.0/23"), What: "address space of virtual network v"}},
			[]string{"10.200.0.0/24,fd00:200::/64", "10.200.1.0/24,fd00:200:0:1::/64", "", ""}},
		{"a range holding the whole cluster CIDR is ignored", []Reservation{{Prefix: pfx("10.0.0.0/8"), What: "address space of virtual network v"}},
			[]string{"10.200.0.0/24,fd00:200::/64", "10.200.1.0/24,fd00:200:0:1::/64", "10.200.2.0/24,fd00:200:0:2::/64", "10.200.3.0/24,fd00:200:0:3::/64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster
			cfg.Reserved = tc.reserved
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range []string{"a", "b", "c", "d"} {
				ps, err := a.Allocate(n)
				if err != nil {
					got = append(got, "")
					continue
				}
				s := make([]string, len(ps))
				for i, p := range ps {
					s[i] = p.String()
				}
				got = append(got, strings.Join(s, ","))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("allocations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStoreReleasesUnroutableAllocation: a recorded allocation that a route
// routekeeper does not own now holds is released and the node gets a new
// CIDR, with a log line; the other nodes keep theirs; a route that already
// sends the CIDR to the node itself does not move it.
func TestStoreReleasesUnroutableAllocation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes.allocations.json")
	cfg := Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}}
	nodes := []Request{
		{Name: "w0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}},
		{Name: "w1", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}},
		{Name: "w2", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.22")}},
	}
	first := assign(t, NewStore(path, nil), cfg, nodes)
	if diff := cmp.Diff(map[string]string{"w0": "10.200.0.0/24", "w1": "10.200.1.0/24", "w2": "10.200.2.0/24"}, first); diff != "" {
		t.Fatalf("first allocation (-want +got):\n%s", diff)
	}

	var log bytes.Buffer
	cfg.Reserved = []Reservation{
		{Prefix: pfx("10.200.1.0/24"), What: "route fw in route table rt", Route: true, NextHop: netip.MustParseAddr("10.240.0.100")},
		{Prefix: pfx("10.200.2.0/24"), What: "route by-hand in route table rt", Route: true, NextHop: netip.MustParseAddr("10.240.0.22")},
	}
	got := assign(t, NewStore(path, logTo(&log)), cfg, nodes)
	want := map[string]string{"w0": "10.200.0.0/24", "w1": "10.200.3.0/24", "w2": "10.200.2.0/24"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the custom routes (-want +got):\n%s", diff)
	}
	for _, s := range []string{"released pod CIDR that became unroutable", "node=w1", "podCIDR=10.200.1.0/24", `reservedBy="route fw in route table rt"`, "allocated pod CIDR", "podCIDR=10.200.3.0/24"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log.String())
		}
	}
	if strings.Contains(log.String(), "node=w2") {
		t.Errorf("w2's CIDR, forwarded to w2 by hand, was moved:\n%s", log.String())
	}
	// The new allocation is recorded: the next run changes nothing.
	again := assign(t, NewStore(path, nil), cfg, nodes)
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("second run (-want +got):\n%s", diff)
	}
}

// TestReservationsProperty: over seeded random reservations, no allocated
// node CIDR ever holds a route reservation at least as long as the node
// mask nor overlaps a range reservation (other than one holding the whole
// cluster CIDR), and every block free of them is handed out before the
// cluster CIDR is reported exhausted.
func TestReservationsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 10))
	cluster := pfx("10.200.0.0/20") // 16 blocks of /24
	for iter := range 500 {
		var res []Reservation
		for range rng.IntN(6) {
			bits := 8 + rng.IntN(25)
			a := netip.AddrFrom4([4]byte{10, 200, byte(rng.IntN(20)), byte(rng.IntN(256))})
			res = append(res, Reservation{Prefix: netip.PrefixFrom(a, bits).Masked(), Route: rng.IntN(2) == 0})
		}
		a, err := New(Config{ClusterCIDRs: []netip.Prefix{cluster}, Reserved: res})
		if err != nil {
			t.Fatal(err)
		}
		blocked := func(b netip.Prefix) bool {
			for _, r := range res {
				switch {
				case r.Route && r.Prefix.Bits() >= 24 && b.Contains(r.Prefix.Addr()):
					return true
				case !r.Route && r.Prefix.Overlaps(b) && !(r.Prefix.Bits() <= cluster.Bits() && r.Prefix.Contains(cluster.Addr())):
					return true
				}
			}
			return false
		}
		free := 0
		for i := range 16 {
			if !blocked(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200, byte(i), 0}), 24)) {
				free++
			}
		}
		got := 0
		for n := 0; ; n++ {
			ps, err := a.Allocate("n" + strconv.Itoa(n))
			if err != nil {
				break
			}
			got++
			if blocked(ps[0]) {
				t.Fatalf("case %d: allocated %s despite %+v", iter, ps[0], res)
			}
		}
		if got != free {
			t.Fatalf("case %d: %d CIDRs allocated, %d blocks free of %+v", iter, got, free, res)
		}
	}
}
