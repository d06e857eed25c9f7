// Package lossy is a lossy path to ARM for tests: an Azure SDK transport in
// front of another one (the in-process fabric's) that
//
//   - lets a write reach the server and be applied, then loses its answer
//     as the real transport reports a connection reset (a *url.Error
//     around a *net.OpError around ECONNRESET), for a share of the writes
//     (whatever the server answered);
//   - throttles a share of the requests with 429 and Retry-After, and
//     answers a share of the writes 5xx, before they reach the server;
//   - plays scripted faults on the next matching requests: an answer lost
//     after the server applied the request, a status answered by a front
//     (before or after forwarding), a dial error (never sent);
//   - logs every request: method, path, If-Match / If-None-Match, and what
//     became of it.
//
// With the log a test asserts what invariant 2 asks: a conditional write
// whose answer was lost is never sent again with the same If-Match before
// the resource was read (Blind), and the next write of a resource whose write had an unknown
// outcome follows a read of it (Unread).
package lossy

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Rates are the random faults, each a probability between 0 and 1.
type Rates struct {
	// LoseWrites: a write (PUT, PATCH, DELETE, POST) reaches the server,
	// which applies it (or starts its long-running operation, or refuses
	// it), and its answer is lost, whatever it was.
	LoseWrites float64
	// Throttle: a request is answered 429 with Retry-After (RetryAfter,
	// 1 s when 0) without reaching the server.
	Throttle   float64
	RetryAfter time.Duration
	// FailWrites: a write is answered FailStatus (500 when 0) by the front
	// without reaching the server.
	FailWrites float64
	FailStatus int
}

// Fault is one scripted fault, played on the next request that matches
// Method (exactly; "" any) and whose path followed by "/" contains Path
// (case-insensitively; "" any): "/routeTables/" matches every table,
// "/routeTables/rt/" the table rt only.
type Fault struct {
	Method, Path string
	// Lose: the request is forwarded and its answer lost (connection reset).
	Lose bool
	// Dial: the request never reaches the server (connection refused).
	Dial bool
	// Status: answered with this status by the front, with RetryAfter when
	// not 0; Forward sends the request to the server first (a front that
	// forwarded it, then failed).
	Status     int
	RetryAfter time.Duration
	Forward    bool
}

// Outcome is what became of a request.
type Outcome string

// The outcomes.
const (
	Answered  Outcome = "answered"  // the server's answer was delivered
	Lost      Outcome = "lost"      // forwarded, answer lost: connection reset
	Refused   Outcome = "refused"   // never sent: connection refused
	Front     Outcome = "front"     // answered by the front without forwarding
	Forwarded Outcome = "forwarded" // forwarded, then answered by the front
)

// Request is one request as the transport saw it.
type Request struct {
	Seq int
	// At is when the request ended (its answer, or its error, was given).
	At           time.Time
	Method, Path string
	// IfMatch is If-Match, or "!" + If-None-Match when that is sent instead.
	IfMatch string
	Outcome Outcome
	// Status is the answer delivered (0: none); RetryAfter says it
	// carried Retry-After.
	Status     int
	RetryAfter bool
}

// String formats r for failure messages.
func (r Request) String() string {
	return fmt.Sprintf("#%d %s %s if-match=%q %s %d", r.Seq, r.Method, r.Path, r.IfMatch, r.Outcome, r.Status)
}

// Write reports whether r is a write.
func (r Request) Write() bool { return isWrite(r.Method) }

// Unknown reports whether the sender cannot know whether r took effect:
// its answer was lost, or it was answered 408 or 5xx (a front may have
// forwarded it), except 503 with Retry-After ("not now, come back").
func (r Request) Unknown() bool {
	switch {
	case r.Outcome == Lost:
		return true
	case r.Status == http.StatusServiceUnavailable:
		return !r.RetryAfter
	}
	return r.Status == http.StatusRequestTimeout || r.Status >= 500
}

