package routing

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// Explain fills r.Reasons (and the shadowed routes) of a result of Verdict.
func (t *Tracer) Explain(r *Result) {
	full, f := t.decide(r.Source, r.Destination, true)
	*r = *full
	r.Reasons = t.explain(r, f)
}

// explain is the chain of reasoning of a decided result.
func (t *Tracer) explain(r *Result, f facts) []string {
	var out []string
	why := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	src, dst := r.Source, r.Destination
	s := f.subnet
	if s == nil {
		why("%s is in none of the subnets %s", src.Addr, t.subnetNames())
		return out
	}
	if f.onPrem != nil {
		e := f.onPrem
		why("%s is on premises: gateway %s learned %s; it enters Azure through %s in %s (%s) of %s",
			src.Addr, e.gateway.Name, e.prefix, e.gateway.Name, s.Name, prefixes(s.Prefixes), e.vnet.Name)
	} else if r.Source.Node != "" && f.from != src.Addr {
		why("%s is on node %s, whose NIC %s is in %s (%s)", src.Addr, r.Source.Node, f.from, s.Name, prefixes(s.Prefixes))
	} else {
		who := ""
		if r.Source.Node != "" {
			who = " (" + r.Source.Node + ")"
		}
		why("%s%s is in %s (%s)", src.Addr, who, s.Name, prefixes(s.Prefixes))
	}

	target := dst.Addr.String() // what the messages say the route is for
	switch {
	case f.dstNode != nil && f.dstCIDR.IsValid():
		target = f.dstCIDR.String()
		why("%s is in node %s's pod CIDR %s", dst.Addr, f.dstNode.Name, f.dstCIDR)
	case f.dstNode != nil:
		why("%s is node %s's address", dst.Addr, f.dstNode.Name)
	default:
		why("%s is outside every node's pod CIDR", dst.Addr)
	}
	if dst.Node != "" && f.dstNode != nil && dst.Node != f.dstNode.Name {
		why("%s was given as a pod of %s, but %s's pod CIDR holds it", dst.Addr, dst.Node, f.dstNode.Name)
	}

	best := r.Route
	tableName := armid.Name(s.RouteTableID)
	switch {
	case s.RouteTableID == "":
		why("%s has no route table: %s matches %s", s.Name, target, describe(best))
	case !f.tableRead:
		why("%s uses route table %s, which could not be read: only system routes are shown", s.Name, tableName)
	case best != nil && !best.IsSystem() && f.dstCIDR.IsValid() && best.Prefix.Bits() < f.dstCIDR.Bits():
		why("%s uses %s, which has no route for %s: %s matches %s", s.Name, tableName, target, dst.Addr, describe(best))
	case best != nil && !best.IsSystem():
		why("%s uses %s: %s matches %s", s.Name, tableName, dst.Addr, describe(best))
	default:
		why("%s uses %s, which has no route for %s: it matches %s", s.Name, tableName, target, describe(best))
	}
	if f.noBGPIn != "" {
		why("%s disables gateway route propagation: the routes the gateway learned are not in %s", f.noBGPIn, s.Name)
	}
	if t.st.ConfiguredTableID != "" && s.RouteTableID != "" && !s.Peered && !armid.Same(s.RouteTableID, t.st.ConfiguredTableID) {
		why("%s is not the configured route table %s", tableName, armid.Name(t.st.ConfiguredTableID))
	}
	for _, sh := range r.Shadowed {
		if sh.State != StateInvalid && best != nil && sh.Prefix == best.Prefix {
			why("it wins over %s of the same prefix", describe(&sh))
		}
	}

	explainCrossing(why, r, f)
	switch r.Verdict {
	case NotForwarded:
		c := f.cross
		why("dropped at the peering: its source %s is outside %s's address space (traffic forwarded by a node), and %s's peering %s does not allow forwarded traffic (allowForwardedTraffic)",
			src.Addr, c.from.Name, c.to.Name, c.back.Name)
	case Dropped:
		why("dropped: next hop None")
	case ToInternet:
		why("sent to the Internet (outbound through Azure's SNAT), not to a node")
	case ToGateway:
		why("sent to the virtual network gateway, not to a node")
	case ToAppliance:
		why("sent to the virtual appliance %s, which is not a node of the cluster", r.NextHopIP)
	case Unreachable:
		why("the virtual network delivers %s only to a NIC that has this address, and no node has it", dst.Addr)
	case WrongNode:
		n := t.byName[r.Node]
		why("sent to node %s (%s), whose pod CIDRs %s do not contain %s: the node drops or misroutes it", n.Name, r.NextHopIP, prefixes(n.PodCIDRs), dst.Addr)
	case Delivered, NoReturn:
		n := t.byName[r.Node]
		switch {
		case r.NextHopType != VirtualAppliance:
			why("delivered to node %s (%s) in the virtual network", n.Name, dst.Addr)
		case f.dstNodeIP:
			why("delivered to node %s (%s)", n.Name, r.NextHopIP)
		default:
			for _, p := range n.PodCIDRs {
				if p.Contains(dst.Addr) {
					why("delivered to node %s (%s), whose pod CIDR %s contains %s", n.Name, r.NextHopIP, p, dst.Addr)
					break
				}
			}
		}
	}
	explainReply(why, r, f)
	if len(t.st.Unread) > 0 {
		why("not read (permission missing), so not part of this trace: %s", strings.Join(t.st.Unread, ", "))
	}
	return out
}

func (t *Tracer) subnetNames() string {
	var names []string
	for _, s := range t.st.Subnets {
		names = append(names, fmt.Sprintf("%s (%s)", s.Name, prefixes(s.Prefixes)))
	}
	if len(names) == 0 {
		return "(none configured)"
	}
	return strings.Join(names, ", ")
}

// describe says a route for the chain of reasoning.
func describe(r *Route) string {
	if r == nil {
		return "no route (dropped)"
	}
	hop := string(r.NextHopType)
	if r.NextHopIP.IsValid() {
		hop += " " + r.NextHopIP.String()
	}
	if r.IsSystem() {
		return fmt.Sprintf("the system route %s → %s", r.Prefix, hop)
	}
	if r.Source == SourceBGP {
		return fmt.Sprintf("the BGP route %s → %s", r.Prefix, hop)
	}
	return fmt.Sprintf("the user route %s %s → %s", r.Name, r.Prefix, hop)
}

func prefixes(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
