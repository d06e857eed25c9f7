package azure_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func newTable(routes ...route.Route) *route.Table {
	return &route.Table{
		ID:       fabrictest.KTHWTable,
		Location: "eastus",
		Tags:     map[string]string{route.ClaimTag: "kthw", "env": "test"},
		Routes:   routes,
	}
}

func va(name, prefix, hop string) route.Route {
	return route.Route{Name: name, AddressPrefix: prefix, Prefix: netip.MustParsePrefix(prefix), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(hop)}
}

func TestRouteTableRoundTrip(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{OperationDuration: 30 * time.Millisecond}, fabrictest.KTHW)
	ctx := context.Background()

	if _, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable); !errors.Is(err, armerr.ErrNotFound) {
		t.Fatalf("GET of a missing table: err = %v, want ErrNotFound", err)
	}
	in := newTable(
		va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20"),
		route.Route{Name: "to-azure", AddressPrefix: "AzureCloud", NextHopType: route.Internet},
	)
	in.DisableBGPRoutePropagation = true
	created, err := env.Client.PutRouteTable(ctx, in, "")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.ProvisioningState != "Succeeded" || created.Etag == "" {
		t.Fatalf("created table: state %q etag %q; want Succeeded with an etag (the poller must wait for the operation)", created.ProvisioningState, created.Etag)
	}
	got, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	if got.Etag != created.Etag {
		t.Errorf("etag after create %s, GET says %s", created.Etag, got.Etag)
	}
	want := []route.Route{
		{Name: "worker-0____102000024", AddressPrefix: "10.200.0.0/24", Prefix: netip.MustParsePrefix("10.200.0.0/24"), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.0.20"), ProvisioningState: "Succeeded"},
		{Name: "to-azure", AddressPrefix: "AzureCloud", NextHopType: route.Internet, ProvisioningState: "Succeeded"},
	}
	if diff := cmp.Diff(want, got.Routes, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("routes read back (-want +got):\n%s", diff)
	}
	if !got.DisableBGPRoutePropagation || got.Tags["env"] != "test" || got.Claim() != "kthw" || got.Location != "eastus" || got.ResourceGroup != "kubernetes" {
		t.Errorf("table properties lost in the round trip: %+v", got)
	}

	// A second create must not overwrite: If-None-Match: *.
	if _, err := env.Client.PutRouteTable(ctx, in, ""); !errors.Is(err, armerr.ErrPreconditionFailed) {
		t.Fatalf("create over an existing table: err = %v, want ErrPreconditionFailed", err)
	}
	// A write planned from an old version is refused: If-Match.
	upd := *got
	upd.Routes = append(upd.Routes, va("worker-1____102001024", "10.200.1.0/24", "10.240.0.21"))
	if _, err := env.Client.PutRouteTable(ctx, &upd, created.Etag); err != nil {
		t.Fatalf("update with the current etag: %v", err)
	}
	if _, err := env.Client.PutRouteTable(ctx, &upd, created.Etag); !errors.Is(err, armerr.ErrPreconditionFailed) {
		t.Fatalf("update with a stale etag: err = %v, want ErrPreconditionFailed", err)
	}
}

func TestFailedOperationIsAnError(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{OperationDuration: 20 * time.Millisecond}, fabrictest.KTHW)
	ctx := context.Background()
	created, err := env.Client.PutRouteTable(ctx, newTable(), "")
	if err != nil {
		t.Fatal(err)
	}
	env.Server.SetFaults(fabric.Faults{FailNextOperations: 1, FailCode: "InternalServerError"})
	upd := *created
	upd.Routes = []route.Route{va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20")}
	_, err = env.Client.PutRouteTable(ctx, &upd, created.Etag)
	var ofe *armerr.OperationFailedError
	if !errors.As(err, &ofe) {
		t.Fatalf("write whose operation failed: err = %v (%T), want *armerr.OperationFailedError", err, err)
	}
	if ofe.Status != "Failed" || ofe.Code != "InternalServerError" {
		t.Errorf("operation error = %+v, want status Failed, code InternalServerError", ofe)
	}
	got, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Routes) != 0 {
		t.Errorf("routes after a failed write: %+v; the write must not have landed", got.Routes)
	}
}

// TestThrottledWriteIsRetriedAfterRetryAfter runs in a synctest bubble:
// the SDK's wait before its retry is on the bubble's clock, which moves
// only while every goroutine waits, so the time the writes took is the
// time the client chose to wait.
func TestThrottledWriteIsRetriedAfterRetryAfter(t *testing.T) {
	synctest.Test(t, throttledWriteIsRetriedAfterRetryAfter)
}

