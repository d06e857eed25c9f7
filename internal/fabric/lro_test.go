package fabric

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/testutil/reqlog"
)

func tablePath(rg, name string) string {
	return "/subscriptions/" + testSub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/routeTables/" + name
}

func TestLongRunningPut(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			clock := newTestClock()
			e := newRGEnv(t, mode, Options{OperationDuration: 300 * time.Millisecond, Clock: clock.Now})

			resp, body := e.do("PUT", tablePath(testRG, "rt"), `{"location":"eastus","properties":{"routes":[{"name":"r","properties":{"addressPrefix":"10.200.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20"}}]}}`)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create = %d %s", resp.StatusCode, body)
			}
			async := resp.Header.Get("Azure-AsyncOperation")
			if !strings.HasPrefix(async, e.endpoint+"/subscriptions/"+testSub+"/providers/Microsoft.Network/locations/eastus/operations/") ||
				!strings.Contains(async, "api-version=") {
				t.Fatalf("Azure-AsyncOperation = %q", async)
			}
			if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 {
				t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
			}
			if ms, _ := strconv.Atoi(resp.Header.Get("retry-after-ms")); ms < 1 || ms > 300 {
				t.Errorf("retry-after-ms = %q", resp.Header.Get("retry-after-ms"))
			}
			created := decodeJSON(t, body)
			if ps := created["properties"].(map[string]any)["provisioningState"]; ps != "Updating" {
				t.Errorf("create body provisioningState = %v", ps)
			}
			if resp.Header.Get("ETag") != created["etag"] {
				t.Errorf("ETag header %q != body %v", resp.Header.Get("ETag"), created["etag"])
			}

			// While it runs: the resource says Updating, the operation InProgress,
			// and every write to the table is refused.
			if got := e.getTable(ctx, testRG, "rt"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateUpdating {
				t.Errorf("state while running = %v", *got.Properties.ProvisioningState)
			}
			op, ob := e.do("GET", strings.TrimPrefix(async, e.endpoint), "")
			if m := decodeJSON(t, ob); op.StatusCode != 200 || m["status"] != "InProgress" || op.Header.Get("Retry-After") == "" {
				t.Errorf("operation = %d %v (Retry-After %q)", op.StatusCode, m, op.Header.Get("Retry-After"))
			}
			_, err := e.putTable(ctx, testRG, "rt", table())
			re := respErr(t, err, http.StatusConflict, "AnotherOperationInProgress")
			if !strings.Contains(re.Error(), "/operations/") {
				t.Errorf("409 does not name the operation: %v", re)
			}
			_, err = e.putRoute(ctx, testRG, "rt", "r2", *vaRoute("", "10.200.1.0/24", "10.240.0.21"))
			respErr(t, err, http.StatusConflict, "AnotherOperationInProgress")
			_, err = e.tables.BeginDelete(ctx, testRG, "rt", nil)
			respErr(t, err, http.StatusConflict, "AnotherOperationInProgress")

			// Still running a moment before its end; then it ends Succeeded,
			// with the etag the PUT returned.
			clock.Advance(300*time.Millisecond - time.Nanosecond)
			_, ob = e.do("GET", strings.TrimPrefix(async, e.endpoint), "")
			if m := decodeJSON(t, ob); m["status"] != "InProgress" {
				t.Errorf("operation a nanosecond before its end = %v", m)
			}
			clock.Advance(time.Nanosecond)
			_, ob = e.do("GET", strings.TrimPrefix(async, e.endpoint), "")
			if m := decodeJSON(t, ob); m["status"] != "Succeeded" || m["endTime"] == nil || m["name"] == nil {
				t.Fatalf("operation at its end = %v", m)
			}
			got := e.getTable(ctx, testRG, "rt")
			if *got.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded || api.Str(got.Etag) != created["etag"] ||
				*got.Properties.Routes[0].Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
				t.Errorf("after = %v %s", *got.Properties.ProvisioningState, api.Str(got.Etag))
			}
		})
	}
}

func TestPollerFollowsAsyncOperation(t *testing.T) {
	eachTransport(t, Options{OperationDuration: 150 * time.Millisecond}, func(ctx context.Context, t *testing.T, e *env) {
		rec := reqlog.New(e.opts.Transport)
		opts := *e.opts
		opts.Transport = rec
		tables, err := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, &opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tables.BeginCreateOrUpdate(ctx, testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")), nil)
		if err != nil {
			t.Fatal(err)
		}
		// No Frequency given: the poller must be paced by the server's
		// Retry-After, not its 30 s default, which would not finish
		// within this context's 10 s. (A poller that stopped before
		// the operation ended would not see Succeeded.)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := p.PollUntilDone(pctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *res.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
			t.Errorf("result state = %v", *res.Properties.ProvisioningState)
		}
		if rec.Count("/operations/") < 1 {
			t.Errorf("the poller never polled the operation: %v", rec.Requests())
		}
		if rec.Count("GET "+tablePath(testRG, "rt")) != 1 {
			t.Errorf("want one final GET of the table: %v", rec.Requests())
		}
	})
}

