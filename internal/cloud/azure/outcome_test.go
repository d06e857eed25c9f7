package azure_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/lossy"
)

// lossyClient is a client on env's fabric behind a lossy path, with the
// fabric's quick test retries (4, 50 ms doubling, at most 5 s apart).
func lossyClient(t *testing.T, env *fabrictest.Env) (*azure.Client, *lossy.Transport) {
	t.Helper()
	proxy := lossy.New(env.Server.Transporter(), 1)
	opts := env.Server.ClientOptions()
	opts.Transport = proxy
	c, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: opts, PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

// lossyUpdate is the start of a lost-answer test: a fabric with 20 ms
// operations, a client behind a lossy path (lossyClient), the table as
// created, and an update of it that adds worker-0's route.
func lossyUpdate(t *testing.T) (*fabrictest.Env, *azure.Client, *lossy.Transport, *route.Table, route.Table) {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{OperationDuration: 20 * time.Millisecond}, fabrictest.KTHW)
	c, proxy := lossyClient(t, env)
	got := createTable(context.Background(), t, env.Client)
	upd := *got
	upd.Routes = []route.Route{va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20")}
	return env, c, proxy, got, upd
}

// wantUnknown fails t unless err is an unknown outcome of a write of id.
func wantUnknown(t *testing.T, err error, id string) {
	t.Helper()
	var ue *armerr.OutcomeUnknownError
	if !errors.Is(err, armerr.ErrOutcomeUnknown) || !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want a *armerr.OutcomeUnknownError", err, err)
	}
	if !armid.Same(ue.Resource, id) {
		t.Errorf("unknown outcome of %s, want of %s", ue.Resource, id)
	}
}

// TestLostAnswerIsAnUnknownOutcome: a conditional PUT reaches ARM, is
// applied, and its answer is lost to a connection reset. The client does
// not send it again (it would only earn a 412, after the SDK's backoff):
// the caller gets an unknown outcome at once, and the table says what
// happened.
func TestLostAnswerIsAnUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, proxy, got, upd := lossyUpdate(t)
		ctx := context.Background()
		proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/routeTables/", Lose: true})
		_, err := c.PutRouteTable(ctx, &upd, got.Etag)
		wantUnknown(t, err, fabrictest.KTHWTable)
		if n := len(proxy.Sent(http.MethodPut, fabrictest.KTHWTable, got.Etag)); n != 1 {
			t.Errorf("the PUT with If-Match %s was sent %d times, want once", got.Etag, n)
		}
		if blind := lossy.Blind(proxy.Requests()); len(blind) > 0 {
			t.Errorf("conditional writes re-sent blind: %v", blind)
		}
		back, err := c.GetRouteTable(ctx, fabrictest.KTHWTable)
		if err != nil {
			t.Fatal(err)
		}
		if back.Etag == got.Etag || len(back.Routes) != 1 {
			t.Errorf("table read back: etag %s (was %s), routes %v; want the lost write applied", back.Etag, got.Etag, back.Routes)
		}
	})
}

// TestLostSubnetAnswerIsAnUnknownOutcome: the same for the subnet PUT of
// an association, and the body kept from the read it was decided on is
// not sent again: the next association reads the subnet first, finds it
// changed, and writes nothing.
func TestLostSubnetAnswerIsAnUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := fabrictest.New(t, fabric.Options{OperationDuration: 20 * time.Millisecond}, fabrictest.KTHW)
		c, proxy := lossyClient(t, env)
		ctx := context.Background()
		if _, err := env.Client.PutRouteTable(ctx, newTable(), ""); err != nil {
			t.Fatal(err)
		}
		s, err := c.GetSubnet(ctx, fabrictest.KTHWSubnet)
		if err != nil {
			t.Fatal(err)
		}
		proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/subnets/", Lose: true})
		_, err = c.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag)
		wantUnknown(t, err, fabrictest.KTHWSubnet)
		if _, err := c.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag); !errors.Is(err, armerr.ErrPreconditionFailed) {
			t.Errorf("association decided on the read before the lost write: err = %v, want ErrPreconditionFailed", err)
		}
		if n := len(proxy.Sent(http.MethodPut, fabrictest.KTHWSubnet, s.Etag)); n != 1 {
			t.Errorf("the subnet PUT with If-Match %s was sent %d times, want once", s.Etag, n)
		}
		if unread := lossy.Unread(proxy.Requests()); len(unread) > 0 {
			t.Errorf("writes after an unknown outcome without a read: %v", unread)
		}
		now, err := env.Client.GetSubnet(ctx, fabrictest.KTHWSubnet)
		if err != nil || !armid.Same(now.RouteTableID, fabrictest.KTHWTable) {
			t.Errorf("subnet after the lost write: %+v, %v; want it on the table (the write landed)", now, err)
		}
	})
}

