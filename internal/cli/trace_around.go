package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// aroundReader is what a trace reads of the network around the cluster's
// virtual networks: their peerings and the gateways of them and their
// peers. *azure.Client is one.
type aroundReader interface {
	ListPeerings(ctx context.Context, vnetID string) ([]azure.Peering, error)
	VirtualNetworkGateways(ctx context.Context, vnetID string, notOnPremises []string) ([]azure.Gateway, error)
}

// readNetworkAround adds to st, read by readRoutingState, the network
// around the subnets' virtual networks: each network's peerings, the
// subnets (and the route tables they use) of the peered networks, and the
// gateways of all of them with the on-premises prefixes they learned. A
// trace can then start in a peered network or on premises, and cross
// peerings as Azure does. Peers of peers are not read. A read the
// identity may not do (403) is skipped and named in st.Unread; a network
// that is gone is left out.
func readNetworkAround(ctx context.Context, c routingReader, st *routing.State) error {
	ar, ok := c.(aroundReader)
	if !ok {
		return nil
	}
	for i := range st.Subnets {
		if st.Subnets[i].VNetID == "" {
			st.Subnets[i].VNetID, _ = azure.VNetOfSubnet(st.Subnets[i].ID)
		}
	}
	vnets := map[string]*routing.VNet{}
	var order []string
	addVNet := func(id, name string, space []netip.Prefix) *routing.VNet {
		k := strings.ToLower(id)
		if v := vnets[k]; v != nil {
			return v
		}
		vnets[k] = &routing.VNet{ID: id, Name: name, AddressSpace: space}
		order = append(order, k)
		return vnets[k]
	}
	for _, s := range st.Subnets {
		if s.VNetID != "" {
			addVNet(s.VNetID, s.VNetName, s.VNet.AddressSpace)
		}
	}
	cluster := slices.Clone(order)
	skip := func(what string, err error) bool {
		if azure.IsForbidden(err) {
			st.Unread = append(st.Unread, what)
			return true
		}
		return false
	}
	peeringsOf := func(v *routing.VNet) error {
		ps, err := ar.ListPeerings(ctx, v.ID)
		switch {
		case skip("the peerings of "+v.Name, err), errors.Is(err, cloud.ErrNotFound):
			return nil
		case err != nil:
			return err // it names the operation and the network
		}
		for _, p := range ps {
			rp := routing.Peering{Name: p.Name, RemoteVNetID: p.RemoteVNetID, State: p.State,
				AllowVirtualNetworkAccess: p.AllowVirtualNetworkAccess, AllowForwardedTraffic: p.AllowForwardedTraffic,
				AllowGatewayTransit: p.AllowGatewayTransit, UseRemoteGateways: p.UseRemoteGateways}
			rp.RemoteAddressSpace = parsePrefixes(p.RemoteAddressPrefixes)
			v.Peerings = append(v.Peerings, rp)
		}
		return nil
	}
	var tableIDs []string
	for _, k := range cluster {
		v := vnets[k]
		if err := peeringsOf(v); err != nil {
			return err
		}
		for _, p := range v.Peerings {
			if vnets[strings.ToLower(p.RemoteVNetID)] != nil {
				continue
			}
			rv, err := c.GetVirtualNetwork(ctx, p.RemoteVNetID)
			switch {
			case skip("virtual network "+p.RemoteVNetID, err), errors.Is(err, cloud.ErrNotFound):
				continue
			case err != nil:
				return fmt.Errorf("reading virtual network %s peered with %s: %w", p.RemoteVNetID, v.Name, err)
			}
			subnets := routingSubnets(rv)
			var space []netip.Prefix
			if len(subnets) > 0 {
				space = subnets[0].VNet.AddressSpace
			} else {
				space = parsePrefixes(rv.AddressPrefixes)
			}
			peer := addVNet(rv.ID, rv.Name, space)
			for _, s := range subnets {
				s.VNetID, s.Around = rv.ID, true
				st.Subnets = append(st.Subnets, s)
				tableIDs = append(tableIDs, s.RouteTableID)
			}
			if err := peeringsOf(peer); err != nil {
				return err
			}
		}
	}
	for _, k := range order {
		v := vnets[k]
		var notOnPrem []string
		for _, p := range v.AddressSpace {
			notOnPrem = append(notOnPrem, p.String())
		}
		for _, p := range v.Peerings {
			for _, q := range p.RemoteAddressSpace {
				notOnPrem = append(notOnPrem, q.String())
			}
		}
		gws, err := ar.VirtualNetworkGateways(ctx, v.ID, notOnPrem)
		switch {
		case skip("the gateways of "+v.Name, err), errors.Is(err, cloud.ErrNotFound):
			continue
		case err != nil:
			return err
		}
		for _, g := range gws {
			v.Gateways = append(v.Gateways, routing.Gateway{ID: g.ID, Name: g.Name, Type: g.Type, SubnetID: g.SubnetID, Learned: g.OnPremises})
		}
	}
	for _, k := range order {
		st.VNets = append(st.VNets, *vnets[k])
	}
	seen := map[string]bool{}
	for _, t := range st.Tables {
		seen[strings.ToLower(t.ID)] = true
	}
	for _, id := range tableIDs {
		if id == "" || seen[strings.ToLower(id)] {
			continue
		}
		seen[strings.ToLower(id)] = true
		t, err := c.GetRouteTable(ctx, id)
		switch {
		case skip("route table "+id, err), errors.Is(err, cloud.ErrNotFound):
			continue
		case err != nil:
			return err
		}
		st.Tables = append(st.Tables, t)
	}
	return nil
}

func parsePrefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
