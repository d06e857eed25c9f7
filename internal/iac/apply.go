package iac

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/route"
)

// The rules: each kind of planned change that can break pod routing.
const (
	RuleInlineSubnet        = "vnet-inline-subnet-detaches"
	RuleVNetDestroyed       = "vnet-destroyed"
	RuleSubnetDestroyed     = "subnet-destroyed"
	RuleSubnetTable         = "subnet-route-table-changed"
	RuleSubnetPrefix        = "subnet-prefix-changed"
	RuleAssociationRemoved  = "association-destroyed"
	RuleAssociationReplaced = "association-replaced"
	RuleTableDestroyed      = "route-table-destroyed"
	RuleTableReplaced       = "route-table-replaced"
	RuleInlineRoutes        = "inline-routes-delete-pod-routes"
	RuleRouteDestroyed      = "pod-route-destroyed"
	RuleAddressSpace        = "address-space-overlaps-pods"
)

// cause is the planned change that makes a resource what it will be.
type cause struct {
	Address string
	Rule    string
	What    string
}

// causes are the planned changes by what they change.
type causes struct {
	subnet map[string]cause // a subnet's table, prefixes or existence, by armid.Key
	table  map[string]cause // a table destroyed or replaced
	routes map[string]cause // a table's routes
	space  map[string]cause // a network's address space
}

func newCauses() *causes {
	return &causes{subnet: map[string]cause{}, table: map[string]cause{}, routes: map[string]cause{}, space: map[string]cause{}}
}

// beforeWorld rebuilds, from the plan's before-values (the state OpenTofu
// refreshed from Azure), the cloud as it stands, when it cannot be read.
func (p *Plan) beforeWorld(x ids) *memcloud.Cloud {
	w := memcloud.New()
	for _, rc := range p.ResourceChanges {
		if rc.Mode != "managed" || rc.Change.Before == nil {
			continue
		}
		b := rc.Change.Before
		switch rc.Type {
		case "azurerm_route_table":
			id := x.of(b, "routeTables")
			w.Tables[armid.Key(id)] = tableOf(id, b)
		case "azurerm_virtual_network":
			id := x.of(b, "virtualNetworks")
			w.VNets[armid.Key(id)] = &observe.VirtualNetwork{ID: id, Name: str(b, "name"), Location: str(b, "location"), AddressPrefixes: strs(b, "address_space")}
			for _, s := range objects(b, "subnet") {
				sid := id + "/subnets/" + str(s, "name")
				w.Subnets[armid.Key(sid)] = &observe.Subnet{ID: sid, Name: str(s, "name"), AddressPrefixes: subnetPrefixes(s), RouteTableID: str(s, "route_table_id"), NetworkSecurityGroupID: str(s, "security_group")}
			}
		}
	}
	// Separate subnet resources, then the associations, win over the
	// VNet's view of its subnets.
	for _, rc := range p.ResourceChanges {
		b := rc.Change.Before
		if rc.Mode != "managed" || b == nil {
			continue
		}
		switch rc.Type {
		case "azurerm_subnet":
			id := subnetID(x, b)
			s := w.Subnets[armid.Key(id)]
			if s == nil {
				s = &observe.Subnet{ID: id, Name: str(b, "name")}
				w.Subnets[armid.Key(id)] = s
			}
			s.AddressPrefixes = subnetPrefixes(b)
			if rt, ok := b["route_table_id"].(string); ok {
				s.RouteTableID = rt
			}
		case "azurerm_subnet_route_table_association":
			if s := w.Subnets[armid.Key(str(b, "subnet_id"))]; s != nil {
				s.RouteTableID = str(b, "route_table_id")
			}
		case "azurerm_route":
			if t := w.Tables[armid.Key(routeTableID(x, b))]; t != nil && findRoute(t, str(b, "name")) < 0 {
				t.Routes = append(t.Routes, routeOf(b))
			}
		}
	}
	return w
}

func subnetID(x ids, m map[string]any) string {
	if id := str(m, "id"); id != "" {
		return id
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s",
		x.subscription, str(m, "resource_group_name"), str(m, "virtual_network_name"), str(m, "name"))
}

