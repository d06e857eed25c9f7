package controller

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// governed is the KTHW network split the way many organisations split it:
// the network in group net, the route table in group kubernetes.
// routekeeper reads everything (Reader on the subscription) and writes only
// where roles let it (the missing permission on the network's group).
const governed = kthw.SplitGroups + `        routes:
          - {name: worker-0____102000024, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
authorization:
  principals:
    - {name: routekeeper, clientId: routekeeper-app, objectId: 00000000-0000-0000-0000-0000000000a5}
  roleAssignments:
    - {principal: routekeeper, role: Reader}
`

const (
	govTable  = "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
	govSubnet = "/subscriptions/" + fabrictest.Sub + "/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
	govOID    = "00000000-0000-0000-0000-0000000000a5"
)

func grantOn(t *testing.T, env *fabrictest.Env, group string) {
	t.Helper()
	env.Apply(t, "location: eastus\nresourceGroups:\n  - name: "+group+"\nauthorization:\n  roleAssignments:\n    - {principal: "+govOID+", role: Network Contributor, resourceGroup: "+group+"}\n")
}

// governedController runs as the principal, on a clock the test moves.
func governedController(t *testing.T, env *fabrictest.Env) (*Controller, *time.Time) {
	cfg := Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: govTable, Subnets: []string{govSubnet},
		GuardInterval: time.Second, MaxRetryBackoff: time.Minute,
	}
	c := New(cfg, env.As(t, "routekeeper-app"), nodesource.New(workers(2)...), nil)
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	return c, &clock
}

// Network Contributor on the table's group only (the case of the missing
// permission): the table write goes through, the association is refused
// with the finding that names the missing action and the command that
// grants it; the refused write is not retried at every guard cycle, but
// after a wait that doubles; once the role is granted the next attempt
// repairs it, with no restart.
func TestRefusedAssociationBacksOffAndConverges(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{}, governed)
	grantOn(t, env, "kubernetes")
	c, clock := governedController(t, env)

	res := c.Reconcile(ctx)
	if !res.Wrote || res.Created != 1 {
		t.Fatalf("the table write (worker-1's route) should go through: %s (%v)", res.Summary(), res.Err)
	}
	a := res.Associations[0]
	if !a.RepairFailed || a.State != assoc.Detached || len(res.Verdict.Denials) != 1 {
		t.Fatalf("association: %+v, denials %+v; want a refused repair", a, res.Verdict.Denials)
	}
	d := res.Verdict.Denials[0]
	if d.Code != observe.CodeAuthorizationFailed || d.Action != "Microsoft.Network/virtualNetworks/subnets/write" ||
		!strings.Contains(d.Fix, "--assignee-object-id "+govOID) || !strings.Contains(d.Fix, "--scope /subscriptions/"+fabrictest.Sub+"/resourceGroups/net") {
		t.Errorf("denial %+v: want the subnet write refused, fixed by a role on group net for %s", d, govOID)
	}
	if a.Fix != d.Fix || !strings.Contains(a.Message, "AuthorizationFailed") {
		t.Errorf("the subnet's finding does not carry the refusal and its fix: %+v", a)
	}
	for name, nv := range res.Nodes {
		if nv.Routed || nv.Reason != reason.RouteTableDetached {
			t.Errorf("node %s: %+v; want not routed, RouteTableDetached (its subnet is still detached)", name, nv)
		}
	}

	writes := func() int64 { _, w := c.cloud.Calls(); return w }
	guard := func() *Result {
		g := c.Guard(ctx)
		if g.AssociationProblems() != 1 && !g.Associations[0].Repaired {
			t.Fatalf("guard: %s", g.Summary())
		}
		return g
	}
	// Within the wait (one guard interval): the refusal is reported, not
	// retried, and no reconcile is asked for (it would not retry either).
	w0 := writes()
	if g := guard(); writes() != w0 || len(g.Verdict.Denials) != 1 || g.NeedsReconcile() || !g.Associations[0].RepairHeld {
		t.Errorf("guard within the wait: %d writes, denials %+v, needs reconcile %v, held %v", writes()-w0, g.Verdict.Denials, g.NeedsReconcile(), g.Associations[0].RepairHeld)
	}
	// After it: tried once more, refused, and the wait doubles; the try
	// asks for a reconcile.
	*clock = clock.Add(time.Second)
	if g := guard(); writes() != w0+1 || !g.NeedsReconcile() || g.Associations[0].RepairHeld {
		t.Errorf("guard after the wait wrote %d times (want 1), needs reconcile %v", writes()-w0, g.NeedsReconcile())
	}
	*clock = clock.Add(time.Second)
	if g := guard(); writes() != w0+1 || g.NeedsReconcile() {
		t.Errorf("guard within the doubled wait wrote %d times (want none), needs reconcile %v", writes()-w0-1, g.NeedsReconcile())
	}

	grantOn(t, env, "net")
	*clock = clock.Add(time.Second)
	g := c.Guard(ctx)
	if g.Repairs() != 1 || len(g.Verdict.Denials) != 0 {
		t.Fatalf("after the grant: %s, denials %+v; want the subnet repaired", g.Summary(), g.Verdict.Denials)
	}
	for name, nv := range g.Nodes {
		if !nv.Routed {
			t.Errorf("node %s not routed after the repair: %+v", name, nv)
		}
	}
}

