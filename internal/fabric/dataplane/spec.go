// Package dataplane gives the local fabric a Linux data plane: network
// namespaces in which packets are forwarded the way Azure forwards them,
// so that a subnet that loses its route table really drops pod traffic.
//
// Every virtual network is a router namespace; every node (a NIC) is a
// namespace holding its private IP, joined to its VNet's router by a veth
// pair; every pod is a namespace joined to its node, with an address in
// the node's pod CIDR. Two peered networks' routers are joined by a veth
// pair of their own (peering_linux.go). The router forwards by the effective routes of the
// packet's source subnet: one kernel routing table per subnet, chosen by
// the ingress interface (ip rule iif). A VnetLocal route delivers to the
// NIC that holds the address, VirtualAppliance forwards to the appliance's
// NIC, None is a blackhole and Internet is unreachable: nothing ever
// leaves the namespaces.
//
// The package is driven by a Spec (what to build), which FromState
// computes from the fabric's live state; Plane.Apply makes the namespaces
// match a Spec, idempotently, adding before deleting. Probe sends UDP
// packets between two addresses at a fixed rate and reports the loss.
package dataplane

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
)

// Spec is the network the data plane builds.
type Spec struct {
	VNets []VNet
	Nodes []Node
}

// VNet is a virtual network: one router namespace.
type VNet struct {
	Name    string
	Subnets []Subnet
	// Space is the network's IPv4 address space: a packet it sends over a
	// peering with a source outside it is forwarded traffic.
	Space []netip.Prefix
	// Peers are the networks it has a Connected peering with.
	Peers []Peer
}

// Peer is a Connected peering, as this network's router sees it.
type Peer struct {
	// VNet is the remote network's name (its router).
	VNet string
	// AllowForwarded: this network's side of the peering allows
	// forwarded traffic, so packets the remote network forwards (a source
	// outside the remote's Space) are accepted.
	AllowForwarded bool
}

// Subnet is a subnet and the effective routes of packets that leave it.
type Subnet struct {
	Name   string
	Prefix netip.Prefix
	// Routes are the subnet's effective routes, at most one per prefix; the
	// router picks the longest prefix that matches.
	Routes []Route
}

// Kind is what the router does with a packet a route matches.
type Kind int

const (
	// Deliver hands the packet to the NIC that holds its destination
	// address in the VNet (Azure next hop VnetLocal); none: dropped.
	Deliver Kind = iota + 1
	// Appliance forwards the packet to the NIC with address Via (Azure
	// VirtualAppliance); no such NIC: dropped.
	Appliance
	// Blackhole drops the packet silently (Azure None).
	Blackhole
	// Unreachable drops the packet (Azure Internet, VirtualNetworkGateway:
	// nothing leaves the namespaces).
	Unreachable
)

