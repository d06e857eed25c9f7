package controller

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// The scenarios replay the two incidents routekeeper was made for (the
// route-table swap: a new table put on the subnet; the IaC redeploy that
// detaches the table: a VNet PUT drops the association) and the other ways
// a subnet loses its table, against the in-process fabric through the real
// SDK, with the controller's own Run loop. Each asserts that the repair
// came within one guard interval (no guard cycle started after the fault
// without repairing it) and the exact number of ARM writes routekeeper
// made, and logs the time to repair (docs/performance.md). Each runs in a
// synctest bubble (see bubble): the time to repair they log is the
// bubble's, made of the guard interval and the fabric's operations.

// logRepair logs the time from the fault to the end of the repair (at most
// one guard interval of waiting plus the repair itself), the repair's own
// duration, and the writes.
func logRepair(t *testing.T, name string, fault time.Time, res *Result, writes int64) {
	t.Helper()
	t.Logf("SCENARIO %s: repaired %s after the fault (the repairing pass took %s) with %d ARM writes (guard interval %s)",
		name, repairTime(fault, res).Round(time.Millisecond), res.Duration.Round(100*time.Microsecond), writes, guardInterval)
}

// The IaC redeploy that detaches the table: a VNet PUT without the
// association (what a Terraform or ARM redeploy sends) detaches it; the
// guard puts it back at its next cycle with one subnet PUT, and the routes
// are untouched.
func TestScenarioRedeployDropsAssociation(t *testing.T) {
	synctest.Test(t, scenarioRedeployDropsAssociation)
}

func scenarioRedeployDropsAssociation(t *testing.T) {
	s := newScenario(t, fabrictest.KTHWTwoSubnets, func() Config {
		c := scenarioConfig()
		c.Subnets = []string{fabrictest.KTHWSubnet, pool2Subnet}
		return c
	}(), workers(3))
	s.steady()
	before := s.mustTable("kubernetes-routes")

	w0 := s.writes()
	fault := time.Now()
	s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"}, [2]string{"pool-2", "10.240.1.0/24"})
	if got := s.subnetTable(fabrictest.KTHWSubnet); got != "" {
		t.Fatalf("the redeploy did not detach the table (subnet on %s)", got)
	}
	res := s.rec.wait(t, fault, 5*time.Second, "both subnets re-associated", func(r *Result) bool {
		return hasState(fabrictest.KTHWSubnet, assoc.Reassociated)(r) && hasState(pool2Subnet, assoc.Reassociated)(r)
	})
	if !res.GuardOnly {
		t.Errorf("repaired by a reconcile, want the guard's own cycle")
	}
	s.withinOneInterval(t, fault, res, "the repair")
	s.settle(3)
	writes := s.wantWrites(t, w0, 2, "one subnet PUT per subnet")
	for _, sub := range []string{fabrictest.KTHWSubnet, pool2Subnet} {
		if got := s.subnetTable(sub); !armid.Same(got, fabrictest.KTHWTable) {
			t.Errorf("subnet %s on %q after the repair", sub, got)
		}
	}
	after := s.mustTable("kubernetes-routes")
	if *after.Etag != *before.Etag {
		t.Errorf("the route table was written during the repair (etag %s -> %s)", *before.Etag, *after.Etag)
	}
	if err := nodeRoutesIn(after, s.nodes); err != nil {
		t.Error(err)
	}
	a, _ := findAssoc(res, fabrictest.KTHWSubnet)
	if !a.Repaired || a.EventReason() != verdict.EventReassociated || a.EventType() != "Normal" || !strings.Contains(a.Message, "re-associated") || a.Table != "" {
		t.Errorf("association reported as %+v (event %s)", a, a.EventReason())
	}
	if res.Repairs() != 2 || res.AssociationProblems() != 0 {
		t.Errorf("result counts repairs=%d problems=%d, want 2 and 0", res.Repairs(), res.AssociationProblems())
	}
	logRepair(t, "IaC redeploy (VNet PUT, 2 subnets)", fault, res, writes)
}

// The subnet PUT of a repair keeps every other property of the subnet.
func TestScenarioRepairKeepsSubnetProperties(t *testing.T) {
	synctest.Test(t, scenarioRepairKeepsSubnetProperties)
}

