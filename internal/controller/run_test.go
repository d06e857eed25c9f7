package controller

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/source"
)

func TestBatcherDue(t *testing.T) {
	const window, maxDelay = 200 * time.Millisecond, time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// changes are the offsets of node changes from t0; now is when
		// due is asked.
		changes []time.Duration
		now     time.Duration
		want    time.Duration
		wantOK  bool
	}{
		{name: "nothing pending", now: time.Second},
		{name: "one change waits the window", changes: []time.Duration{0}, now: 0, want: window, wantOK: true},
		{name: "window counts from the change", changes: []time.Duration{0}, now: 50 * time.Millisecond, want: 150 * time.Millisecond, wantOK: true},
		{name: "each change extends the window", changes: []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}, now: 250 * time.Millisecond, want: window, wantOK: true},
		{name: "a stream of changes is capped by the max delay", changes: []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond, 450 * time.Millisecond, 600 * time.Millisecond, 750 * time.Millisecond, 900 * time.Millisecond}, now: 900 * time.Millisecond, want: 100 * time.Millisecond, wantOK: true},
		{name: "overdue batch is due at once", changes: []time.Duration{0, 900 * time.Millisecond}, now: 1500 * time.Millisecond, want: 0, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var now time.Time
			b := newBatcher(window, maxDelay, func() time.Time { return now })
			for _, c := range tc.changes {
				now = t0.Add(c)
				b.notify()
			}
			now = t0.Add(tc.now)
			got, ok := b.due()
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("due() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
			b.take()
			if _, ok := b.due(); ok {
				t.Error("due() reports pending changes after take()")
			}
		})
	}
}

// burstSource lets the test add nodes and tells the controller each time.
type burstSource struct {
	mu      sync.Mutex
	nodes   []source.Node
	changed func()
	ready   chan struct{}
}

func (s *burstSource) Nodes(context.Context) ([]source.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]source.Node(nil), s.nodes...), nil
}

func (s *burstSource) Watch(ctx context.Context, changed func()) error {
	s.mu.Lock()
	s.changed = changed
	s.mu.Unlock()
	close(s.ready)
	<-ctx.Done()
	return nil
}

func (s *burstSource) add(n source.Node) {
	s.mu.Lock()
	s.nodes = append(s.nodes, n)
	changed := s.changed
	s.mu.Unlock()
	changed()
}

// TestRunBatchesABurst: 100 nodes registering over half a second (one
// every 5 ms) become a handful of writes, not 100, and every node ends up
// routed. It runs in a synctest bubble, so the burst lasts exactly half a
// second on the bubble's clock however busy the machine is, and the
// batcher's windows are measured on that clock too.
func TestRunBatchesABurst(t *testing.T) { synctest.Test(t, runBatchesABurst) }

func runBatchesABurst(t *testing.T) {
	fc := &fakeCloud{}
	src := &burstSource{ready: make(chan struct{})}
	cfg := testConfig()
	cfg.BatchWindow = 100 * time.Millisecond
	cfg.MaxBatchDelay = 300 * time.Millisecond
	cfg.Resync = time.Hour
	rec := &recorder{}
	c := New(cfg, fc, src, nil, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-src.ready
	start := time.Now()
	registrations := time.NewTicker(5 * time.Millisecond)
	for i := range 100 {
		<-registrations.C
		src.add(node(nodeName(i), ipOf(i), cidrOf(i)))
	}
	registrations.Stop()
	burst := time.Since(start)
	routes := func() int {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		if fc.table == nil {
			return 0
		}
		return len(fc.table.Routes)
	}
	rec.wait(t, start, 10*time.Second, "all 100 routes written", func(r *Result) bool { return !r.GuardOnly && routes() == 100 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	fc.mu.Lock()
	puts := fc.puts
	fc.mu.Unlock()
	reconciles := 0
	for _, r := range rec.all() {
		if !r.GuardOnly {
			reconciles++
		}
	}
	// A batch closes at most every MaxBatchDelay while changes keep
	// coming, so the burst allows one write per MaxBatchDelay it lasted,
	// one for its tail and the one at start (creating the table). Without
	// batching it would be about 100.
	maxPuts := 2 + int(burst/cfg.MaxBatchDelay) + 1
	if puts > maxPuts || puts < 2 {
		t.Errorf("%d PUTs for a burst of 100 nodes over %s, want 2 to %d (one per batch)", puts, burst, maxPuts)
	}
	t.Logf("%d PUTs, %d reconciles for a burst over %s", puts, reconciles, burst)
}

func nodeName(i int) string { return "worker-" + strconv.Itoa(i) }
func ipOf(i int) string     { return "10.240.0." + strconv.Itoa(10+i) }
func cidrOf(i int) string   { return "10.200." + strconv.Itoa(i) + ".0/24" }
