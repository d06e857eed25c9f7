package topology

// Apply's writes of route tables and virtual networks (with their routes
// and subnets): each compared with what is there, and written only when
// it differs, with If-Match.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// mergeTags adds the declared tags to the current ones.
func mergeTags(cur, declared map[string]string) (map[string]string, bool) {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	changed := false
	for k, v := range declared {
		found := false
		for ck, cv := range out {
			if strings.EqualFold(ck, k) {
				found = true
				if cv != v {
					out[ck] = v
					changed = true
				}
			}
		}
		if !found {
			out[k] = v
			changed = true
		}
	}
	return out, changed
}

func sdkTags(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = api.Ptr(v)
	}
	return out
}

func sdkRouteOf(r TopologyRoute) *armnetwork.Route {
	hop, _ := network.CanonicalHop(r.NextHopType)
	p := &armnetwork.RoutePropertiesFormat{AddressPrefix: api.Ptr(r.AddressPrefix), NextHopType: api.Ptr(hop)}
	if r.NextHopIPAddress != "" {
		p.NextHopIPAddress = api.Ptr(r.NextHopIPAddress)
	}
	return &armnetwork.Route{Name: api.Ptr(r.Name), Properties: p}
}

// sameSDKRoute compares a declared route with an existing one the way ARM
// does: prefixes as prefixes, names of hop types without case.
func sameSDKRoute(want TopologyRoute, have *armnetwork.Route) bool {
	if have.Properties == nil || have.Properties.NextHopType == nil {
		return false
	}
	if network.PrefixKey(want.AddressPrefix) != network.PrefixKey(api.Str(have.Properties.AddressPrefix)) {
		return false
	}
	if !strings.EqualFold(want.NextHopType, string(*have.Properties.NextHopType)) {
		return false
	}
	w, _ := netip.ParseAddr(want.NextHopIPAddress)
	h, _ := netip.ParseAddr(api.Str(have.Properties.NextHopIPAddress))
	return w == h
}

func (a *applier) routeTable(ctx context.Context, rg string, rt TopologyRouteTable, loc string) error {
	id := api.ResourceID(a.sub, rg, api.TypeRouteTables, rt.Name)
	for attempt := 0; ; attempt++ {
		cur, err := a.tables.Get(ctx, rg, rt.Name, nil)
		if isStatus(err, http.StatusNotFound) {
			t := armnetwork.RouteTable{Location: api.Ptr(loc), Tags: sdkTags(rt.Tags), Properties: &armnetwork.RouteTablePropertiesFormat{
				DisableBgpRoutePropagation: rt.DisableBgpRoutePropagation}}
			for _, r := range rt.Routes {
				t.Properties.Routes = append(t.Properties.Routes, sdkRouteOf(r))
			}
			if err := a.putTable(withIfNoneMatch(ctx), rg, rt.Name, t); err != nil {
				if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
					continue // created meanwhile: read it and merge
				}
				return fmt.Errorf("creating route table %s: %w", rt.Name, describe(err))
			}
			a.record(ActionCreate, "routeTable", id, loc)
			for _, r := range rt.Routes {
				a.record(ActionCreate, "route", api.ChildID(id, api.ChildRoutes, r.Name), routeDetail(r))
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading route table %s: %w", rt.Name, describe(err))
		}
		t := cur.RouteTable
		if api.NormalizeLocation(api.Str(t.Location)) != loc {
			return fmt.Errorf("route table %s exists in %s, not in %s as the topology says", rt.Name, api.Str(t.Location), loc)
		}
		if t.Properties == nil {
			t.Properties = &armnetwork.RouteTablePropertiesFormat{}
		}
		var changes []Change
		var tableChanges []string
		tags, tagsChanged := mergeTags(network.PlainTags(t.Tags), rt.Tags)
		if tagsChanged {
			t.Tags = sdkTags(tags)
			tableChanges = append(tableChanges, "tags")
		}
		if b := rt.DisableBgpRoutePropagation; b != nil && (t.Properties.DisableBgpRoutePropagation == nil || *t.Properties.DisableBgpRoutePropagation != *b) {
			t.Properties.DisableBgpRoutePropagation = api.Ptr(*b)
			tableChanges = append(tableChanges, "disableBgpRoutePropagation")
		}
		for _, r := range rt.Routes {
			rid := api.ChildID(id, api.ChildRoutes, r.Name)
			i := slices.IndexFunc(t.Properties.Routes, func(h *armnetwork.Route) bool { return strings.EqualFold(api.Str(h.Name), r.Name) })
			switch {
			case i < 0:
				t.Properties.Routes = append(t.Properties.Routes, sdkRouteOf(r))
				changes = append(changes, Change{ActionCreate, "route", rid, routeDetail(r)})
			case !sameSDKRoute(r, t.Properties.Routes[i]):
				nr := sdkRouteOf(r)
				nr.Name = t.Properties.Routes[i].Name
				t.Properties.Routes[i] = nr
				changes = append(changes, Change{ActionUpdate, "route", rid, routeDetail(r)})
			default:
				changes = append(changes, Change{ActionUnchanged, "route", rid, ""})
			}
		}
		writing := len(tableChanges) > 0 || slices.ContainsFunc(changes, func(c Change) bool { return c.Action != ActionUnchanged })
		if writing {
			if err := a.putTable(withIfMatch(ctx, api.Str(t.Etag)), rg, rt.Name, t); err != nil {
				if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
					continue
				}
				return fmt.Errorf("updating route table %s: %w", rt.Name, describe(err))
			}
		}
		if len(tableChanges) > 0 {
			a.record(ActionUpdate, "routeTable", id, strings.Join(tableChanges, ", "))
		} else {
			a.record(ActionUnchanged, "routeTable", id, "")
		}
		a.res.Changes = append(a.res.Changes, changes...)
		return nil
	}
}

