package routing

import (
	"fmt"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// What a trace finds about the interconnect between the source and the
// destination (the peerings and gateways; see network.go for Azure's
// rules): where an on-premises source enters Azure, the peering the packet
// crosses to its next hop, and the way the pod's replies take back.

// entry is where an on-premises source enters Azure: the GatewaySubnet of
// a gateway that learned a prefix holding it.
type entry struct {
	gateway *Gateway
	prefix  netip.Prefix
	vnet    *VNet
	subnet  *Subnet
}

// crossing is a peering the packet crosses to reach its next hop.
type crossing struct {
	from, to *VNet
	peering  *Peering // from's peering to `to`; nil: not peered
	back     *Peering // to's peering to from; nil: not peered
	// forwarded: the packet's source lies outside from's address space,
	// so the receiving side sees forwarded traffic.
	forwarded bool
}

// reply is the way the pod's replies take back to the source.
type reply struct {
	subnet *Subnet // the destination node's subnet they leave
	route  *Route  // nil: no route
	vnet   *VNet   // the destination node's network
	// into is the network the reply's route leads to (VNetPeering).
	into    *VNet
	back    *Peering // into's peering to vnet (what accepts the reply)
	problem string   // why the replies are lost; "" when they return
}

// vnetOf returns the network of a subnet, nil when State.VNets does not
// hold it.
func (t *Tracer) vnetOf(s *Subnet) *VNet {
	if s == nil || s.VNetID == "" {
		return nil
	}
	return findVNet(t.st.VNets, s.VNetID)
}

// onPremEntry finds the gateway through which an address outside every
// subnet enters Azure: one whose learned prefixes hold it (the longest
// prefix wins) and whose GatewaySubnet is one of the State's subnets.
func (t *Tracer) onPremEntry(a netip.Addr) *entry {
	var best *entry
	for i := range t.st.VNets {
		v := &t.st.VNets[i]
		for j := range v.Gateways {
			g := &v.Gateways[j]
			for _, p := range g.Learned {
				if !p.Contains(a) || best != nil && best.prefix.Bits() >= p.Bits() {
					continue
				}
				s := t.subnetByID(g.SubnetID)
				if s == nil {
					continue
				}
				best = &entry{gateway: g, prefix: p, vnet: v, subnet: s}
			}
		}
	}
	return best
}

func (t *Tracer) subnetByID(id string) *Subnet {
	for i := range t.st.Subnets {
		if id != "" && armid.Same(t.st.Subnets[i].ID, id) {
			return &t.st.Subnets[i]
		}
	}
	return nil
}

// applyInterconnect applies the rules of peerings and gateways (network.go)
// to a decided result: a next hop in another network must be reached
// through a Connected peering that accepts the packet, and a pod's replies
// to a source outside its network must find their way back.
func (t *Tracer) applyInterconnect(r *Result, f *facts) {
	if tb := t.table(f.subnet.RouteTableID); tb != nil && tb.DisableBGPRoutePropagation && len(f.subnet.VNet.Gateway) > 0 {
		f.noBGPIn = tb.Name
		if f.noBGPIn == "" {
			f.noBGPIn = armid.Name(tb.ID)
		}
	}
	from := t.vnetOf(f.subnet)
	if from == nil {
		return
	}
	var target netip.Addr
	switch {
	case r.Verdict == Delivered && f.dstNodeIP:
		target = r.Destination.Addr
	case (r.Verdict == Delivered || r.Verdict == WrongNode) && r.NextHopType == VirtualAppliance:
		target = r.NextHopIP
	default:
		return
	}
	ts, _ := t.SubnetOf(Endpoint{Addr: target})
	to := t.vnetOf(ts)
	if to != nil && to != from {
		c := &crossing{from: from, to: to, peering: from.peeringTo(to.ID), back: to.peeringTo(from.ID)}
		// Traffic a gateway forwards from on premises needs no
		// allowForwardedTraffic (Azure's peering documentation).
		c.forwarded = f.onPrem == nil && !from.contains(r.Source.Addr)
		f.cross = c
		switch {
		case c.peering == nil || c.back == nil || !c.peering.Connected():
			r.Verdict, r.Node = Unreachable, ""
			return
		case c.forwarded && !c.back.AllowForwardedTraffic:
			r.Verdict, r.Node = NotForwarded, ""
			return
		}
		r.Peering = from.Name + "/" + c.peering.Name
	}
	if r.Verdict == Delivered && !f.dstNodeIP && f.dstNode != nil {
		t.replies(r, f, from)
	}
}

// replies follows the pod's replies (source: the pod's address) from the
// destination node's subnet back to a source outside the pod's network.
func (t *Tracer) replies(r *Result, f *facts, from *VNet) {
	ds, _ := t.SubnetOf(Endpoint{Addr: r.Destination.Addr, Node: f.dstNode.Name})
	dv := t.vnetOf(ds)
	if ds == nil || dv == nil || f.onPrem == nil && dv == from {
		return
	}
	rp := &reply{subnet: ds, vnet: dv}
	f.reply = rp
	best, ok := t.selector(ds).Lookup(r.Source.Addr)
	if ok {
		rp.route = &best
		r.ReturnRoute = &best
	}
	pod := r.Destination.Addr
	switch {
	case !ok:
		rp.problem = "there is no route for them"
	case best.NextHopType == VirtualNetworkGateway && f.onPrem != nil:
		// back on premises through the gateway
	case best.NextHopType == VirtualAppliance:
		// an appliance the trace does not follow
	case best.NextHopType == VNetPeering:
		for i := range t.st.VNets {
			if v := &t.st.VNets[i]; v != dv && v.contains(r.Source.Addr) {
				rp.into = v
			}
		}
		rp.back = rp.into.peeringTo(dv.ID)
		switch {
		case rp.into == nil || rp.back == nil || !rp.back.Connected():
			rp.problem = "no Connected peering carries them back"
		case !dv.contains(pod) && !rp.back.AllowForwardedTraffic:
			rp.problem = fmt.Sprintf("their source %s is outside %s's address space (the node forwards them), and %s's peering %s does not allow forwarded traffic",
				pod, dv.Name, rp.into.Name, rp.back.Name)
		}
	case best.NextHopType == VnetLocal && f.onPrem == nil:
		// the source's network is this one's address space
	default:
		rp.problem = "that route does not lead back to " + r.Source.Addr.String()
	}
	if rp.problem != "" {
		r.Verdict = NoReturn
	}
}

// explainCrossing says which peering the packet crosses, or why it cannot.
func explainCrossing(why func(string, ...any), r *Result, f facts) {
	c := f.cross
	if c == nil {
		return
	}
	what := "the next hop " + r.NextHopIP.String()
	if r.NextHopType != VirtualAppliance {
		what = r.Destination.Addr.String()
	}
	switch {
	case c.peering == nil || c.back == nil:
		why("%s is in %s, which is not peered with %s (both sides need a peering): Azure cannot reach it", what, c.to.Name, c.from.Name)
		return
	case !c.peering.Connected():
		why("%s is in %s, but the peering %s of %s is %s, not Connected: it carries no traffic", what, c.to.Name, c.peering.Name, c.from.Name, c.peering.State)
		return
	}
	if r.NextHopType == VirtualAppliance {
		why("%s is in %s, peered with %s (peering %s, Connected): Azure accepts a virtual appliance in a peered virtual network", what, c.to.Name, c.from.Name, c.peering.Name)
	} else {
		why("%s is in %s, peered with %s (peering %s, Connected)", what, c.to.Name, c.from.Name, c.peering.Name)
	}
	if c.forwarded && c.back.AllowForwardedTraffic {
		why("its source %s is outside %s's address space (traffic forwarded by a node); %s's peering %s allows forwarded traffic", r.Source.Addr, c.from.Name, c.to.Name, c.back.Name)
	}
}

// explainReply says how the pod's replies go back, or why they are lost.
func explainReply(why func(string, ...any), r *Result, f facts) {
	rp := f.reply
	if rp == nil {
		return
	}
	pod, src := r.Destination.Addr, r.Source.Addr
	if rp.route == nil {
		why("replies from %s to %s leave %s with no route: they are dropped", pod, src, rp.subnet.Name)
	} else {
		why("replies from %s to %s leave %s by %s", pod, src, rp.subnet.Name, describe(rp.route))
	}
	switch {
	case rp.problem != "":
		why("the replies are lost: %s", rp.problem)
	case rp.back != nil && !rp.vnet.contains(pod):
		why("they cross back into %s as traffic forwarded by the node; %s's peering %s allows forwarded traffic", rp.into.Name, rp.into.Name, rp.back.Name)
	case rp.route != nil && rp.route.NextHopType == VirtualAppliance:
		why("the trace does not follow the appliance %s further", rp.route.NextHopIP)
	}
}
