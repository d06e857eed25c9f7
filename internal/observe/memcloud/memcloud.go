// Package memcloud is a cloud held in memory that the observer reads like
// any other (it is an observe.Reader): route tables, virtual networks and
// subnets, keyed by armid.Key of their IDs. iac check builds one from a
// plan to observe the network as an apply would leave it; tests build one
// to judge a scripted cloud without ARM.
package memcloud

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Cloud is the resources of a network, held in memory. The maps are keyed
// by armid.Key of the resource's ID. A table's Subnets and a network's
// Subnets are not kept: reads make them from the subnets, as ARM does.
type Cloud struct {
	Tables  map[string]*route.Table
	Subnets map[string]*observe.Subnet
	VNets   map[string]*observe.VirtualNetwork
	// NICs are the network interfaces (of every subscription); NICsErr,
	// when set, is what listing them fails with.
	NICs    []observe.NetworkInterface
	NICsErr error
	// Unreadable holds, by key, the error a read of that table or subnet
	// fails with (a cloud that answers 500 for it).
	Unreadable map[string]error
	reads      int64
}

// New returns an empty cloud.
func New() *Cloud {
	return &Cloud{
		Tables:     map[string]*route.Table{},
		Subnets:    map[string]*observe.Subnet{},
		VNets:      map[string]*observe.VirtualNetwork{},
		Unreadable: map[string]error{},
	}
}

// FromObservation is the cloud observations read: every table, network
// and subnet in them (the main table's and its mirrors'; a resource two
// observations read is taken from the later one).
func FromObservation(os ...*observe.Observation) *Cloud {
	c := New()
	for _, o := range os {
		c.add(o)
	}
	return c
}

func (c *Cloud) add(o *observe.Observation) {
	for _, t := range o.Tables() {
		if t.Table != nil {
			c.Tables[armid.Key(t.ID)] = t.Table.Clone()
		}
	}
	for _, n := range o.Networks() {
		if n.Network == nil {
			continue
		}
		v := *n.Network
		v.Subnets = nil
		c.VNets[armid.Key(v.ID)] = &v
		for _, s := range n.Network.Subnets {
			cp := s
			c.Subnets[armid.Key(s.ID)] = &cp
		}
	}
	for _, s := range o.Subnets() {
		if s.Subnet != nil {
			cp := *s.Subnet
			c.Subnets[armid.Key(s.ID)] = &cp
		}
	}
	if nics, read, err := o.NICs(); read || err != nil {
		c.NICs, c.NICsErr = slices.Clone(nics), err
	}
}

// Clone returns a deep copy of the cloud, with no reads counted.
func (c *Cloud) Clone() *Cloud {
	n := New()
	for k, t := range c.Tables {
		n.Tables[k] = t.Clone()
	}
	for k, s := range c.Subnets {
		cp := *s
		cp.AddressPrefixes = slices.Clone(s.AddressPrefixes)
		n.Subnets[k] = &cp
	}
	for k, v := range c.VNets {
		cp := *v
		cp.AddressPrefixes = slices.Clone(v.AddressPrefixes)
		n.VNets[k] = &cp
	}
	maps.Copy(n.Unreadable, c.Unreadable)
	n.NICs, n.NICsErr = slices.Clone(c.NICs), c.NICsErr
	return n
}

// GetRouteTable implements observe.Reader: the table with the subnets
// that point to it (ARM's back-reference).
func (c *Cloud) GetRouteTable(_ context.Context, id string) (*route.Table, error) {
	c.reads++
	if err := c.Unreadable[armid.Key(id)]; err != nil {
		return nil, fmt.Errorf("reading route table %s: %w", id, err)
	}
	t := c.Tables[armid.Key(id)]
	if t == nil {
		return nil, fmt.Errorf("route table %s: %w", id, armerr.ErrNotFound)
	}
	t = t.Clone()
	t.Subnets = nil
	for _, k := range slices.Sorted(maps.Keys(c.Subnets)) {
		if s := c.Subnets[k]; armid.Same(s.RouteTableID, id) {
			t.Subnets = append(t.Subnets, s.ID)
		}
	}
	return t, nil
}

// GetSubnet implements observe.Reader.
func (c *Cloud) GetSubnet(_ context.Context, id string) (*observe.Subnet, error) {
	c.reads++
	if err := c.Unreadable[armid.Key(id)]; err != nil {
		return nil, fmt.Errorf("reading subnet %s: %w", id, err)
	}
	s := c.Subnets[armid.Key(id)]
	if s == nil {
		return nil, fmt.Errorf("subnet %s: %w", id, armerr.ErrNotFound)
	}
	cp := *s
	return &cp, nil
}

// GetVirtualNetwork implements observe.Reader: the network with its
// subnets.
func (c *Cloud) GetVirtualNetwork(_ context.Context, id string) (*observe.VirtualNetwork, error) {
	c.reads++
	v := c.VNets[armid.Key(id)]
	if v == nil {
		return nil, fmt.Errorf("virtual network %s: %w", id, armerr.ErrNotFound)
	}
	cp := *v
	cp.Subnets = nil
	for _, k := range slices.Sorted(maps.Keys(c.Subnets)) {
		if vid, err := armid.VNetOfSubnet(c.Subnets[k].ID); err == nil && armid.Same(vid, id) {
			cp.Subnets = append(cp.Subnets, *c.Subnets[k])
		}
	}
	return &cp, nil
}

// ListNetworkInterfaces implements observe.Reader: the cloud's NICs.
func (c *Cloud) ListNetworkInterfaces(context.Context, string) ([]observe.NetworkInterface, error) {
	c.reads++
	if c.NICsErr != nil {
		return nil, fmt.Errorf("listing network interfaces: %w", c.NICsErr)
	}
	return slices.Clone(c.NICs), nil
}

// Calls implements observe.Reader: the reads so far; it never writes.
func (c *Cloud) Calls() (reads, writes int64) { return c.reads, 0 }
