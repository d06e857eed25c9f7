package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
)

// buildPeers joins the routers of every pair of peered networks with a
// veth pair, once per pair, and gives its ends their addresses.
func (p *Plane) buildPeers(ctx context.Context, spec Spec) error {
	for _, v := range spec.VNets {
		for _, peer := range v.Peers {
			if v.Name > peer.VNet {
				continue // the pair is built from its other side
			}
			ra, rb := routerNS(p.prefix, v.Name), routerNS(p.prefix, peer.VNet)
			la, lb := peerLink(peer.VNet), peerLink(v.Name)
			have, err := links(ctx, ra)
			if err != nil {
				return err
			}
			if !have[la] {
				if other, err := links(ctx, rb); err != nil {
					return err
				} else if other[lb] { // a leftover whose other end is gone
					if err := delLink(ctx, rb, lb); err != nil {
						return err
					}
				}
				if _, err := ip(ctx, "-n", ra, "link", "add", la, "type", "veth", "peer", "name", lb, "netns", rb); err != nil {
					return err
				}
			}
			// The pairs' addresses follow the set of pairs: set them anew.
			onA, onB := spec.peerAddrs(v.Name, peer.VNet)
			if err := batch(ctx, ra, []string{"addr flush dev " + la, fmt.Sprintf("addr add %s/32 dev %s", onA, la), "link set " + la + " up"}); err != nil {
				return err
			}
			if err := batch(ctx, rb, []string{"addr flush dev " + lb, fmt.Sprintf("addr add %s/32 dev %s", onB, lb), "link set " + lb + " up"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// peerLinksOf are the peer links the router of v keeps.
func peerLinksOf(v VNet) map[string]bool {
	out := map[string]bool{}
	for _, p := range v.Peers {
		out[peerLink(p.VNet)] = true
	}
	return out
}

// peerGateway is the address, on v's link to peer, of the peer's router.
func peerGateway(spec Spec, v, peer string) netip.Addr {
	_, onPeer := spec.peerAddrs(v, peer)
	return onPeer
}

// peerRoutes adds to the router of v what it needs to receive from its
// peers: for each peer, a table with the peer's subnets' routes that name
// one of v's NICs as appliance, and the rules that take packets from the
// peer's link — from the peer's address space, or from anywhere when v's
// side allows forwarded traffic — to that table, then to the NICs; other
// packets from the link are dropped.
func peerRoutes(spec Spec, v VNet, add func(table int, pfx netip.Prefix, typ string, gw netip.Addr, dev string)) []kernelRule {
	var rules []kernelRule
	for _, peer := range v.Peers {
		remote := spec.vnet(peer.VNet)
		if remote == nil {
			continue
		}
		t := peerTable(peer.VNet)
		for _, sn := range remote.Subnets {
			for _, r := range sn.Routes {
				if r.Kind == Appliance && r.Peer == v.Name {
					add(t, r.Prefix, "unicast", r.Via, nodeLink(r.Via))
				}
			}
		}
		link := peerLink(peer.VNet)
		sources := []netip.Prefix{{}}
		if !peer.AllowForwarded {
			sources = remote.Space
			rules = append(rules, kernelRule{Priority: rulePrefPeerDrop, IIf: link, Action: "blackhole"})
		}
		for _, src := range sources {
			r := kernelRule{IIf: link}
			if src.IsValid() {
				r.Src, r.SrcLen = src.Addr().String(), src.Bits()
			}
			r.Priority, r.Table = rulePrefPeerAppliance, strconv.Itoa(t)
			rules = append(rules, r)
			r.Priority, r.Table = rulePrefPeerHosts, strconv.Itoa(hostTable)
			rules = append(rules, r)
		}
	}
	return rules
}
