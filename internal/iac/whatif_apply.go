package iac

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/route"
)

// A what-if's before and after payloads are the resources as ARM holds
// them and as the deployment PUTs them, so the worlds are built the way
// ARM applies a PUT: a virtual network's subnets are exactly its inline
// subnets (one left out is deleted, one without routeTable is detached), a
// route table's routes exactly its inline routes, a subnet's route table
// exactly its routeTable. A value what-if could not evaluate (an
// expression string, "[reference(...)]", left for a resource not yet
// deployed) is unknown: what it would change is left as it is.

// Resource types a what-if's changes are read for.
const (
	typeVNet   = "microsoft.network/virtualnetworks"
	typeSubnet = "microsoft.network/virtualnetworks/subnets"
	typeTable  = "microsoft.network/routetables"
	typeRoute  = "microsoft.network/routetables/routes"
)

// armTypeOf is a resource ID's type in lower case, "" when it is not an ID.
func armTypeOf(id string) string {
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return ""
	}
	return strings.ToLower(r.ResourceType.String())
}

// unevaluated reports whether v is an expression what-if left unevaluated.
func unevaluated(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "[") && !strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]")
}

func props(payload map[string]any) map[string]any {
	p, _ := member(payload, "properties").(map[string]any)
	return p
}

func text(m map[string]any, name string) string {
	s, _ := member(m, name).(string)
	return s
}

func list(m map[string]any, name string) []any {
	l, _ := member(m, name).([]any)
	return l
}

// refID reads a reference ({"id": ...}): known false when what-if left it
// (or its id) unevaluated.
func refID(m map[string]any, name string) (id string, known bool) {
	v := member(m, name)
	if unevaluated(v) {
		return "", false
	}
	ref, _ := v.(map[string]any)
	idv := member(ref, "id")
	if unevaluated(idv) {
		return "", false
	}
	s, _ := idv.(string)
	return s, true
}

