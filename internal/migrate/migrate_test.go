package migrate

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// The migration moves the KTHW network's subnets from its table to the
// second one.
const (
	oldID   = kthw.TableID
	newID   = kthw.Table2ID
	subnet1 = kthw.SubnetID
	subnet2 = kthw.Pool2ID
)

func opts() Options {
	return Options{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, From: oldID, To: newID, Subnets: []string{subnet1}}
}

// ours is a node route of the cluster.
func ours(i int) route.Route {
	p := netip.MustParsePrefix(fmt.Sprintf("10.200.%d.0/24", i))
	return route.Route{Name: route.Name(fmt.Sprintf("worker-%d", i), p), AddressPrefix: p.String(), Prefix: p,
		NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(fmt.Sprintf("10.240.0.%d", 20+i)), ProvisioningState: "Succeeded"}
}

func custom(name, prefix, hop string) route.Route {
	r := route.Route{Name: name, AddressPrefix: prefix, NextHopType: route.VirtualAppliance, ProvisioningState: "Succeeded"}
	r.Prefix, _ = netip.ParsePrefix(prefix)
	r.NextHopIP, _ = netip.ParseAddr(hop)
	if !r.NextHopIP.IsValid() {
		r.NextHopType = route.NextHopType(hop)
	}
	return r
}

func table(id, claim string, routes ...route.Route) *route.Table {
	t := &route.Table{ID: id, Name: armid.Name(id), Location: "eastus", Etag: `W/"` + id[len(id)-2:] + `"`, Tags: map[string]string{}, Routes: routes}
	if claim != "" {
		t.Tags[route.ClaimTag] = claim
	}
	return t
}

func on(id, tableID string) SubnetState {
	return SubnetState{ID: id, Subnet: &observe.Subnet{ID: id, RouteTableID: tableID, Etag: `W/"s"`}}
}

// statuses renders the steps as "action:status" for comparison.
func statuses(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Action+":"+string(s.Status))
	}
	return out
}

