package fabric

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// bubbleInProcess runs f in a synctest bubble when mode is "inprocess":
// there the SDK's retries and the fabric's buckets and latencies run on
// the bubble's fake clock, so a Retry-After costs no wall time and "the
// request took at least the latency" is a statement about that clock. Over
// loopback a socket keeps a bubble from ever being idle, so f runs on the
// real clock.
func bubbleInProcess(t *testing.T, mode string, f func(t *testing.T)) {
	if mode == "inprocess" {
		synctest.Test(t, f)
		return
	}
	f(t)
}

// statusRecorder records the status of each answer to a request whose
// method and path are given.
type statusRecorder struct {
	next         policy.Transporter
	method, path string
	mu           sync.Mutex
	codes        []int
}

func (r *statusRecorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err == nil && req.Method == r.method && req.URL.Path == r.path {
		r.mu.Lock()
		r.codes = append(r.codes, resp.StatusCode)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *statusRecorder) answers() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.codes...)
}

func TestThrottling(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) { bubbleInProcess(t, mode, func(t *testing.T) { throttling(t, mode) }) })
	}
}

func throttling(t *testing.T, mode string) {
	ctx := context.Background()
	e := newRGEnv(t, mode, Options{})
	e.srv.SetFaults(Faults{WriteBucket: 2, WriteRefillPerSecond: 2})

	// Raw: the bucket empties, then 429 with Retry-After and ARM's code.
	var last *http.Response
	var body []byte
	remaining := []string{}
	for i := range 3 {
		last, body = e.do("PUT", tablePath(testRG, "t"+strconv.Itoa(i)), `{"location":"eastus"}`)
		remaining = append(remaining, last.Header.Get("x-ms-ratelimit-remaining-subscription-writes"))
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third write = %d %s", last.StatusCode, body)
	}
	if code := decodeJSON(t, body)["error"].(map[string]any)["code"]; code != "SubscriptionRequestsThrottled" {
		t.Errorf("429 code = %v", code)
	}
	if ra, _ := strconv.Atoi(last.Header.Get("Retry-After")); ra < 1 {
		t.Errorf("Retry-After = %q", last.Header.Get("Retry-After"))
	}
	if !slices.Equal(remaining, []string{"1", "0", "0"}) {
		t.Errorf("remaining writes = %v", remaining)
	}
	// Reads have their own bucket (off here).
	if resp, _ := e.do("GET", tablePath(testRG, "t0"), ""); resp.StatusCode != 200 || resp.Header.Get("x-ms-ratelimit-remaining-subscription-reads") == "" {
		t.Errorf("read while writes are throttled = %d", resp.StatusCode)
	}

	// The SDK: 429, waits Retry-After, then succeeds. The bucket is
	// the judge of the wait: the SDK's own retry delays (10 ms,
	// doubling, three retries) are all shorter than a token's
	// refill (500 ms), so a retry that did not wait the Retry-After
	// would be refused again.
	rec := &statusRecorder{next: e.opts.Transport, method: http.MethodPut, path: tablePath(testRG, "sdk")}
	if rec.next == nil {
		rec.next = http.DefaultClient
	}
	opts := *e.opts
	opts.Transport = rec
	sdk, err := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sdk.BeginCreateOrUpdate(ctx, testRG, "sdk", table(), nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, fastPoll)
	}
	if err != nil {
		t.Fatalf("the SDK did not get through after Retry-After: %v", err)
	}
	if got := rec.answers(); !slices.Equal(got, []int{http.StatusTooManyRequests, http.StatusCreated}) {
		t.Errorf("the SDK's PUTs were answered %v, want 429 then 201 (one retry, after Retry-After)", got)
	}
	// A slow refill gives a Retry-After longer than the SDK waits:
	// the caller sees the 429.
	e.srv.SetFaults(Faults{WriteBucket: 1, WriteRefillPerSecond: 0.05})
	e.do("PUT", tablePath(testRG, "burn"), `{"location":"eastus"}`)
	_, err = e.putTable(ctx, testRG, "sdk2", table())
	respErr(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
}

