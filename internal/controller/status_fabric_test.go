package controller

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// A foreign long-running operation does not withdraw routed: another
// client's long-running PUT of the table (one custom route added; the
// operation takes 30 s) leaves every route reading provisioningState
// Updating. The routes' content is intact, so every node stays routed
// (DESIGN invariant 8), marked Pending: not confirmed, so a node never
// becomes routed for the first time on such a read (invariant 4).
func TestForeignLongOperationKeepsNodesRouted(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	nodes := workers(2)
	c := New(scenarioConfig(), env.Client, nodesource.New(nodes...), nil)
	if r := c.Reconcile(ctx); r.Err != nil || r.Unrouted() != 0 {
		t.Fatalf("set-up: %s %v", r.Summary(), r.Err)
	}

	// The other writer, through a fabric whose operations take 30 s, on the
	// same state: its PUT returns at once, the operation stays in flight.
	tables := fabrictest.StartForeignTableWrite(ctx, t, env.Store)
	now, err := tables.Get(ctx, "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range now.Properties.Routes {
		if *r.Properties.ProvisioningState != armnetwork.ProvisioningStateUpdating {
			t.Fatalf("route %s is %s during the other operation; the test needs Updating", *r.Name, *r.Properties.ProvisioningState)
		}
	}

	r := c.Reconcile(ctx)
	if r.Err != nil {
		t.Fatalf("reconcile during the other operation: %v", r.Err)
	}
	if r.Wrote {
		t.Error("routekeeper wrote the table although every route's content is right")
	}
	for _, n := range nodes {
		nr := r.Nodes[n.Name]
		if !nr.Routed || !nr.Pending {
			t.Errorf("node %s: %+v, want routed (pending) while another writer's operation runs", n.Name, nr)
		}
	}
	// The guard agrees.
	if g := c.Guard(ctx); g.Unrouted() != 0 || g.NeedsWrite {
		t.Errorf("guard during the other operation: %s", g.Summary())
	}
}
