package scenario

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
)

// ParseNodes reads a script's nodes block: NAME IP[,IP] [CIDR[,CIDR]]
// [problem=REASON] [available].
func ParseNodes(lines []string) ([]source.Node, error) {
	var out []source.Node
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("node line %q: want NAME IP [CIDR]", l)
		}
		n := source.Node{Name: f[0]}
		for _, ip := range strings.Split(f[1], ",") {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return nil, err
			}
			n.InternalIPs = append(n.InternalIPs, a)
		}
		for _, x := range f[2:] {
			if x == "available" {
				n.NetworkAvailable = true
				continue
			}
			if p, ok := strings.CutPrefix(x, "problem="); ok {
				n.Problem = &source.Problem{Reason: reason.Reason(p), Message: "the source could not complete the node: " + p}
				continue
			}
			for _, c := range strings.Split(x, ",") {
				p, err := netip.ParsePrefix(c)
				if err != nil {
					return nil, err
				}
				n.PodCIDRs = append(n.PodCIDRs, p)
			}
		}
		out = append(out, n)
	}
	return out, nil
}
