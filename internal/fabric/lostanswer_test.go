package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/route"
)

// lossModes are the ways a client reaches the fabric, each losing an
// answer its own way (lostanswer.go): in process, HTTP/1.1 over loopback
// (plain, and TLS as az speaks to fabric serve --tls) and HTTP/2 over TLS
// (what Go's clients negotiate with fabric serve --tls).
var lossModes = []string{"inprocess", "loopback", "tls", "tls-h2"}

// reqLog is a slog.Handler that keeps the fabric's "fabric request" debug
// lines: every ARM request that reached the fabric, with its If-Match and
// whether its answer was lost.
type reqLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
}

type loggedRequest struct {
	method, path, ifMatch string
	status                int
	lost                  bool
}

func (l *reqLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *reqLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *reqLog) WithGroup(string) slog.Handler            { return l }

func (l *reqLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "fabric request" {
		return nil
	}
	var q loggedRequest
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method":
			q.method = a.Value.String()
		case "path":
			q.path = a.Value.String()
		case "ifMatch":
			q.ifMatch = a.Value.String()
		case "status":
			q.status = int(a.Value.Int64())
		case "lost":
			q.lost = a.Value.Bool()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, q)
	return nil
}

// sent returns the requests with method and If-Match ifMatch that reached
// the fabric at path (compared case-insensitively).
func (l *reqLog) sent(method, path, ifMatch string) []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedRequest
	for _, q := range l.reqs {
		if q.method == method && strings.EqualFold(q.path, path) && q.ifMatch == ifMatch {
			out = append(out, q)
		}
	}
	return out
}

// lossEnv is an env in mode whose requests are logged, with the table rt
// (one route, a) in testRG.
func lossEnv(t *testing.T, mode string) (*env, *reqLog, armTable) {
	t.Helper()
	log := &reqLog{}
	e := newRGEnv(t, mode, Options{Logger: slog.New(log), Seed: 1})
	if mode == "tls-h2" {
		resp, _ := e.do("GET", "/subscriptions/"+testSub+"/resourcegroups", "")
		if resp.ProtoMajor != 2 {
			t.Fatalf("mode tls-h2 speaks %s", resp.Proto)
		}
	}
	got := e.mustPutTable(context.Background(), testRG, "rt", table(vaRoute("a", "10.200.0.0/24", "10.240.0.20")))
	return e, log, armTable{path: tablePath(testRG, "rt"), etag: api.Str(got.Etag)}
}

// armTable is a route table as a raw request names it.
type armTable struct{ path, etag string }

// wantConnectionLost fails t unless err is what the client of mode gets
// when the fabric drops the answer: a reset of the connection over
// HTTP/1.x and in process, a reset of the stream over HTTP/2.
func wantConnectionLost(t *testing.T, mode string, err error) {
	t.Helper()
	t.Logf("the client of %s got: %v", mode, err)
	switch {
	case err == nil:
		t.Fatal("the write was answered, want its answer lost")
	case mode == "tls-h2":
		if !strings.Contains(err.Error(), "INTERNAL_ERROR") {
			t.Errorf("err = %v, want the stream reset (RST_STREAM INTERNAL_ERROR)", err)
		}
	case !errors.Is(err, syscall.ECONNRESET):
		t.Errorf("err = %v (%T), want a connection reset", err, err)
	}
}

// TestLostAnswerAppliedTheWrite: with the answer of the next write lost,
// a conditional PUT (and a DELETE) is carried out, and its client gets a
// transport error instead of the answer; the table read back shows the
// write. Over every transport.
func TestLostAnswerAppliedTheWrite(t *testing.T) {
	for _, mode := range lossModes {
		t.Run(mode, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				method string
				body   string
				check  func(t *testing.T, e *env, before string)
			}{
				{"PUT", "PUT", `{"location":"eastus","properties":{"routes":[
					{"name":"a","properties":{"addressPrefix":"10.200.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20"}},
					{"name":"b","properties":{"addressPrefix":"10.200.1.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.21"}}]}}`,
					func(t *testing.T, e *env, before string) {
						now := e.getTable(context.Background(), testRG, "rt")
						if api.Str(now.Etag) == before || !slices.Equal(routeNames(now), []string{"a", "b"}) {
							t.Errorf("table read back: etag %s (was %s), routes %v; want the lost write applied", api.Str(now.Etag), before, routeNames(now))
						}
					}},
				{"DELETE", "DELETE", "", func(t *testing.T, e *env, _ string) {
					_, err := e.tables.Get(context.Background(), testRG, "rt", nil)
					respErr(t, err, http.StatusNotFound, "ResourceNotFound")
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e, log, rt := lossEnv(t, mode)
					e.srv.SetFaults(Faults{LoseNextAnswers: 1})
					resp, body, err := e.send(tc.method, rt.path, tc.body, "If-Match", rt.etag)
					if err == nil {
						t.Fatalf("%s answered %d %s, want its answer lost", tc.method, resp.StatusCode, body)
					}
					wantConnectionLost(t, mode, err)
					if left := e.srv.Faults().LoseNextAnswers; left != 0 {
						t.Errorf("LoseNextAnswers left = %d, want 0", left)
					}
					if sent := log.sent(tc.method, rt.path, rt.etag); len(sent) != 1 || !sent[0].lost || sent[0].status >= 300 {
						t.Errorf("requests at the fabric with If-Match %s: %+v, want one, carried out, its answer lost", rt.etag, sent)
					}
					tc.check(t, e, rt.etag)
				})
			}
		})
	}
}