// A refused table write leaves the node it carried unrouted with the
// refusal (never routed), keeps the others routed, does not stop the
// association, and is not sent again while it waits.
func TestRefusedTableWrite(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{}, governed)
	grantOn(t, env, "net")
	// May join the table (so the subnet may point to it), not write it.
	env.Apply(t, `location: eastus
resourceGroups:
  - name: kubernetes
authorization:
  roleDefinitions:
    - Name: route-table-joiner
      Actions: [Microsoft.Network/routeTables/read, Microsoft.Network/routeTables/join/action]
      AssignableScopes: [/subscriptions/`+fabrictest.Sub+`/resourceGroups/kubernetes]
  roleAssignments:
    - {principal: `+govOID+`, role: route-table-joiner, resourceGroup: kubernetes}
`)
	c, clock := governedController(t, env)

	res := c.Reconcile(ctx)
	if res.Wrote || res.Err == nil || len(res.Verdict.Denials) != 1 || res.Verdict.Denials[0].Op != verdict.OpTableWrite {
		t.Fatalf("want the table write refused: %s (%v), denials %+v", res.Summary(), res.Err, res.Verdict.Denials)
	}
	if nv := res.Nodes["worker-1"]; nv.Routed || nv.Reason != reason.RouteWriteDenied || !strings.Contains(nv.Message, "az role assignment create") {
		t.Errorf("worker-1: %+v; want RouteWriteDenied with the fix", nv)
	}
	if nv := res.Nodes["worker-0"]; !nv.Routed {
		t.Errorf("worker-0, whose route is in the table, lost its routed state: %+v", nv)
	}
	if a := res.Associations[0]; a.State != assoc.Reassociated {
		t.Errorf("the association (allowed) did not go on: %+v", a)
	}
	_, w0 := c.cloud.Calls()
	if again := c.Reconcile(ctx); again.Err == nil || len(again.Verdict.Denials) != 1 {
		t.Errorf("a reconcile within the wait: %s (%v)", again.Summary(), again.Err)
	}
	if _, w1 := c.cloud.Calls(); w1 != w0 {
		t.Errorf("a reconcile within the wait sent %d writes, want none", w1-w0)
	}
	// The guard sees the route missing but asks for no reconcile while
	// the write waits.
	if g := c.Guard(ctx); !g.NeedsWrite || !g.WriteHeld || g.NeedsReconcile() {
		t.Errorf("guard within the wait: needs write %v, held %v, needs reconcile %v; want true, true, false", g.NeedsWrite, g.WriteHeld, g.NeedsReconcile())
	}
	*clock = clock.Add(time.Second)
	if g := c.Guard(ctx); g.WriteHeld || !g.NeedsReconcile() {
		t.Errorf("guard after the wait: held %v, needs reconcile %v; want false, true", g.WriteHeld, g.NeedsReconcile())
	}
	grantOn(t, env, "kubernetes")
	*clock = clock.Add(time.Second)
	if done := c.Reconcile(ctx); done.Err != nil || !done.Wrote || done.Unrouted() != 0 {
		t.Errorf("after the grant: %s (%v)", done.Summary(), done.Err)
	}
}