// createTable creates newTable through c and reads it back.
func createTable(ctx context.Context, t *testing.T, c *azure.Client) *route.Table {
	t.Helper()
	if _, err := c.PutRouteTable(ctx, newTable(), ""); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetRouteTable(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tableAndSubnet creates newTable through c and reads the node subnet,
// not yet associated with it.
func tableAndSubnet(ctx context.Context, t *testing.T, c *azure.Client) *observe.Subnet {
	t.Helper()
	if _, err := c.PutRouteTable(ctx, newTable(), ""); err != nil {
		t.Fatal(err)
	}
	s, err := c.GetSubnet(ctx, fabrictest.KTHWSubnet)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func throttledWriteIsRetriedAfterRetryAfter(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	env.Server.SetFaults(fabric.Faults{WriteBucket: 1, WriteRefillPerSecond: 1})
	_, w0 := env.Client.Calls()
	start := time.Now()
	got := createTable(ctx, t, env.Client)
	got.Routes = []route.Route{va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20")}
	if _, err := env.Client.PutRouteTable(ctx, got, got.Etag); err != nil {
		t.Fatalf("second write, throttled then retried: %v", err)
	}
	_, w1 := env.Client.Calls()
	if w1-w0 < 3 {
		t.Errorf("writes sent = %d, want at least 3 (one of them answered 429 and retried)", w1-w0)
	}
	if s := env.Client.Stats(); s.Throttled < 1 {
		t.Errorf("throttled answers counted = %d, want >= 1", s.Throttled)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the writes took %s of the bubble's clock: the retry did not wait for Retry-After (1 s)", d)
	}
}

func TestThrottlingBeyondTheRetryBudgetReportsRetryAfter(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	// One write a minute: the SDK does not wait a Retry-After longer than
	// its MaxRetryDelay; the caller gets the delay to schedule its retry.
	env.Server.SetFaults(fabric.Faults{WriteBucket: 1, WriteRefillPerSecond: 1.0 / 120})
	c, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: withMaxRetryDelay(env, time.Second), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := createTable(ctx, t, c)
	_, err = c.PutRouteTable(ctx, got, got.Etag)
	var te *armerr.ThrottledError
	if !errors.As(err, &te) || !errors.Is(err, armerr.ErrThrottled) {
		t.Fatalf("err = %v, want a ThrottledError", err)
	}
	if te.RetryAfter < 30*time.Second {
		t.Errorf("RetryAfter = %s, want the fabric's long Retry-After", te.RetryAfter)
	}
}

func TestSetSubnetRouteTable(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{OperationDuration: 10 * time.Millisecond}, fabrictest.KTHW)
	ctx := context.Background()
	before := tableAndSubnet(ctx, t, env.Client)
	if before.RouteTableID != "" {
		t.Fatalf("subnet starts associated with %s", before.RouteTableID)
	}
	after, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, before.Etag)
	if err != nil {
		t.Fatal(err)
	}
	if !armid.Same(after.RouteTableID, fabrictest.KTHWTable) {
		t.Errorf("subnet route table = %q, want %s", after.RouteTableID, fabrictest.KTHWTable)
	}
	if diff := cmp.Diff(before.AddressPrefixes, after.AddressPrefixes); diff != "" {
		t.Errorf("the association changed the subnet's prefixes (-before +after):\n%s", diff)
	}
	tbl, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Subnets) != 1 || !armid.Same(tbl.Subnets[0], fabrictest.KTHWSubnet) {
		t.Errorf("table back-reference = %v, want the subnet", tbl.Subnets)
	}
	// Decided on an old read: refused without writing.
	_, w0 := env.Client.Calls()
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, "", before.Etag); !errors.Is(err, armerr.ErrPreconditionFailed) {
		t.Fatalf("stale subnet etag: err = %v, want ErrPreconditionFailed", err)
	}
	if _, w1 := env.Client.Calls(); w1 != w0 {
		t.Errorf("a stale association change sent %d writes, want none", w1-w0)
	}
	if _, err := env.Client.GetSubnet(ctx, fabrictest.KTHWVNet+"/subnets/nope"); !errors.Is(err, armerr.ErrNotFound) {
		t.Errorf("missing subnet: err = %v, want ErrNotFound", err)
	}
}

func TestBadIDs(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, "")
	ctx := context.Background()
	for _, id := range []string{"", "rt", "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/virtualNetworks/v"} {
		if _, err := env.Client.GetRouteTable(ctx, id); err == nil {
			t.Errorf("GetRouteTable(%q): no error", id)
		}
		if _, err := env.Client.GetSubnet(ctx, id); err == nil {
			t.Errorf("GetSubnet(%q): no error", id)
		}
	}
}

// TestSetSubnetRouteTableSendsTheSubnetAsRead: a repair decided on a read
// sends that read's body back with If-Match instead of reading the subnet
// again (one read per subnet per pass), and a subnet changed since is
// refused by ARM's 412, never overwritten.
func TestSetSubnetRouteTableSendsTheSubnetAsRead(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	s := tableAndSubnet(ctx, t, env.Client)
	r0, _ := env.Client.Calls()
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag); err != nil {
		t.Fatal(err)
	}
	sent, _ := env.Client.Calls()
	// The write's own operation may be polled; the subnet is not read again.
	other, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: env.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	polls := sent - r0
	t.Logf("reads while associating: %d", polls)
	if polls > 2 {
		t.Errorf("associating a subnet just read made %d reads, want at most the operation's polls", polls)
	}

	// Read by routekeeper, then changed by someone else: the body routekeeper
	// holds is stale, and ARM refuses it.
	s, err = env.Client.GetSubnet(ctx, fabrictest.KTHWSubnet)
	if err != nil {
		t.Fatal(err)
	}
	o, err := other.GetSubnet(ctx, fabrictest.KTHWSubnet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, "", o.Etag); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag); !errors.Is(err, armerr.ErrPreconditionFailed) {
		t.Fatalf("stale body: err = %v, want ErrPreconditionFailed", err)
	}
	if now, err := env.Client.GetSubnet(ctx, fabrictest.KTHWSubnet); err != nil || now.RouteTableID != "" {
		t.Errorf("subnet after the refused write: %+v, %v; want the other writer's (no table)", now, err)
	}
}
