package topology

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

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