func scenarioRepairKeepsSubnetProperties(t *testing.T) {
	s := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(2))
	s.steady()
	nsg := "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/networkSecurityGroups/nodes"
	ctx := t.Context()
	sn, err := s.subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Someone drops the table and, in the same PUT, sets an NSG and a
	// service endpoint: the guard must keep both.
	sn.Properties.RouteTable = nil
	sn.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsg)}
	sn.Properties.ServiceEndpoints = []*armnetwork.ServiceEndpointPropertiesFormat{{Service: to.Ptr("Microsoft.Storage")}}
	fault := time.Now()
	p, err := s.subnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", sn.Subnet, nil)
	fabrictest.MustPoll(t, p, err)
	s.rec.wait(t, fault, 5*time.Second, "the subnet re-associated", hasState(fabrictest.KTHWSubnet, assoc.Reassociated))
	got, err := s.subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := got.Properties
	if pr.RouteTable == nil || !armid.Same(*pr.RouteTable.ID, fabrictest.KTHWTable) {
		t.Errorf("route table not restored: %+v", pr.RouteTable)
	}
	if pr.NetworkSecurityGroup == nil || !armid.Same(*pr.NetworkSecurityGroup.ID, nsg) {
		t.Errorf("NSG lost by the repair: %+v", pr.NetworkSecurityGroup)
	}
	if len(pr.ServiceEndpoints) != 1 || *pr.ServiceEndpoints[0].Service != "Microsoft.Storage" {
		t.Errorf("service endpoints lost by the repair: %+v", pr.ServiceEndpoints)
	}
}

