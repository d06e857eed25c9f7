package assoc

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// The tables are the KTHW network's (kthw), with one that no longer
// exists; the subnet is its node subnet.
const (
	rg     = kthw.Provider
	oldID  = kthw.TableID
	newID  = kthw.Table2ID
	goneID = rg + "routeTables/deleted-table"
	subID  = kthw.SubnetID
)

var wants = []Want{
	{netip.MustParsePrefix("10.200.0.0/24"), netip.MustParseAddr("10.240.0.20")},
	{netip.MustParsePrefix("10.200.1.0/24"), netip.MustParseAddr("10.240.0.21")},
}

// table builds a table read; withRoutes fills in the node routes.
func table(id string, withRoutes bool, tags ...string) TableRead {
	t := &route.Table{ID: id, Tags: map[string]string{}}
	for i := 0; i+1 < len(tags); i += 2 {
		t.Tags[tags[i]] = tags[i+1]
	}
	if withRoutes {
		for _, w := range wants {
			t.Routes = append(t.Routes, route.Route{Name: "r" + w.Prefix.String(), AddressPrefix: w.Prefix.String(), Prefix: w.Prefix,
				NextHopType: route.VirtualAppliance, NextHopIP: w.NextHop, ProvisioningState: "Succeeded"})
		}
	}
	return TableRead{Table: t}
}

var gone = TableRead{NotFound: true}

// incident is the state after one of the incidents of docs/association.md.
type incident struct {
	name   string
	subnet string // the table the subnet points to
	tables map[string]TableRead
	// want per cell: "<state> <action> <table kept>", table kept "old" or "new".
	want map[string]string
}

// The cells: policy, with restore, and in routes: observe mode.
var cells = []struct {
	name    string
	policy  Policy
	restore bool
	observe bool
}{
	{"enforce", Enforce, false, false},
	{"restore", Enforce, true, false},
	{"follow", Follow, false, false},
	{"report", Report, false, false},
	{"observe/enforce", Enforce, false, true},
	{"observe/follow", Follow, false, true},
	{"observe/report", Report, false, true},
}

func all(want string) map[string]string {
	m := map[string]string{}
	for _, c := range cells {
		m[c.name] = want
	}
	return m
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestDecideTable(t *testing.T) {
	mine := []string{route.ClaimTag, "kthw"}
	incidents := []incident{
		{
			name: "associated", subnet: oldID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...)},
			want:   all("Associated none old"),
		},
		{
			name: "detached (IaC redeploy)", subnet: "",
			tables: map[string]TableRead{oldID: table(oldID, true, mine...)},
			want: with(all("Detached associate old"),
				"report", "Detached none old", "observe/report", "Detached none old"),
		},
		{
			name: "swapped, old table present, new one empty", subnet: newID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...), newID: table(newID, false)},
			want: with(all("OtherTable associate old"),
				"follow", "Followed adopt new",
				"report", "OtherTable none old", "observe/report", "OtherTable none old"),
		},
		{
			name: "swapped to a table holding the node routes", subnet: newID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...), newID: table(newID, true)},
			want: with(all("OtherTable none old"),
				"restore", "OtherTable associate old",
				"follow", "Followed adopt new"),
		},
		{
			name: "swapped to a new empty table, old table deleted", subnet: newID,
			tables: map[string]TableRead{oldID: gone, newID: table(newID, false)},
			want: with(all("OtherTable create-then-associate old"),
				"follow", "Followed adopt new",
				"report", "OtherTable none old",
				"observe/enforce", "OtherTable none old", "observe/follow", "OtherTable none old", "observe/report", "OtherTable none old"),
		},
		{
			name: "our table deleted, subnet detached", subnet: "",
			tables: map[string]TableRead{oldID: gone},
			want: with(all("Detached create-then-associate old"),
				"report", "Detached none old",
				"observe/enforce", "Detached none old", "observe/follow", "Detached none old", "observe/report", "Detached none old"),
		},
		{
			name: "migrated (old table tagged migrated-to)", subnet: newID,
			tables: map[string]TableRead{
				oldID: table(oldID, true, route.ClaimTag, "kthw", route.MigratedToTag, newID),
				newID: table(newID, true, route.ClaimTag, "kthw", route.MigratedFromTag, oldID),
			},
			want: all("Associated none new"),
		},
		{
			name: "migrated with --delete-old", subnet: newID,
			tables: map[string]TableRead{oldID: gone, newID: table(newID, true, route.ClaimTag, "kthw", route.MigratedFromTag, oldID)},
			want:   all("Associated none new"),
		},
		{
			name: "migration not finished", subnet: newID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...), newID: table(newID, true, route.ClaimTag, "kthw", route.MigratedFromTag, oldID)},
			want:   all("Migrating none old"),
		},
		{
			name: "claimed by another cluster", subnet: newID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...), newID: table(newID, false, route.ClaimTag, "blue")},
			want:   all("Conflict none old"),
		},
		{
			name: "dangling reference", subnet: goneID,
			tables: map[string]TableRead{oldID: table(oldID, true, mine...), goneID: gone},
			want: with(all("Detached associate old"),
				"report", "Detached none old", "observe/report", "Detached none old"),
		},
	}
	for _, inc := range incidents {
		for _, c := range cells {
			t.Run(inc.name+"/"+c.name, func(t *testing.T) {
				tables := map[string]TableRead{}
				for id, r := range inc.tables {
					tables[armid.Key(id)] = r
				}
				in := Input{
					Cluster: "kthw", Policy: c.policy, Restore: c.restore, Observe: c.observe, CreateAllowed: true,
					Table: oldID, Tables: tables, NodeRoutes: wants,
					Subnets: []Subnet{{ID: subID, RouteTableID: inc.subnet}},
				}
				d := Decide(in)
				if len(d.Subnets) != 1 {
					t.Fatalf("%d subnet decisions, want 1", len(d.Subnets))
				}
				s := d.Subnets[0]
				kept := "old"
				if armid.Same(d.Table, newID) {
					kept = "new"
				}
				got := fmt.Sprintf("%s %s %s", s.State, s.Action, kept)
				if got != inc.want[c.name] {
					t.Errorf("got %q, want %q\nmessage: %s", got, inc.want[c.name], s.Message)
				}
				if s.Message == "" {
					t.Error("no message")
				}
				if s.Problem() && s.Fix == "" {
					t.Errorf("a problem without a fix command: %+v", s)
				}
				if (s.Action == CreateThenAssociate) != d.Create {
					t.Errorf("Create = %v with action %s", d.Create, s.Action)
				}
				if !d.TableExists && !d.Create && d.CreateBlocked == "" {
					t.Error("a missing table neither created nor said why not")
				}
				if c.observe && (d.Create || s.Action == Adopt) {
					t.Errorf("observe mode creates or adopts: %+v", s)
				}
			})
		}
	}
}