// Transport is a policy.Transporter; it is safe for concurrent use.
type Transport struct {
	next policy.Transporter

	mu     sync.Mutex
	rng    *rand.Rand
	rates  Rates
	script []Fault
	log    []Request
}

// New returns a Transport sending on through next, its randomness seeded
// by seed.
func New(next policy.Transporter, seed uint64) *Transport {
	return &Transport{next: next, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// SetRates replaces the random faults.
func (t *Transport) SetRates(r Rates) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rates = r
}

// Script queues faults for the next matching requests, in order.
func (t *Transport) Script(f ...Fault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.script = append(t.script, f...)
}

// Pending returns the scripted faults not played yet.
func (t *Transport) Pending() []Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Fault(nil), t.script...)
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// plan decides what to do with req: a scripted fault first, else the
// random ones.
func (t *Transport) plan(req *http.Request) Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, f := range t.script {
		if (f.Method == "" || f.Method == req.Method) && strings.Contains(strings.ToLower(req.URL.Path)+"/", strings.ToLower(f.Path)) {
			t.script = append(t.script[:i:i], t.script[i+1:]...)
			return f
		}
	}
	if t.rates.Throttle > 0 && t.rng.Float64() < t.rates.Throttle {
		after := t.rates.RetryAfter
		if after <= 0 {
			after = time.Second
		}
		return Fault{Status: http.StatusTooManyRequests, RetryAfter: after}
	}
	if isWrite(req.Method) && t.rates.FailWrites > 0 && t.rng.Float64() < t.rates.FailWrites {
		status := t.rates.FailStatus
		if status == 0 {
			status = http.StatusInternalServerError
		}
		return Fault{Status: status}
	}
	if isWrite(req.Method) && t.rates.LoseWrites > 0 && t.rng.Float64() < t.rates.LoseWrites {
		return Fault{Lose: true}
	}
	return Fault{}
}

// Do implements policy.Transporter.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	r := Request{Method: req.Method, Path: req.URL.Path, IfMatch: req.Header.Get("If-Match")}
	if v := req.Header.Get("If-None-Match"); r.IfMatch == "" && v != "" {
		r.IfMatch = "!" + v
	}
	f := t.plan(req)
	resp, err := t.play(req, f, &r)
	if resp != nil {
		r.RetryAfter = resp.Header.Get("Retry-After") != "" || resp.Header.Get("Retry-After-Ms") != ""
	}
	r.At = time.Now()
	t.mu.Lock()
	r.Seq = len(t.log)
	t.log = append(t.log, r)
	t.mu.Unlock()
	return resp, err
}

func (t *Transport) play(req *http.Request, f Fault, r *Request) (*http.Response, error) {
	switch {
	case f.Dial:
		drain(req)
		r.Outcome = Refused
		return nil, dialError(req)
	case f.Status != 0 && !f.Forward:
		drain(req)
		r.Outcome, r.Status = Front, f.Status
		return answer(req, f), nil
	}
	resp, err := t.next.Do(req)
	if err != nil {
		r.Outcome = Refused
		return nil, err
	}
	switch {
	case f.Status != 0:
		discard(resp)
		r.Outcome, r.Status = Forwarded, f.Status
		return answer(req, f), nil
	case f.Lose:
		discard(resp)
		r.Outcome = Lost
		return nil, resetError(req)
	}
	r.Outcome, r.Status = Answered, resp.StatusCode
	return resp, nil
}

// answer is the front's answer f.Status, in ARM's error shape.
func answer(req *http.Request, f Fault) *http.Response {
	body := fmt.Sprintf(`{"error":{"code":%q,"message":"answered by the lossy test front"}}`, strings.ReplaceAll(http.StatusText(f.Status), " ", ""))
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status)), StatusCode: f.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: req,
	}
}

func drain(req *http.Request) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
}

func discard(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// addr is the server's address as a dialer would name it.
func addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443}
}

