package azure

import (
	"context"
	"fmt"
	"net/netip"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
)

// GetRouteTable reads a route table with its etag. A missing table (or
// resource group) is an error wrapping armerr.ErrNotFound.
func (c *Client) GetRouteTable(ctx context.Context, id string) (*route.Table, error) {
	ref, sc, err := c.resolve(id, armid.RouteTable)
	if err != nil {
		return nil, err
	}
	resp, err := sc.tables.Get(ctx, ref.group, ref.name, nil)
	if err != nil {
		return nil, classify("reading route table "+id, id, err)
	}
	return tableFromARM(&resp.RouteTable, ref.group), nil
}

// PutRouteTable writes the whole table in one PUT and waits for the
// long-running operation. etag is the version the table was planned from and
// is sent as If-Match; "" means the table must not exist yet (If-None-Match: *).
// It returns the table as ARM holds it after the operation succeeded (the
// SDK reads it back once the operation is done). A PUT whose answer was
// lost, or whose operation could not be followed to its end, returns a
// *armerr.OutcomeUnknownError: read the table before writing it again.
func (c *Client) PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error) {
	ref, sc, err := c.resolve(t.ID, armid.RouteTable)
	if err != nil {
		return nil, err
	}
	body, err := tableToARM(t)
	if err != nil {
		return nil, err
	}
	poller, err := sc.tables.BeginCreateOrUpdate(withIfMatch(ctx, etag), ref.group, ref.name, body, nil)
	if err != nil {
		return nil, classifyWrite("writing route table "+t.ID, t.ID, err)
	}
	resp, err := pollUntilDone(ctx, c, "the write of route table "+t.ID, poller)
	if err != nil {
		return nil, classifyPoll("waiting for the write of route table "+t.ID, t.ID, err)
	}
	return tableFromARM(&resp.RouteTable, ref.group), nil
}

// DeleteRouteTable deletes a table (If-Match etag when not "") and waits for
// the operation.
func (c *Client) DeleteRouteTable(ctx context.Context, id, etag string) error {
	ref, sc, err := c.resolve(id, armid.RouteTable)
	if err != nil {
		return err
	}
	if etag != "" {
		ctx = withIfMatch(ctx, etag)
	}
	poller, err := sc.tables.BeginDelete(ctx, ref.group, ref.name, nil)
	if err != nil {
		return classifyWrite("deleting route table "+id, id, err)
	}
	if _, err := pollUntilDone(context.WithoutCancel(ctx), c, "the deletion of route table "+id, poller); err != nil {
		return classifyPoll("waiting for the deletion of route table "+id, id, err)
	}
	return nil
}

func tableFromARM(t *armnetwork.RouteTable, group string) *route.Table {
	out := &route.Table{
		ID:            str(t.ID),
		Name:          str(t.Name),
		ResourceGroup: group,
		Location:      str(t.Location),
		Etag:          str(t.Etag),
		Tags:          map[string]string{},
	}
	for k, v := range t.Tags {
		out.Tags[k] = str(v)
	}
	if p := t.Properties; p != nil {
		out.DisableBGPRoutePropagation = p.DisableBgpRoutePropagation != nil && *p.DisableBgpRoutePropagation
		if p.ProvisioningState != nil {
			out.ProvisioningState = string(*p.ProvisioningState)
		}
		for _, r := range p.Routes {
			if r != nil {
				out.Routes = append(out.Routes, routeFromARM(r))
			}
		}
		for _, s := range p.Subnets {
			if s != nil && s.ID != nil {
				out.Subnets = append(out.Subnets, *s.ID)
			}
		}
	}
	return out
}

func routeFromARM(r *armnetwork.Route) route.Route {
	out := route.Route{Name: str(r.Name)}
	if p := r.Properties; p != nil {
		out.AddressPrefix = str(p.AddressPrefix)
		if pfx, err := netip.ParsePrefix(out.AddressPrefix); err == nil {
			out.Prefix = pfx
		}
		if p.NextHopType != nil {
			out.NextHopType = route.NextHopType(*p.NextHopType)
		}
		if ip, err := netip.ParseAddr(str(p.NextHopIPAddress)); err == nil {
			out.NextHopIP = ip
		}
		if p.ProvisioningState != nil {
			out.ProvisioningState = string(*p.ProvisioningState)
		}
	}
	return out
}

// tableToARM builds the PUT body: every writable property of the table, so
// a whole-table write keeps tags, BGP propagation and every route.
func tableToARM(t *route.Table) (armnetwork.RouteTable, error) {
	body := armnetwork.RouteTable{
		Location: to.Ptr(t.Location),
		Tags:     map[string]*string{},
		Properties: &armnetwork.RouteTablePropertiesFormat{
			DisableBgpRoutePropagation: to.Ptr(t.DisableBGPRoutePropagation),
			Routes:                     []*armnetwork.Route{},
		},
	}
	keys := make([]string, 0, len(t.Tags))
	for k := range t.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		body.Tags[k] = to.Ptr(t.Tags[k])
	}
	for i, r := range t.Routes {
		if r.Name == "" {
			return body, fmt.Errorf("route table %s: routes[%d] has no name", t.ID, i)
		}
		prefix := r.AddressPrefix
		if prefix == "" && r.Prefix.IsValid() {
			prefix = r.Prefix.String()
		}
		props := &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr(prefix),
			NextHopType:   to.Ptr(armnetwork.RouteNextHopType(r.NextHopType)),
		}
		if r.NextHopIP.IsValid() {
			props.NextHopIPAddress = to.Ptr(r.NextHopIP.String())
		}
		body.Properties.Routes = append(body.Properties.Routes, &armnetwork.Route{Name: to.Ptr(r.Name), Properties: props})
	}
	return body, nil
}