func routeDetail(r TopologyRoute) string {
	d := r.AddressPrefix + " -> " + r.NextHopType
	if r.NextHopIPAddress != "" {
		d += " " + r.NextHopIPAddress
	}
	return d
}

func (a *applier) putTable(ctx context.Context, rg, name string, t armnetwork.RouteTable) error {
	p, err := a.tables.BeginCreateOrUpdate(ctx, rg, name, t, nil)
	return awaitPut(ctx, a, p, err)
}

// tableRef resolves a subnet's routeTable: a full ID, or a table of rg.
func (a *applier) tableRef(rg, ref string) string {
	if strings.HasPrefix(ref, "/") {
		return ref
	}
	return api.ResourceID(a.sub, rg, api.TypeRouteTables, ref)
}

func subnetPrefixList(sn TopologySubnet) []string {
	if sn.AddressPrefix != "" {
		return []string{sn.AddressPrefix}
	}
	return sn.AddressPrefixes
}

func samePrefixes(a, b []string) bool {
	norm := func(s []string) []string {
		out := make([]string, 0, len(s))
		for _, v := range s {
			out = append(out, network.PrefixKey(v))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

func setSubnetPrefixes(p *armnetwork.SubnetPropertiesFormat, sn TopologySubnet) {
	if sn.AddressPrefix != "" {
		p.AddressPrefix, p.AddressPrefixes = api.Ptr(sn.AddressPrefix), nil
		return
	}
	p.AddressPrefix, p.AddressPrefixes = nil, nil
	for _, s := range sn.AddressPrefixes {
		p.AddressPrefixes = append(p.AddressPrefixes, api.Ptr(s))
	}
}

func (a *applier) virtualNetwork(ctx context.Context, rg string, vn TopologyVirtualNetwork, loc string) error {
	id := api.ResourceID(a.sub, rg, api.TypeVirtualNetworks, vn.Name)
	var cur armnetwork.VirtualNetwork
	for attempt := 0; ; attempt++ {
		got, err := a.vnets.Get(ctx, rg, vn.Name, nil)
		if isStatus(err, http.StatusNotFound) {
			v := armnetwork.VirtualNetwork{Location: api.Ptr(loc), Tags: sdkTags(vn.Tags), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{}}}
			for _, p := range vn.AddressPrefixes {
				v.Properties.AddressSpace.AddressPrefixes = append(v.Properties.AddressSpace.AddressPrefixes, api.Ptr(p))
			}
			for _, sn := range vn.Subnets {
				p := &armnetwork.SubnetPropertiesFormat{}
				setSubnetPrefixes(p, sn)
				if sn.RouteTable != "" {
					p.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(a.tableRef(rg, sn.RouteTable))}
				}
				v.Properties.Subnets = append(v.Properties.Subnets, &armnetwork.Subnet{Name: api.Ptr(sn.Name), Properties: p})
			}
			if err := a.putVNet(withIfNoneMatch(ctx), rg, vn.Name, v); err != nil {
				if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
					continue
				}
				return fmt.Errorf("creating virtual network %s: %w", vn.Name, describe(err))
			}
			a.record(ActionCreate, "virtualNetwork", id, strings.Join(vn.AddressPrefixes, ", "))
			for _, sn := range vn.Subnets {
				d := strings.Join(subnetPrefixList(sn), ", ")
				if sn.RouteTable != "" {
					d += " route table " + sn.RouteTable
				}
				a.record(ActionCreate, "subnet", api.ChildID(id, api.ChildSubnets, sn.Name), d)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading virtual network %s: %w", vn.Name, describe(err))
		}
		cur = got.VirtualNetwork
		if api.NormalizeLocation(api.Str(cur.Location)) != loc {
			return fmt.Errorf("virtual network %s exists in %s, not in %s as the topology says", vn.Name, api.Str(cur.Location), loc)
		}
		if cur.Properties == nil {
			cur.Properties = &armnetwork.VirtualNetworkPropertiesFormat{}
		}
		if cur.Properties.AddressSpace == nil {
			cur.Properties.AddressSpace = &armnetwork.AddressSpace{}
		}
		var added []string
		for _, p := range vn.AddressPrefixes {
			if !slices.ContainsFunc(cur.Properties.AddressSpace.AddressPrefixes, func(h *string) bool { return network.PrefixKey(api.Str(h)) == network.PrefixKey(p) }) {
				cur.Properties.AddressSpace.AddressPrefixes = append(cur.Properties.AddressSpace.AddressPrefixes, api.Ptr(p))
				added = append(added, p)
			}
		}
		tags, tagsChanged := mergeTags(network.PlainTags(cur.Tags), vn.Tags)
		if tagsChanged {
			cur.Tags = sdkTags(tags)
		}
		if len(added) == 0 && !tagsChanged {
			a.record(ActionUnchanged, "virtualNetwork", id, "")
			break
		}
		// The PUT carries every subnet as it is, associations included.
		if err := a.putVNet(withIfMatch(ctx, api.Str(cur.Etag)), rg, vn.Name, cur); err != nil {
			if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
				continue
			}
			return fmt.Errorf("updating virtual network %s: %w", vn.Name, describe(err))
		}
		var d []string
		if len(added) > 0 {
			d = append(d, "address prefixes + "+strings.Join(added, ", "))
		}
		if tagsChanged {
			d = append(d, "tags")
		}
		a.record(ActionUpdate, "virtualNetwork", id, strings.Join(d, "; "))
		break
	}
	for _, sn := range vn.Subnets {
		if err := a.subnet(ctx, rg, vn.Name, id, sn); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) subnet(ctx context.Context, rg, vnet, vnetID string, sn TopologySubnet) error {
	id := api.ChildID(vnetID, api.ChildSubnets, sn.Name)
	for attempt := 0; ; attempt++ {
		var body armnetwork.Subnet
		action, etag := ActionCreate, ""
		got, err := a.subnets.Get(ctx, rg, vnet, sn.Name, nil)
		switch {
		case isStatus(err, http.StatusNotFound):
			body.Properties = &armnetwork.SubnetPropertiesFormat{}
		case err != nil:
			return fmt.Errorf("reading subnet %s/%s: %w", vnet, sn.Name, describe(err))
		default:
			action, etag = ActionUpdate, api.Str(got.Etag)
			body = got.Subnet
			if body.Properties == nil {
				body.Properties = &armnetwork.SubnetPropertiesFormat{}
			}
		}
		var d []string
		if action == ActionCreate || !samePrefixes(network.SubnetPrefixesOf(&body), subnetPrefixList(sn)) {
			setSubnetPrefixes(body.Properties, sn)
			d = append(d, strings.Join(subnetPrefixList(sn), ", "))
		}
		if sn.RouteTable != "" {
			want := a.tableRef(rg, sn.RouteTable)
			if body.Properties.RouteTable == nil || !armid.Same(api.Str(body.Properties.RouteTable.ID), want) {
				body.Properties.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(want)}
				d = append(d, "route table "+sn.RouteTable)
			}
		}
		if len(d) == 0 {
			a.record(ActionUnchanged, "subnet", id, "")
			return nil
		}
		wctx := withIfNoneMatch(ctx)
		if etag != "" {
			wctx = withIfMatch(ctx, etag)
		}
		p, err := a.subnets.BeginCreateOrUpdate(wctx, rg, vnet, sn.Name, body, nil)
		err = awaitPut(ctx, a, p, err)
		if err != nil {
			if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
				continue
			}
			return fmt.Errorf("writing subnet %s/%s: %w", vnet, sn.Name, describe(err))
		}
		a.record(action, "subnet", id, strings.Join(d, "; "))
		return nil
	}
}

func (a *applier) putVNet(ctx context.Context, rg, name string, v armnetwork.VirtualNetwork) error {
	p, err := a.vnets.BeginCreateOrUpdate(ctx, rg, name, v, nil)
	return awaitPut(ctx, a, p, err)
}
