package topology

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// Change is one resource Apply looked at.
type Change struct {
	Action string `json:"action"` // create, update or unchanged
	Kind   string `json:"kind"`   // resourceGroup, routeTable, route, virtualNetwork, subnet
	ID     string `json:"id"`
	Detail string `json:"detail,omitempty"`
}

// Actions of a Change.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionUnchanged = "unchanged"
)

// ApplyResult is what Apply did.
type ApplyResult struct {
	Changes []Change `json:"changes"`
	// Writes is the number of write requests sent: 0 when the fabric
	// already held the topology.
	Writes int `json:"writes"`
}

// Count is the number of changes with the action.
func (r ApplyResult) Count(action string) int {
	n := 0
	for _, c := range r.Changes {
		if c.Action == action {
			n++
		}
	}
	return n
}

// applyRetries is how often Apply re-reads a resource that someone else
// wrote between its read and its write (412).
const applyRetries = 5

// Apply makes a fabric (or anything that speaks ARM) hold the topology,
// through the real Azure SDK: it creates what is missing, updates the
// declared properties that differ, and keeps everything it does not
// declare — other routes of a table, other tags, and above all a subnet's
// route table association when the topology names none. Applying the same
// topology again writes nothing.
func Apply(ctx context.Context, t *Topology, opts *arm.ClientOptions, cred azcore.TokenCredential) (ApplyResult, error) {
	if err := t.Validate(); err != nil {
		return ApplyResult{}, err
	}
	sub := cmp.Or(t.Subscription, api.DefaultSubscription)
	a, err := newApplier(sub, opts, cred)
	if err != nil {
		return ApplyResult{}, err
	}
	for _, rg := range t.ResourceGroups {
		if err := a.resourceGroup(ctx, rg.Name, rg.Tags, api.NormalizeLocation(cmp.Or(rg.Location, t.Location))); err != nil {
			return a.res, err
		}
	}
	for _, rg := range t.ResourceGroups {
		rgLoc := cmp.Or(rg.Location, t.Location)
		for _, rt := range rg.RouteTables {
			if err := a.routeTable(ctx, rg.Name, rt, api.NormalizeLocation(cmp.Or(rt.Location, rgLoc))); err != nil {
				return a.res, err
			}
		}
	}
	for _, rg := range t.ResourceGroups {
		rgLoc := cmp.Or(rg.Location, t.Location)
		for _, vn := range rg.VirtualNetworks {
			if err := a.virtualNetwork(ctx, rg.Name, vn, api.NormalizeLocation(cmp.Or(vn.Location, rgLoc))); err != nil {
				return a.res, err
			}
		}
	}
	if err := a.applyNICs(ctx, t); err != nil {
		return a.res, err
	}
	if err := a.applyInterconnect(ctx, t, opts, cred); err != nil { // topology_interconnect.go
		return a.res, err
	}
	if err := a.applyAuthorization(ctx, t); err != nil { // apply_authz.go
		return a.res, err
	}
	return a.res, nil
}

type applier struct {
	sub     string
	arm     *armClient
	tables  *armnetwork.RouteTablesClient
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
	nics    *armnetwork.InterfacesClient
	res     ApplyResult
}

func newApplier(sub string, opts *arm.ClientOptions, cred azcore.TokenCredential) (*applier, error) {
	a := &applier{sub: sub}
	var err error
	if a.arm, err = newARMClient(cred, opts); err != nil {
		return nil, err
	}
	if a.tables, err = armnetwork.NewRouteTablesClient(sub, cred, opts); err != nil {
		return nil, fmt.Errorf("making route tables client: %w", err)
	}
	if a.vnets, err = armnetwork.NewVirtualNetworksClient(sub, cred, opts); err != nil {
		return nil, fmt.Errorf("making virtual networks client: %w", err)
	}
	if a.subnets, err = armnetwork.NewSubnetsClient(sub, cred, opts); err != nil {
		return nil, fmt.Errorf("making subnets client: %w", err)
	}
	if a.nics, err = armnetwork.NewInterfacesClient(sub, cred, opts); err != nil {
		return nil, fmt.Errorf("making network interfaces client: %w", err)
	}
	return a, nil
}

func (a *applier) record(action, kind, id, detail string) {
	a.res.Changes = append(a.res.Changes, Change{Action: action, Kind: kind, ID: id, Detail: detail})
}

// pollOptions: the fabric paces polling with Retry-After; 1 s is the
// SDK's floor outside tests.
var pollOptions = &runtime.PollUntilDoneOptions{Frequency: time.Second}

