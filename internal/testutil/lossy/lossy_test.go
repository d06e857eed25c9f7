package lossy

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// server answers every request with status and counts what reached it.
type server struct {
	status  int
	reached []string
}

func (s *server) Do(req *http.Request) (*http.Response, error) {
	s.reached = append(s.reached, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: s.status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

func do(t *testing.T, tr *Transport, method, path, ifMatch string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, "https://fabric.invalid"+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return tr.Do(req)
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fault       Fault
		rates       Rates
		status      int
		method      string
		wantReached int
		wantOutcome Outcome
		wantStatus  int
		wantReset   bool
		wantDial    bool
	}{
		{name: "no fault", method: http.MethodPut, wantReached: 1, wantOutcome: Answered, wantStatus: 200},
		{name: "lost after applying", fault: Fault{Method: http.MethodPut, Lose: true}, method: http.MethodPut, wantReached: 1, wantOutcome: Lost, wantReset: true},
		{name: "lost at random", rates: Rates{LoseWrites: 1}, method: http.MethodPut, wantReached: 1, wantOutcome: Lost, wantReset: true},
		{name: "reads are not lost at random", rates: Rates{LoseWrites: 1}, method: http.MethodGet, wantReached: 1, wantOutcome: Answered, wantStatus: 200},
		{name: "a refusal's answer is lost too", rates: Rates{LoseWrites: 1}, status: 412, method: http.MethodPut, wantReached: 1, wantOutcome: Lost, wantReset: true},
		{name: "dial error never reaches the server", fault: Fault{Dial: true}, method: http.MethodPut, wantOutcome: Refused, wantDial: true},
		{name: "front 502 without forwarding", fault: Fault{Status: 502}, method: http.MethodPut, wantOutcome: Front, wantStatus: 502},
		{name: "front 502 after forwarding", fault: Fault{Status: 502, Forward: true}, method: http.MethodPut, wantReached: 1, wantOutcome: Forwarded, wantStatus: 502},
		{name: "throttled", rates: Rates{Throttle: 1}, method: http.MethodGet, wantOutcome: Front, wantStatus: 429},
		{name: "writes failed by the front", rates: Rates{FailWrites: 1}, method: http.MethodPut, wantOutcome: Front, wantStatus: 500},
		{name: "reads not failed by FailWrites", rates: Rates{FailWrites: 1, FailStatus: 502}, method: http.MethodGet, wantReached: 1, wantOutcome: Answered, wantStatus: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &server{status: 200}
			if tc.status != 0 {
				srv.status = tc.status
			}
			tr := New(srv, 1)
			tr.SetRates(tc.rates)
			if tc.fault != (Fault{}) {
				tr.Script(tc.fault)
			}
			resp, err := do(t, tr, tc.method, "/x", `W/"1"`)
			if len(srv.reached) != tc.wantReached {
				t.Errorf("requests that reached the server: %v, want %d", srv.reached, tc.wantReached)
			}
			var op *net.OpError
			switch {
			case tc.wantReset:
				if !errors.As(err, &op) || op.Op != "read" || !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("err = %v, want a read reset as net/http reports it", err)
				}
			case tc.wantDial:
				if !errors.As(err, &op) || op.Op != "dial" {
					t.Errorf("err = %v, want a dial error", err)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			default:
				if resp.StatusCode != tc.wantStatus {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
				}
			}
			log := tr.Requests()
			if len(log) != 1 || log[0].Outcome != tc.wantOutcome || log[0].Status != tc.wantStatus {
				t.Errorf("log = %v, want one request %s %d", log, tc.wantOutcome, tc.wantStatus)
			}
		})
	}
}

func TestBlindAndUnread(t *testing.T) {
	put := func(ifMatch string, o Outcome, status int) Request {
		return Request{Method: http.MethodPut, Path: "/t", IfMatch: ifMatch, Outcome: o, Status: status}
	}
	get := Request{Method: http.MethodGet, Path: "/T", Outcome: Answered, Status: 200}
	for _, tc := range []struct {
		name          string
		log           []Request
		blind, unread int
	}{
		{"lost then re-sent as is", []Request{put("a", Lost, 0), put("a", Answered, 412)}, 1, 1},
		{"lost, read, new etag", []Request{put("a", Lost, 0), get, put("b", Answered, 201)}, 0, 0},
		{"lost, read, same etag (it did not land)", []Request{put("a", Lost, 0), get, put("a", Answered, 201)}, 0, 0},
		{"lost, lost again, read", []Request{put("a", Lost, 0), put("a", Lost, 0), get, put("a", Answered, 201)}, 1, 1},
		{"500 then re-sent as is", []Request{put("a", Answered, 500), put("a", Answered, 201)}, 0, 1},
		{"503 with Retry-After then retried", []Request{{Method: http.MethodPut, Path: "/t", IfMatch: "a", Outcome: Front, Status: 503, RetryAfter: true}, put("a", Answered, 201)}, 0, 0},
		{"429 then retried", []Request{put("a", Front, 429), put("a", Answered, 201)}, 0, 0},
		{"dial error then retried", []Request{put("a", Refused, 0), put("a", Answered, 201)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Blind(tc.log); len(got) != tc.blind {
				t.Errorf("Blind = %v, want %d", got, tc.blind)
			}
			if got := Unread(tc.log); len(got) != tc.unread {
				t.Errorf("Unread = %v, want %d", got, tc.unread)
			}
		})
	}
	want := Summary{Requests: 2, Reads: 0, Writes: 2, Lost: 1, Blind: 1}
	if got := Summarize([]Request{put("a", Lost, 0), put("a", Answered, 412)}); !cmp.Equal(got, want) {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
}

// TestScriptPath: a fault's path ending in "/" names one resource, not
// every resource whose name starts the same.
func TestScriptPath(t *testing.T) {
	srv := &server{status: 200}
	tr := New(srv, 1)
	tr.Script(Fault{Method: http.MethodPut, Path: "/routeTables/rt/", Status: 500})
	if resp, err := do(t, tr, http.MethodPut, "/routeTables/rt-v2", ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("PUT rt-v2: %v %v, want it untouched by rt's fault", resp, err)
	}
	if resp, err := do(t, tr, http.MethodPut, "/routeTables/rt", ""); err != nil || resp.StatusCode != 500 {
		t.Errorf("PUT rt: %v %v, want rt's fault", resp, err)
	}
}