func (k Kind) String() string {
	switch k {
	case Deliver:
		return "Deliver"
	case Appliance:
		return "Appliance"
	case Blackhole:
		return "Blackhole"
	case Unreachable:
		return "Unreachable"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Route is one effective route of a subnet.
type Route struct {
	Prefix netip.Prefix
	Kind   Kind
	Via    netip.Addr // for Appliance
	// Peer is the peered network the route leads into: the one whose
	// address space a VNetPeering route (Deliver) covers, or whose NIC an
	// Appliance route's Via is. "" within the network.
	Peer string
	// Name says where the route comes from (a UDR's name or a system
	// route's description), for logs and traces.
	Name string
}

// Node is a NIC: a namespace with one private IP in a subnet of a VNet,
// forwarding for the pods of its pod CIDR.
type Node struct {
	Name    string
	VNet    string
	Subnet  string
	IP      netip.Addr
	PodCIDR netip.Prefix // invalid: no pods
	Pods    []netip.Addr
	// NoForwarding: the node's NIC has IP forwarding disabled, so Azure
	// drops what reaches it for another address (its pods) and what it
	// sends from another address (its pods' traffic): the node does not
	// forward. The zero value forwards (a node of an inventory, no NIC).
	NoForwarding bool
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$`)

// Validate checks that the Spec can be built; every problem names its
// field and value.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	// uniqueName reports a name that is not valid or that seen holds already
	// (why, when set, says what the duplicate breaks), and adds it to seen.
	uniqueName := func(field, name string, seen map[string]bool, why string) {
		if !nameRE.MatchString(name) {
			bad(field, "%q is not a valid name", name)
		}
		if seen[name] {
			bad(field, "%q is declared twice%s", name, why)
		}
		seen[name] = true
	}
	subnets := map[[2]string]netip.Prefix{}
	vnets := map[string]bool{}
	for i, v := range s.VNets {
		f := fmt.Sprintf("vnets[%d]", i)
		uniqueName(f+".name", v.Name, vnets, " (the data plane names its router after the VNet)")
		for j, sn := range v.Subnets {
			g := fmt.Sprintf("%s.subnets[%d]", f, j)
			if !nameRE.MatchString(sn.Name) {
				bad(g+".name", "%q is not a valid name", sn.Name)
			}
			if !sn.Prefix.IsValid() || !sn.Prefix.Addr().Is4() || sn.Prefix.Bits() > 30 {
				bad(g+".prefix", "%s is not an IPv4 prefix of /30 or larger", sn.Prefix)
			}
			if _, dup := subnets[[2]string{v.Name, sn.Name}]; dup {
				bad(g+".name", "%q is declared twice", sn.Name)
			}
			subnets[[2]string{v.Name, sn.Name}] = sn.Prefix
			seen := map[netip.Prefix]bool{}
			for k, r := range sn.Routes {
				h := fmt.Sprintf("%s.routes[%d]", g, k)
				if !r.Prefix.IsValid() || !r.Prefix.Addr().Is4() || r.Prefix != r.Prefix.Masked() {
					bad(h+".prefix", "%s is not a masked IPv4 prefix", r.Prefix)
				}
				if seen[r.Prefix] {
					bad(h+".prefix", "%s appears twice; a subnet has one effective route per prefix", r.Prefix)
				}
				seen[r.Prefix] = true
				switch r.Kind {
				case Appliance:
					if !r.Via.Is4() {
						bad(h+".via", "%s is not an IPv4 address (required with Appliance)", r.Via)
					}
				case Deliver, Blackhole, Unreachable:
				default:
					bad(h+".kind", "%v is not a route kind", r.Kind)
				}
				if r.Peer != "" && !slices.ContainsFunc(v.Peers, func(p Peer) bool { return p.VNet == r.Peer }) {
					bad(h+".peer", "%q is not a peer of virtual network %s", r.Peer, v.Name)
				}
			}
		}
	}
	validatePeers(s, bad)
	ips := map[netip.Addr]string{}
	names := map[string]bool{}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		uniqueName(f+".name", n.Name, names, "")
		p, ok := subnets[[2]string{n.VNet, n.Subnet}]
		if !ok {
			bad(f+".subnet", "%s/%s is not a subnet of the spec", n.VNet, n.Subnet)
		} else if !p.Contains(n.IP) || n.IP == p.Addr() || n.IP == gateway(p) {
			bad(f+".ip", "%s is not a host address of subnet %s (%s; .1 is the gateway)", n.IP, n.Subnet, p)
		}
		if other, dup := ips[n.IP]; dup {
			bad(f+".ip", "%s is also the address of %s", n.IP, other)
		}
		ips[n.IP] = n.Name
		if len(n.Pods) > 0 && (!n.PodCIDR.IsValid() || !n.PodCIDR.Addr().Is4() || n.PodCIDR.Bits() > 30) {
			bad(f+".podCIDR", "%s is not an IPv4 prefix of /30 or larger; the node has pods", n.PodCIDR)
		}
		for j, a := range n.Pods {
			g := fmt.Sprintf("%s.pods[%d]", f, j)
			if !n.PodCIDR.Contains(a) || a == n.PodCIDR.Addr() || a == gateway(n.PodCIDR) {
				bad(g, "%s is not a pod address of %s (.1 is the node's side)", a, n.PodCIDR)
			}
			if other, dup := ips[a]; dup {
				bad(g, "%s is also the address of %s", a, other)
			}
			ips[a] = n.Name + " pod"
		}
	}
	return errors.Join(errs...)
}

// gateway is the first host address of a prefix: Azure's default gateway
// of a subnet (x.x.x.1), and the node's side of its pods' links.
func gateway(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }
