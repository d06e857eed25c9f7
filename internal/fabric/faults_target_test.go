package fabric

import (
	"context"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// TestFaultsTarget: with Target set, errors, throttling and failed
// operations hit the targeted table only; the other table works.
func TestFaultsTarget(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{Seed: 7})
	e.mustPutTable(ctx, testRG, "main", table())
	e.mustPutTable(ctx, testRG, "mirror", table())

	e.srv.SetFaults(Faults{ErrorRate: 1, Target: "/routeTables/MIRROR"})
	if resp, body := e.do("PUT", tablePath(testRG, "mirror"), `{"location":"eastus"}`); resp.StatusCode < 500 {
		t.Errorf("targeted table: %d %s, want 5xx", resp.StatusCode, body)
	}
	if resp, body := e.do("PUT", tablePath(testRG, "main"), `{"location":"eastus"}`); resp.StatusCode >= 300 {
		t.Errorf("other table: %d %s, want success", resp.StatusCode, body)
	}

	e.srv.SetFaults(Faults{FailNextOperations: 1, Target: "/routeTables/mirror"})
	if _, err := e.putTable(ctx, testRG, "main", table()); err != nil {
		t.Errorf("other table's operation failed: %v", err)
	}
	if got := e.srv.Faults().FailNextOperations; got != 1 {
		t.Errorf("FailNextOperations left = %d after a write of another table, want 1", got)
	}
	// A write that changes the table (a no-op PUT has no operation to fail).
	changed := table()
	changed.Tags = map[string]*string{"changed": api.Ptr("yes")}
	if _, err := e.putTable(ctx, testRG, "mirror", changed); err == nil {
		t.Error("targeted table's operation succeeded, want it failed")
	}

	e.srv.SetFaults(Faults{WriteBucket: 1, WriteRefillPerSecond: 0.01, Target: "/routeTables/mirror"})
	for i := range 3 {
		if resp, body := e.do("PUT", tablePath(testRG, "main"), `{"location":"eastus"}`); resp.StatusCode >= 300 {
			t.Fatalf("write %d of the other table: %d %s", i, resp.StatusCode, body)
		}
	}
	e.do("PUT", tablePath(testRG, "mirror"), `{"location":"eastus"}`)
	if resp, _ := e.do("PUT", tablePath(testRG, "mirror"), `{"location":"eastus"}`); resp.StatusCode != 429 {
		t.Errorf("second write of the targeted table: %d, want 429", resp.StatusCode)
	}
}
