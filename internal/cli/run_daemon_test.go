package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// TestRunDaemonFollowsTheInventory runs `routekeeper run` as the daemon:
// an edit of the inventory reaches the route table without a restart, and
// SIGINT (a cancelled context) stops it cleanly with exit 0.
func TestRunDaemonFollowsTheInventory(t *testing.T) {
	cfg := kthw(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	var stdout, stderr syncbuf.Buffer
	daemon := startCLI(&stdout, &stderr, nil, "run", "--config", cfg, "--batch-window", "50ms", "--resync", "1h", "--metrics-address", "127.0.0.1:0")
	defer daemon.cancel()

	_, tables := sdkRoutes(t, cfg)
	routeNames := func() []string {
		tbl, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
		if err != nil {
			return nil
		}
		var names []string
		for _, r := range tbl.Properties.Routes {
			names = append(names, *r.Name)
		}
		return names
	}
	waitFor := func(what string, ok func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if ok(routeNames()) {
				return
			}
			select {
			case code := <-daemon.done:
				t.Fatalf("the daemon exited (%d) while waiting for %s:\n%s", code, what, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatalf("timed out waiting for %s; routes %v\n%s", what, routeNames(), stderr.String())
	}
	waitFor("the two worker routes", func(n []string) bool { return len(n) == 2 })

	writeFile(t, nodes, `nodes:
  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}
  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}
  - {name: worker-2, internalIP: 10.240.0.22, podCIDR: 10.200.2.0/24}
`)
	waitFor("worker-2's route", func(n []string) bool {
		return len(n) == 3 && strings.Contains(strings.Join(n, " "), "worker-2____102002024")
	})

	daemon.stop(t, 40*time.Second, "the daemon", &stderr)
	if n := strings.Count(stderr.String(), "reconcile ok"); n < 2 {
		t.Errorf("want a summary line per reconcile (at least 2), got %d:\n%s", n, stderr.String())
	}
}