// The route-table swap under follow: a new, empty table is put on the
// subnet. The node routes are in it within one guard interval (one PUT,
// keeping its own routes), and the old table is neither written nor
// re-created.
func TestScenarioSwapFollowed(t *testing.T) {
	for _, deleteOld := range []bool{false, true} {
		name := "old table kept"
		if deleteOld {
			name = "old table deleted after the swap"
		}
		t.Run(name, bubble(func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.Policy = assoc.Follow
			s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
			s.steady()
			old := s.mustTable("kubernetes-routes")
			firewall := &armnetwork.Route{Name: to.Ptr("to-firewall"), Properties: &armnetwork.RoutePropertiesFormat{
				AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.4")}}
			s.putTable("kubernetes-routes-v2", map[string]string{"owner": "terraform"}, firewall)

			w0 := s.writes()
			fault := time.Now()
			s.associate(fabrictest.KTHWSubnet, newTableID)
			if deleteOld {
				s.deleteTable("kubernetes-routes")
			}
			res := s.rec.wait(t, fault, 5*time.Second, "the swap followed", hasState(fabrictest.KTHWSubnet, assoc.Followed))
			if res.GuardOnly || !res.Wrote {
				t.Errorf("the follow was reported by %q, want the reconcile that wrote the routes", res.Summary())
			}
			follow := s.rec.wait(t, fault, time.Second, "the guard cycle that saw the swap", func(r *Result) bool { return r.GuardOnly && r.Followed != "" })
			s.withinOneInterval(t, fault, follow, "the swap was followed")
			s.settle(3)
			writes := s.wantWrites(t, w0, 1, "the new table's PUT")
			nt := s.routedTable(t, "kubernetes-routes-v2")
			if len(nt.Properties.Routes) != 4 || tagOf(nt, "owner") != "terraform" || tagOf(nt, route.ClaimTag) != "kthw" {
				t.Errorf("new table: %d routes, tags %v; want the firewall route and 3 node routes, its own tag kept and the claim added", len(nt.Properties.Routes), nt.Tags)
			}
			if !armid.Same(s.ctrl.TableID(), newTableID) {
				t.Errorf("controller keeps %s, want the new table", s.ctrl.TableID())
			}
			got, err := s.getTable("kubernetes-routes")
			switch {
			case deleteOld && !isNotFound(err):
				t.Errorf("the deleted old table came back: %v", err)
			case !deleteOld && err != nil:
				t.Fatal(err)
			case !deleteOld && *got.Etag != *old.Etag:
				t.Errorf("the old table was written after the swap (etag %s -> %s)", *old.Etag, *got.Etag)
			}
			a, _ := findAssoc(res, fabrictest.KTHWSubnet)
			if !a.Repaired || a.EventReason() != verdict.EventSwapFollowed || !armid.Same(a.RouteTable, newTableID) {
				t.Errorf("association reported as %+v", a)
			}
			logRepair(t, "swap followed ("+name+")", fault, res, writes)
		}))
	}
}

// The route-table swap with the old table deleted first (detach and delete
// the old table, then associate the new one), with creation not allowed:
// the old table does not come back, and the new one gets the routes.
func TestScenarioSwapOldDeletedFirstNoCreate(t *testing.T) {
	synctest.Test(t, scenarioSwapOldDeletedFirstNoCreate)
}

func scenarioSwapOldDeletedFirstNoCreate(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Policy = assoc.Follow
	cfg.CreateTable = false
	s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
	s.steadyWithSecondTable()
	w0 := s.writes()
	fault := s.moveAndDeleteOurs("")
	s.rec.wait(t, fault, 5*time.Second, "the missing table reported", func(r *Result) bool {
		a, ok := findAssoc(r, fabrictest.KTHWSubnet)
		return ok && a.State == assoc.Detached && a.TableMissing
	})
	if w := s.writes() - w0; w != 0 {
		t.Fatalf("%d ARM writes while the table is missing and may not be created", w)
	}
	s.associate(fabrictest.KTHWSubnet, newTableID)
	s.rec.wait(t, fault, 5*time.Second, "the swap followed", hasState(fabrictest.KTHWSubnet, assoc.Followed))
	s.settle(2)
	s.wantWrites(t, w0, 1, "")
	s.routedTable(t, "kubernetes-routes-v2")
	if _, err := s.getTable("kubernetes-routes"); !isNotFound(err) {
		t.Errorf("the deleted old table came back: %v", err)
	}
}

// The route-table swap under enforce: with restore, our table is put back
// (one subnet PUT) and the other table is not touched. Without restore, a
// swap to a table lacking the node routes (a new, empty one) is an outage:
// our table is put back too, with advice to use routekeeper migrate; a swap
// to a table that holds them is reported and nothing is written.
func TestScenarioSwapEnforce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		restore, copy bool
		repaired      bool
	}{
		{"restore", true, false, true},
		{"no restore, new table empty: outage repaired", false, false, true},
		{"no restore, new table holds the routes: reported", false, true, false},
	} {
		t.Run(tc.name, bubble(func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.Restore = tc.restore
			s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
			s.steady()
			var routes []*armnetwork.Route
			if tc.copy {
				routes = armNodeRoutes(s.nodes)
			}
			other := s.putTable("kubernetes-routes-v2", nil, routes...)
			w0 := s.writes()
			fault := time.Now()
			s.associate(fabrictest.KTHWSubnet, newTableID)
			want := assoc.Reassociated
			if !tc.repaired {
				want = assoc.OtherTable
			}
			res := s.rec.wait(t, fault, 5*time.Second, "the swap handled", hasState(fabrictest.KTHWSubnet, want))
			s.withinOneInterval(t, fault, res, "the swap was handled")
			s.settle(3)
			wantWrites, wantOn := int64(1), fabrictest.KTHWTable
			if !tc.repaired {
				wantWrites, wantOn = 0, newTableID
			}
			writes := s.wantWrites(t, w0, wantWrites, "")
			if got := s.subnetTable(fabrictest.KTHWSubnet); !armid.Same(got, wantOn) {
				t.Errorf("subnet on %s, want %s", got, wantOn)
			}
			if got := s.mustTable("kubernetes-routes-v2"); *got.Etag != *other.Etag {
				t.Error("the other table was written")
			}
			a, _ := findAssoc(res, fabrictest.KTHWSubnet)
			if tc.repaired {
				if !tc.restore && !strings.Contains(a.Message, "routekeeper migrate --to") {
					t.Errorf("the repair does not say how to swap safely: %s", a.Message)
				}
				logRepair(t, "swap under enforce, "+tc.name, fault, res, writes)
				return
			}
			if !a.Problem() || a.EventReason() != verdict.EventOtherTable || a.EventType() != "Warning" || !strings.Contains(a.Fix, "association-restore") {
				t.Errorf("association reported as %+v", a)
			}
			// Reported at every cycle, never repaired.
			last := s.rec.all()
			if r := last[len(last)-1]; r.AssociationProblems() != 1 {
				t.Errorf("last result: %s", r.Summary())
			}
		}))
	}
}

