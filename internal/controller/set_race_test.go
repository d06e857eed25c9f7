package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// passMark marks the contexts of the test's own passes, so that the
// source can tell them from the reads of the Set's loops.
type passMark struct{}

// loopCountingSource is a static source that counts the reads made by the
// controllers' loops (contexts without passMark).
type loopCountingSource struct {
	*nodesource.Static
	loopReads atomic.Int64
}

func (s *loopCountingSource) Nodes(ctx context.Context) ([]source.Node, error) {
	if ctx.Value(passMark{}) == nil {
		s.loopReads.Add(1)
	}
	return s.Static.Nodes(ctx)
}

// TestSetPassesWhileItsLoopsRun: diff, doctor and trace call DryRun (and a
// one-shot run calls Reconcile) on a Set whose loops may be running. Set.each
// once swapped every controller's source for a snapshot of one read and
// back, without a lock, while the loops read the source at each reconcile:
// `go test -race` reports that as a data race. The passes must also still
// answer, each with one result per table.
func TestSetPassesWhileItsLoopsRun(t *testing.T) {
	cfg := testConfig()
	cfg.Resync = time.Millisecond // the loops reconcile, and read the source, all the time
	cfg.GuardInterval = time.Millisecond
	cfg.RetryBackoff, cfg.MaxRetryBackoff = time.Millisecond, time.Millisecond
	src := &loopCountingSource{Static: nodesource.New(node("worker-0", "10.240.0.20", "10.200.0.0/24"))}
	shared := Share(src, nil)
	mirror := MirrorConfig(cfg, Mirror{RouteTableID: testTable + "-mirror", CreateTable: true})
	set := &Set{
		Main:    New(cfg, &fakeCloud{}, shared, nil),
		Mirrors: []*Controller{New(mirror, &fakeCloud{}, shared, nil)},
	}

	defer runInBackground(t, set.Run)()

	// Pass again and again until the loops have read the source many
	// times meanwhile.
	const wantPasses, wantLoopReads = 10, 20
	marked := context.WithValue(context.Background(), passMark{}, true)
	deadline := time.Now().Add(20 * time.Second)
	start := src.loopReads.Load()
	passes := 0
	for passes < wantPasses || src.loopReads.Load()-start < wantLoopReads {
		if time.Now().After(deadline) {
			t.Fatalf("in 20s: %d passes while the loops read the source %d times, want %d and %d", passes, src.loopReads.Load()-start, wantPasses, wantLoopReads)
		}
		for name, res := range map[string][]*Result{
			"DryRun":    set.DryRun(marked, observe.Scope{}),
			"Reconcile": set.Reconcile(marked, observe.Scope{}),
		} {
			if len(res) != 2 || res[0] == nil || res[1] == nil {
				t.Fatalf("%s: %d results %v, want one per table (2)", name, len(res), res)
			}
		}
		passes++
	}
	t.Logf("%d passes while the loops read the source %d times", passes, src.loopReads.Load()-start)
}
