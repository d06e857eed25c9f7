package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
)

// networkAPIVersion is the api-version of Microsoft.Network the armnetwork
// SDK routekeeper is built with sends.
const networkAPIVersion = "2025-05-01"

// GetRouteTable reads a route table with its etag. A missing table (or
// resource group) is an error wrapping armerr.ErrNotFound.
//
// The GET goes through the SDK's pipeline (retries, the counting and
// answer policies, the credential) like every other request, but its
// answer is decoded straight into what routekeeper reads of it
// (tableJSON) instead of through armnetwork's models: the guard reads the
// table every cycle, and on a table of Azure's 1,000 routes (480 KB of
// JSON) the SDK's two-pass decoding was most of a cycle's CPU and
// allocations (docs/performance.md, "A table of 1,000 routes").
func (c *Client) GetRouteTable(ctx context.Context, id string) (*route.Table, error) {
	ref, _, err := c.resolve(id, armid.RouteTable)
	if err != nil {
		return nil, err
	}
	op := "reading route table " + id
	pl, endpoint, err := c.armPipeline()
	if err != nil {
		return nil, err
	}
	path := "/subscriptions/" + url.PathEscape(ref.subscription) + "/resourceGroups/" + url.PathEscape(ref.group) +
		"/providers/Microsoft.Network/routeTables/" + url.PathEscape(ref.name)
	raw, err := getJSON(ctx, pl, op, id, endpoint+path+"?api-version="+networkAPIVersion)
	if err != nil {
		return nil, err
	}
	var t tableJSON
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return t.table(ref.group), nil
}

// tableJSON is what routekeeper reads of a route table as ARM answers it
// (property names match without regard to case, as in ARM).
type tableJSON struct {
	ID, Name, Location, Etag string
	Tags                     map[string]string
	Properties               struct {
		ProvisioningState          string
		DisableBgpRoutePropagation bool
		Routes                     []struct {
			Name       string
			Properties struct {
				AddressPrefix, NextHopType, NextHopIPAddress, ProvisioningState string
			}
		}
		Subnets []struct{ ID string }
	}
}

// table is t as a route.Table of group, as tableFromARM makes it.
func (t *tableJSON) table(group string) *route.Table {
	out := &route.Table{
		ID: t.ID, Name: t.Name, ResourceGroup: group, Location: t.Location, Etag: t.Etag, Tags: map[string]string{},
		DisableBGPRoutePropagation: t.Properties.DisableBgpRoutePropagation, ProvisioningState: t.Properties.ProvisioningState,
	}
	for k, v := range t.Tags {
		out.Tags[k] = v
	}
	if n := len(t.Properties.Routes); n > 0 {
		out.Routes = make([]route.Route, 0, n)
	}
	for _, r := range t.Properties.Routes {
		p := r.Properties
		rt := route.Route{Name: r.Name, AddressPrefix: p.AddressPrefix, NextHopType: route.NextHopType(p.NextHopType), ProvisioningState: p.ProvisioningState}
		if pfx, err := netip.ParsePrefix(p.AddressPrefix); err == nil {
			rt.Prefix = pfx
		}
		if ip, err := netip.ParseAddr(p.NextHopIPAddress); err == nil {
			rt.NextHopIP = ip
		}
		out.Routes = append(out.Routes, rt)
	}
	for _, s := range t.Properties.Subnets {
		if s.ID != "" {
			out.Subnets = append(out.Subnets, s.ID)
		}
	}
	return out
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

// getJSON GETs url through the ARM pipeline pl and returns the answer's
// body; op and id name the read in its errors (classified as every call's
// are).
func getJSON(ctx context.Context, pl runtime.Pipeline, op, id, url string) ([]byte, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Raw().Header["Accept"] = []string{"application/json"}
	resp, err := pl.Do(req)
	if err != nil {
		return nil, classify(op, id, err)
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return nil, classify(op, id, runtime.NewResponseError(resp))
	}
	raw, err := runtime.Payload(resp)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	return raw, nil
}
