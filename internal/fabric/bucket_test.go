package fabric

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// TestRetryAfterProperty checks the Retry-After of a 429 for refill rates
// across the whole float range, from the smallest positive float (and 0,
// NaN, +Inf, which SetFaults lets through) to far above ARM's: it is whole
// seconds between 1 and MaxRetryAfter; waiting it always finds a token
// unless the true wait exceeds the cap (then it is the cap); and one second
// less would not (it is the shortest honest answer). The requests go
// through the server with a fake clock, so the answer is what a client
// reads in the header.
func TestRetryAfterProperty(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newRGEnv(t, "inprocess", Options{Clock: clock})
	path := "/subscriptions/" + testSub + "/resourcegroups/" + testRG

	rng := rand.New(rand.NewPCG(10, 6))
	special := []float64{0, math.SmallestNonzeroFloat64, 1e-300, 1e-11, 1e-10, 9.99e-11, 1.0 / MaxRetryAfter,
		0.999 / MaxRetryAfter, 1.001 / MaxRetryAfter, 0.05, 0.3, 1, 3, 10, 25, 1e6, math.MaxFloat64, math.Inf(1), math.NaN()}
	const cases = 3000
	for i := range cases {
		var refill float64
		if i < len(special) {
			refill = special[i]
		} else {
			refill = math.Pow(10, -323+rng.Float64()*330) // log-uniform over 1e-323..1e7
		}
		capacity := 1 + rng.IntN(3)
		e.srv.SetFaults(Faults{ReadBucket: capacity, ReadRefillPerSecond: refill})

		// Drain the bucket, letting a little time pass between reads so
		// that the bucket is left holding a fraction of a token.
		var resp *http.Response
		for range 1000 {
			if resp, _ = e.do("GET", path, ""); resp.StatusCode != http.StatusOK {
				break
			}
			// Less than half a token's worth, so the loop ends.
			step := 2.0
			if refill > 0 { // NaN and 0 never refill
				step = min(step, 0.5/refill)
			}
			advance(time.Duration(rng.Float64() * step * float64(time.Second)))
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("refill %g/s, bucket %d: never throttled (last %d)", refill, capacity, resp.StatusCode)
		}
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > MaxRetryAfter {
			t.Fatalf("refill %g/s: Retry-After %q, want whole seconds in [1, %d]", refill, resp.Header.Get("Retry-After"), MaxRetryAfter)
		}
		e.srv.inj.mu.Lock()
		tokens := e.srv.inj.buckets["read/"+api.Key(testSub)].tokens
		e.srv.inj.mu.Unlock()
		trueWait := (1 - tokens) / refill
		capped := !(trueWait <= MaxRetryAfter)
		if capped && ra != MaxRetryAfter {
			t.Fatalf("refill %g/s, %g tokens: true wait %gs is over the cap, Retry-After %d, want %d", refill, tokens, trueWait, ra, MaxRetryAfter)
		}
		if !capped && ra > 1 && tokens+float64(ra-1)*refill >= 1 {
			t.Fatalf("refill %g/s, %g tokens: Retry-After %d, but %d seconds already give a token", refill, tokens, ra, ra-1)
		}

		advance(time.Duration(ra) * time.Second)
		resp, _ = e.do("GET", path, "")
		if !capped && resp.StatusCode != http.StatusOK {
			t.Fatalf("refill %g/s, %g tokens: after waiting Retry-After %d s the read is still %d", refill, tokens, ra, resp.StatusCode)
		}
	}
}