// TestWriteRetryRule drives the retry rule through the real SDK against
// the fabric, with a front that answers the table PUT (before or after
// forwarding it), or cannot be reached. Reads are retried as before.
func TestWriteRetryRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault lossy.Fault
		// sent: the PUTs sent (each attempt); unknown: the outcome is
		// unknown, else the write succeeds.
		sent    int
		unknown bool
	}{
		{name: "connection reset after applying", fault: lossy.Fault{Lose: true}, sent: 1, unknown: true},
		{name: "500 from the front", fault: lossy.Fault{Status: 500}, sent: 1, unknown: true},
		{name: "502 after forwarding", fault: lossy.Fault{Status: 502, Forward: true}, sent: 1, unknown: true},
		{name: "504 after forwarding", fault: lossy.Fault{Status: 504, Forward: true}, sent: 1, unknown: true},
		{name: "503 without Retry-After", fault: lossy.Fault{Status: 503}, sent: 1, unknown: true},
		{name: "408", fault: lossy.Fault{Status: 408}, sent: 1, unknown: true},
		{name: "503 with Retry-After", fault: lossy.Fault{Status: 503, RetryAfter: 2 * time.Second}, sent: 2},
		{name: "429 with Retry-After", fault: lossy.Fault{Status: 429, RetryAfter: 2 * time.Second}, sent: 2},
		{name: "never reached the server", fault: lossy.Fault{Dial: true}, sent: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, c, proxy, got, upd := lossyUpdate(t)
				ctx := context.Background()
				f := tc.fault
				f.Method, f.Path = http.MethodPut, "/routeTables/"
				proxy.Script(f)
				start := time.Now()
				_, err := c.PutRouteTable(ctx, &upd, got.Etag)
				if tc.unknown {
					wantUnknown(t, err, fabrictest.KTHWTable)
				} else if err != nil {
					t.Fatalf("err = %v, want the write retried and done", err)
				}
				if n := len(proxy.Sent(http.MethodPut, fabrictest.KTHWTable, got.Etag)); n != tc.sent {
					t.Errorf("PUT with If-Match %s sent %d times, want %d: %v", got.Etag, n, tc.sent, proxy.Requests())
				}
				if f.RetryAfter > 0 && time.Since(start) < f.RetryAfter {
					t.Errorf("the retry came %s after the answer, before its Retry-After %s", time.Since(start), f.RetryAfter)
				}
			})
		})
	}
	for _, tc := range []struct {
		name  string
		fault lossy.Fault
	}{
		{"reset", lossy.Fault{Lose: true}},
		{"500", lossy.Fault{Status: 500}},
		{"503 without Retry-After", lossy.Fault{Status: 503}},
	} {
		t.Run("GET "+tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
				c, proxy := lossyClient(t, env)
				ctx := context.Background()
				createTable(ctx, t, env.Client)
				f := tc.fault
				f.Method, f.Path = http.MethodGet, "/routeTables/"
				proxy.Script(f)
				if _, err := c.GetRouteTable(ctx, fabrictest.KTHWTable); err != nil {
					t.Fatalf("a read whose first answer failed: %v, want it retried", err)
				}
				if n := proxy.Count(http.MethodGet, "/routeTables/"); n != 2 {
					t.Errorf("GETs sent = %d, want 2", n)
				}
			})
		})
	}
}

// TestLostPollIsPolledAgain: the answer to a poll of the PUT's operation is
// lost: the poll (a GET) is sent again and the PUT is not. When every poll
// is lost the write's outcome is unknown, and still sent once.
func TestLostPollIsPolledAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lost    int
		unknown bool
	}{
		{"one poll lost", 1, false},
		{"every poll lost", 5, true}, // the fabric's test options: 4 retries
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, c, proxy, got, upd := lossyUpdate(t)
				ctx := context.Background()
				for range tc.lost {
					proxy.Script(lossy.Fault{Method: http.MethodGet, Path: "/operations/", Lose: true})
				}
				_, err := c.PutRouteTable(ctx, &upd, got.Etag)
				if tc.unknown {
					wantUnknown(t, err, fabrictest.KTHWTable)
				} else if err != nil {
					t.Fatalf("err = %v, want the operation polled again and the write done", err)
				}
				if n := proxy.Count(http.MethodPut, ""); n != 1 {
					t.Errorf("PUTs sent = %d, want 1", n)
				}
				if polls := proxy.Count(http.MethodGet, "/operations/"); polls < tc.lost+boolInt(!tc.unknown) {
					t.Errorf("operation polls = %d, want at least %d", polls, tc.lost+boolInt(!tc.unknown))
				}
				if left := proxy.Pending(); len(left) > 0 {
					t.Errorf("%d lost polls not played: the operation was not polled again", len(left))
				}
			})
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReadOnlyPostIsRetried: a gateway's getLearnedRoutes is a POST that
// only reads; its lost answer is retried as a read's.
func TestReadOnlyPostIsRetried(t *testing.T) {
	env := hubSpoke(t)
	c, proxy := lossyClient(t, env)
	proxy.Script(lossy.Fault{Method: http.MethodPost, Path: "/getLearnedRoutes", Lose: true})
	got, err := c.GatewayLearnedRoutes(context.Background(), hubGateway)
	if err != nil || len(got) == 0 {
		t.Fatalf("learned routes after a lost answer: %v, %v; want them, the POST retried", got, err)
	}
	if n := proxy.Count(http.MethodPost, "/getLearnedRoutes"); n != 2 {
		t.Errorf("getLearnedRoutes POSTs = %d, want 2", n)
	}
}

// TestOperationFailedIsKnown: an operation that ended Failed is a known
// outcome (nothing was applied), not an unknown one.
func TestOperationFailedIsKnown(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{OperationDuration: 20 * time.Millisecond}, fabrictest.KTHW)
	ctx := context.Background()
	got := createTable(ctx, t, env.Client)
	env.Server.SetFaults(fabric.Faults{FailNextOperations: 1})
	upd := *got
	upd.Routes = []route.Route{va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20")}
	_, err := env.Client.PutRouteTable(ctx, &upd, got.Etag)
	var ofe *armerr.OperationFailedError
	if !errors.As(err, &ofe) || errors.Is(err, armerr.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want a failed operation, a known outcome", err)
	}
	if !strings.Contains(err.Error(), "Failed") {
		t.Errorf("err = %v, want it to say Failed", err)
	}
}