// The route table deleted out of band (after the subnet was detached, as
// Azure requires): with creation allowed it is re-created tagged, filled
// and associated (two writes); without, it is reported and nothing is
// written.
func TestScenarioTableDeletedOutOfBand(t *testing.T) {
	for _, create := range []bool{true, false} {
		name := "create allowed"
		if !create {
			name = "create not allowed"
		}
		t.Run(name, bubble(func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.CreateTable = create
			s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
			s.steady()
			s.afterGuardCycle()
			w0 := s.writes()
			s.associate(fabrictest.KTHWSubnet, "")
			s.deleteTable("kubernetes-routes")
			fault := time.Now()
			if !create {
				res := s.rec.wait(t, fault, 5*time.Second, "the missing table reported", func(r *Result) bool {
					a, ok := findAssoc(r, fabrictest.KTHWSubnet)
					return ok && a.State == assoc.Detached && a.TableMissing
				})
				s.withinOneInterval(t, fault, res, "the report")
				s.settle(4)
				s.wantWrites(t, w0, 0, "")
				if _, err := s.getTable("kubernetes-routes"); !isNotFound(err) {
					t.Errorf("table re-created although creation is not allowed: %v", err)
				}
				a, _ := findAssoc(res, fabrictest.KTHWSubnet)
				if a.EventReason() != verdict.EventDetached || !strings.Contains(a.Message, "does not exist") {
					t.Errorf("association reported as %+v", a)
				}
				var failed *Result
				for _, r := range s.rec.all() {
					if !r.GuardOnly && r.Start.After(fault) && r.Err != nil {
						failed = r
					}
				}
				if failed == nil || !strings.Contains(failed.Err.Error(), "routeTable.create: false") {
					t.Errorf("no reconcile failed with the reason: %v", failed)
				}
				return
			}
			res := s.rec.wait(t, fault, 5*time.Second, "the table re-created and associated", hasState(fabrictest.KTHWSubnet, assoc.Reassociated))
			if res.GuardOnly {
				t.Error("re-created by the guard cycle, want the reconcile it triggers")
			}
			guard := s.rec.wait(t, fault, time.Second, "the guard cycle that found the table missing", func(r *Result) bool {
				a, ok := findAssoc(r, fabrictest.KTHWSubnet)
				return r.GuardOnly && ok && a.TableMissing
			})
			s.withinOneInterval(t, fault, guard, "the missing table was found")
			s.settle(3)
			writes := s.wantWrites(t, w0, 2, "create the filled table, associate it")
			tb := s.routedTable(t, "kubernetes-routes")
			if tagOf(tb, route.ClaimTag) != "kthw" || tagOf(tb, route.ClusterCIDRsTag) != "10.200.0.0/16" {
				t.Errorf("re-created table tags %v", tb.Tags)
			}
			if got := s.subnetTable(fabrictest.KTHWSubnet); !armid.Same(got, fabrictest.KTHWTable) {
				t.Errorf("subnet on %q", got)
			}
			a, _ := findAssoc(res, fabrictest.KTHWSubnet)
			if !a.Repaired || !a.Recreated || a.EventReason() != verdict.EventReassociated || !strings.Contains(a.Message, "deleted out of band") {
				t.Errorf("association reported as %+v", a)
			}
			logRepair(t, "route table deleted out of band, re-created", fault, res, writes)
		}))
	}
}

// The old table's resurrection after a route-table swap, avoided: the
// subnet is on another table (enforce, no restore) and ours is deleted.
// Creation is allowed, but a table nothing would use is not created.
func TestScenarioNoUnattachedRecreation(t *testing.T) {
	synctest.Test(t, scenarioNoUnattachedRecreation)
}

func scenarioNoUnattachedRecreation(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Policy = assoc.Report
	cfg.Resync = guardInterval // reconciles keep coming
	s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
	s.steadyWithSecondTable()
	w0 := s.writes()
	since := s.moveAndDeleteOurs(newTableID)
	s.rec.wait(t, since, 5*time.Second, "a reconcile after the deletion", func(r *Result) bool { return !r.GuardOnly && r.Err != nil })
	s.settle(3)
	s.wantWrites(t, w0, 0, "")
	if _, err := s.getTable("kubernetes-routes"); !isNotFound(err) {
		t.Errorf("an unattached copy of the table was created: %v", err)
	}
	var msg string
	for _, r := range s.rec.all() {
		if !r.GuardOnly && r.Start.After(since) && r.Err != nil {
			msg = r.Err.Error()
		}
	}
	if !strings.Contains(msg, "no configured subnet would be associated") {
		t.Errorf("reconcile error %q does not say why the table is not created", msg)
	}
}