func routeTableID(x ids, m map[string]any) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/routeTables/%s", x.subscription, str(m, "resource_group_name"), str(m, "route_table_name"))
}

func findRoute(t *route.Table, name string) int {
	return slices.IndexFunc(t.Routes, func(r route.Route) bool { return armid.Same(r.Name, name) })
}

// apply returns the world after the plan's apply, and why each
// changed resource changed; the error is ErrBadValue's.
func (p *Plan) apply(base *memcloud.Cloud, x ids) (*memcloud.Cloud, *causes, error) {
	w, cs := base.Clone(), newCauses()
	// Containers first, so that what they hold is settled after them.
	order := map[string]int{"azurerm_virtual_network": 0, "azurerm_route_table": 0, "azurerm_subnet": 1, "azurerm_subnet_route_table_association": 2, "azurerm_route": 2}
	rcs := slices.Clone(p.ResourceChanges)
	slices.SortStableFunc(rcs, func(a, b ResourceChange) int { return order[a.Type] - order[b.Type] })
	for _, rc := range rcs {
		if rc.Mode != "managed" || rc.Change.kind() == kindNone {
			continue
		}
		if rc.Change.kind() == kindCreate && exists(w, rc, x) {
			// The azurerm provider refuses to create what exists ("to be
			// managed via Terraform this resource needs to be imported"):
			// the apply fails there and changes nothing of it.
			continue
		}
		switch rc.Type {
		case "azurerm_virtual_network":
			applyVNet(w, cs, rc, x)
		case "azurerm_route_table":
			applyTable(w, cs, rc, x)
		case "azurerm_subnet":
			applySubnet(w, cs, rc, x)
		case "azurerm_subnet_route_table_association":
			applyAssociation(w, cs, rc)
		case "azurerm_route":
			if err := applyRoute(w, cs, rc, x); err != nil {
				return nil, nil, err
			}
		}
	}
	return w, cs, nil
}

func applyVNet(w *memcloud.Cloud, cs *causes, rc ResourceChange, x ids) {
	c := rc.Change
	id := x.of(cmpMap(c.Before, c.After), "virtualNetworks")
	if c.kind() == kindDelete {
		delete(w.VNets, armid.Key(id))
		for k, s := range w.Subnets {
			if vid, _ := armid.VNetOfSubnet(s.ID); armid.Same(vid, id) {
				delete(w.Subnets, k)
				cs.subnet[k] = cause{rc.Address, RuleVNetDestroyed, "destroys virtual network " + armid.Name(id)}
			}
		}
		return
	}
	v := w.VNets[armid.Key(id)]
	if v == nil {
		v = &observe.VirtualNetwork{ID: id, Name: str(c.After, "name"), Location: str(c.After, "location")}
		w.VNets[armid.Key(id)] = v
	}
	if !unknown(c.AfterUnknown, "address_space") {
		if space := strs(c.After, "address_space"); len(space) > 0 && !slices.Equal(space, v.AddressPrefixes) {
			v.AddressPrefixes = space
			cs.space[armid.Key(id)] = cause{rc.Address, RuleAddressSpace, "sets the address space of " + v.Name}
		}
	}
	if _, inline := c.After["subnet"]; !inline || unknown(c.AfterUnknown, "subnet") && len(objects(c.After, "subnet")) == 0 {
		return
	}
	declared := map[string]bool{}
	for i, s := range objects(c.After, "subnet") {
		sid := id + "/subnets/" + str(s, "name")
		declared[armid.Key(sid)] = true
		unk := unknownAt(c.AfterUnknown, "subnet", i)
		cur := w.Subnets[armid.Key(sid)]
		if cur == nil {
			cur = &observe.Subnet{ID: sid, Name: str(s, "name")}
			w.Subnets[armid.Key(sid)] = cur
		}
		if !unknown(unk, "address_prefixes") && !unknown(unk, "address_prefix") {
			if ps := subnetPrefixes(s); len(ps) > 0 && !slices.Equal(ps, cur.AddressPrefixes) {
				cur.AddressPrefixes = ps
				cs.subnet[armid.Key(sid)] = cause{rc.Address, RuleSubnetPrefix, "sets the prefixes of subnet " + cur.Name}
			}
		}
		if unknown(unk, "route_table_id") {
			continue
		}
		// An inline subnet block without route_table_id (older providers
		// have no such attribute; newer ones send "" when it is not set)
		// makes the VNet PUT carry the subnet without routeTable: ARM
		// drops the association.
		rt := str(s, "route_table_id")
		if !armid.Same(rt, cur.RouteTableID) {
			what := fmt.Sprintf("its inline subnet block for %s sets route_table_id to %s", cur.Name, orNone(rt))
			if rt == "" {
				what = fmt.Sprintf("its inline subnet block for %s has no route_table_id: the apply PUTs the virtual network with the subnet and no route table, and ARM detaches %s", cur.Name, armid.Name(cur.RouteTableID))
			}
			cur.RouteTableID = rt
			cs.subnet[armid.Key(sid)] = cause{rc.Address, RuleInlineSubnet, what}
		}
	}
	for k, s := range w.Subnets {
		if vid, _ := armid.VNetOfSubnet(s.ID); armid.Same(vid, id) && !declared[k] {
			delete(w.Subnets, k)
			cs.subnet[k] = cause{rc.Address, RuleInlineSubnet, fmt.Sprintf("its inline subnet blocks leave out subnet %s: the apply deletes it", s.Name)}
		}
	}
}

