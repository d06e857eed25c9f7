package controller

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// The daemon logs why a node is unrouted once, when it becomes unrouted,
// not on every pass; beyond ten nodes one line per reason with the count
// and the first names.
func TestUnroutedReasonsLoggedOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outside  int // nodes with a pod CIDR outside the cluster CIDR
		perNode  int
		summary  int
		wantText string
	}{
		{name: "a few nodes: one line each", outside: 2, perNode: 2, wantText: "node=out-0"},
		{name: "many nodes: one line per reason", outside: 12, summary: 1, wantText: "count=12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
			nodes := workers(2)
			for i := range tc.outside {
				nodes = append(nodes, node(fmt.Sprintf("out-%d", i), fmt.Sprintf("10.240.0.%d", 100+i), fmt.Sprintf("10.99.%d.0/24", i)))
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			src := nodesource.New(nodes...)
			c := New(scenarioConfig(), env.Client, src, log)
			ctx := context.Background()
			for range 3 { // three passes, as the daemon's loop makes them
				c.logUnrouted(c.Reconcile(ctx))
			}
			out := buf.String()
			if n := strings.Count(out, `msg="node not routed"`); n != tc.perNode {
				t.Errorf("%d per-node lines, want %d:\n%s", n, tc.perNode, out)
			}
			if n := strings.Count(out, `msg="nodes not routed"`); n != tc.summary {
				t.Errorf("%d summary lines, want %d:\n%s", n, tc.summary, out)
			}
			if !strings.Contains(out, tc.wantText) || !strings.Contains(out, "reason=") {
				t.Errorf("log does not say %q with the reason:\n%s", tc.wantText, out)
			}
			// Routed again: said once.
			src.Set(nodes[:2])
			buf.Reset()
			c.logUnrouted(c.Reconcile(ctx))
			c.logUnrouted(c.Reconcile(ctx))
			if n := strings.Count(buf.String(), "node not routed"); n != 0 {
				t.Errorf("unrouted lines after the nodes went: %s", buf.String())
			}
		})
	}
}

// A subnet problem routekeeper leaves alone (policy report) is logged at
// WARN once, not at every guard cycle.
func TestAssociationProblemLoggedOnce(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	cfg := scenarioConfig()
	boot := New(cfg, env.Client, nodesource.New(workers(2)...), nil)
	if r := boot.Reconcile(context.Background()); r.Err != nil {
		t.Fatal(r.Err)
	}
	fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions())
	var buf bytes.Buffer
	cfg.Policy = assoc.Report
	c := New(cfg, env.Client, nodesource.New(workers(2)...), slog.New(slog.NewTextHandler(&buf, nil)))
	for range 4 {
		if g := c.Guard(context.Background()); g.AssociationProblems() != 1 {
			t.Fatalf("guard: %s", g.Summary())
		}
	}
	if n := strings.Count(buf.String(), "subnet not on the route table"); n != 1 {
		t.Errorf("problem logged %d times in 4 cycles, want 1:\n%s", n, buf.String())
	}
}

// Routes of nodes the cluster does not have, in a table nobody claimed (a
// table cloud-provider-azure wrote): the warning names the setting that
// claims the table, so that they can be cleaned up.
func TestUnclaimedRoutesWarningNamesTheClaim(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	gone := &armnetwork.Route{Name: to.Ptr("gone____102009024"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.200.9.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.99")}}
	p, err := f.NewRouteTablesClient().BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Properties: &armnetwork.RouteTablePropertiesFormat{Routes: []*armnetwork.Route{gone}}}, nil)
	fabrictest.MustPoll(t, p, err)
	var buf bytes.Buffer
	c := New(scenarioConfig(), env.Client, nodesource.New(workers(2)...), slog.New(slog.NewTextHandler(&buf, nil)))
	if r := c.Reconcile(ctx); r.Err != nil {
		t.Fatal(r.Err)
	}
	if out := buf.String(); !strings.Contains(out, "left in the unclaimed route table") || !strings.Contains(out, "routeTable.claim: true, --claim-route-table") {
		t.Errorf("the warning does not name the setting that claims the table:\n%s", out)
	}
}