// The swap to a new, empty table with the old table deleted, under the
// default policy: the outage is not left in place. Our table is re-created,
// filled, then associated.
func TestScenarioSwapOldDeletedEnforceRecreates(t *testing.T) {
	synctest.Test(t, scenarioSwapOldDeletedEnforceRecreates)
}

func scenarioSwapOldDeletedEnforceRecreates(t *testing.T) {
	cfg := scenarioConfig()
	s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
	s.steadyWithSecondTable()
	fault := s.moveAndDeleteOurs(newTableID)
	res := s.rec.wait(t, fault, 5*time.Second, "the subnet back on a re-created, filled table", hasState(fabrictest.KTHWSubnet, assoc.Reassociated))
	if a, _ := findAssoc(res, fabrictest.KTHWSubnet); !a.Recreated {
		t.Errorf("association %+v, want Recreated", a)
	}
	s.settle(2)
	if got := s.subnetTable(fabrictest.KTHWSubnet); !armid.Same(got, fabrictest.KTHWTable) {
		t.Errorf("subnet on %s, want %s", got, fabrictest.KTHWTable)
	}
	s.routedTable(t, "kubernetes-routes")
	if r := s.rec.all(); r[len(r)-1].AssociationProblems() != 0 || r[len(r)-1].Unrouted() != 0 && !r[len(r)-1].GuardOnly {
		t.Errorf("last result: %s", r[len(r)-1].Summary())
	}
}

// A table claimed by another cluster: nothing is written, neither the
// table nor the subnet, and the conflict names both clusters and says
// that their pod CIDRs overlap.
func TestScenarioClaimedByAnotherCluster(t *testing.T) {
	t.Run("our table claimed", bubble(func(t *testing.T) {
		s := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(3))
		s.putTable("kubernetes-routes", map[string]string{route.ClaimTag: "blue", route.ClusterCIDRsTag: "10.200.0.0/16"})
		w0 := s.writes()
		since := time.Now()
		s.start()
		res := s.rec.wait(t, since, 5*time.Second, "the conflict reported", hasState(fabrictest.KTHWSubnet, assoc.Conflict))
		s.settle(3)
		s.wantWrites(t, w0, 0, "")
		if got := s.subnetTable(fabrictest.KTHWSubnet); got != "" {
			t.Errorf("subnet associated with the other cluster's table: %s", got)
		}
		a, _ := findAssoc(res, fabrictest.KTHWSubnet)
		for _, want := range []string{`"blue"`, `"kthw"`, "overlap"} {
			if !strings.Contains(a.Message, want) {
				t.Errorf("conflict %q does not mention %s", a.Message, want)
			}
		}
		if a.ClaimedBy != "blue" || a.EventReason() != verdict.EventClaimConflict {
			t.Errorf("association reported as %+v", a)
		}
		var refused string
		for _, r := range s.rec.all() {
			if !r.GuardOnly && r.Err != nil {
				refused = r.Err.Error()
			}
		}
		if !strings.Contains(refused, `"blue"`) || !strings.Contains(refused, `"kthw"`) || !strings.Contains(refused, "overlap") {
			t.Errorf("reconcile error %q does not name both clusters and the overlap", refused)
		}
	}))
	t.Run("subnet moved to another cluster's table, enforce with restore", bubble(func(t *testing.T) {
		cfg := scenarioConfig()
		cfg.Restore = true
		s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
		s.steady()
		s.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "blue", route.ClusterCIDRsTag: "10.100.0.0/16"})
		w0 := s.writes()
		fault := time.Now()
		s.associate(fabrictest.KTHWSubnet, newTableID)
		res := s.rec.wait(t, fault, 5*time.Second, "the conflict reported", hasState(fabrictest.KTHWSubnet, assoc.Conflict))
		s.settle(3)
		s.wantWrites(t, w0, 0, "")
		a, _ := findAssoc(res, fabrictest.KTHWSubnet)
		if !strings.Contains(a.Message, `"blue"`) || !strings.Contains(a.Message, "do not overlap") {
			t.Errorf("conflict %q", a.Message)
		}
	}))
	t.Run("follow does not adopt another cluster's table", bubble(func(t *testing.T) {
		cfg := scenarioConfig()
		cfg.Policy = assoc.Follow
		s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
		s.steady()
		s.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "blue"})
		w0 := s.writes()
		fault := time.Now()
		s.associate(fabrictest.KTHWSubnet, newTableID)
		s.rec.wait(t, fault, 5*time.Second, "the conflict reported", hasState(fabrictest.KTHWSubnet, assoc.Conflict))
		s.settle(3)
		s.wantWrites(t, w0, 0, "")
		if !armid.Same(s.ctrl.TableID(), fabrictest.KTHWTable) {
			t.Errorf("followed another cluster's table %s", s.ctrl.TableID())
		}
	}))
}