func applyTable(w *memcloud.Cloud, cs *causes, rc ResourceChange, x ids) {
	c := rc.Change
	id := x.of(cmpMap(c.Before, c.After), "routeTables")
	key := armid.Key(id)
	switch c.kind() {
	case kindDelete:
		delete(w.Tables, key)
		cs.table[key] = cause{rc.Address, RuleTableDestroyed, "destroys route table " + armid.Name(id)}
		return
	case kindReplace:
		t := tableOf(id, c.After)
		w.Tables[key] = t
		cs.table[key] = cause{rc.Address, RuleTableReplaced, "replaces route table " + armid.Name(id) + " (destroys it and creates it again, with the routes and tags of the code only)"}
		return
	}
	t := w.Tables[key]
	if t == nil {
		w.Tables[key] = tableOf(id, c.After)
		return
	}
	if !unknown(c.AfterUnknown, "tags") {
		if after := tableOf(id, c.After); after.Tags != nil {
			t.Tags = after.Tags
		}
	}
	if _, ok := c.After["route"]; !ok || unknown(c.AfterUnknown, "route") {
		return
	}
	after := tableOf(id, c.After).Routes
	var gone []string
	for _, r := range t.Routes {
		if findRoute(&route.Table{Routes: after}, r.Name) < 0 {
			gone = append(gone, r.Name)
		}
	}
	t.Routes = after
	if len(gone) > 0 {
		cs.routes[key] = cause{rc.Address, RuleInlineRoutes, fmt.Sprintf("its inline route blocks replace every route of %s: the apply deletes %s", armid.Name(id), joinNames(gone))}
	}
}

func applySubnet(w *memcloud.Cloud, cs *causes, rc ResourceChange, x ids) {
	c := rc.Change
	id := subnetID(x, cmpMap(c.Before, c.After))
	key := armid.Key(id)
	switch c.kind() {
	case kindDelete:
		delete(w.Subnets, key)
		cs.subnet[key] = cause{rc.Address, RuleSubnetDestroyed, "destroys subnet " + armid.Name(id)}
		return
	case kindReplace:
		s := &observe.Subnet{ID: id, Name: armid.Name(id), AddressPrefixes: subnetPrefixes(c.After), RouteTableID: str(c.After, "route_table_id")}
		w.Subnets[key] = s
		cs.subnet[key] = cause{rc.Address, RuleSubnetDestroyed, "replaces subnet " + s.Name + " (destroys it and creates it again, without its route table until an association is made)"}
		return
	}
	s := w.Subnets[key]
	if s == nil {
		s = &observe.Subnet{ID: id, Name: armid.Name(id)}
		w.Subnets[key] = s
	}
	if !unknown(c.AfterUnknown, "address_prefixes") {
		if ps := subnetPrefixes(c.After); len(ps) > 0 && !slices.Equal(ps, s.AddressPrefixes) {
			s.AddressPrefixes = ps
			cs.subnet[key] = cause{rc.Address, RuleSubnetPrefix, "sets the prefixes of subnet " + s.Name}
		}
	}
	if rt, ok := c.After["route_table_id"].(string); ok && !unknown(c.AfterUnknown, "route_table_id") && !armid.Same(rt, s.RouteTableID) {
		s.RouteTableID = rt
		cs.subnet[key] = cause{rc.Address, RuleSubnetTable, fmt.Sprintf("sets the route table of subnet %s to %s", s.Name, orNone(rt))}
	}
}

