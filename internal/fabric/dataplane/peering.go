package dataplane

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
)

// Peered networks in the data plane. Two networks with a Connected peering
// have their routers joined by a veth pair (v<hash of the other network>
// in each router, 169.254.0.1 and .2 on its ends). A subnet's route that
// leads into a peer (VNetPeering, or a virtual appliance in the peer) sends
// the packet over that link. The receiving router takes, from the link, the
// packets whose source lies in the sending network's address space — and
// any packet when its side of the peering allows forwarded traffic — and
// hands them to the NIC that holds the destination, or, when a route of
// the sending network names one of its NICs as virtual appliance, to that
// NIC (a per-peer table of those routes); everything else from the link is
// dropped, as Azure drops forwarded traffic a peering does not allow.

// Rule preferences of the peer links (between the subnet rules, 1000, and
// the host rule, 2000).
const (
	rulePrefPeerAppliance = 1500 // iif v<peer> [from <peer space>] lookup peerTable(peer)
	rulePrefPeerHosts     = 1501 // iif v<peer> [from <peer space>] lookup hostTable
	rulePrefPeerDrop      = 1502 // iif v<peer> blackhole: forwarded traffic not allowed
)

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// peerLink is the name, in a router, of its link to the peered network's
// router.
func peerLink(vnet string) string { return fmt.Sprintf("v%08x", fnv32(vnet)) }

// peerTable is the routing table, in a router, of the routes by which the
// peered network sends packets to this network's NICs as appliances.
func peerTable(vnet string) int { return 2_000_000 + int(fnv32(vnet)%1_000_000) }

// peerAddrs are the addresses of the two ends of the link between the
// routers of networks a and b: each pair of the Spec gets its own /30 of
// 169.254.0.0/16, by its rank among the pairs in name order (so no router
// holds a peer's address), and the network of the smaller name gets .1.
func (s *Spec) peerAddrs(a, b string) (onA, onB netip.Addr) {
	lo, hi := min(a, b), max(a, b)
	var pairs []string
	for _, v := range s.VNets {
		for _, p := range v.Peers {
			if v.Name < p.VNet {
				pairs = append(pairs, v.Name+"\x00"+p.VNet)
			}
		}
	}
	slices.Sort(pairs)
	i, _ := slices.BinarySearch(pairs, lo+"\x00"+hi)
	base := 4 * i
	one := netip.AddrFrom4([4]byte{169, 254, byte(base >> 8), byte(base&0xff) + 1})
	two := one.Next()
	if a == lo {
		return one, two
	}
	return two, one
}

func (s *Spec) vnet(name string) *VNet {
	for i := range s.VNets {
		if s.VNets[i].Name == name {
			return &s.VNets[i]
		}
	}
	return nil
}

// validatePeers checks the peerings of a Spec: a peer is another network
// of the Spec, listed once, that lists this one back (a Connected peering
// has both sides); the link names of a router's peers differ; and no two
// subnets of a network send one prefix to different appliances of the same
// peer (the peer's router could not tell them apart).
func validatePeers(s *Spec, bad func(field, format string, args ...any)) {
	for i, v := range s.VNets {
		links := map[string]string{}
		for j, p := range v.Peers {
			f := fmt.Sprintf("vnets[%d].peers[%d]", i, j)
			remote := s.vnet(p.VNet)
			switch {
			case p.VNet == v.Name:
				bad(f, "%s is peered with itself", v.Name)
				continue
			case remote == nil:
				bad(f, "%q is not a virtual network of the spec", p.VNet)
				continue
			case !slices.ContainsFunc(remote.Peers, func(b Peer) bool { return b.VNet == v.Name }):
				bad(f, "%s is peered with %s, but %s is not peered back (a Connected peering has both sides)", v.Name, p.VNet, p.VNet)
			}
			if j >= 1<<14 {
				bad(f, "more peerings than the data plane's link addresses hold")
			}
			if other, dup := links[peerLink(p.VNet)]; dup {
				bad(f, "%q and %q get the same link name %s; rename one", other, p.VNet, peerLink(p.VNet))
			}
			links[peerLink(p.VNet)] = p.VNet
			via := map[netip.Prefix]netip.Addr{}
			for _, sn := range v.Subnets {
				for _, r := range sn.Routes {
					if r.Kind != Appliance || r.Peer != p.VNet {
						continue
					}
					if a, ok := via[r.Prefix]; ok && a != r.Via {
						bad(f, "subnets of %s send %s to %s and to %s in %s; the data plane cannot tell them apart", v.Name, r.Prefix, a, r.Via, p.VNet)
					}
					via[r.Prefix] = r.Via
				}
			}
		}
	}
}