// Follow with two subnets: one is moved to the new table; the other,
// still on the old table that routekeeper no longer writes, is moved to
// the new one after the routes are in it.
func TestScenarioFollowMovesTheOtherSubnets(t *testing.T) {
	synctest.Test(t, scenarioFollowMovesTheOtherSubnets)
}

func scenarioFollowMovesTheOtherSubnets(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Policy = assoc.Follow
	cfg.Subnets = []string{fabrictest.KTHWSubnet, pool2Subnet}
	s := newScenario(t, fabrictest.KTHWTwoSubnets, cfg, workers(3))
	s.steady()
	s.putTable("kubernetes-routes-v2", nil)
	w0 := s.writes()
	fault := time.Now()
	s.associate(fabrictest.KTHWSubnet, newTableID)
	res := s.rec.wait(t, fault, 5*time.Second, "the swap followed", func(r *Result) bool {
		return hasState(fabrictest.KTHWSubnet, assoc.Followed)(r) && hasState(pool2Subnet, assoc.Reassociated)(r)
	})
	s.settle(3)
	s.wantWrites(t, w0, 2, "the new table's PUT, the other subnet's PUT")
	if got := s.subnetTable(pool2Subnet); !armid.Same(got, newTableID) {
		t.Errorf("second subnet on %s", got)
	}
	a, _ := findAssoc(res, pool2Subnet)
	if !strings.Contains(a.Message, "kept before") {
		t.Errorf("second subnet: %+v", a)
	}
}

// Policy report: nothing is written, and the detached subnet is reported
// at every cycle.
func TestScenarioReportPolicy(t *testing.T) { synctest.Test(t, scenarioReportPolicy) }

func scenarioReportPolicy(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Policy = assoc.Report
	s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
	s.steady()
	w0 := s.writes()
	fault := time.Now()
	s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"})
	res := s.rec.wait(t, fault, 5*time.Second, "the detached subnet reported", hasState(fabrictest.KTHWSubnet, assoc.Detached))
	s.settle(3)
	s.wantWrites(t, w0, 0, "")
	a, _ := findAssoc(res, fabrictest.KTHWSubnet)
	if !strings.Contains(a.Message, "policy report") || a.EventReason() != verdict.EventDetached || res.AssociationProblems() != 1 {
		t.Errorf("association reported as %+v", a)
	}
}

// A migration by `routekeeper migrate` is not fought: a subnet already on
// the new table (migrated-from = ours) is left alone even with restore,
// and once the old table is marked migrated-to, the controller keeps the
// new one.
func TestScenarioMigrationNotFought(t *testing.T) { synctest.Test(t, scenarioMigrationNotFought) }

func scenarioMigrationNotFought(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Restore = true
	s := newScenario(t, fabrictest.KTHW, cfg, workers(3))
	s.steady()
	old := s.mustTable("kubernetes-routes")
	// What migrate's copy step leaves: the new table with the routes,
	// claimed, naming the old one.
	routes := old.Properties.Routes
	for _, r := range routes {
		r.ID, r.Etag, r.Type, r.Properties.ProvisioningState = nil, nil, nil, nil
	}
	s.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "kthw", route.MigratedFromTag: fabrictest.KTHWTable}, routes...)
	w0 := s.writes()
	since := time.Now()
	s.associate(fabrictest.KTHWSubnet, newTableID)
	s.rec.wait(t, since, 5*time.Second, "the migration seen", hasState(fabrictest.KTHWSubnet, assoc.Migrating))
	s.settle(2)
	if w := s.writes() - w0; w != 0 {
		t.Fatalf("ARM writes during the migration = %d, want 0", w)
	}
	// Mark the old table as migrated (migrate's re-tag step).
	tags := map[string]string{route.MigratedToTag: newTableID}
	s.putTable("kubernetes-routes", tags, routes...)
	since = time.Now()
	s.rec.wait(t, since, 5*time.Second, "the migration followed", func(r *Result) bool { return r.GuardOnly && r.Followed != "" })
	s.settle(2)
	if !armid.Same(s.ctrl.TableID(), newTableID) {
		t.Errorf("controller keeps %s", s.ctrl.TableID())
	}
	s.wantWrites(t, w0, 0, "the new table already holds the routes")
	if last := s.rec.all(); last[len(last)-1].AssociationProblems() != 0 {
		t.Errorf("problems after the migration: %s", last[len(last)-1].Summary())
	}
}