// prefixesOf are a subnet's addressPrefixes, else its addressPrefix; nil
// when unknown.
func prefixesOf(p map[string]any) []string {
	var out []string
	for _, v := range list(p, "addressPrefixes") {
		if s, ok := v.(string); ok && !unevaluated(s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		if s := text(p, "addressPrefix"); s != "" && !unevaluated(s) {
			out = []string{s}
		}
	}
	return out
}

// spaceOf is a virtual network's address space, nil when unknown.
func spaceOf(p map[string]any) []string {
	space, _ := member(p, "addressSpace").(map[string]any)
	var out []string
	for _, v := range list(space, "addressPrefixes") {
		if s, ok := v.(string); ok && !unevaluated(s) {
			out = append(out, s)
		}
	}
	return out
}

func armTableOf(id string, payload map[string]any) *route.Table {
	p := props(payload)
	t := &route.Table{ID: id, Name: armid.Name(id), Location: text(payload, "location"), ResourceGroup: armid.Name(armid.ResourceGroupID(id)), Tags: map[string]string{}}
	if tags, ok := member(payload, "tags").(map[string]any); ok {
		for k, v := range tags {
			if s, ok := v.(string); ok {
				t.Tags[k] = s
			}
		}
	}
	if b, ok := member(p, "disableBgpRoutePropagation").(bool); ok {
		t.DisableBGPRoutePropagation = b
	}
	for _, r := range list(p, "routes") {
		if m, ok := r.(map[string]any); ok {
			t.Routes = append(t.Routes, armRouteOf(text(m, "name"), props(m)))
		}
	}
	return t
}

// armRouteOf makes a route of its name and properties, as routeOf does for
// a plan: a prefix that is not a CIDR (a service tag) or a next hop that
// is not an address stays unparsed.
func armRouteOf(name string, p map[string]any) route.Route {
	r := route.Route{Name: name, AddressPrefix: text(p, "addressPrefix"), NextHopType: route.NextHopType(text(p, "nextHopType")), ProvisioningState: "Succeeded"}
	if pf, err := netip.ParsePrefix(r.AddressPrefix); err == nil {
		r.Prefix = pf
	}
	if a, err := netip.ParseAddr(text(p, "nextHopIpAddress")); err == nil {
		r.NextHopIP = a
	}
	return r
}

func armSubnetOf(id string, p map[string]any) *observe.Subnet {
	s := &observe.Subnet{ID: id, Name: armid.Name(id), AddressPrefixes: prefixesOf(p)}
	s.RouteTableID, _ = refID(p, "routeTable")
	s.NetworkSecurityGroupID, _ = refID(p, "networkSecurityGroup")
	return s
}

// beforeWorld rebuilds the cloud as it stands from the what-if's before
// payloads.
func (w *WhatIf) beforeWorld(ids) *memcloud.Cloud {
	c := memcloud.New()
	for _, ch := range w.Changes {
		b := ch.Before
		if b == nil {
			continue
		}
		switch armTypeOf(ch.ResourceID) {
		case typeTable:
			c.Tables[armid.Key(ch.ResourceID)] = armTableOf(ch.ResourceID, b)
		case typeVNet:
			p := props(b)
			c.VNets[armid.Key(ch.ResourceID)] = &observe.VirtualNetwork{ID: ch.ResourceID, Name: armid.Name(ch.ResourceID), Location: text(b, "location"),
				AddressPrefixes: spaceOf(p)}
			for _, s := range list(p, "subnets") {
				m, _ := s.(map[string]any)
				sid := ch.ResourceID + "/subnets/" + text(m, "name")
				c.Subnets[armid.Key(sid)] = armSubnetOf(sid, props(m))
			}
		}
	}
	for _, ch := range w.Changes {
		b := ch.Before
		if b == nil {
			continue
		}
		switch armTypeOf(ch.ResourceID) {
		case typeSubnet:
			c.Subnets[armid.Key(ch.ResourceID)] = armSubnetOf(ch.ResourceID, props(b))
		case typeRoute:
			tid, _ := parentOf(ch.ResourceID)
			if t := c.Tables[armid.Key(tid)]; t != nil && findRoute(t, armid.Name(ch.ResourceID)) < 0 {
				t.Routes = append(t.Routes, armRouteOf(armid.Name(ch.ResourceID), props(b)))
			}
		}
	}
	// A route table's payload names the subnets that use it: a subnet the
	// what-if shows no payload of (its network Ignored) is on that table.
	for _, ch := range w.Changes {
		if ch.Before == nil || armTypeOf(ch.ResourceID) != typeTable {
			continue
		}
		for _, s := range list(props(ch.Before), "subnets") {
			m, _ := s.(map[string]any)
			sid := text(m, "id")
			if sid == "" || c.Subnets[armid.Key(sid)] != nil {
				continue
			}
			c.Subnets[armid.Key(sid)] = &observe.Subnet{ID: sid, Name: armid.Name(sid), RouteTableID: ch.ResourceID}
			if vid, err := armid.VNetOfSubnet(sid); err == nil && c.VNets[armid.Key(vid)] == nil {
				c.VNets[armid.Key(vid)] = &observe.VirtualNetwork{ID: vid, Name: armid.Name(vid)}
			}
		}
	}
	return c
}

// parentOf is a child resource's parent ID.
func parentOf(id string) (string, bool) {
	r, err := arm.ParseResourceID(id)
	if err != nil || r.Parent == nil {
		return "", false
	}
	return r.Parent.String(), true
}

// apply returns the world after the deployment, and why each changed
// resource changed. Ignore, NoChange and Unsupported change nothing.
func (w *WhatIf) apply(base *memcloud.Cloud, _ ids) (*memcloud.Cloud, *causes, error) {
	c, cs := base.Clone(), newCauses()
	rank := map[string]int{typeVNet: 0, typeTable: 0, typeSubnet: 1, typeRoute: 2}
	changes := slices.Clone(w.Changes)
	slices.SortStableFunc(changes, func(a, b WhatIfChange) int { return rank[armTypeOf(a.ResourceID)] - rank[armTypeOf(b.ResourceID)] })
	for _, ch := range changes {
		switch ch.ChangeType {
		case whatIfDelete:
			deleteARM(c, cs, ch.ResourceID)
		case whatIfCreate, whatIfModify, whatIfDeploy:
			if ch.After == nil {
				continue
			}
			if err := putARM(c, cs, ch.ResourceID, ch.After); err != nil {
				return nil, nil, err
			}
		}
	}
	return c, cs, nil
}

func deleteARM(c *memcloud.Cloud, cs *causes, id string) {
	key := armid.Key(id)
	switch armTypeOf(id) {
	case typeVNet:
		delete(c.VNets, key)
		for k, s := range c.Subnets {
			if vid, _ := armid.VNetOfSubnet(s.ID); armid.Same(vid, id) {
				delete(c.Subnets, k)
				cs.subnet[k] = cause{id, RuleVNetDestroyed, "deletes virtual network " + armid.Name(id)}
			}
		}
	case typeTable:
		delete(c.Tables, key)
		cs.table[key] = cause{id, RuleTableDestroyed, "deletes route table " + armid.Name(id) + " (a Complete mode deployment deletes what the template does not declare)"}
	case typeSubnet:
		delete(c.Subnets, key)
		cs.subnet[key] = cause{id, RuleSubnetDestroyed, "deletes subnet " + armid.Name(id)}
	case typeRoute:
		tid, _ := parentOf(id)
		if t := c.Tables[armid.Key(tid)]; t != nil {
			if i := findRoute(t, armid.Name(id)); i >= 0 {
				t.Routes = slices.Delete(t.Routes, i, i+1)
				cs.routes[armid.Key(tid)] = cause{id, RuleRouteDestroyed, fmt.Sprintf("deletes route %s of %s", armid.Name(id), armid.Name(tid))}
			}
		}
	}
}

func putARM(c *memcloud.Cloud, cs *causes, id string, after map[string]any) error {
	p := props(after)
	if unevaluated(member(after, "properties")) {
		return nil
	}
	switch armTypeOf(id) {
	case typeVNet:
		putVNet(c, cs, id, after, p)
	case typeTable:
		putTable(c, cs, id, after, p)
	case typeSubnet:
		key := armid.Key(id)
		s := c.Subnets[key]
		if s == nil {
			s = &observe.Subnet{ID: id, Name: armid.Name(id)}
			c.Subnets[key] = s
		}
		setSubnet(cs, id, s, p, RuleSubnetTable, fmt.Sprintf("the deployment PUTs subnet %s without routeTable, and ARM detaches", s.Name))
	case typeRoute:
		tid, ok := parentOf(id)
		if !ok {
			return fmt.Errorf("%w: %s is not the ID of a route", ErrBadValue, id)
		}
		if t := c.Tables[armid.Key(tid)]; t != nil {
			r := armRouteOf(armid.Name(id), p)
			if i := findRoute(t, r.Name); i >= 0 {
				t.Routes[i] = r
			} else {
				t.Routes = append(t.Routes, r)
			}
		}
	}
	return nil
}

func putVNet(c *memcloud.Cloud, cs *causes, id string, after, p map[string]any) {
	key := armid.Key(id)
	v := c.VNets[key]
	if v == nil {
		v = &observe.VirtualNetwork{ID: id, Name: armid.Name(id), Location: text(after, "location")}
		c.VNets[key] = v
	}
	if ps := spaceOf(p); len(ps) > 0 && !slices.Equal(ps, v.AddressPrefixes) {
		v.AddressPrefixes = ps
		cs.space[key] = cause{id, RuleAddressSpace, "sets the address space of " + v.Name}
	}
	subnets := member(p, "subnets")
	if unevaluated(subnets) {
		return
	}
	declared := map[string]bool{}
	for _, e := range list(p, "subnets") {
		m, _ := e.(map[string]any)
		name := text(m, "name")
		if name == "" || unevaluated(name) {
			return // which subnets remain is unknown
		}
		sid := id + "/subnets/" + name
		declared[armid.Key(sid)] = true
		s := c.Subnets[armid.Key(sid)]
		if s == nil {
			s = &observe.Subnet{ID: sid, Name: name}
			c.Subnets[armid.Key(sid)] = s
		}
		setSubnet(cs, id, s, props(m), RuleInlineSubnet, fmt.Sprintf("its inline subnet %s has no routeTable: the deployment PUTs the virtual network with the subnet and no route table, and ARM detaches", name))
	}
	for k, s := range c.Subnets {
		if vid, _ := armid.VNetOfSubnet(s.ID); armid.Same(vid, id) && !declared[k] {
			delete(c.Subnets, k)
			cs.subnet[k] = cause{id, RuleInlineSubnet, fmt.Sprintf("its inline subnets leave out subnet %s: the deployment deletes it", s.Name)}
		}
	}
}

// setSubnet applies a subnet's properties as a PUT carries them: its
// prefixes, and its routeTable exactly (none when left out). detached
// says what a routeTable left out does.
func setSubnet(cs *causes, address string, s *observe.Subnet, p map[string]any, rule, detached string) {
	key := armid.Key(s.ID)
	if ps := prefixesOf(p); len(ps) > 0 && !slices.Equal(ps, s.AddressPrefixes) {
		s.AddressPrefixes = ps
		cs.subnet[key] = cause{address, RuleSubnetPrefix, "sets the prefixes of subnet " + s.Name}
	}
	rt, known := refID(p, "routeTable")
	if !known || armid.Same(rt, s.RouteTableID) {
		return
	}
	what := fmt.Sprintf("it sets the routeTable of subnet %s to %s", s.Name, orNone(rt))
	if rt == "" {
		what = detached + " " + armid.Name(s.RouteTableID)
	}
	s.RouteTableID = rt
	cs.subnet[key] = cause{address, rule, what}
}

func putTable(c *memcloud.Cloud, cs *causes, id string, after, p map[string]any) {
	key := armid.Key(id)
	next := armTableOf(id, after)
	t := c.Tables[key]
	if t == nil {
		c.Tables[key] = next
		return
	}
	if !unevaluated(member(after, "tags")) {
		t.Tags = next.Tags
	}
	if routes := member(p, "routes"); unevaluated(routes) || slices.ContainsFunc(list(p, "routes"), unevaluated) {
		return
	}
	var gone []string
	for _, r := range t.Routes {
		if findRoute(next, r.Name) < 0 {
			gone = append(gone, r.Name)
		}
	}
	t.Routes = next.Routes
	if len(gone) > 0 {
		cs.routes[key] = cause{id, RuleInlineRoutes, fmt.Sprintf("its inline routes replace every route of %s: the deployment deletes %s", armid.Name(id), joinNames(gone))}
	}
}
