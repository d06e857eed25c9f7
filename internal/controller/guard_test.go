package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

const testSubnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"

func TestAssociationReporting(t *testing.T) {
	tests := []struct {
		state   assoc.State
		problem bool
		reason  string
	}{
		{assoc.Associated, false, ""},
		{assoc.Reassociated, false, verdict.EventReassociated},
		{assoc.Followed, false, verdict.EventSwapFollowed},
		{assoc.Migrating, false, ""},
		{assoc.Detached, true, verdict.EventDetached},
		{assoc.OtherTable, true, verdict.EventOtherTable},
		{assoc.Conflict, true, verdict.EventClaimConflict},
		{assoc.SubnetMissing, true, verdict.EventSubnetMissing},
		{assoc.Unreadable, true, verdict.EventAssociationError},
	}
	for _, tc := range tests {
		t.Run(string(tc.state), func(t *testing.T) {
			a := verdict.Subnet{SubnetDecision: assoc.SubnetDecision{State: tc.state}}
			if a.Problem() != tc.problem || a.EventReason() != tc.reason {
				t.Errorf("Problem=%v EventReason=%q, want %v %q", a.Problem(), a.EventReason(), tc.problem, tc.reason)
			}
			wantType := "Normal"
			if tc.problem {
				wantType = "Warning"
			}
			if a.EventType() != wantType {
				t.Errorf("EventType = %s, want %s", a.EventType(), wantType)
			}
		})
	}
}

// racingCloud lets another writer change the subnet between the guard's
// read and its write.
type racingCloud struct {
	*fakeCloud
	raced bool
}

func (r *racingCloud) SetSubnetRouteTable(ctx context.Context, subnetID, tableID, etag string) (*observe.Subnet, error) {
	if !r.raced {
		r.raced = true
		r.mu.Lock()
		s := r.subnets[strings.ToLower(subnetID)]
		s.Etag = r.nextEtag() // someone set an NSG meanwhile
		r.mu.Unlock()
	}
	return r.fakeCloud.SetSubnetRouteTable(ctx, subnetID, tableID, etag)
}

// A subnet changed by someone else while being repaired is not
// overwritten: the repair fails with a precondition, is reported, asks for
// nothing more, and the next cycle repairs it.
func TestGuardDoesNotOverwriteAConcurrentSubnetChange(t *testing.T) {
	fc := &fakeCloud{
		table:   &route.Table{ID: testTable, Etag: `W/"t"`, Tags: map[string]string{route.ClaimTag: "kthw"}},
		subnets: map[string]*observe.Subnet{strings.ToLower(testSubnet): {ID: testSubnet, Etag: `W/"s"`}},
	}
	rc := &racingCloud{fakeCloud: fc}
	cfg := testConfig()
	cfg.Subnets = []string{testSubnet}
	rec := &recorder{}
	c := New(cfg, rc, nodesource.New(), nil, rec)

	g := c.Guard(context.Background())
	a, _ := findAssoc(g, testSubnet)
	if a.State != assoc.Detached || !a.RepairFailed || !strings.Contains(a.Message, "changed while being repaired") {
		t.Fatalf("first cycle: %+v", a)
	}
	if fc.subnets[strings.ToLower(testSubnet)].RouteTableID != "" {
		t.Fatal("the subnet was written over a concurrent change")
	}
	g = c.Guard(context.Background())
	if a, _ := findAssoc(g, testSubnet); a.State != assoc.Reassociated {
		t.Fatalf("second cycle: %+v", a)
	}
	if got := len(rec.all()); got != 2 {
		t.Errorf("reporter saw %d guard results, want 2", got)
	}
}

// Guard results go through the Reporter interface with what a metrics or
// events reporter needs, and the tick asks for a reconcile only when the
// table must be (re)made or a swap followed.
func TestGuardResultNeedsReconcile(t *testing.T) {
	tests := []struct {
		name   string
		table  *route.Table
		subnet observe.Subnet
		policy assoc.Policy
		state  assoc.State
		needs  bool
		writes int64
	}{
		{"associated", &route.Table{ID: testTable}, observe.Subnet{RouteTableID: testTable}, assoc.Enforce, assoc.Associated, false, 0},
		{"detached, enforce", &route.Table{ID: testTable}, observe.Subnet{}, assoc.Enforce, assoc.Reassociated, false, 1},
		{"detached, report", &route.Table{ID: testTable}, observe.Subnet{}, assoc.Report, assoc.Detached, false, 0},
		{"detached, table missing", nil, observe.Subnet{}, assoc.Enforce, assoc.Detached, true, 0},
		{"our table claimed by another cluster", &route.Table{ID: testTable, Tags: map[string]string{route.ClaimTag: "blue"}}, observe.Subnet{}, assoc.Enforce, assoc.Conflict, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sn := tc.subnet
			sn.ID, sn.Etag = testSubnet, `W/"s"`
			fc := &fakeCloud{table: tc.table, subnets: map[string]*observe.Subnet{strings.ToLower(testSubnet): &sn}}
			cfg := testConfig()
			cfg.Subnets, cfg.Policy = []string{testSubnet}, tc.policy
			rec := &recorder{}
			c := New(cfg, fc, nodesource.New(), nil, rec)
			g := c.Guard(context.Background())
			a, _ := findAssoc(g, testSubnet)
			if a.State != tc.state || g.NeedsReconcile() != tc.needs || g.Writes != tc.writes {
				t.Errorf("state %s needs %v writes %d, want %s %v %d (%s)", a.State, g.NeedsReconcile(), g.Writes, tc.state, tc.needs, tc.writes, a.Message)
			}
			if a.Subnet != testSubnet || !armid.Same(a.RouteTable, testTable) || a.Message == "" {
				t.Errorf("association lacks what a report needs: %+v", a)
			}
			if r := rec.all(); len(r) != 1 || !r[0].GuardOnly || r[0] != g {
				t.Errorf("reporter saw %v", r)
			}
		})
	}
}

// migrated-to tags that lead nowhere, to another cluster's table or in a
// circle are not followed for ever.
func TestFollowMigrationIsBounded(t *testing.T) {
	s := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(2))
	s.putTable("kubernetes-routes", map[string]string{route.ClaimTag: "kthw", route.MigratedToTag: newTableID})
	s.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "kthw", route.MigratedToTag: fabrictest.KTHWTable})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := s.ctrl.Reconcile(ctx)
	if ctx.Err() != nil {
		t.Fatal("reconcile did not end")
	}
	if res.Err != nil {
		t.Fatalf("reconcile: %v", res.Err)
	}
	if res.Reads > 20 {
		t.Errorf("%d reads for a circle of two tables", res.Reads)
	}

	// A migrated-to tag that points to another cluster's table is ignored.
	s2 := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(2))
	s2.putTable("kubernetes-routes", map[string]string{route.ClaimTag: "kthw", route.MigratedToTag: newTableID})
	s2.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "blue"})
	res = s2.ctrl.Reconcile(context.Background())
	if res.Err != nil || !armid.Same(s2.ctrl.TableID(), fabrictest.KTHWTable) || !res.Wrote {
		t.Errorf("followed a migrated-to tag into another cluster's table: table %s, %s, %v", s2.ctrl.TableID(), res.Summary(), res.Err)
	}
}
