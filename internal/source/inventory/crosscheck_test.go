package inventory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// TestOverlapSweepMatchesPairwise: the sorted sweep reports exactly the
// problems, in the same order, as the obvious pairwise comparison it
// replaced, on seeded random inventories full of equal, nested and
// disjoint pod CIDRs of both families.
func TestOverlapSweepMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 10))
	for iter := range 300 {
		n := 1 + rng.IntN(40)
		var b strings.Builder
		b.WriteString("nodes:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - name: n%d\n    internalIPs: [10.0.%d.%d, fd00::%x]\n    podCIDRs: [", i, i/250, i%250+1, i+1)
			var cidrs []string
			if rng.IntN(5) > 0 {
				bits := 22 + rng.IntN(5)
				a := netip.AddrFrom4([4]byte{10, 200, byte(rng.IntN(8)), byte(rng.IntN(4) * 64)})
				cidrs = append(cidrs, netip.PrefixFrom(a, bits).Masked().String())
			}
			if rng.IntN(3) == 0 {
				bits := 60 + rng.IntN(5)
				a := netip.AddrFrom16([16]byte{0xfd, 0, 0, 0x10, 0, 0, 0, byte(rng.IntN(16))})
				cidrs = append(cidrs, netip.PrefixFrom(a, bits).Masked().String())
			}
			b.WriteString(strings.Join(cidrs, ", ") + "]\n")
		}
		data := []byte(b.String())
		svc := []netip.Prefix{netip.MustParsePrefix("10.200.7.0/25")}
		_, err := Parse("nodes.yaml", data, svc)
		got := problems(err)
		want := pairwise(t, data, svc)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d:\n%s\nsweep:\n  %s\npairwise:\n  %s", iter, data, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

func problems(err error) []string {
	var ie *Error
	if !errors.As(err, &ie) {
		return nil
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = p.String()
	}
	return out
}

// pairwise is the former crossCheck: every pod CIDR against every earlier
// one.
func pairwise(t *testing.T, data []byte, svc []netip.Prefix) []string {
	t.Helper()
	p := &parser{file: "nodes.yaml"}
	var nodes []rawNode
	{
		q := &parser{file: "nodes.yaml"}
		doc, err := yamlfile.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range doc.Get("nodes").Items {
			nodes = append(nodes, q.node(i, it))
		}
		p.probs = q.probs
	}
	names := map[string]int{}
	ips := map[netip.Addr]int{}
	type claim struct {
		node int
		cidr netip.Prefix
	}
	var claims []claim
	for i, n := range nodes {
		at := fmt.Sprintf("nodes[%d]", i)
		if j, dup := names[n.name]; dup {
			p.bad(n.nameLine, at+".name", strconv.Quote(n.name), fmt.Sprintf("the same name as nodes[%d]", j))
		} else {
			names[n.name] = i
		}
		for k, a := range n.internalIPs {
			if _, dup := ips[a]; !dup {
				ips[a] = i
			}
			_ = k
		}
		for k, c := range n.podCIDRs {
			for _, s := range svc {
				if s.Overlaps(c) {
					p.bad(n.cidrs[k].line, n.cidrs[k].field, strconv.Quote(c.String()), fmt.Sprintf("overlaps the service range %s", s.Masked()))
				}
			}
			for _, o := range claims {
				if o.cidr.Overlaps(c) {
					p.bad(n.cidrs[k].line, n.cidrs[k].field, strconv.Quote(c.String()), fmt.Sprintf("overlaps %s of nodes[%d] (%s)", o.cidr, o.node, nodes[o.node].name))
				}
			}
			claims = append(claims, claim{i, c})
		}
	}
	return problems(p.err())
}