// resetError is what net/http returns when the connection is reset while
// the answer is read: the request was sent.
func resetError(req *http.Request) error {
	return &url.Error{Op: urlOp(req.Method), URL: req.URL.String(), Err: &net.OpError{
		Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}, Addr: addr(),
		Err: os.NewSyscallError("read", syscall.ECONNRESET),
	}}
}

// dialError is what net/http returns when the connection cannot be made:
// nothing was sent.
func dialError(req *http.Request) error {
	return &url.Error{Op: urlOp(req.Method), URL: req.URL.String(), Err: &net.OpError{
		Op: "dial", Net: "tcp", Addr: addr(), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

// urlOp is url.Error's Op as net/http spells it: "Put", "Get".
func urlOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// Requests returns every request seen so far, in the order they ended.
func (t *Transport) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.log...)
}

// Count returns the number of requests seen so far with method ("" any)
// whose path contains path (case-insensitively).
func (t *Transport) Count(method, path string) int {
	n := 0
	for _, r := range t.Requests() {
		if (method == "" || r.Method == method) && strings.Contains(strings.ToLower(r.Path), strings.ToLower(path)) {
			n++
		}
	}
	return n
}

// Sent returns the requests with method and If-Match ifMatch sent to path
// (compared case-insensitively).
func (t *Transport) Sent(method, path, ifMatch string) []Request {
	var out []Request
	for _, r := range t.Requests() {
		if r.Method == method && strings.EqualFold(r.Path, path) && r.IfMatch == ifMatch {
			out = append(out, r)
		}
	}
	return out
}

// Blind returns the conditional writes sent again, with the same method,
// path and If-Match, after a request with them whose answer was lost and
// before any successful read of the resource: writes re-sent without
// knowing whether the first one took effect. When it did, the etag moved
// and the re-sent write can only be refused (412) after its wait; when
// another writer's change came between, only the etag stands in its way.
func Blind(log []Request) []Request {
	lost := map[string]bool{}
	var out []Request
	for _, r := range log {
		path := strings.ToLower(r.Path)
		if !r.Write() {
			if r.Outcome == Answered && r.Status < 300 {
				for k := range lost {
					if strings.HasPrefix(k, path+" ") {
						delete(lost, k)
					}
				}
			}
			continue
		}
		if r.IfMatch == "" {
			continue
		}
		k := path + " " + r.Method + " " + r.IfMatch
		if lost[k] {
			out = append(out, r)
		}
		if r.Outcome == Lost {
			lost[k] = true
		}
	}
	return out
}

// Unread returns the writes of a resource sent after an earlier write of
// it with an unknown outcome (Request.Unknown) without a successful GET
// of the resource in between.
func Unread(log []Request) []Request {
	unknown := map[string]bool{}
	var out []Request
	for _, r := range log {
		k := strings.ToLower(r.Path)
		switch {
		case !r.Write():
			if r.Outcome == Answered && r.Status < 300 {
				delete(unknown, k)
			}
		default:
			if unknown[k] {
				out = append(out, r)
			}
			unknown[k] = r.Unknown()
		}
	}
	return out
}

// Summary counts a log: requests, reads, writes, lost answers and
// throttled answers.
type Summary struct {
	Requests  int `json:"requests"`
	Reads     int `json:"reads"`
	Writes    int `json:"writes"`
	Lost      int `json:"lost"`
	Throttled int `json:"throttled"`
	Blind     int `json:"blind"`
}

// Summarize counts log.
func Summarize(log []Request) Summary {
	s := Summary{Requests: len(log), Blind: len(Blind(log))}
	for _, r := range log {
		if r.Write() {
			s.Writes++
		} else {
			s.Reads++
		}
		if r.Outcome == Lost {
			s.Lost++
		}
		if r.Status == http.StatusTooManyRequests {
			s.Throttled++
		}
	}
	return s
}
