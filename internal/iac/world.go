package iac

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// world is a cloud held in memory, which the observer reads like any
// other (it is an observe.Reader): the cloud as it stands, and the same
// after the planned apply.
type world struct {
	tables  map[string]*route.Table
	subnets map[string]*cloud.Subnet
	vnets   map[string]*cloud.VirtualNetwork
	reads   int64
}

func newWorld() *world {
	return &world{tables: map[string]*route.Table{}, subnets: map[string]*cloud.Subnet{}, vnets: map[string]*cloud.VirtualNetwork{}}
}

// fromObservation is the world an observation read: every table, network
// and subnet in it.
func fromObservation(o *observe.Observation) *world {
	w := newWorld()
	for _, t := range o.Tables() {
		if t.Table != nil {
			w.tables[armid.Key(t.ID)] = cloneTable(t.Table)
		}
	}
	for _, n := range o.Networks() {
		if n.Network == nil {
			continue
		}
		v := *n.Network
		v.Subnets = nil
		w.vnets[armid.Key(v.ID)] = &v
		for _, s := range n.Network.Subnets {
			cp := s
			w.subnets[armid.Key(s.ID)] = &cp
		}
	}
	for _, s := range o.Subnets() {
		if s.Subnet != nil {
			cp := *s.Subnet
			w.subnets[armid.Key(s.ID)] = &cp
		}
	}
	return w
}

func (w *world) clone() *world {
	c := newWorld()
	for k, t := range w.tables {
		c.tables[k] = cloneTable(t)
	}
	for k, s := range w.subnets {
		cp := *s
		cp.AddressPrefixes = slices.Clone(s.AddressPrefixes)
		c.subnets[k] = &cp
	}
	for k, v := range w.vnets {
		cp := *v
		cp.AddressPrefixes = slices.Clone(v.AddressPrefixes)
		c.vnets[k] = &cp
	}
	return c
}

func cloneTable(t *route.Table) *route.Table {
	c := *t
	c.Routes = slices.Clone(t.Routes)
	c.Tags = maps.Clone(t.Tags)
	c.Subnets = slices.Clone(t.Subnets)
	return &c
}

// GetRouteTable implements observe.Reader: the table with the subnets
// that point to it (ARM's back-reference).
func (w *world) GetRouteTable(_ context.Context, id string) (*route.Table, error) {
	w.reads++
	t := w.tables[armid.Key(id)]
	if t == nil {
		return nil, fmt.Errorf("route table %s: %w", id, cloud.ErrNotFound)
	}
	c := cloneTable(t)
	c.Subnets = nil
	for _, k := range slices.Sorted(maps.Keys(w.subnets)) {
		if s := w.subnets[k]; armid.Same(s.RouteTableID, id) {
			c.Subnets = append(c.Subnets, s.ID)
		}
	}
	return c, nil
}

// GetSubnet implements observe.Reader.
func (w *world) GetSubnet(_ context.Context, id string) (*cloud.Subnet, error) {
	w.reads++
	s := w.subnets[armid.Key(id)]
	if s == nil {
		return nil, fmt.Errorf("subnet %s: %w", id, cloud.ErrNotFound)
	}
	cp := *s
	return &cp, nil
}

// GetVirtualNetwork implements observe.Reader: the network with its
// subnets.
func (w *world) GetVirtualNetwork(_ context.Context, id string) (*cloud.VirtualNetwork, error) {
	w.reads++
	v := w.vnets[armid.Key(id)]
	if v == nil {
		return nil, fmt.Errorf("virtual network %s: %w", id, cloud.ErrNotFound)
	}
	cp := *v
	cp.Subnets = nil
	for _, k := range slices.Sorted(maps.Keys(w.subnets)) {
		if vid, err := armid.VNetOfSubnet(w.subnets[k].ID); err == nil && armid.Same(vid, id) {
			cp.Subnets = append(cp.Subnets, *w.subnets[k])
		}
	}
	return &cp, nil
}

// ListNetworkInterfaces implements observe.Reader: a plan says nothing of
// NICs.
func (w *world) ListNetworkInterfaces(context.Context, string) ([]cloud.NetworkInterface, error) {
	return nil, nil
}

// Calls implements observe.Reader.
func (w *world) Calls() (reads, writes int64) { return w.reads, 0 }

// ids resolves resource IDs for a plan: a created resource has no id yet,
// so it is made from its name and group, in the configured table's
// subscription.
type ids struct{ subscription string }

func (x ids) of(m map[string]any, typ string) string {
	if id := str(m, "id"); id != "" {
		return id
	}
	rg, name := str(m, "resource_group_name"), str(m, "name")
	if rg == "" || name == "" {
		return ""
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/%s/%s", x.subscription, rg, typ, name)
}

// tableOf makes the route table an azurerm_route_table's values describe.
func tableOf(id string, m map[string]any) *route.Table {
	t := &route.Table{ID: id, Name: str(m, "name"), Location: str(m, "location"), ResourceGroup: str(m, "resource_group_name"), Tags: map[string]string{}}
	if tags, ok := m["tags"].(map[string]any); ok {
		for k, v := range tags {
			if s, ok := v.(string); ok {
				t.Tags[k] = s
			}
		}
	}
	if b, ok := m["bgp_route_propagation_enabled"].(bool); ok {
		t.DisableBGPRoutePropagation = !b
	}
	for _, r := range objects(m, "route") {
		t.Routes = append(t.Routes, routeOf(r))
	}
	return t
}

// routeOf makes a route from an inline route block or an azurerm_route.
func routeOf(m map[string]any) route.Route {
	r := route.Route{Name: str(m, "name"), AddressPrefix: str(m, "address_prefix"), NextHopType: route.NextHopType(str(m, "next_hop_type")), ProvisioningState: "Succeeded"}
	if p, err := netip.ParsePrefix(r.AddressPrefix); err == nil {
		r.Prefix = p
	}
	if a, err := netip.ParseAddr(str(m, "next_hop_in_ip_address")); err == nil {
		r.NextHopIP = a
	}
	return r
}

// subnetPrefixes are a subnet block's or azurerm_subnet's prefixes.
func subnetPrefixes(m map[string]any) []string {
	if ps := strs(m, "address_prefixes"); len(ps) > 0 {
		return ps
	}
	if p := str(m, "address_prefix"); p != "" {
		return []string{p}
	}
	return nil
}

func vnetName(subnetID string) string {
	v, err := armid.VNetOfSubnet(subnetID)
	if err != nil {
		return ""
	}
	return armid.Name(v)
}

func lower(s string) string { return strings.ToLower(s) }
