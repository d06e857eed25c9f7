package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
)

// Verdict is where the data plane delivers a packet, as Trace computes it.
type Verdict struct {
	Delivered bool
	// To is the node or pod ("node/pod-ip") that receives it.
	To string
	// Path lists the hops: "worker-0", "router kubernetes-subnet: 10.200.1.0/24 Appliance 10.240.0.21", ...
	Path []string
	// Reason says why a packet is dropped.
	Reason string
}

// Trace follows a packet from src (a node's or pod's address) to dst
// through spec as the data plane forwards it: the source node, the VNet
// router with the effective routes of the source subnet, appliances (nodes
// forward what is not theirs back to the router), the destination node
// and pod. It is the model the probe's results are checked against.
func Trace(spec Spec, src, dst netip.Addr) (Verdict, error) {
	var v Verdict
	owner := func(a netip.Addr) (*Node, bool) { // node, isPod
		for i := range spec.Nodes {
			n := &spec.Nodes[i]
			if n.IP == a {
				return n, false
			}
			if slices.Contains(n.Pods, a) {
				return n, true
			}
		}
		return nil, false
	}
	at, srcPod := owner(src)
	if at == nil {
		return v, fmt.Errorf("source %s is no node's or pod's address", src)
	}
	for hop := 0; hop < 16; hop++ {
		v.Path = append(v.Path, at.Name)
		// Azure hands a NIC without IP forwarding only what is addressed
		// to it, and takes from it only what it sends from its own address.
		local := dst == at.IP || slices.Contains(at.Pods, dst)
		arrivedForOther := hop > 0 && dst != at.IP
		leavesFromOther := !local && (hop > 0 || srcPod)
		// The node's kernel does not forward at all, so even two of its
		// own pods cannot talk (in Azure they could: that traffic never
		// reaches the NIC). The data plane's one known difference here.
		podToPod := srcPod && dst != at.IP && local
		if at.NoForwarding && (arrivedForOther || leavesFromOther || podToPod) {
			v.Reason = fmt.Sprintf("%s's NIC has IP forwarding disabled", at.Name)
			return v, nil
		}
		switch {
		case dst == at.IP:
			v.Delivered, v.To = true, at.Name
			return v, nil
		case slices.Contains(at.Pods, dst):
			v.Delivered, v.To = true, at.Name+"/"+dst.String()
			return v, nil
		case at.PodCIDR.IsValid() && at.PodCIDR.Contains(dst):
			v.Reason = fmt.Sprintf("%s has no pod %s in its pod CIDR %s", at.Name, dst, at.PodCIDR)
			return v, nil
		}
		sn := findSubnet(spec, at.VNet, at.Subnet)
		r, ok := longestMatch(sn.Routes, dst)
		if !ok {
			v.Reason = fmt.Sprintf("subnet %s has no route to %s", sn.Name, dst)
			return v, nil
		}
		v.Path = append(v.Path, fmt.Sprintf("router %s: %s %s %s", sn.Name, r.Prefix, r.Kind, viaString(r)))
		next := dst
		switch r.Kind {
		case Deliver:
		case Appliance:
			next = r.Via
		default:
			v.Reason = fmt.Sprintf("route %s (%s) of subnet %s: %s", r.Prefix, r.Name, sn.Name, r.Kind)
			return v, nil
		}
		into := at.VNet
		if r.Peer != "" {
			into = r.Peer
			if why := crossing(spec, at.VNet, r.Peer, src); why != "" {
				v.Reason = why
				return v, nil
			}
			v.Path = append(v.Path, "peering "+at.VNet+" → "+r.Peer)
		}
		n, isPod := owner(next)
		if n == nil || isPod || n.VNet != into {
			v.Reason = fmt.Sprintf("no NIC holds %s in virtual network %s", next, into)
			return v, nil
		}
		at = n
	}
	v.Reason = "forwarding loop"
	return v, nil
}

// crossing says why a packet from src is dropped crossing the peering
// from network `from` into `to`, "" when it crosses: a source outside
// from's address space is forwarded traffic, which to's side of the
// peering must allow.
func crossing(spec Spec, from, to string, src netip.Addr) string {
	fv, tv := spec.vnet(from), spec.vnet(to)
	if fv == nil || tv == nil {
		return fmt.Sprintf("no peering joins %s and %s", from, to)
	}
	if slices.ContainsFunc(fv.Space, func(p netip.Prefix) bool { return p.Contains(src) }) {
		return ""
	}
	for _, p := range tv.Peers {
		if p.VNet == from && p.AllowForwarded {
			return ""
		}
	}
	return fmt.Sprintf("dropped at the peering into %s: source %s is outside %s's address space and %s does not allow forwarded traffic", to, src, from, to)
}

func viaString(r Route) string {
	if r.Kind == Appliance {
		return r.Via.String()
	}
	return ""
}

func findSubnet(spec Spec, vnet, subnet string) Subnet {
	for _, v := range spec.VNets {
		if v.Name != vnet {
			continue
		}
		for _, s := range v.Subnets {
			if s.Name == subnet {
				return s
			}
		}
	}
	return Subnet{Name: subnet}
}

func longestMatch(routes []Route, dst netip.Addr) (Route, bool) {
	best, ok := Route{}, false
	for _, r := range routes {
		if r.Prefix.Contains(dst) && (!ok || r.Prefix.Bits() > best.Prefix.Bits()) {
			best, ok = r, true
		}
	}
	return best, ok
}