func TestReadThrottling(t *testing.T) {
	e := newRGEnv(t, "inprocess", Options{Faults: Faults{ReadBucket: 1, ReadRefillPerSecond: 0.01}})
	e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/"+testRG, "")
	resp, _ := e.do("GET", "/subscriptions/"+testSub+"/resourcegroups/"+testRG, "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second read = %d", resp.StatusCode)
	}
	// Another subscription has its own bucket.
	resp, _ = e.do("GET", "/subscriptions/"+api.DefaultSubscription+"/resourcegroups", "")
	if resp.StatusCode != 200 {
		t.Errorf("read in another subscription = %d", resp.StatusCode)
	}
}

// TestErrorRate runs in a synctest bubble: the SDK's retries after the
// injected 5xx wait on the bubble's clock.
func TestErrorRate(t *testing.T) { synctest.Test(t, errorRate) }

func errorRate(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{Seed: 42})
	e.srv.SetFaults(Faults{ErrorRate: 1})
	resp, body := e.do("PUT", tablePath(testRG, "rt"), `{"location":"eastus"}`)
	if resp.StatusCode < 500 {
		t.Fatalf("error rate 1: %d %s", resp.StatusCode, body)
	}
	_, err := e.tables.Get(ctx, testRG, "rt", nil)
	if err == nil {
		t.Fatal("error rate 1: the SDK got through")
	}
	// An injected 5xx happens before the write: nothing was created.
	e.srv.SetFaults(Faults{})
	_, err = e.tables.Get(ctx, testRG, "rt", nil)
	respErr(t, err, 404, "ResourceNotFound")

	// At a moderate rate the SDK's retries get every call through.
	e.srv.SetFaults(Faults{ErrorRate: 0.3})
	for i := range 20 {
		if _, err := e.putTable(ctx, testRG, "rt"+strconv.Itoa(i), table()); err != nil {
			t.Fatalf("write %d at error rate 0.3: %v", i, err)
		}
	}
}

// TestLatency runs in a synctest bubble: the request's time is measured on
// the bubble's clock, which moves only while every goroutine waits, so it
// is the latency the fabric added and nothing else.
func TestLatency(t *testing.T) { synctest.Test(t, latency) }

func latency(t *testing.T) {
	e := newEnv(t, "inprocess", Options{Faults: Faults{Latency: 50 * time.Millisecond}})
	start := time.Now()
	e.do("GET", "/subscriptions/"+testSub+"/resourcegroups", "")
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("request took %v of the bubble's clock with 50ms latency", d)
	}
	// The control endpoint is not delayed: with an hour of latency it
	// still answers (within the generous timeout).
	e.srv.SetFaults(Faults{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.endpoint+"/_fabric/healthz", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatalf("healthz under an hour of latency: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	// A delayed ARM request gives up with its context.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	req, _ = http.NewRequestWithContext(ctx2, "GET", e.endpoint+"/subscriptions/"+testSub+"/resourcegroups?api-version=1", nil)
	req.Header.Set("Authorization", "Bearer x")
	if resp, err := e.hc.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("a request under an hour of latency answered %d", resp.StatusCode)
		}
	}
}

func TestIntruder(t *testing.T) {
	eachTransport(t, Options{}, func(ctx context.Context, t *testing.T, e *env) {
		e.mustPutTable(ctx, testRG, "rt", table(vaRoute("mine", "10.200.0.0/24", "10.240.0.20"), vaRoute("fw", "0.0.0.0/0", "10.240.0.4")))

		seen := map[string]bool{}
		for round := range 4 {
			e.srv.SetFaults(Faults{IntruderNextGets: 1})
			got := e.getTable(ctx, testRG, "rt")
			// The PUT planned from that GET carries a stale etag: 412.
			got.Properties.Routes = append(got.Properties.Routes, vaRoute("new", "10.200.9.0/24", "10.240.0.29"))
			_, err := e.putTable(withHeader(ctx, "If-Match", api.Str(got.Etag)), testRG, "rt", got)
			respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
			now := e.getTable(ctx, testRG, "rt") // no strike left
			for _, r := range now.Properties.Routes {
				if strings.HasPrefix(api.Str(r.Name), "intruder-") {
					seen[api.Str(r.Name)+" "+api.Str(r.Properties.AddressPrefix)+" "+api.Str(r.Properties.NextHopIPAddress)] = true
				}
			}
			// It never touches other routes.
			mine := sdkRoute(now, "mine")
			fw := sdkRoute(now, "fw")
			if mine == nil || fw == nil || api.Str(mine.Properties.NextHopIPAddress) != "10.240.0.20" || api.Str(fw.Properties.NextHopIPAddress) != "10.240.0.4" {
				t.Fatalf("round %d: the intruder touched other routes: %v", round, routeNames(now))
			}
		}
		if len(seen) < 2 {
			t.Errorf("intruder states seen = %v, want it to add and edit", seen)
		}
		// Re-read, re-plan, retry: succeeds.
		got := e.getTable(ctx, testRG, "rt")
		got.Properties.Routes = append(got.Properties.Routes, vaRoute("new", "10.200.9.0/24", "10.240.0.29"))
		if _, err := e.putTable(withHeader(ctx, "If-Match", api.Str(got.Etag)), testRG, "rt", got); err != nil {
			t.Errorf("PUT after re-read: %v", err)
		}
		if f := e.srv.Faults(); f.IntruderNextGets != 0 {
			t.Errorf("IntruderNextGets left = %d", f.IntruderNextGets)
		}
	})
}