// A missing table that no subnet would be associated with is not created
// (the resurrected, unattached table of the route-table swap), and the
// reason names each subnet.
func TestDecideNoUnattachedCreate(t *testing.T) {
	in := Input{
		Cluster: "kthw", Policy: Report, CreateAllowed: true, Table: oldID,
		Tables:  map[string]TableRead{armid.Key(oldID): gone},
		Subnets: []Subnet{{ID: subID}},
	}
	d := Decide(in)
	if d.Create || !strings.Contains(d.CreateBlocked, "does not create a route table that nothing uses") || !strings.Contains(d.CreateBlocked, subID) {
		t.Errorf("Create=%v CreateBlocked=%q", d.Create, d.CreateBlocked)
	}
	in.Subnets = nil
	if d := Decide(in); !d.Create {
		t.Error("with no subnets configured the table is not created")
	}
}

// Follow adopts one other table only: two subnets on two other tables are
// both re-associated, none is followed.
func TestDecideFollowSeveralTables(t *testing.T) {
	other := rg + "routeTables/third"
	in := Input{
		Cluster: "kthw", Policy: Follow, Table: oldID, NodeRoutes: wants,
		Tables:  map[string]TableRead{armid.Key(oldID): table(oldID, true), armid.Key(newID): table(newID, false), armid.Key(other): table(other, false)},
		Subnets: []Subnet{{ID: subID, RouteTableID: newID}, {ID: subID + "2", RouteTableID: other}},
	}
	d := Decide(in)
	if d.Switch != NoSwitch || len(d.Notes) == 0 {
		t.Errorf("switch %q notes %q", d.Switch, d.Notes)
	}
	for _, s := range d.Subnets {
		if s.Action != Associate {
			t.Errorf("%s: %s %s", s.Subnet, s.State, s.Action)
		}
	}
	// An unreadable subnet stops following for this pass.
	in.Subnets = []Subnet{{ID: subID, RouteTableID: newID}, {ID: subID + "2", Err: errors.New("boom")}}
	if d := Decide(in); d.Switch != NoSwitch || d.Subnets[1].State != Unreadable {
		t.Errorf("switch %q, second subnet %s", d.Switch, d.Subnets[1].State)
	}
}

// A chain of migrated-to tags is followed, but never for ever.
func TestDecideMigrationChainBounded(t *testing.T) {
	tables := map[string]TableRead{}
	ids := []string{}
	for i := range 8 {
		ids = append(ids, fmt.Sprintf("%srouteTables/t%d", rg, i))
	}
	for i, id := range ids {
		next := ids[(i+1)%len(ids)]
		tables[armid.Key(id)] = table(id, true, route.ClaimTag, "kthw", route.MigratedToTag, next)
	}
	d := Decide(Input{Cluster: "kthw", Policy: Enforce, Table: ids[0], Tables: tables})
	if d.Switch != Migrated || !armid.Same(d.Table, ids[maxMigrationHops]) {
		t.Errorf("table %s switch %q, want %s after %d hops", d.Table, d.Switch, ids[maxMigrationHops], maxMigrationHops)
	}
}

func TestHoldsByContent(t *testing.T) {
	tb := table(newID, true).Table
	if n := Holds(tb, wants); n != 2 {
		t.Errorf("Holds = %d, want 2", n)
	}
	tb.Routes[0].ProvisioningState = "Updating" // another writer's operation
	if n := Holds(tb, wants); n != 2 {
		t.Errorf("Holds with Updating = %d, want 2", n)
	}
	tb.Routes[1].ProvisioningState = "Failed"
	tb.Routes[0].NextHopIP = netip.MustParseAddr("10.240.0.99")
	if n := Holds(tb, wants); n != 0 {
		t.Errorf("Holds with a wrong hop and a failed route = %d, want 0", n)
	}
}
