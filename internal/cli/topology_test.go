package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// TestTopologyOnlyWhenStateIsCreated: cloud.local.topology fills a new
// (empty) state; a stale route it declares, once deleted by run, stays
// deleted on the next start.
func TestTopologyOnlyWhenStateIsCreated(t *testing.T) {
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	writeFile(t, filepath.Join(dir, "topology.yaml"), fabrictest.KTHW+`            routeTable: kubernetes-routes
    routeTables:
      - name: kubernetes-routes
        tags: {routekeeper-cluster: kthw}
        routes:
          - {name: worker-9____102009024, addressPrefix: 10.200.9.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.29}
`)
	hasStale := func() bool {
		t.Helper()
		_, tables := sdkRoutes(t, cfg)
		tbl, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tbl.Properties.Routes {
			if *r.Name == "worker-9____102009024" {
				return true
			}
		}
		return false
	}

	res := mustRun(t, cfg)
	if hasStale() {
		t.Fatal("the first run left the stale route worker-9 the topology declared")
	}
	// The state exists now: the topology is not applied again, so the
	// stale route does not come back and the second run writes nothing.
	res = mustRun(t, cfg)
	if w := reconcileWrites(t, res.stderr); w != 0 || hasStale() {
		t.Errorf("second run: %d writes, stale route present %v; want 0 writes and no stale route", w, hasStale())
	}

	// A new state (the file removed) starts from the topology again.
	if err := os.Remove(filepath.Join(dir, "fabric.db")); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitOK || reconcileWrites(t, res.stderr) == 0 {
		t.Fatalf("run on a new state: exit %d, want 0 and the stale route deleted again\n%s", res.code, res.stderr)
	}
}