// AKS with kubenet (routes: observe): the platform writes the routes into
// its own table. The guard re-associates that table after an IaC redeploy
// detached it, and reports a swap instead of following it, since the
// platform would keep writing the old table.
func TestScenarioObserveMode(t *testing.T) {
	t.Run("redeploy repaired", bubble(func(t *testing.T) {
		cfg := scenarioConfig()
		cfg.Mode, cfg.CreateTable = verdict.Observe, false
		s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
		s.steady()
		w0 := s.writes()
		fault := time.Now()
		s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"})
		s.rec.wait(t, fault, 5*time.Second, "the subnet re-associated", hasState(fabrictest.KTHWSubnet, assoc.Reassociated))
		s.settle(2)
		s.wantWrites(t, w0, 1, "the subnet PUT; never a route")
	}))
	t.Run("swap reported under follow", bubble(func(t *testing.T) {
		cfg := scenarioConfig()
		cfg.Mode, cfg.CreateTable, cfg.Policy = verdict.Observe, false, assoc.Follow
		s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
		s.steady()
		s.putTable("kubernetes-routes-v2", nil, armNodeRoutes(s.nodes)...)
		w0 := s.writes()
		fault := time.Now()
		s.associate(fabrictest.KTHWSubnet, newTableID)
		res := s.rec.wait(t, fault, 5*time.Second, "the swap reported", hasState(fabrictest.KTHWSubnet, assoc.OtherTable))
		s.settle(2)
		s.wantWrites(t, w0, 0, "")
		if a, _ := findAssoc(res, fabrictest.KTHWSubnet); !strings.Contains(a.Message, "observe") {
			t.Errorf("association reported as %+v", a)
		}
		if !armid.Same(s.ctrl.TableID(), fabrictest.KTHWTable) {
			t.Errorf("followed the swap in observe mode: %s", s.ctrl.TableID())
		}
	}))
}

// An owned route deleted out of band is seen by the next guard cycle (it
// reads our table) and restored by the reconcile it asks for, not at the
// resync (an hour in the scenarios).
func TestScenarioRouteDeletedOutOfBandRestoredByGuard(t *testing.T) {
	synctest.Test(t, scenarioRouteDeletedOutOfBandRestoredByGuard)
}

func scenarioRouteDeletedOutOfBandRestoredByGuard(t *testing.T) {
	s := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(3))
	s.steady()
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, s.env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	s.afterGuardCycle()
	fault := time.Now()
	name := route.Name("worker-1", netip.MustParsePrefix("10.200.1.0/24"))
	p, err := f.NewRoutesClient().BeginDelete(context.Background(), "kubernetes", "kubernetes-routes", name, nil)
	fabrictest.MustPoll(t, p, err)
	g := s.rec.wait(t, fault, 5*time.Second, "a guard cycle seeing the drift", func(r *Result) bool { return r.GuardOnly && r.Routes != nil && r.Routes.Missing() == 1 })
	if !g.NeedsReconcile() {
		t.Error("the drift does not ask for a reconcile")
	}
	res := s.rec.wait(t, fault, 5*time.Second, "the route restored", func(r *Result) bool { return !r.GuardOnly && r.Wrote && r.Created == 1 })
	if n := s.rec.guardCyclesBefore(fault, res); n > 1 {
		t.Errorf("%d guard cycles passed before the route was restored, want it at the first", n)
	}
	s.routedTable(t, "kubernetes-routes")
	t.Logf("route restored %s after its deletion (guard interval %s)", repairTime(fault, res).Round(time.Millisecond), guardInterval)
}