func (a *applier) resourceGroup(ctx context.Context, name string, tags map[string]string, loc string) error {
	path := "/subscriptions/" + a.sub + "/resourcegroups/" + name
	var cur network.ResourceGroup
	status, err := a.arm.do(ctx, http.MethodGet, path, nil, &cur)
	if err != nil && status != http.StatusNotFound {
		return fmt.Errorf("reading resource group %s: %w", name, err)
	}
	id := api.RGID(a.sub, name)
	if status == http.StatusNotFound {
		if _, err := a.arm.do(ctx, http.MethodPut, path, map[string]any{"location": loc, "tags": tags}, nil); err != nil {
			return fmt.Errorf("creating resource group %s: %w", name, err)
		}
		a.res.Writes++
		a.record(ActionCreate, "resourceGroup", id, loc)
		return nil
	}
	if api.NormalizeLocation(cur.Location) != loc {
		return fmt.Errorf("resource group %s exists in %s, not in %s as the topology says", name, cur.Location, loc)
	}
	merged, changed := mergeTags(cur.Tags, tags)
	if !changed {
		a.record(ActionUnchanged, "resourceGroup", id, "")
		return nil
	}
	if _, err := a.arm.do(ctx, http.MethodPut, path, map[string]any{"location": cur.Location, "tags": merged}, nil); err != nil {
		return fmt.Errorf("updating resource group %s: %w", name, err)
	}
	a.res.Writes++
	a.record(ActionUpdate, "resourceGroup", id, "tags")
	return nil
}

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

// awaitPut waits for the write a poller was begun for (err: how its
// beginning failed), counting it in the result when it began.
func awaitPut[T any](ctx context.Context, a *applier, p *runtime.Poller[T], err error) error {
	if err != nil {
		return err
	}
	a.res.Writes++
	_, err = p.PollUntilDone(ctx, pollOptions)
	return err
}

func withIfMatch(ctx context.Context, etag string) context.Context {
	return policy.WithHTTPHeader(ctx, http.Header{"If-Match": {etag}})
}

func withIfNoneMatch(ctx context.Context) context.Context {
	return policy.WithHTTPHeader(ctx, http.Header{"If-None-Match": {"*"}})
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

// armError is an ARM error answer told in one line: status, code, message.
type armError struct {
	Status  int
	Code    string
	Message string
	err     error
}

func (e *armError) Error() string {
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

func (e *armError) Unwrap() error { return e.err }

// describe shortens an SDK error (which prints the whole HTTP exchange) to
// its status, code and message; other errors pass through.
func describe(err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	e := &armError{Status: re.StatusCode, Code: re.ErrorCode, err: err}
	if re.RawResponse != nil {
		if b, perr := runtime.Payload(re.RawResponse); perr == nil {
			var body struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(b, &body) == nil {
				e.Message = body.Error.Message
				if e.Code == "" {
					e.Code = body.Error.Code
				}
			}
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(re.StatusCode)
	}
	return e
}

// armClient makes plain ARM requests (resource groups, subscriptions)
// through the SDK's pipeline: same authentication, retries and logging.
type armClient struct {
	pl runtime.Pipeline
	ep string
}

func newARMClient(cred azcore.TokenCredential, opts *arm.ClientOptions) (*armClient, error) {
	c, err := arm.NewClient("routekeeper-fabric", "v1.0.0", cred, opts)
	if err != nil {
		return nil, fmt.Errorf("making ARM client: %w", err)
	}
	return &armClient{pl: c.Pipeline(), ep: strings.TrimRight(c.Endpoint(), "/")}, nil
}

// do sends a request with api-version 2021-04-01 and decodes a 2xx answer
// into out. It returns the status, and an error for anything but 2xx.
func (c *armClient) do(ctx context.Context, method, path string, in, out any) (int, error) {
	u := path
	if !strings.HasPrefix(u, "http") {
		u = c.ep + path
	}
	if !strings.Contains(u, "api-version=") {
		if strings.Contains(u, "?") {
			u += "&api-version=2021-04-01"
		} else {
			u += "?api-version=2021-04-01"
		}
	}
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return 0, err
	}
	if in != nil {
		if err := runtime.MarshalAsJSON(req, in); err != nil {
			return 0, err
		}
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		return 0, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent) {
		return resp.StatusCode, describe(runtime.NewResponseError(resp))
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := runtime.UnmarshalAsJSON(resp, out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}
