package doctor_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/verdict"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/doctor"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func node(name, ip, cidr string) source.Node {
	return source.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(cidr)}}
}

func va(name, prefix, hop string) route.Route {
	return route.Route{Name: name, AddressPrefix: prefix, Prefix: netip.MustParsePrefix(prefix), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(hop)}
}

// input is the cluster doctor checks, and what run would work from.
type input struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	Limit        int
	TableID      string
	Subnets      []string
	CreateTable  bool
	Adopt        plan.AdoptPolicy
	Nodes        []source.Node
}

func defaultInput() input {
	return input{
		Cluster:      "kthw",
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		TableID:      fabrictest.KTHWTable,
		Subnets:      []string{fabrictest.KTHWSubnet},
		Nodes:        []source.Node{node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")},
	}
}

// check is `routekeeper doctor`: the controller's observe and decide (a
// dry run), then the verdict's report.
func check(env *fabrictest.Env, in input) *doctor.Report {
	c := controller.New(controller.Config{
		Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs, RouteLimit: in.Limit, RouteTableID: in.TableID,
		CreateTable: in.CreateTable, Subnets: in.Subnets, Location: "eastus", Adopt: in.Adopt,
	}, env.Client, nil, nil)
	return doctor.Check(c.Inspect(context.Background(), in.Nodes, observe.Scope{}).Verdict)
}

// healthy makes the Kubernetes the Hard Way cluster as routekeeper leaves
// it: table claimed, both routes, associated.
func healthy(t *testing.T, env *fabrictest.Env, extra ...route.Route) {
	t.Helper()
	ctx := context.Background()
	tbl := &route.Table{ID: fabrictest.KTHWTable, Location: "eastus", Tags: map[string]string{route.ClaimTag: "kthw"},
		Routes: append([]route.Route{va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20"), va("worker-1____102001024", "10.200.1.0/24", "10.240.0.21")}, extra...)}
	if _, err := env.Client.PutRouteTable(ctx, tbl, ""); err != nil {
		t.Fatal(err)
	}
	s, err := env.Client.GetSubnet(ctx, fabrictest.KTHWSubnet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	type want struct {
		sev   finding.Severity
		check string
		res   string // substring of the resource
		msg   string // substring of the message
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, env *fabrictest.Env)
		input  func(in *input)
		want   []want
		errors int
		routed int
	}{
		// Healthy: nothing to do; doctor says which route limit it keeps to
		// and where from (information).
		{name: "healthy", setup: func(t *testing.T, env *fabrictest.Env) { healthy(t, env) }, routed: 2,
			want: []want{{finding.Info, verdict.RuleLimit, "kubernetes-routes", "the table holds 2 of at most 1000 routes (Azure's limit in eastus of 1,000 routes per route table, read from the usages API)"}}},
		{name: "table missing, creation allowed", input: func(in *input) { in.CreateTable = true },
			want: []want{{finding.Warning, verdict.RuleTable, "kubernetes-routes", "will create it"}, {finding.Error, verdict.RuleAssociation, "kubernetes-subnet", "no route table"}}, errors: 1},
		{name: "table missing, creation not allowed",
			want: []want{{finding.Error, verdict.RuleTable, "kubernetes-routes", "will not create it"}}, errors: 2},
		{name: "the IaC redeploy dropped the association", setup: func(t *testing.T, env *fabrictest.Env) {
			healthy(t, env)
			fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions())
		},
			want: []want{{finding.Error, verdict.RuleAssociation, "kubernetes-subnet", "no route table"}}, errors: 1, routed: 0},
		{name: "claimed by another cluster", setup: func(t *testing.T, env *fabrictest.Env) {
			healthy(t, env)
			tbl, _ := env.Client.GetRouteTable(context.Background(), fabrictest.KTHWTable)
			tbl.Tags[route.ClaimTag] = "prod-east"
			if _, err := env.Client.PutRouteTable(context.Background(), tbl, tbl.Etag); err != nil {
				t.Fatal(err)
			}
		}, want: []want{{finding.Error, verdict.RuleClaim, "kubernetes-routes", `claimed by cluster "prod-east"`}}, errors: 1},
		{name: "a node without its route and a stale route", setup: func(t *testing.T, env *fabrictest.Env) {
			healthy(t, env, va("worker-9____102009024", "10.200.9.0/24", "10.240.0.29"))
		}, input: func(in *input) {
			in.Nodes = append(in.Nodes, node("worker-2", "10.240.0.22", "10.200.2.0/24"))
		}, want: []want{
			{finding.Error, verdict.RuleNodeRoute, "worker-2", "no correct route"},
			{finding.Warning, verdict.RuleStaleRoute, "worker-9____102009024", "stale route 10.200.9.0/24"},
		}, errors: 1, routed: 2},
		{name: "a node whose prefix is taken by a custom route", setup: func(t *testing.T, env *fabrictest.Env) {
			healthy(t, env, va("kubernetes-route-10-200-2-0-24", "10.200.2.0/24", "10.240.0.99"))
		}, input: func(in *input) {
			in.Nodes = append(in.Nodes, node("worker-2", "10.240.0.22", "10.200.2.0/24"))
		}, want: []want{{finding.Error, verdict.RuleNodeRoute, "worker-2", "PrefixConflict"}}, errors: 1, routed: 2},
		{name: "a custom route shadows part of a pod CIDR", setup: func(t *testing.T, env *fabrictest.Env) {
			healthy(t, env, va("inspect", "10.200.1.128/25", "10.240.0.4"))
		}, want: []want{{finding.Warning, verdict.RuleShadow, "inspect", "more specific than node worker-1"}}, routed: 2},
		{name: "table close to its limit", setup: func(t *testing.T, env *fabrictest.Env) { healthy(t, env) },
			input: func(in *input) { in.Limit = 2 },
			want:  []want{{finding.Info, verdict.RuleLimit, "kubernetes-routes", "2 of at most 2"}}, routed: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
			if tt.setup != nil {
				tt.setup(t, env)
			}
			in := defaultInput()
			if tt.input != nil {
				tt.input(&in)
			}
			_, w0 := env.Client.Calls()
			rep := check(env, in)
			if _, w1 := env.Client.Calls(); w1 != w0 {
				t.Errorf("doctor wrote %d times; it must only read", w1-w0)
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(rep.Findings, func(f finding.Finding) bool {
					return f.Severity == w.sev && f.Rule == w.check && strings.Contains(f.Resource, w.res) && strings.Contains(f.Message, w.msg)
				}) {
					t.Errorf("no %s %s finding on %s mentioning %q in %+v", w.sev, w.check, w.res, w.msg, rep.Findings)
				}
			}
			if rep.Errors() != tt.errors {
				t.Errorf("errors = %d, want %d: %+v", rep.Errors(), tt.errors, rep.Findings)
			}
			if rep.Routed != tt.routed {
				t.Errorf("routed = %d, want %d", rep.Routed, tt.routed)
			}
			if tt.name == "healthy" && slices.ContainsFunc(rep.Findings, func(f finding.Finding) bool { return f.Severity != finding.Info }) {
				t.Errorf("findings on a healthy cluster: %+v", rep.Findings)
			}
		})
	}
}

// TestUnclaimedTableAndAdoption: in a table nobody claimed, a route named
// for a node this cluster does not have is listed with the command that
// removes it (run never deletes it), and a hand-made route that carries a
// node's traffic is a warning, the node counted as routed.
func TestUnclaimedTableAndAdoption(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	tbl := &route.Table{ID: fabrictest.KTHWTable, Location: "eastus", Routes: []route.Route{
		va("worker-0____102000024", "10.200.0.0/24", "10.240.0.20"),
		va("kubernetes-route-10-200-1-0-24", "10.200.1.0/24", "10.240.0.21"),
		va("other-9____102009024", "10.200.9.0/24", "10.240.0.99"),
	}}
	if _, err := env.Client.PutRouteTable(ctx, tbl, ""); err != nil {
		t.Fatal(err)
	}
	s, _ := env.Client.GetSubnet(ctx, fabrictest.KTHWSubnet)
	if _, err := env.Client.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, s.Etag); err != nil {
		t.Fatal(err)
	}
	for _, adopt := range []bool{false, true} {
		in := defaultInput()
		if adopt {
			in.Adopt = plan.AdoptMatching
		}
		rep := check(env, in)
		if rep.Errors() != 0 || rep.Routed != 2 {
			t.Errorf("adopt %v: %d errors, %d routed; want 0 and 2: %+v", adopt, rep.Errors(), rep.Routed, rep.Findings)
		}
		var unclaimed, unmanaged, stale []finding.Finding
		for _, f := range rep.Findings {
			switch f.Rule {
			case verdict.RuleUnclaimedRoute:
				unclaimed = append(unclaimed, f)
			case verdict.RuleUnmanaged:
				unmanaged = append(unmanaged, f)
			case verdict.RuleStaleRoute:
				stale = append(stale, f)
			}
		}
		if len(unclaimed) != 1 || unclaimed[0].Resource != "other-9____102009024" ||
			!strings.Contains(unclaimed[0].Fix, "az network route-table route delete --ids "+fabrictest.KTHWTable+"/routes/other-9____102009024") {
			t.Errorf("adopt %v: unclaimed-route findings %+v", adopt, unclaimed)
		}
		if len(unmanaged) != 1 || unmanaged[0].Resource != "worker-1" || unmanaged[0].Severity != finding.Info {
			t.Errorf("adopt %v: unmanaged-route findings %+v", adopt, unmanaged)
		}
		if len(stale) != 0 {
			t.Errorf("adopt %v: stale-route findings %+v: nothing is deleted from an unclaimed table but by adoption", adopt, stale)
		}
	}
}
