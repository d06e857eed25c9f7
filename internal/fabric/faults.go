package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/authz"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Faults are the failures a Server injects. The zero value injects none.
// They can be changed at runtime with SetFaults or through the control
// endpoint (GET/PUT /_fabric/faults), which reads and writes this JSON.
type Faults struct {
	// Latency is added to every ARM request.
	Latency time.Duration `json:"latency"`

	// WriteBucket is the capacity of the token bucket of writes (PUT,
	// PATCH, DELETE, POST) per subscription, WriteRefillPerSecond its
	// refill rate. ARM's are 200 and 10/s. 0 disables write throttling.
	WriteBucket          int     `json:"writeBucket"`
	WriteRefillPerSecond float64 `json:"writeRefillPerSecond"`
	// ReadBucket and ReadRefillPerSecond do the same for reads (GET);
	// ARM's are 250 and 25/s. 0 disables read throttling.
	ReadBucket          int     `json:"readBucket"`
	ReadRefillPerSecond float64 `json:"readRefillPerSecond"`

	// ErrorRate is the probability that an ARM request fails with a 5xx
	// before it takes effect (500, 502 or 503; azcore retries them).
	ErrorRate float64 `json:"errorRate"`

	// FailOperations is the probability that a long-running operation
	// ends Failed; FailNextOperations makes the next N fail for certain.
	// FailCode is the error code they fail with (InternalServerError).
	FailOperations     float64 `json:"failOperations"`
	FailNextOperations int     `json:"failNextOperations"`
	FailCode           string  `json:"failCode,omitempty"`

	// IntruderRate is the probability that a route table GET is followed,
	// before its answer is sent, by another writer changing the table: it
	// adds a route intruder-<n> or moves the next hop of an existing
	// intruder-* route, and never touches other routes. IntruderNextGets
	// makes it strike on the next N route table GETs.
	IntruderRate     float64 `json:"intruderRate"`
	IntruderNextGets int     `json:"intruderNextGets"`

	// LoseAnswers is the probability that a write (PUT, PATCH, DELETE or
	// POST) loses its answer after the fabric carried it out: the
	// resource is written and its operation started, then the client gets
	// no answer, only the error of a connection reset (lostanswer.go). Only
	// writes answered 2xx lose their answer; a refused one (4xx, an
	// injected 5xx or 429) keeps it, so every lost answer is of a write
	// that took effect. LoseNextAnswers loses the answers of the next N
	// such writes for certain.
	LoseAnswers     float64 `json:"loseAnswers"`
	LoseNextAnswers int     `json:"loseNextAnswers"`

	// Target, when set, limits every fault above to the requests (and
	// operations, and intruder strikes) on resources whose path contains
	// it, compared case-insensitively: "/routeTables/appgw-routes" makes
	// one route table throttled or failing while the others work.
	Target string `json:"target,omitempty"`
}

// targets reports whether the faults apply to the resource path p.
func (f Faults) targets(p string) bool {
	return f.Target == "" || strings.Contains(strings.ToLower(p), strings.ToLower(f.Target))
}

// MarshalJSON writes Latency as a Go duration string ("250ms").
func (f Faults) MarshalJSON() ([]byte, error) {
	type plain Faults
	return json.Marshal(struct {
		plain
		Latency string `json:"latency"`
	}{plain(f), f.Latency.String()})
}