// rkClient is routekeeper's ARM client on e, as routekeeper reaches a
// fabric: in process, or through EndpointClientOptions (trusting the
// server's certificate over TLS).
func rkClient(t *testing.T, e *env) *azure.Client {
	t.Helper()
	var opts *arm.ClientOptions
	if e.endpoint == InProcessEndpoint {
		opts = e.srv.ClientOptions()
	} else {
		var err error
		if opts, err = EndpointClientOptions(e.endpoint, e.ca); err != nil {
			t.Fatal(err)
		}
	}
	opts.Retry.RetryDelay = 10 * time.Millisecond
	c, err := azure.New(azure.Options{Credential: Credential{}, ClientOptions: opts, PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLostAnswerThroughTheSDK: the same lost answer through the real
// Azure SDK. routekeeper's client reports an unknown outcome and sends
// the PUT once; the table it reads back holds the write. The SDK on its
// own (its default retry rule) sends the PUT again with the same If-Match
// and earns a 412 for a write that took effect: the blind re-send of a lost answer, reproduced by
// the fabric alone.
func TestLostAnswerThroughTheSDK(t *testing.T) {
	ctx := context.Background()
	for _, mode := range lossModes {
		t.Run(mode, func(t *testing.T) {
			t.Run("routekeeper", func(t *testing.T) {
				e, log, rt := lossEnv(t, mode)
				c := rkClient(t, e)
				id := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/routeTables/rt"
				got, err := c.GetRouteTable(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				upd := *got
				upd.Routes = append(slices.Clone(got.Routes), route.Route{Name: "b", AddressPrefix: "10.200.1.0/24",
					Prefix: netip.MustParsePrefix("10.200.1.0/24"), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.0.21")})
				e.srv.SetFaults(Faults{LoseNextAnswers: 1})
				_, err = c.PutRouteTable(ctx, &upd, got.Etag)
				var ue *armerr.OutcomeUnknownError
				if !errors.As(err, &ue) {
					t.Fatalf("PutRouteTable: err = %v (%T), want an unknown outcome", err, err)
				}
				if sent := log.sent("PUT", rt.path, got.Etag); len(sent) != 1 || !sent[0].lost {
					t.Errorf("PUTs at the fabric with If-Match %s: %+v, want one, its answer lost", got.Etag, sent)
				}
				back, err := c.GetRouteTable(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if back.Etag == got.Etag || len(back.Routes) != 2 {
					t.Errorf("table read back: etag %s (was %s), routes %v; want the lost write applied", back.Etag, got.Etag, back.Routes)
				}
			})
			t.Run("the SDK alone", func(t *testing.T) {
				e, log, rt := lossEnv(t, mode)
				e.srv.SetFaults(Faults{LoseNextAnswers: 1})
				_, err := e.putTable(withHeader(ctx, "If-Match", rt.etag), testRG, "rt",
					table(vaRoute("a", "10.200.0.0/24", "10.240.0.20"), vaRoute("b", "10.200.1.0/24", "10.240.0.21")))
				respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
				sent := log.sent("PUT", rt.path, rt.etag)
				if len(sent) != 2 || !sent[0].lost || sent[1].status != http.StatusPreconditionFailed {
					t.Errorf("PUTs at the fabric with If-Match %s: %+v, want the lost one and its blind re-send refused", rt.etag, sent)
				}
				if now := e.getTable(ctx, testRG, "rt"); len(now.Properties.Routes) != 2 {
					t.Errorf("routes %v, want the first PUT applied", routeNames(now))
				}
			})
		})
	}
}

// TestLoseAnswersOnlyAfterEffect: with every answer to be lost, only
// writes the fabric carried out lose theirs; reads, refused writes and
// writes outside Target keep their answers.
func TestLoseAnswersOnlyAfterEffect(t *testing.T) {
	const stale = `W/"00000000-0000-0000-0000-000000000000"`
	for _, tc := range []struct {
		name   string
		faults Faults
		method string
		path   string // below the resource group; "" for rt's
		body   string
		hdr    []string
		want   string // "lost", or the answer: "2xx", "5xx", "412"...
	}{
		{"a GET", Faults{LoseAnswers: 1}, "GET", "", "", nil, "2xx"},
		{"a PUT refused as stale", Faults{LoseAnswers: 1}, "PUT", "", `{"location":"eastus"}`, []string{"If-Match", stale}, "412"},
		{"a PUT refused as invalid", Faults{LoseAnswers: 1}, "PUT", "", `{"location":`, nil, "400"},
		{"a PUT failed by the error rate", Faults{LoseAnswers: 1, ErrorRate: 1}, "PUT", "", `{"location":"eastus"}`, nil, "5xx"},
		{"a PUT throttled", Faults{LoseAnswers: 1, WriteBucket: 1, WriteRefillPerSecond: 1e-9}, "PUT", "", `{"location":"eastus"}`, nil, "429"},
		{"a PUT outside the target", Faults{LoseAnswers: 1, Target: "/routeTables/other"}, "PUT", "", `{"location":"eastus"}`, nil, "2xx"},
		{"a PUT on the target", Faults{LoseAnswers: 1, Target: "/routeTables/rt"}, "PUT", "", `{"location":"eastus"}`, nil, "lost"},
		{"a PUT of another type", Faults{LoseAnswers: 1}, "PUT", "/providers/Microsoft.Network/networkSecurityGroups/nsg", `{"location":"eastus"}`, nil, "lost"},
		{"a PATCH", Faults{LoseAnswers: 1}, "PATCH", "", `{"tags":{"a":"b"}}`, nil, "lost"},
		{"a DELETE", Faults{LoseAnswers: 1}, "DELETE", "", "", nil, "lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, rt := lossEnv(t, "inprocess")
			path := rt.path
			if tc.path != "" {
				path = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + tc.path
			}
			e.srv.SetFaults(tc.faults)
			if tc.faults.WriteBucket > 0 {
				// The bucket's only token goes to a first write, whose
				// answer is lost; the second is throttled.
				e.send(tc.method, path, tc.body, tc.hdr...)
			}
			resp, body, err := e.send(tc.method, path, tc.body, tc.hdr...)
			if tc.want == "lost" {
				wantConnectionLost(t, "inprocess", err)
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v, want it answered %s", tc.method, path, err, tc.want)
			}
			if got := strconv.Itoa(resp.StatusCode); got != tc.want && got[:1]+"xx" != tc.want {
				t.Errorf("%s %s = %s %s, want %s", tc.method, path, got, body, tc.want)
			}
		})
	}
}

// TestLoseAnswersSeed: at a rate, the writes that lose their answers are
// drawn from the seeded randomness: two fabrics with the same seed lose
// the answers of the same writes of the same requests.
func TestLoseAnswersSeed(t *testing.T) {
	pattern := func() string {
		e := newRGEnv(t, "inprocess", Options{Seed: 31, Faults: Faults{LoseAnswers: 0.5}})
		var b strings.Builder
		for i := range 32 {
			if _, _, err := e.send("PUT", tablePath(testRG, "rt"+strconv.Itoa(i)), `{"location":"eastus"}`); err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	first, second := pattern(), pattern()
	if first != second {
		t.Errorf("lost answers with seed 31: %s, then %s", first, second)
	}
	if n := strings.Count(first, "x"); n < 4 || n > 28 {
		t.Errorf("%d of 32 answers lost at rate 0.5: %s", n, first)
	}
}

// TestLoseAnswersControl: the fault is read and set through the control
// endpoint like the others; the counter shows what remains, and a value
// that is not a probability (or a negative count) is refused, naming the
// field and the value.
func TestLoseAnswersControl(t *testing.T) {
	e, _, rt := lossEnv(t, "loopback")
	put := func(body string) (int, string) {
		req, _ := http.NewRequest("PUT", e.endpoint+"/_fabric/faults", strings.NewReader(body))
		resp, b, err := doRaw(e.hc, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	get := func() Faults {
		req, _ := http.NewRequest("GET", e.endpoint+"/_fabric/faults", nil)
		_, b, err := doRaw(e.hc, req)
		if err != nil {
			t.Fatal(err)
		}
		var f Faults
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("GET faults: %v: %s", err, b)
		}
		return f
	}
	if code, body := put(`{"loseAnswers":0.25,"loseNextAnswers":2}`); code != 200 {
		t.Fatalf("PUT faults = %d %s", code, body)
	}
	if f := get(); f.LoseAnswers != 0.25 || f.LoseNextAnswers != 2 {
		t.Errorf("GET faults = %+v", f)
	}
	if _, _, err := e.send("PUT", rt.path, `{"location":"eastus"}`); err == nil {
		t.Error("the first write after loseNextAnswers 2 was answered")
	}
	if f := get(); f.LoseNextAnswers != 1 {
		t.Errorf("loseNextAnswers after one lost answer = %d, want 1", f.LoseNextAnswers)
	}
	for _, tc := range []struct{ body, field, value string }{
		{`{"loseAnswers":1.5}`, "loseAnswers", "1.5"},
		{`{"loseAnswers":-0.5}`, "loseAnswers", "-0.5"},
		{`{"loseNextAnswers":-1}`, "loseNextAnswers", "-1"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			code, body := put(tc.body)
			if code != 400 || !strings.Contains(body, tc.field) || !strings.Contains(body, tc.value) {
				t.Errorf("PUT %s = %d %s, want 400 naming %s and %s", tc.body, code, body, tc.field, tc.value)
			}
			var f Faults
			if err := json.Unmarshal([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			var fe *InvalidFaultError
			if err := f.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("Validate() = %v, want an *InvalidFaultError of %s", err, tc.field)
			}
		})
	}
	if f := get(); f.LoseAnswers != 0.25 || f.LoseNextAnswers != 1 {
		t.Errorf("a refused PUT changed the faults: %+v", f)
	}
}

// doRaw sends req with hc and reads the answer.
func doRaw(hc *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}
