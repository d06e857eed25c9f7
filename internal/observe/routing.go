package observe

import (
	"fmt"
	"slices"

	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
)

// RoutingState is what Azure's route selection needs, from an observation
// made with Scope.Routing: every subnet of the networks read (with the
// network's address space) and the route tables they really use, plus the
// table routekeeper keeps. A network or table that does not exist is left
// out (its subnets are then in no subnet, or have only system routes, as
// in Azure); one that could not be read is an error, since a trace
// without it would be wrong.
func (o *Observation) RoutingState(nodes []source.Node) (routing.State, error) {
	st := routing.State{Nodes: nodes, ConfiguredTableID: o.scope.Table}
	for _, n := range o.Networks() {
		switch {
		case n.Err != nil:
			return st, fmt.Errorf("reading virtual network %s: %w", n.ID, n.Err)
		case n.Network != nil:
			st.Subnets = append(st.Subnets, RoutingSubnets(n.Network)...)
		}
	}
	if o.interconnect.err != nil {
		return st, o.interconnect.err
	}
	st.Subnets = append(st.Subnets, o.interconnect.subnets...)
	st.VNets = slices.Clone(o.interconnect.vnets)
	st.Unread = slices.Clone(o.interconnect.unread)
	for _, t := range o.Tables() {
		switch {
		case t.Err != nil:
			return st, t.Err // it names the operation and the table
		case t.Table != nil:
			st.Tables = append(st.Tables, t.Table)
		}
	}
	return st, nil
}

// RoutingSubnets are a network's subnets for routing.
func RoutingSubnets(v *VirtualNetwork) []routing.Subnet {
	n := routing.Network{AddressSpace: parsePrefixes(v.AddressPrefixes)}
	out := make([]routing.Subnet, 0, len(v.Subnets))
	for _, s := range v.Subnets {
		out = append(out, routing.Subnet{ID: s.ID, Name: s.Name, VNetID: v.ID, VNetName: v.Name, VNet: n, RouteTableID: s.RouteTableID, Prefixes: parsePrefixes(s.AddressPrefixes)})
	}
	return out
}