func TestCompute(t *testing.T) {
	firewall := custom("to-firewall", "0.0.0.0/0", "10.240.0.4")
	otherCluster := route.Route{Name: route.Name("blue-0", netip.MustParsePrefix("10.100.0.0/24")), AddressPrefix: "10.100.0.0/24", NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.1.4")}
	migratedOld := table(oldID, "", ours(0), ours(1))
	migratedOld.Tags[route.MigratedToTag] = newID
	migratedNew := table(newID, "kthw", ours(0), ours(1))
	migratedNew.Tags[route.MigratedFromTag] = oldID

	tests := []struct {
		name      string
		o         func(*Options)
		st        State
		want      []string
		copyN     int      // routes copy-routes adds
		conflicts []string // substrings, one per conflict
		err       error
	}{
		{
			name:  "fresh: copy owned and custom routes, not another cluster's",
			st:    State{Old: table(oldID, "kthw", ours(0), ours(1), firewall, otherCluster), New: table(newID, "", custom("to-onprem", "192.168.0.0/16", "VirtualNetworkGateway")), Subnets: []SubnetState{on(subnet1, oldID)}},
			want:  []string{"check:done", "copy-routes:pending", "verify:pending", "associate:pending", "mark-old:pending", "delete-old:skipped"},
			copyN: 3,
		},
		{
			name:  "routes already there (any name for a custom route) are not copied again",
			st:    State{Old: table(oldID, "kthw", ours(0), ours(1), firewall), New: table(newID, "", ours(0), custom("fw", "0.0.0.0/0", "10.240.0.4")), Subnets: []SubnetState{on(subnet1, oldID)}},
			want:  []string{"check:done", "copy-routes:pending", "verify:pending", "associate:pending", "mark-old:pending", "delete-old:skipped"},
			copyN: 1,
		},
		{
			name: "copied but subnets not moved yet",
			st: func() State {
				n := table(newID, "kthw", ours(0))
				n.Tags[route.MigratedFromTag] = oldID
				return State{Old: table(oldID, "kthw", ours(0)), New: n, Subnets: []SubnetState{on(subnet1, oldID), on(subnet2, newID)}}
			}(),
			want: []string{"check:done", "copy-routes:done", "verify:done", "associate:pending", "associate:done", "mark-old:pending", "delete-old:skipped"},
		},
		{
			name: "finished",
			o:    func(o *Options) { o.DeleteOld = true },
			st:   State{Old: migratedOld, New: migratedNew, Subnets: []SubnetState{on(subnet1, newID)}},
			want: []string{"check:done", "copy-routes:done", "verify:done", "associate:done", "mark-old:done", "delete-old:pending"},
		},
		{
			name: "finished, old table deleted",
			st:   State{New: migratedNew, Subnets: []SubnetState{on(subnet1, newID)}},
			want: []string{"check:done", "copy-routes:done", "verify:done", "associate:done", "mark-old:done", "delete-old:done"},
		},
		{
			name: "subnets: detached configured one is associated, others are left alone",
			st: State{Old: table(oldID, "kthw", ours(0)), New: table(newID, ""), Subnets: []SubnetState{
				on(subnet1, ""), on(subnet2, kthw.Provider+"routeTables/third"), {ID: kthw.VNetID + "/subnets/gone"}}},
			want:  []string{"check:done", "copy-routes:pending", "verify:pending", "associate:pending", "associate:skipped", "associate:skipped", "mark-old:pending", "delete-old:skipped"},
			copyN: 1,
		},
		{
			name:      "new table claimed by another cluster",
			st:        State{Old: table(oldID, "kthw", ours(0)), New: table(newID, "blue"), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{`claimed by cluster "blue" (tag routekeeper-cluster), not by this cluster "kthw"`},
		},
		{
			name:      "old table claimed by another cluster",
			st:        State{Old: table(oldID, "blue", ours(0)), New: table(newID, ""), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{`old table is claimed by cluster "blue"`},
		},
		{
			name:      "a prefix with another next hop",
			st:        State{Old: table(oldID, "kthw", ours(0), firewall), New: table(newID, "", custom("fw", "0.0.0.0/0", "10.240.0.5")), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{"holds 0.0.0.0/0 with next hop VirtualAppliance 10.240.0.5"},
		},
		{
			name:      "a node's prefix under another name",
			st:        State{Old: table(oldID, "kthw", ours(0)), New: table(newID, "", custom("worker-0-by-hand", "10.200.0.0/24", "10.240.0.20")), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{"under another name"},
		},
		{
			name:      "a route name for another prefix",
			st:        State{Old: table(oldID, "kthw", firewall), New: table(newID, "", custom("to-firewall", "10.0.0.0/8", "10.240.0.4")), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{"has a route named to-firewall for 10.0.0.0/8"},
		},
		{
			name:      "route limit",
			o:         func(o *Options) { o.Limit = 2 },
			st:        State{Old: table(oldID, "kthw", ours(0), ours(1)), New: table(newID, "", firewall), Subnets: []SubnetState{on(subnet1, oldID)}},
			conflicts: []string{"over the limit of 2"},
		},
		{
			name: "another region",
			st: func() State {
				n := table(newID, "")
				n.Location = "westeurope"
				return State{Old: table(oldID, "kthw", ours(0)), New: n, Subnets: []SubnetState{on(subnet1, oldID)}}
			}(),
			conflicts: []string{"in westeurope, the old one in eastus"},
		},
		{
			name: "new table missing",
			st:   State{Old: table(oldID, "kthw")},
			err:  ErrMissing,
		},
		{
			name: "old table missing and the new one not migrated from it",
			st:   State{New: table(newID, "kthw")},
			err:  ErrMissing,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			if tc.o != nil {
				tc.o(&o)
			}
			p, err := Compute(o, tc.st)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Conflicts) != len(tc.conflicts) {
				t.Fatalf("conflicts = %+v, want %d", p.Conflicts, len(tc.conflicts))
			}
			for i, want := range tc.conflicts {
				if !strings.Contains(p.Conflicts[i].Message, want) {
					t.Errorf("conflict %q does not say %q", p.Conflicts[i].Message, want)
				}
			}
			if len(tc.conflicts) > 0 {
				if p.Steps[0].Status != Pending || p.Complete() {
					t.Errorf("refused plan: %v", statuses(p))
				}
				return
			}
			if got := statuses(p); !slices.Equal(got, tc.want) {
				t.Errorf("steps = %v\nwant    %v", got, tc.want)
			}
			if got := len(p.Steps[1].Routes); got != tc.copyN {
				t.Errorf("copy adds %d routes (%v), want %d", got, p.Steps[1].Routes, tc.copyN)
			}
			for i, s := range p.Steps {
				if s.N != i+1 || s.Detail == "" {
					t.Errorf("step %d: %+v", i, s)
				}
			}
			if p.desired != nil {
				if p.desired.Tag(route.ClaimTag) != "kthw" || !armid.Same(p.desired.Tag(route.MigratedFromTag), oldID) || p.desired.Tag(route.MigratedToTag) != "" {
					t.Errorf("new table tags %v", p.desired.Tags)
				}
				if tc.st.New != nil && len(p.desired.Routes) < len(tc.st.New.Routes) {
					t.Error("the copy drops routes of the new table")
				}
			}
		})
	}
}

func TestComputeDoesNotModifyState(t *testing.T) {
	st := State{Old: table(oldID, "kthw", ours(0)), New: table(newID, "", custom("fw", "0.0.0.0/0", "10.240.0.4")), Subnets: []SubnetState{on(subnet1, oldID)}}
	if _, err := Compute(opts(), st); err != nil {
		t.Fatal(err)
	}
	if len(st.New.Routes) != 1 || len(st.New.Tags) != 0 {
		t.Errorf("the new table was modified: %+v", st.New)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*Options)
		want string
	}{
		{"same table", func(o *Options) { o.To = strings.ToUpper(o.From) }, "already uses"},
		{"no target", func(o *Options) { o.To = "" }, "--to"},
		{"no cluster", func(o *Options) { o.Cluster = "" }, "cluster name"},
		{"ID too long for a tag", func(o *Options) { o.To = kthw.Provider + "routeTables/" + strings.Repeat("x", 200) }, "longer than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			tc.f(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	if err := opts().Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
