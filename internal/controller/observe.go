package controller

import (
	"context"
	"errors"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// observation is what one pass read: every configured subnet once, our
// table once, the tables its migrated-to tags name, and each table a
// subnet points to, once.
type observation struct {
	subnets map[string]*cloud.Subnet // by assoc.Key, as read (for the etag)
	input   assoc.Input
	// nodeNetworks are the prefixes of the guarded subnets' networks
	// (read by reconciles, diff and doctor; not by the guard).
	nodeNetworks []netip.Prefix
}

// table returns the table id as read, nil when missing or not read.
func (o *observation) table(id string) *route.Table {
	r, _ := o.input.Lookup(id)
	return r.Table
}

// observe reads what a pass decides from. It never writes.
func (c *Controller) observe(ctx context.Context, nodes []source.Node) *observation {
	c.mu.Lock()
	ours := c.tableID
	followedFrom := c.assoc.followedFrom
	previous := make([]string, 0, len(c.assoc.previous))
	for id := range c.assoc.previous {
		previous = append(previous, id)
	}
	c.mu.Unlock()
	o := &observation{subnets: map[string]*cloud.Subnet{}, input: assoc.Input{
		Cluster:       c.cfg.Cluster,
		ClusterCIDRs:  c.cfg.ClusterCIDRs,
		Policy:        assoc.Policy(c.cfg.Policy),
		Restore:       c.cfg.Restore,
		Observe:       c.cfg.Mode == Observe,
		CreateAllowed: c.cfg.CreateTable,
		Table:         ours,
		Previous:      previous,
		FollowedFrom:  followedFrom,
		Tables:        map[string]assoc.TableRead{},
		NodeRoutes:    nodeRoutes(nodes),
	}}
	read := func(id string) assoc.TableRead {
		if r, ok := o.input.Tables[assoc.Key(id)]; ok {
			return r
		}
		t, err := c.cloud.GetRouteTable(ctx, id)
		var r assoc.TableRead
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			r.NotFound = true
		case err != nil:
			r.Err = err
		default:
			if t.ID == "" {
				t.ID = id
			}
			r.Table = t
		}
		o.input.Tables[assoc.Key(id)] = r
		return r
	}
	// Our table and the chain of tables it was migrated to.
	cur := read(ours)
	for range 4 {
		to := cur.Table.Tag(route.MigratedToTag)
		if to == "" {
			break
		}
		if _, seen := o.input.Tables[assoc.Key(to)]; seen {
			break
		}
		cur = read(to)
	}
	for _, id := range c.cfg.Subnets {
		s, err := c.cloud.GetSubnet(ctx, id)
		sn := assoc.Subnet{ID: id}
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			sn.NotFound = true
		case err != nil:
			sn.Err = err
		default:
			o.subnets[assoc.Key(id)] = s
			sn.RouteTableID = s.RouteTableID
			for _, p := range s.AddressPrefixes {
				if pf, err := netip.ParsePrefix(p); err == nil {
					sn.AddressPrefixes = append(sn.AddressPrefixes, pf.Masked())
				}
			}
			if s.RouteTableID != "" {
				read(s.RouteTableID)
			}
		}
		o.input.Subnets = append(o.input.Subnets, sn)
	}
	return o
}

// vnetReader is the optional part of Cloud that reads a virtual network
// with its subnets (internal/cloud/azure has it).
type vnetReader interface {
	GetVirtualNetwork(ctx context.Context, id string) (*azure.VirtualNetwork, error)
}

// nodeNetworks reads, once per pass, the virtual network of each guarded
// subnet and returns the address prefixes of all their subnets: a node
// whose IP lies in none of them cannot be a next hop (plan.Input's
// NodeNetworks). nil when the cloud cannot read networks, no subnet is
// guarded, or a network could not be read (the check is then skipped).
func (c *Controller) nodeNetworks(ctx context.Context) []netip.Prefix {
	vr, ok := c.cloud.(vnetReader)
	if !ok || len(c.cfg.Subnets) == 0 {
		return nil
	}
	var out []netip.Prefix
	seen := map[string]bool{}
	for _, id := range c.cfg.Subnets {
		vnet, err := azure.VNetOfSubnet(id)
		if err != nil || seen[assoc.Key(vnet)] {
			continue
		}
		seen[assoc.Key(vnet)] = true
		v, err := vr.GetVirtualNetwork(ctx, vnet)
		if err != nil {
			c.log.Debug("reading the virtual network of a guarded subnet failed; next hops are not checked against it", "vnet", vnet, "err", err)
			return nil
		}
		for _, s := range v.Subnets {
			for _, p := range s.AddressPrefixes {
				if pf, err := netip.ParsePrefix(p); err == nil {
					out = append(out, pf.Masked())
				}
			}
		}
	}
	return out
}

// nodeRoutes are the node routes by content.
func nodeRoutes(nodes []source.Node) []assoc.Want {
	var out []assoc.Want
	for _, n := range nodes {
		for _, cidr := range n.PodCIDRs {
			if hop, ok := n.NextHop(cidr); ok {
				out = append(out, assoc.Want{Prefix: cidr.Masked(), NextHop: hop})
			}
		}
	}
	return out
}

// decide makes the association decision and makes its switch of table
// (a followed migration or swap) the controller's.
func (c *Controller) decide(o *observation) *assoc.Decision {
	d := assoc.Decide(o.input)
	for _, n := range d.Notes {
		c.log.Warn("association guard: " + n)
	}
	if d.Switch != assoc.NoSwitch && !sameID(d.Table, c.TableID()) {
		switch d.Switch {
		case assoc.Migrated:
			c.log.Info("route table was migrated; keeping the new table from now on", "from", d.From, "to", d.Table)
		case assoc.Swapped:
			c.log.Warn("subnet was moved to another route table; following it: writing the node routes into it and keeping it from now on; the old table is no longer written",
				"from", d.From, "to", d.Table)
		}
		c.switchTable(d.From, d.Table)
		if d.Switch == assoc.Swapped {
			c.mu.Lock()
			c.assoc.followedFrom = d.From
			c.mu.Unlock()
		}
	}
	return d
}
