package routing

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/source"
)

// Resolve turns a trace argument into an endpoint: an IP, a node name (for
// a source, the node's address of family fam; for a destination, the first
// pod address of the node's pod CIDR of that family, see PodAddr), or
// node/IP. fam is 4 or 6, 0 for either.
func Resolve(nodes []source.Node, arg string, asDestination bool, fam int) (Endpoint, error) {
	if name, ip, ok := strings.Cut(arg, "/"); ok {
		if a, err := netip.ParseAddr(ip); err == nil && !strings.Contains(name, ":") {
			n := findNode(nodes, name)
			if n == nil {
				return Endpoint{}, fmt.Errorf("%q: no node named %q", arg, name)
			}
			return Endpoint{Addr: a.Unmap(), Node: n.Name}, nil
		}
	}
	if a, err := netip.ParseAddr(arg); err == nil {
		return Endpoint{Addr: a.Unmap()}, nil
	}
	n := findNode(nodes, arg)
	if n == nil {
		return Endpoint{}, fmt.Errorf("%q is neither an IP address, a node name nor node/pod-ip", arg)
	}
	if asDestination {
		for _, p := range n.PodCIDRs {
			if fam == 0 || family(p.Addr()) == fam {
				return Endpoint{Addr: PodAddr(p), Node: n.Name}, nil
			}
		}
		return Endpoint{}, fmt.Errorf("node %s has no pod CIDR (of IPv%d): give a pod IP", n.Name, fam)
	}
	for _, ip := range n.InternalIPs {
		if fam == 0 || family(ip) == fam {
			return Endpoint{Addr: ip, Node: n.Name}, nil
		}
	}
	return Endpoint{}, fmt.Errorf("node %s has no internal IP (of IPv%d)", n.Name, fam)
}

// PodAddr is the address a trace to a pod CIDR uses: the first one after
// the network address (the pod bridge's, on most CNIs).
func PodAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if n := a.Next(); p.Contains(n) {
		return n
	}
	return a
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

func findNode(nodes []source.Node, name string) *source.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}