func TestZeroDurationKeepsAzureShape(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "loopback", Options{})
	resp, body := e.do("PUT", tablePath(testRG, "rt"), `{"location":"eastus"}`)
	if resp.StatusCode != 201 || resp.Header.Get("Azure-AsyncOperation") == "" {
		t.Fatalf("create = %d, async %q", resp.StatusCode, resp.Header.Get("Azure-AsyncOperation"))
	}
	if resp.Header.Get("Retry-After") != "" {
		t.Errorf("Retry-After on a finished operation: %q", resp.Header.Get("Retry-After"))
	}
	if ps := decodeJSON(t, body)["properties"].(map[string]any)["provisioningState"]; ps != "Updating" {
		t.Errorf("body state = %v, want Updating as Azure answers", ps)
	}
	if got := e.getTable(ctx, testRG, "rt"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
		t.Errorf("state = %v, want Succeeded at once", *got.Properties.ProvisioningState)
	}
	_, ob := e.do("GET", strings.TrimPrefix(resp.Header.Get("Azure-AsyncOperation"), e.endpoint), "")
	if decodeJSON(t, ob)["status"] != "Succeeded" {
		t.Errorf("operation = %s", ob)
	}
	resp, body = e.do("PUT", tablePath(testRG, "rt"), `{"location":"eastus","tags":{"k":"v"}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Azure-AsyncOperation") == "" {
		t.Errorf("update = %d %s", resp.StatusCode, body)
	}
	resp, _ = e.do("DELETE", tablePath(testRG, "rt"), "")
	if resp.StatusCode != 202 || resp.Header.Get("Azure-AsyncOperation") == "" || resp.Header.Get("Location") == "" {
		t.Errorf("delete = %d %v", resp.StatusCode, resp.Header)
	}
	lr, _ := e.do("GET", strings.TrimPrefix(resp.Header.Get("Location"), e.endpoint), "")
	if lr.StatusCode != 204 {
		t.Errorf("Location result = %d", lr.StatusCode)
	}
}

func TestLongRunningDelete(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			clock := newTestClock()
			e := newRGEnv(t, mode, Options{OperationDuration: 100 * time.Millisecond, Clock: clock.Now})
			// The table is made through a server on the same state whose
			// operations end at once; only the delete is long-running.
			newEnvOn(t, "inprocess", e.store, Options{}).mustPutTable(ctx, testRG, "rt", table())
			resp, _ := e.do("DELETE", tablePath(testRG, "rt"), "")
			loc := resp.Header.Get("Location")
			if resp.StatusCode != 202 || !strings.Contains(loc, "/operationResults/") || resp.Header.Get("Azure-AsyncOperation") == "" {
				t.Fatalf("delete = %d %v", resp.StatusCode, resp.Header)
			}
			if got := e.getTable(ctx, testRG, "rt"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateDeleting {
				t.Errorf("state while deleting = %v", *got.Properties.ProvisioningState)
			}
			lr, _ := e.do("GET", strings.TrimPrefix(loc, e.endpoint), "")
			if lr.StatusCode != 202 {
				t.Errorf("Location while running = %d", lr.StatusCode)
			}
			clock.Advance(100 * time.Millisecond)
			lr, _ = e.do("GET", strings.TrimPrefix(loc, e.endpoint), "")
			if lr.StatusCode != 204 {
				t.Errorf("Location when done = %d", lr.StatusCode)
			}
			_, err := e.tables.Get(ctx, testRG, "rt", nil)
			respErr(t, err, 404, "ResourceNotFound")
		})
	}
}

func TestFailedOperations(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			for _, d := range []time.Duration{0, 40 * time.Millisecond} {
				t.Run(d.String(), func(t *testing.T) {
					ctx := context.Background()
					e := newRGEnv(t, mode, Options{OperationDuration: d})
					orig := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")))

					// An update that fails: the poller reports it, and a read
					// shows the previous content, Failed, with a new etag.
					e.srv.SetFaults(Faults{FailNextOperations: 1, FailCode: "NetworkOperationFailed"})
					p, err := e.tables.BeginCreateOrUpdate(ctx, testRG, "rt", table(vaRoute("changed", "10.201.0.0/24", "10.240.0.21")), nil)
					if err != nil {
						t.Fatal(err)
					}
					_, err = p.PollUntilDone(ctx, fastPoll)
					respErr(t, err, http.StatusOK, "NetworkOperationFailed")
					got := e.getTable(ctx, testRG, "rt")
					if names := routeNames(got); len(names) != 1 || names[0] != "r" {
						t.Errorf("routes after a failed update = %v, want the previous [r]", names)
					}
					if *got.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed {
						t.Errorf("state = %v, want Failed", *got.Properties.ProvisioningState)
					}
					if api.Str(got.Etag) == api.Str(orig.Etag) {
						t.Error("a failed operation kept the old etag")
					}
					// The next write goes through and heals it.
					ok := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("changed", "10.201.0.0/24", "10.240.0.21")))
					if *ok.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded || routeNames(ok)[0] != "changed" {
						t.Errorf("after retry = %v %v", *ok.Properties.ProvisioningState, routeNames(ok))
					}

					// A child write that fails leaves the parent as it was.
					e.srv.SetFaults(Faults{FailNextOperations: 1})
					_, err = e.putRoute(ctx, testRG, "rt", "extra", *vaRoute("", "10.202.0.0/24", "10.240.0.22"))
					respErr(t, err, http.StatusOK, "InternalServerError")
					if names := routeNames(e.getTable(ctx, testRG, "rt")); len(names) != 1 {
						t.Errorf("routes after a failed route PUT = %v", names)
					}
					// An update of a route that fails leaves the route as it
					// was, Failed (its last write did not complete), and the
					// table Failed; the next write heals both.
					e.srv.SetFaults(Faults{FailNextOperations: 1})
					_, err = e.putRoute(ctx, testRG, "rt", "changed", *vaRoute("", "10.201.0.0/24", "10.240.0.29"))
					respErr(t, err, http.StatusOK, "InternalServerError")
					got = e.getTable(ctx, testRG, "rt")
					if r := got.Properties.Routes[0]; *r.Properties.NextHopIPAddress != "10.240.0.21" || *r.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed {
						t.Errorf("route after a failed update: next hop %s, %s; want 10.240.0.21, Failed", *r.Properties.NextHopIPAddress, *r.Properties.ProvisioningState)
					}
					if *got.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed {
						t.Errorf("table after a failed route update = %v, want Failed", *got.Properties.ProvisioningState)
					}
					rr, err := e.putRoute(ctx, testRG, "rt", "changed", *vaRoute("", "10.201.0.0/24", "10.240.0.21"))
					if err != nil {
						t.Fatal(err)
					}
					if *rr.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
						t.Errorf("route written again = %v, want Succeeded", *rr.Properties.ProvisioningState)
					}

					// A create that fails leaves nothing behind.
					e.srv.SetFaults(Faults{FailNextOperations: 1})
					_, err = e.putTable(ctx, testRG, "new", table())
					respErr(t, err, http.StatusOK, "InternalServerError")
					_, err = e.tables.Get(ctx, testRG, "new", nil)
					respErr(t, err, 404, "ResourceNotFound")

					// A delete that fails leaves the table, Failed.
					e.srv.SetFaults(Faults{FailNextOperations: 1})
					dp, err := e.tables.BeginDelete(ctx, testRG, "rt", nil)
					if err != nil {
						t.Fatal(err)
					}
					_, err = dp.PollUntilDone(ctx, fastPoll)
					respErr(t, err, http.StatusOK, "InternalServerError")
					if got := e.getTable(ctx, testRG, "rt"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed {
						t.Errorf("state after failed delete = %v", *got.Properties.ProvisioningState)
					}
					if f := e.srv.Faults(); f.FailNextOperations != 0 {
						t.Errorf("FailNextOperations left = %d", f.FailNextOperations)
					}
				})
			}
		})
	}
}

func TestFailOperationsRate(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{Seed: 7, Faults: Faults{FailOperations: 0.5}})
	failed := 0
	for i := range 40 {
		_, err := e.putTable(ctx, testRG, "rt"+strconv.Itoa(i), table())
		if err != nil {
			respErr(t, err, http.StatusOK, "InternalServerError")
			failed++
		}
	}
	if failed < 8 || failed > 32 {
		t.Errorf("%d of 40 operations failed at rate 0.5", failed)
	}
}

// A table deleted while a subnet gets associated with it: the association
// is accepted (the table still exists), so the delete must fail at its end
// rather than leave the subnet pointing at nothing.
func TestDeleteFailsWhenTableGetsAssociatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{OperationDuration: 150 * time.Millisecond})
	e.seedVNet(ctx, testRG)
	rt := e.mustPutTable(ctx, testRG, "rt", table())
	dp, err := e.tables.BeginDelete(ctx, testRG, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
		t.Fatal(err)
	}
	_, err = dp.PollUntilDone(ctx, fastPoll)
	respErr(t, err, http.StatusOK, "InUseRouteTableCannotBeDeleted")
	got := e.getTable(ctx, testRG, "rt")
	if *got.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed || len(got.Properties.Subnets) != 1 {
		t.Errorf("table after the failed delete: %v, %d subnets", *got.Properties.ProvisioningState, len(got.Properties.Subnets))
	}
}