// UnmarshalJSON reads Latency as a duration string or a number of
// nanoseconds; unknown fields are an error.
func (f *Faults) UnmarshalJSON(b []byte) error {
	type plain Faults
	var v struct {
		plain
		Latency json.RawMessage `json:"latency"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*f = Faults(v.plain)
	f.Latency = 0
	if len(v.Latency) > 0 && string(v.Latency) != "null" {
		var s string
		if err := json.Unmarshal(v.Latency, &s); err == nil {
			d, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("latency: %w", err)
			}
			f.Latency = d
		} else {
			var n int64
			if err := json.Unmarshal(v.Latency, &n); err != nil {
				return fmt.Errorf("latency: %s is neither a duration string nor nanoseconds", v.Latency)
			}
			f.Latency = time.Duration(n)
		}
	}
	return nil
}

// InvalidFaultError is a fault setting Validate refuses. Field is its
// name in the control endpoint's JSON ("loseAnswers"); Problem says what
// is wrong with its value ("1.5 is not a probability between 0 and 1").
type InvalidFaultError struct {
	Field   string
	Problem string
}

func (e *InvalidFaultError) Error() string { return e.Field + ": " + e.Problem }

// Validate checks that rates are probabilities and counts are not
// negative. Its error is an *InvalidFaultError naming the first field
// found wrong: the rates first, then the counts, in the order of Faults.
func (f Faults) Validate() error {
	type field struct {
		name string
		v    float64
	}
	for _, c := range []field{
		{"errorRate", f.ErrorRate}, {"failOperations", f.FailOperations},
		{"intruderRate", f.IntruderRate}, {"loseAnswers", f.LoseAnswers},
	} {
		if c.v < 0 || c.v > 1 || math.IsNaN(c.v) {
			return &InvalidFaultError{Field: c.name, Problem: fmt.Sprintf("%v is not a probability between 0 and 1", c.v)}
		}
	}
	for _, c := range []field{
		{"latency", float64(f.Latency)},
		{"writeBucket", float64(f.WriteBucket)}, {"writeRefillPerSecond", f.WriteRefillPerSecond},
		{"readBucket", float64(f.ReadBucket)}, {"readRefillPerSecond", f.ReadRefillPerSecond},
		{"failNextOperations", float64(f.FailNextOperations)}, {"intruderNextGets", float64(f.IntruderNextGets)},
		{"loseNextAnswers", float64(f.LoseNextAnswers)},
	} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return &InvalidFaultError{Field: c.name, Problem: fmt.Sprintf("%v must not be negative", c.v)}
		}
	}
	if f.WriteBucket > 0 && f.WriteRefillPerSecond <= 0 {
		return &InvalidFaultError{Field: "writeRefillPerSecond", Problem: fmt.Sprintf("must be positive when writeBucket is %d", f.WriteBucket)}
	}
	if f.ReadBucket > 0 && f.ReadRefillPerSecond <= 0 {
		return &InvalidFaultError{Field: "readRefillPerSecond", Problem: fmt.Sprintf("must be positive when readBucket is %d", f.ReadBucket)}
	}
	return nil
}

// injector injects the faults of a Server: latency, throttling from
// token buckets, random errors, failed operations, the intruder and lost
// answers.
type injector struct {
	mu       sync.Mutex // guards the fields below
	faults   Faults
	rng      *rand.Rand
	buckets  map[string]*bucket
	failLeft int // FailNextOperations still to apply
	intrLeft int // IntruderNextGets still to apply
	loseLeft int // LoseNextAnswers still to apply
	now      func() time.Time
}

// newInjector returns an injector of f whose randomness is seeded with
// seed and whose token buckets refill by now.
func newInjector(f Faults, seed uint64, now func() time.Time) *injector {
	in := &injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: now}
	in.set(f)
	return in
}

// set replaces the injected faults; the token buckets start full and
// the FailNextOperations, IntruderNextGets and LoseNextAnswers counters
// start over. Invalid values are clamped (see Validate for the checked
// form).
func (s *injector) set(f Faults) {
	f.ErrorRate = clamp01(f.ErrorRate)
	f.FailOperations = clamp01(f.FailOperations)
	f.IntruderRate = clamp01(f.IntruderRate)
	f.LoseAnswers = clamp01(f.LoseAnswers)
	f.Latency = max(f.Latency, 0)
	f.FailNextOperations = max(f.FailNextOperations, 0)
	f.IntruderNextGets = max(f.IntruderNextGets, 0)
	f.LoseNextAnswers = max(f.LoseNextAnswers, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.failLeft = f.FailNextOperations
	s.intrLeft = f.IntruderNextGets
	s.loseLeft = f.LoseNextAnswers
	s.buckets = map[string]*bucket{}
}

// get returns the current faults, with the counters that remain.
func (s *injector) get() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	f.FailNextOperations = s.failLeft
	f.IntruderNextGets = s.intrLeft
	f.LoseNextAnswers = s.loseLeft
	return f
}

func clamp01(p float64) float64 {
	if p < 0 || math.IsNaN(p) {
		return 0
	}
	return min(p, 1)
}

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// MaxRetryAfter is the longest Retry-After the fabric sends on a 429, in
// seconds (one day). A bucket refilling slower than one token a day —
// down to the smallest positive float, or not at all — answers this: a
// wait that long means "not in this test".
const MaxRetryAfter = 24 * 60 * 60

// take takes one token if there is one. It returns the tokens left and,
// when there was none, the Retry-After in whole seconds: see retryAfter.
func (b *bucket) take(now time.Time, capacity int, refill float64) (ok bool, left int, retry int) {
	b.tokens = refilled(b.tokens, now.Sub(b.last), capacity, refill)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, int(b.tokens), 0
	}
	return false, 0, retryAfter(b.tokens, refill)
}

// refilled returns the tokens of a bucket holding tokens after elapsed at
// refill tokens a second, at most capacity. The product is taken only for
// a positive elapsed time and rate, so an infinite rate never makes NaN.
func refilled(tokens float64, elapsed time.Duration, capacity int, refill float64) float64 {
	if elapsed > 0 && refill > 0 {
		tokens += elapsed.Seconds() * refill
	}
	return math.Min(float64(capacity), tokens)
}

// retryAfter is the number of whole seconds until a bucket holding tokens
// (< 1) at refill tokens a second has a token: the wait rounded up, at
// least 1 and at most MaxRetryAfter. It is computed in float seconds and
// compared with the cap before any conversion, so no refill rate (however
// small, zero, NaN or infinite) overflows; waiting the answer always finds
// a token unless the cap cut it short.
func retryAfter(tokens, refill float64) int {
	wait := (1 - tokens) / refill // +Inf for refill 0, NaN for NaN
	if !(wait <= MaxRetryAfter) {
		return MaxRetryAfter
	}
	s := int(math.Ceil(wait))
	// Rounding can leave tokens + s*refill a hair below 1: one more second.
	if s < MaxRetryAfter && tokens+float64(s)*refill < 1 {
		s++
	}
	return max(1, s)
}

// Classic per-hour quotas, reported when throttling is off.
const (
	classicReads  = 11999
	classicWrites = 1199
)

// subOf is the subscription a request path names ("" for none).
func subOf(q *api.Request) string {
	if len(q.Segs) > 1 && strings.EqualFold(q.Segs[0], "subscriptions") {
		return q.Segs[1]
	}
	return ""
}

// quotaHeaders sets the remaining-quota headers without taking a token:
// the bucket's tokens when throttling is on, the classic hourly quota
// otherwise.
func (s *injector) quotaHeaders(q *api.Request, write bool) {
	s.mu.Lock()
	kind, capacity, refill, left := "read", s.faults.ReadBucket, s.faults.ReadRefillPerSecond, classicReads
	if write {
		kind, capacity, refill, left = "write", s.faults.WriteBucket, s.faults.WriteRefillPerSecond, classicWrites
	}
	if capacity > 0 {
		left = capacity
		if b := s.buckets[kind+"/"+api.Key(subOf(q))]; b != nil {
			now := s.now()
			left = int(refilled(b.tokens, now.Sub(b.last), capacity, refill))
		}
	}
	s.mu.Unlock()
	q.Out.Set("x-ms-ratelimit-remaining-subscription-"+kind+"s", strconv.Itoa(left))
	q.Out.Set("x-ms-ratelimit-remaining-subscription-global-"+kind+"s", strconv.Itoa(left))
}

// injectFaults applies latency, throttling and random 5xx to one ARM
// request, and sets the remaining-quota headers of the answer.
func (s *injector) injectFaults(ctx context.Context, q *api.Request, write bool) error {
	s.mu.Lock()
	f := s.faults
	if !f.targets(q.HTTP.URL.Path) {
		f = Faults{}
	}
	now := s.now()
	kind, capacity, refill, left := "read", f.ReadBucket, f.ReadRefillPerSecond, classicReads
	if write {
		kind, capacity, refill, left = "write", f.WriteBucket, f.WriteRefillPerSecond, classicWrites
	}
	throttled, retry := false, 0
	if capacity > 0 {
		bk := kind + "/" + api.Key(subOf(q))
		b := s.buckets[bk]
		if b == nil {
			b = &bucket{tokens: float64(capacity), last: now}
			s.buckets[bk] = b
		}
		var ok bool
		ok, left, retry = b.take(now, capacity, refill)
		throttled = !ok
	}
	failNow := f.ErrorRate > 0 && s.rng.Float64() < f.ErrorRate
	errKind := s.rng.IntN(3)
	s.mu.Unlock()

	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	q.Out.Set("x-ms-ratelimit-remaining-subscription-"+kind+"s", strconv.Itoa(left))
	q.Out.Set("x-ms-ratelimit-remaining-subscription-global-"+kind+"s", strconv.Itoa(left))
	if throttled {
		return api.Throttled(kind, subOf(q), retry)
	}
	if failNow {
		switch errKind {
		case 0:
			return api.NewError(http.StatusInternalServerError, "InternalServerError",
				"Encountered internal server error (injected by the routekeeper fabric: error-rate).")
		case 1:
			return api.NewError(http.StatusBadGateway, "BadGateway",
				"The gateway did not receive a response from 'Microsoft.Network' within the specified time period (injected by the routekeeper fabric: error-rate).")
		default:
			return api.NewError(http.StatusServiceUnavailable, "ServiceUnavailable",
				"The server (leased) is currently unavailable (injected by the routekeeper fabric: error-rate).")
		}
	}
	return nil
}

// FailOperation decides whether a new long-running operation fails, and
// with which code.
func (s *injector) FailOperation(resourceID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults.targets(resourceID) {
		return "", false
	}
	code := s.faults.FailCode
	if code == "" {
		code = "InternalServerError"
	}
	if s.failLeft > 0 {
		s.failLeft--
		return code, true
	}
	if s.faults.FailOperations > 0 && s.rng.Float64() < s.faults.FailOperations {
		return code, true
	}
	return "", false
}

// Intrude decides whether the intruder plays another writer right after
// a GET of the route table tableKey, and tosses the coin it plays with
// (0: change one of its own routes, 1: add one).
func (s *injector) Intrude(tableKey string) (strike bool, coin int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults.targets(tableKey) {
		// not the target: no strike
	} else if s.intrLeft > 0 {
		s.intrLeft--
		strike = true
	} else if s.faults.IntruderRate > 0 && s.rng.Float64() < s.faults.IntruderRate {
		strike = true
	}
	return strike, s.rng.IntN(2)
}

// loseAnswer decides whether the answer of a write to the resource path p,
// which the fabric carried out, is lost. The coin is tossed only when
// LoseAnswers is set and no LoseNextAnswers remain, so that with the
// fault off the other faults draw the same numbers as before it existed.
func (s *injector) loseAnswer(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.faults.targets(p):
		return false
	case s.loseLeft > 0:
		s.loseLeft--
		return true
	}
	return s.faults.LoseAnswers > 0 && s.rng.Float64() < s.faults.LoseAnswers
}

// SetFaults replaces the injected faults; the token buckets start full and
// the FailNextOperations, IntruderNextGets and LoseNextAnswers counters
// start over. Invalid values are clamped (see Validate for the checked
// form).
func (s *Server) SetFaults(f Faults) { s.inj.set(f) }

// Faults returns the current faults, with the counters that remain.
func (s *Server) Faults() Faults { return s.inj.get() }

// serveControl serves the control endpoint: GET/PUT /_fabric/faults and
// GET /_fabric/healthz. It needs no token and no fault applies to it.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	writeJSON := func(status int, v any) { api.WriteControlJSON(w, status, v) }
	fail := func(status int, code, msg string) { api.FailControl(w, status, code, msg) }
	if strings.HasPrefix(r.URL.Path, authz.PrincipalsPath) {
		s.az.ServePrincipals(w, r) // principal.go
		return
	}
	switch strings.TrimPrefix(r.URL.Path, api.ControlPrefix) {
	case "healthz":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			fail(http.StatusMethodNotAllowed, "HttpMethodNotSupported", "use GET")
			return
		}
		if err := s.store.Read(r.Context(), func(tx *store.Txn) error {
			_, err := tx.AnyDue(0)
			return err
		}); err != nil {
			fail(http.StatusServiceUnavailable, "StateUnavailable", err.Error())
			return
		}
		writeJSON(http.StatusOK, map[string]string{"status": "ok"})
	case "bgp":
		s.net.ServeBGP(w, r)
	case "faults":
		switch r.Method {
		case http.MethodGet:
			writeJSON(http.StatusOK, s.Faults())
		case http.MethodPut:
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				fail(http.StatusBadRequest, "InvalidRequestContent", err.Error())
				return
			}
			var f Faults
			if err := json.Unmarshal(b, &f); err != nil {
				fail(http.StatusBadRequest, "InvalidRequestContent", "faults: "+err.Error())
				return
			}
			if err := f.Validate(); err != nil {
				fail(http.StatusBadRequest, "InvalidFaults", "faults: "+err.Error())
				return
			}
			s.SetFaults(f)
			writeJSON(http.StatusOK, s.Faults())
		default:
			fail(http.StatusMethodNotAllowed, "HttpMethodNotSupported", "use GET or PUT")
		}
	default:
		fail(http.StatusNotFound, "NotFound", "the control endpoint serves /_fabric/faults, /_fabric/healthz and /_fabric/principals")
	}
}