func applyAssociation(w *memcloud.Cloud, cs *causes, rc ResourceChange) {
	c := rc.Change
	m := cmpMap(c.Before, c.After)
	key := armid.Key(str(m, "subnet_id"))
	s := w.Subnets[key]
	if s == nil {
		return
	}
	switch c.kind() {
	case kindDelete:
		cs.subnet[key] = cause{rc.Address, RuleAssociationRemoved, fmt.Sprintf("destroys the association of subnet %s with %s: the subnet is left without a route table", s.Name, armid.Name(s.RouteTableID))}
		s.RouteTableID = ""
	case kindReplace:
		// In between the subnet has no table: an outage of one apply.
		cs.subnet[key] = cause{rc.Address, RuleAssociationReplaced, fmt.Sprintf("replaces the association of subnet %s (destroys it, then creates it): the subnet has no route table in between", s.Name)}
		s.RouteTableID = ""
	default:
		if !unknown(c.AfterUnknown, "route_table_id") {
			rt := str(c.After, "route_table_id")
			if !armid.Same(rt, s.RouteTableID) {
				cs.subnet[key] = cause{rc.Address, RuleSubnetTable, fmt.Sprintf("associates subnet %s with %s", s.Name, armid.Name(rt))}
			}
			s.RouteTableID = rt
		}
	}
}

func applyRoute(w *memcloud.Cloud, cs *causes, rc ResourceChange, x ids) error {
	c := rc.Change
	m := cmpMap(c.Before, c.After)
	tid := routeTableID(x, m)
	if id := str(m, "id"); id != "" {
		r, err := arm.ParseResourceID(id)
		if err != nil || !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/routeTables/routes") || r.Parent == nil {
			return fmt.Errorf("%w: %s: id %q is not the ID of a route (want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<table>/routes/<name>)", ErrBadValue, rc.Address, id)
		}
		tid = r.Parent.String()
	}
	t := w.Tables[armid.Key(tid)]
	if t == nil {
		return nil
	}
	i := findRoute(t, str(m, "name"))
	if c.kind() == kindDelete {
		if i >= 0 {
			t.Routes = slices.Delete(t.Routes, i, i+1)
			cs.routes[armid.Key(tid)] = cause{rc.Address, RuleRouteDestroyed, fmt.Sprintf("destroys route %s of %s", str(m, "name"), armid.Name(tid))}
		}
		return nil
	}
	r := routeOf(c.After)
	if i >= 0 {
		t.Routes[i] = r
	} else {
		t.Routes = append(t.Routes, r)
	}
	return nil
}

// cmpMap is a if it is set, else b.
func cmpMap(a, b map[string]any) map[string]any {
	if a != nil {
		return a
	}
	return b
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return armid.Name(s)
}

func joinNames(names []string) string {
	if len(names) > 4 {
		return fmt.Sprintf("%s and %d more", joinNames(names[:3]), len(names)-3)
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// exists reports whether the resource a change creates is in w already.
func exists(w *memcloud.Cloud, rc ResourceChange, x ids) bool {
	a := rc.Change.After
	switch rc.Type {
	case "azurerm_virtual_network":
		return w.VNets[armid.Key(x.of(a, "virtualNetworks"))] != nil
	case "azurerm_route_table":
		return w.Tables[armid.Key(x.of(a, "routeTables"))] != nil
	case "azurerm_subnet":
		return w.Subnets[armid.Key(subnetID(x, a))] != nil
	}
	return false
}
