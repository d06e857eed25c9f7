package overlay

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// gatewaySubnet is the subnet of a network's gateways: its own address is
// no client (on-premises sources are traced from their ranges instead).
const gatewaySubnet = "GatewaySubnet"

// reachability traces, with Azure's route selection (internal/routing),
// from every subnet that holds no node — in the node networks, in the
// networks peered with them — and from every on-premises range a gateway
// learned, to every node's pod CIDR: whatever is delivered today is a
// client that reaches pod IPs through routes, which an overlay takes away
// ("endpoints outside the cluster can't connect to a pod directly",
// Azure CNI Overlay overview).
func reachability(in Input, r *Report, add addFunc) {
	st := in.Routing
	if len(st.Nodes) == 0 {
		return
	}
	var nodeIPs []netip.Addr
	for _, n := range st.Nodes {
		nodeIPs = append(nodeIPs, n.InternalIPs...)
	}
	type source struct {
		name, id, vnet string
		prefix         netip.Prefix
		from           func(v4 bool) (netip.Addr, bool)
	}
	var sources []source
	for i := range st.Subnets {
		s := &st.Subnets[i]
		if armid.Contains(in.Subnets, s.ID) || strings.EqualFold(s.Name, gatewaySubnet) || holdsAny(s.Prefixes, nodeIPs) || len(s.Prefixes) == 0 {
			continue
		}
		sources = append(sources, source{name: s.Name, id: s.ID, vnet: s.VNetName, prefix: s.Prefixes[0], from: func(v4 bool) (netip.Addr, bool) { return s.FirstAddr(v4) }})
	}
	for _, p := range routing.OnPremises(st.VNets) {
		sources = append(sources, source{name: "on premises " + p.String(), prefix: p, from: func(v4 bool) (netip.Addr, bool) {
			a := p.Masked().Addr().Next()
			return a, a.Is4() == v4 && p.Contains(a)
		}})
	}
	for _, src := range sources {
		rc := Reacher{Source: src.name, SourceID: src.id, Prefix: src.prefix, VNet: src.vnet, Reached: []netip.Prefix{}}
		var example *routing.Result
		for _, n := range st.Nodes {
			for _, pod := range n.PodCIDRs {
				from, ok := src.from(pod.Addr().Is4())
				if !ok {
					continue
				}
				rc.Total++
				res := in.Deliver(routing.Endpoint{Addr: from}, routing.Endpoint{Addr: routing.PodAddr(pod), Node: n.Name})
				if !res.OK() {
					continue
				}
				rc.Reached = append(rc.Reached, pod)
				if example == nil {
					example = res
				}
			}
		}
		if example == nil {
			continue
		}
		rc.RouteTable = example.RouteTableID
		via, by := "its system routes", "a system route"
		if r := example.Route; r != nil && !r.IsSystem() {
			via = "route table " + armid.Name(example.NextHopRouteTable)
			by = fmt.Sprintf("route %s %s → %s", r.Name, r.Prefix, example.NextHopIP)
		} else if r != nil {
			by = fmt.Sprintf("the %s route %s → %s", strings.ToLower(r.Source), r.Prefix, r.NextHopType)
		}
		rc.Example = fmt.Sprintf("%s → %s by %s", example.Source.Addr, example.Destination.Addr, by)
		r.Reachers = append(r.Reachers, rc)
		where := src.name
		if src.id != "" {
			where = fmt.Sprintf("subnet %s (%s, in %s)", src.name, src.prefix, src.vnet)
		}
		resource := src.id
		if resource == "" {
			resource = src.prefix.String()
		}
		add(finding.Error, RuleReachability, resource, fmt.Sprintf("routekeeper trace %s %s", example.Source.Addr, example.Destination.Addr),
			"%s reaches %d of %d node pod CIDRs today through %s (e.g. %s): in an overlay pod IPs are not reachable from outside the cluster, so an Application Gateway backend, a VM, a peered network or an on-premises client that talks to pods directly loses them at the move. Publish the pods as a Service (an internal LoadBalancer) or through an ingress with Overlay support, and point those clients there first",
			where, len(rc.Reached), rc.Total, via, rc.Example)
	}
}

func holdsAny(ps []netip.Prefix, as []netip.Addr) bool {
	for _, a := range as {
		if slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return true
		}
	}
	return false
}
