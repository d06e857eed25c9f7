package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// lab is the Hard Way example's state file seen through the real SDK, as
// an operator's az commands (or Terraform) would change it.
type lab struct {
	t       *testing.T
	cfg     string
	opts    *fabric.Server
	tables  *armnetwork.RouteTablesClient
	subnets *armnetwork.SubnetsClient
}

func newLab(t *testing.T) *lab {
	t.Helper()
	cfg := ranKTHW(t)
	f, srv := sdkFactory(t, cfg)
	return &lab{t: t, cfg: cfg, opts: srv, tables: f.NewRouteTablesClient(), subnets: f.NewSubnetsClient()}
}

func (l *lab) putTable(name string) {
	l.t.Helper()
	p, err := l.tables.BeginCreateOrUpdate(context.Background(), "kubernetes", name, armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Tags: map[string]*string{"owner": to.Ptr("terraform")}, Properties: &armnetwork.RouteTablePropertiesFormat{}}, nil)
	fabrictest.MustPoll(l.t, p, err)
}

func (l *lab) deleteTable(name string) {
	l.t.Helper()
	p, err := l.tables.BeginDelete(context.Background(), "kubernetes", name, nil)
	fabrictest.MustPoll(l.t, p, err)
}

// associate points the node subnet to table (az network vnet subnet update --route-table).
func (l *lab) associate(tableID string) {
	l.t.Helper()
	ctx := context.Background()
	s, err := l.subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		l.t.Fatal(err)
	}
	s.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
	p, err := l.subnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", s.Subnet, nil)
	fabrictest.MustPoll(l.t, p, err)
}

func (l *lab) subnetTable() string {
	l.t.Helper()
	s, err := l.subnets.Get(context.Background(), "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		l.t.Fatal(err)
	}
	if s.Properties.RouteTable == nil {
		return ""
	}
	return *s.Properties.RouteTable.ID
}

// routeNames reads table id's route names, nil when it does not exist.
func (l *lab) routeNames(id string) []string {
	l.t.Helper()
	t, err := l.tables.Get(context.Background(), "kubernetes", armid.Name(id), nil)
	if err != nil {
		return nil
	}
	var names []string
	for _, r := range t.Properties.Routes {
		names = append(names, *r.Name)
	}
	slices.Sort(names)
	return names
}

// readOnly is what diff, doctor and routes list said.
type readOnly struct {
	diff, doctor, list cliResult
	diffTable, doctor0 string
	listNames          []string
}

func (l *lab) readOnly(args ...string) readOnly {
	l.t.Helper()
	with := func(cmd ...string) []string { return append(append(cmd, "--config", l.cfg), args...) }
	var ro readOnly
	ro.diff = runCLI(l.t, nil, "", with("diff", "-o", "json")...)
	ro.doctor = runCLI(l.t, nil, "", with("doctor", "-o", "json")...)
	ro.list = runCLI(l.t, nil, "", with("routes", "list", "-o", "json")...)
	var d struct {
		RouteTable string `json:"routeTable"`
	}
	if err := json.Unmarshal([]byte(ro.diff.stdout), &d); err != nil && ro.diff.code != ExitError {
		l.t.Fatalf("diff -o json: %v\n%s%s", err, ro.diff.stdout, ro.diff.stderr)
	}
	ro.diffTable = d.RouteTable
	d.RouteTable = ""
	if err := json.Unmarshal([]byte(ro.doctor.stdout), &d); err != nil {
		l.t.Fatalf("doctor -o json: %v\n%s%s", err, ro.doctor.stdout, ro.doctor.stderr)
	}
	ro.doctor0 = d.RouteTable
	var rows []routeRow
	if ro.list.code == ExitOK {
		if err := json.Unmarshal([]byte(ro.list.stdout), &rows); err != nil {
			l.t.Fatalf("routes list -o json: %v", err)
		}
	}
	for _, r := range rows {
		ro.listNames = append(ro.listNames, r.Name)
	}
	slices.Sort(ro.listNames)
	return ro
}