func TestIntruderRate(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{Seed: 3, Faults: Faults{IntruderRate: 0.5}})
	e.mustPutTable(ctx, testRG, "rt", table())
	changed := 0
	prev := e.getTable(ctx, testRG, "rt")
	for range 40 {
		cur := e.getTable(ctx, testRG, "rt")
		if api.Str(cur.Etag) != api.Str(prev.Etag) {
			changed++
		}
		prev = cur
	}
	if changed < 8 || changed > 32 {
		t.Errorf("the table changed between %d of 40 GETs at intruder rate 0.5", changed)
	}
}

func TestControlEndpoint(t *testing.T) {
	e := newEnv(t, "loopback", Options{})
	put := func(body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("PUT", e.endpoint+"/_fabric/faults", strings.NewReader(body))
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b []byte
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b = buf[:n]
		return resp, b
	}
	resp, body := put(`{"latency":"5ms","writeBucket":200,"writeRefillPerSecond":10,"errorRate":0.1,"failOperations":0.2,"intruderRate":0.3,"intruderNextGets":2}`)
	if resp.StatusCode != 200 {
		t.Fatalf("PUT faults = %d %s", resp.StatusCode, body)
	}
	f := e.srv.Faults()
	want := Faults{Latency: 5 * time.Millisecond, WriteBucket: 200, WriteRefillPerSecond: 10, ErrorRate: 0.1, FailOperations: 0.2, IntruderRate: 0.3, IntruderNextGets: 2}
	if f != want {
		t.Errorf("faults = %+v, want %+v", f, want)
	}
	r, err := e.hc.Get(e.endpoint + "/_fabric/faults")
	if err != nil {
		t.Fatal(err)
	}
	var got Faults
	if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if got != want {
		t.Errorf("GET faults = %+v", got)
	}
	for _, bad := range []string{`{"errorRate":2}`, `{"latency":"soon"}`, `{"nope":1}`, `{"writeBucket":5}`, `{"intruderNextGets":-1}`, `[`} {
		if resp, body := put(bad); resp.StatusCode != 400 {
			t.Errorf("PUT %s = %d %s", bad, resp.StatusCode, body)
		}
	}
	if e.srv.Faults() != want {
		t.Error("a refused PUT changed the faults")
	}
	if code := e.getStatus(t, e.endpoint+"/_fabric/nope"); code != 404 {
		t.Errorf("unknown control path = %d", code)
	}
	// The control endpoint needs no token and ignores the faults.
	e.srv.SetFaults(Faults{ErrorRate: 1})
	if code := e.getStatus(t, e.endpoint+"/_fabric/healthz"); code != 200 {
		t.Errorf("healthz under error rate 1 = %d", code)
	}
}

func TestFaultsJSON(t *testing.T) {
	f := Faults{Latency: 1500 * time.Millisecond, ReadBucket: 250, ReadRefillPerSecond: 25, FailCode: "X"}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"latency":"1.5s"`) {
		t.Errorf("JSON = %s", b)
	}
	var back Faults
	if err := json.Unmarshal(b, &back); err != nil || back != f {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"latency":1000000}`), &back); err != nil || back.Latency != time.Millisecond {
		t.Errorf("nanoseconds = %v, %v", back.Latency, err)
	}
	_ = armnetwork.RouteTable{}
}
