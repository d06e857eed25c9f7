package controller

import (
	"context"
	"errors"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// observation is what one pass read: every configured subnet once, our
// table once, the tables its migrated-to tags name, and each table a
// subnet points to, once.
type observation struct {
	subnets map[string]*cloud.Subnet // by assoc.Key, as read (for the etag)
	input   assoc.Input
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