// TestIncidentsAgree replays each incident that breaks pod routing through
// the CLI against the fabric state file and checks that run --once, diff,
// doctor and routes list agree: the same table, the same findings,
// consistent exit codes; and that after run --once the read-only commands
// find nothing left to do.
func TestIncidentsAgree(t *testing.T) {
	v2 := fabrictest.KTHWTable2
	old := fabrictest.KTHWTable
	tests := []struct {
		name     string
		args     []string
		incident func(l *lab)
		// table is the table every command must name and run keep.
		table string
		// diff, doctor, run: exit codes before the repair.
		diff, doctor, run int
		// listMissing: routes list fails because the table is yet to be (re-)created.
		listMissing bool
		// doctorSays: a finding must contain this.
		doctorSays string
	}{
		{
			name: "migrated with --delete-old, config not edited",
			incident: func(l *lab) {
				l.putTable("kubernetes-routes-v2")
				if res := runCLI(l.t, nil, "", "migrate", "--to", v2, "--delete-old", "--config", l.cfg); res.code != ExitOK {
					l.t.Fatalf("migrate: exit %d: %s", res.code, res.stderr)
				}
			},
			table: v2, diff: ExitOK, doctor: ExitOK, run: ExitOK, doctorSays: "was migrated to this table",
		},
		{
			name: "swap followed with --association-policy follow", args: []string{"--association-policy", "follow"},
			incident: func(l *lab) {
				l.putTable("kubernetes-routes-v2")
				l.associate(v2)
			},
			table: v2, diff: ExitFindings, doctor: ExitFindings, run: ExitOK, doctorSays: "routekeeper run (association policy follow) writes the node routes",
		},
		{
			name: "swap to a new empty table, old deleted (enforce)",
			incident: func(l *lab) {
				l.putTable("kubernetes-routes-v2")
				l.associate(v2)
				l.deleteTable("kubernetes-routes")
			},
			table: old, diff: ExitFindings, doctor: ExitFindings, run: ExitOK, listMissing: true, doctorSays: "holds 0 of 2 node routes",
		},
		{
			name: "swap to a new empty table, old deleted (follow)", args: []string{"--association-policy", "follow"},
			incident: func(l *lab) {
				l.putTable("kubernetes-routes-v2")
				l.associate(v2)
				l.deleteTable("kubernetes-routes")
			},
			table: v2, diff: ExitFindings, doctor: ExitFindings, run: ExitOK, doctorSays: "follows the swap",
		},
		{
			name: "swap to an empty table, old table kept (enforce)",
			incident: func(l *lab) {
				l.putTable("kubernetes-routes-v2")
				l.associate(v2)
			},
			table: old, diff: ExitFindings, doctor: ExitFindings, run: ExitOK, doctorSays: "routekeeper migrate --to " + v2,
		},
		{
			name:     "the IaC redeploy detached the subnet",
			incident: func(l *lab) { fabrictest.RedeployKTHWVNet(l.t, l.opts.ClientOptions()) },
			table:    old, diff: ExitFindings, doctor: ExitFindings, run: ExitOK, doctorSays: "no route table",
		},
		{
			name: "only findings: a node over the route limit", args: []string{"--route-limit", "2"},
			incident: func(l *lab) {
				writeFile(l.t, filepath.Join(filepath.Dir(l.cfg), "nodes.yaml"), `nodes:
  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}
  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}
  - {name: worker-2, internalIP: 10.240.0.22, podCIDR: 10.200.2.0/24}
`)
			},
			table: old, diff: ExitFindings, doctor: ExitFindings, run: ExitFindings, doctorSays: "RouteTableFull",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			tc.incident(l)
			ro := l.readOnly(tc.args...)
			if ro.diff.code != tc.diff || ro.doctor.code != tc.doctor {
				t.Errorf("before run: diff exit %d (want %d), doctor exit %d (want %d)\ndiff: %s%s\ndoctor: %s", ro.diff.code, tc.diff, ro.doctor.code, tc.doctor,
					ro.diff.stdout, ro.diff.stderr, ro.doctor.stdout)
			}
			if !strings.EqualFold(ro.diffTable, tc.table) || !strings.EqualFold(ro.doctor0, tc.table) {
				t.Errorf("diff names %s, doctor %s; want both %s", ro.diffTable, ro.doctor0, tc.table)
			}
			if !strings.Contains(ro.doctor.stdout, tc.doctorSays) {
				t.Errorf("doctor does not say %q:\n%s", tc.doctorSays, ro.doctor.stdout)
			}
			if tc.listMissing {
				if ro.list.code != ExitError || !strings.Contains(ro.list.stderr, "routekeeper run creates it") {
					t.Errorf("routes list: exit %d, stderr %q; want 1 saying run creates the table", ro.list.code, ro.list.stderr)
				}
			} else if ro.list.code != ExitOK || !slices.Equal(ro.listNames, l.routeNames(tc.table)) {
				t.Errorf("routes list: exit %d, routes %v; want 0 and the routes of %s %v\n%s", ro.list.code, ro.listNames, tc.table, l.routeNames(tc.table), ro.list.stderr)
			}

			run := runCLI(t, nil, "", append([]string{"run", "--once", "--config", l.cfg}, tc.args...)...)
			if run.code != tc.run {
				t.Fatalf("run --once: exit %d, want %d\n%s", run.code, tc.run, run.stderr)
			}
			if w := writesOf(t, run.stderr); ro.diff.code == ExitOK && w != 0 {
				t.Errorf("diff said nothing to do, run --once wrote %d times", w)
			}
			if got := l.subnetTable(); !strings.EqualFold(got, tc.table) {
				t.Errorf("after run the subnet is on %q, want %s", got, tc.table)
			}

			after := l.readOnly(tc.args...)
			wantAfter := ExitOK
			if tc.run == ExitFindings {
				wantAfter = ExitFindings
			}
			if after.diff.code != wantAfter || after.doctor.code != wantAfter || after.list.code != ExitOK {
				t.Errorf("after run: diff exit %d, doctor exit %d, routes list exit %d; want %d, %d, 0\ndiff: %s\ndoctor: %s", after.diff.code, after.doctor.code, after.list.code,
					wantAfter, wantAfter, after.diff.stdout, after.doctor.stdout)
			}
			if !strings.EqualFold(after.diffTable, tc.table) || !strings.EqualFold(after.doctor0, tc.table) || !slices.Equal(after.listNames, l.routeNames(tc.table)) {
				t.Errorf("after run: diff names %s, doctor %s, routes list %v; want %s %v", after.diffTable, after.doctor0, after.listNames, tc.table, l.routeNames(tc.table))
			}
		})
	}
}

// writesOf returns the ARM writes of the reconcile summary in stderr (ok
// or failed).
func writesOf(t *testing.T, stderr string) int {
	t.Helper()
	i := strings.Index(stderr, "reconcile ")
	if i < 0 {
		t.Fatalf("no reconcile summary in:\n%s", stderr)
	}
	var n int
	for _, f := range strings.Fields(stderr[i:]) {
		if v, ok := strings.CutPrefix(f, "writes="); ok {
			for _, c := range v {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	t.Fatalf("no writes= in the reconcile summary:\n%s", stderr)
	return 0
}
