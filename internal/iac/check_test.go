package iac

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

const (
	kthwTable  = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
	kthwSubnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
)

// kthwInput is examples/kthw's configuration and nodes, which the
// fixtures' runs kept.
func kthwInput() Input {
	node := func(name, ip, cidr string) source.Node {
		return source.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(cidr)}}
	}
	return Input{
		Want: verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: kthwTable, CreateAllowed: true,
			Nodes: []source.Node{node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")}},
		Subnets: []string{kthwSubnet},
	}
}

func load(t *testing.T, name string) *Plan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The plans recorded from the real OpenTofu runs (testdata/README.md):
// the two hazards are flagged, with the resource, the subnet or table,
// the nodes and the HCL that avoids them; the fixes and the first create
// are clear. Checked without reading the cloud: from the plan alone.
func TestRecordedPlans(t *testing.T) {
	for _, tc := range []struct {
		plan    string
		rule    string
		address string
		subnet  string
		nodes   int
		fix     string
	}{
		{plan: "create"},
		{plan: "detach-inline-subnets", rule: RuleInlineSubnet, address: "azurerm_virtual_network.kubernetes", subnet: kthwSubnet, nodes: 2, fix: "ignore_changes = [subnet]"},
		{plan: "fix-ignore-changes"},
		{plan: "fix-association-resource"},
		{plan: "inline-routes", rule: RuleInlineRoutes, address: "azurerm_route_table.kubernetes", nodes: 2, fix: "ignore_changes = [route]"},
		{plan: "fix-routes-left-out"},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			rep, err := Check(context.Background(), load(t, tc.plan), kthwInput())
			if err != nil {
				t.Fatal(err)
			}
			if tc.rule == "" {
				if len(rep.Findings) != 0 {
					t.Errorf("findings on a safe plan: %+v", rep.Findings)
				}
				return
			}
			if len(rep.Findings) != 1 {
				t.Fatalf("%d findings, want 1: %+v", len(rep.Findings), rep.Findings)
			}
			f := rep.Findings[0]
			if f.Rule != tc.rule || f.Resource != tc.address || f.Evidence.Subnet != tc.subnet || len(f.Evidence.Nodes) != tc.nodes || !strings.Contains(f.Fix, tc.fix) || f.Severity != finding.Error {
				t.Errorf("finding %+v; want rule %s on %s, subnet %q, %d nodes, fix with %q", f, tc.rule, tc.address, tc.subnet, tc.nodes, tc.fix)
			}
		})
	}
}

func TestNotAPlan(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"not json":  "hello",
		"array":     "[]",
		"state":     `{"format_version":"1.0","values":{}}`,
		"no format": `{"resource_changes":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePlan([]byte(in)); !errors.Is(err, ErrNotAPlan) {
				t.Errorf("ParsePlan(%q) = %v, want ErrNotAPlan", in, err)
			}
		})
	}
	if _, err := ParsePlan([]byte(`{"format_version":"2.0","resource_changes":[]}`)); err == nil || !strings.Contains(err.Error(), "2.0") {
		t.Errorf("format 2.0: %v", err)
	}
}

// mutate derives a plan from a recorded one: the kinds of change the real
// runs did not make (a table destroyed, an association destroyed, a
// prefix or address space changed, a value known only after the apply).
func mutate(t *testing.T, name string, f func(p *Plan)) *Plan {
	t.Helper()
	p := load(t, name)
	f(p)
	return p
}

func change(t *testing.T, p *Plan, address string) *Change {
	t.Helper()
	for i := range p.ResourceChanges {
		if p.ResourceChanges[i].Address == address {
			return &p.ResourceChanges[i].Change
		}
	}
	t.Fatalf("no %s in the plan", address)
	return nil
}

func TestDerivedPlans(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   string
		mutate func(t *testing.T, p *Plan)
		rule   string
		nodes  int
	}{
		{"the route table destroyed", "fix-association-resource", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_route_table.kubernetes")
			c.Actions, c.After = []string{"delete"}, nil
		}, RuleTableDestroyed, 2},
		{"the route table replaced", "inline-routes", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_route_table.kubernetes")
			c.Actions = []string{"delete", "create"}
		}, RuleTableReplaced, 2},
		{"the association destroyed", "fix-association-resource", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_subnet_route_table_association.kubernetes")
			c.Actions, c.After = []string{"delete"}, nil
		}, RuleAssociationRemoved, 2},
		{"the node subnet's prefix moved away from its nodes", "fix-association-resource", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_subnet.kubernetes")
			c.Actions = []string{"update"}
			c.After["address_prefixes"] = []any{"10.240.9.0/24"}
		}, RuleSubnetPrefix, 2},
		{"a route table id known only after the apply is not a removal", "detach-inline-subnets", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_virtual_network.kubernetes")
			sub := c.AfterUnknown["subnet"].([]any)[0].(map[string]any)
			sub["route_table_id"] = true
		}, "", 0},
		{"an address space over the pod CIDRs", "detach-inline-subnets", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_virtual_network.kubernetes")
			c.After["address_space"] = []any{"10.240.0.0/16", "10.200.0.0/16"}
			sub := c.AfterUnknown["subnet"].([]any)[0].(map[string]any)
			sub["route_table_id"] = true
		}, RuleAddressSpace, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mutate(t, tc.plan, func(p *Plan) { tc.mutate(t, p) })
			rep, err := Check(context.Background(), p, kthwInput())
			if err != nil {
				t.Fatal(err)
			}
			if tc.rule == "" {
				if len(rep.Findings) != 0 {
					t.Errorf("findings: %+v", rep.Findings)
				}
				return
			}
			if len(rep.Findings) != 1 || rep.Findings[0].Rule != tc.rule || len(rep.Findings[0].Evidence.Nodes) != tc.nodes || rep.Findings[0].Fix == "" {
				t.Errorf("findings %+v; want one %s losing %d nodes, with a fix", rep.Findings, tc.rule, tc.nodes)
			}
		})
	}
}

const (
	appgwTable  = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/appgw-routes"
	appgwSubnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/appgw-subnet"
)

// withAppGateway adds an Application Gateway subnet on its mirror table to
// a recorded plan's network, before and after: after is its inline block
// after the apply (nil: left as before).
func withAppGateway(t *testing.T, p *Plan, after map[string]any) {
	t.Helper()
	c := change(t, p, "azurerm_virtual_network.kubernetes")
	if after != nil {
		c.Actions = []string{"update"}
	}
	before := map[string]any{"name": "appgw-subnet", "id": appgwSubnet, "address_prefixes": []any{"10.240.1.0/24"}, "route_table_id": appgwTable}
	c.Before["subnet"] = append(c.Before["subnet"].([]any), before)
	if after == nil {
		after = before
	}
	c.After["subnet"] = append(c.After["subnet"].([]any), after)
}

// A mirror's table is judged like the main one: a plan that takes the
// Application Gateway's subnet off its mirror table is a finding that
// names the mirror, and one that leaves it alone is not.
func TestMirrors(t *testing.T) {
	mirrorInput := func() Input {
		in := kthwInput()
		w := in.Want
		w.Configured, w.Claim, w.CreateAllowed = appgwTable, true, false
		in.Mirrors = []Mirror{{Want: w, Subnets: []string{appgwSubnet}}}
		return in
	}
	for _, tc := range []struct {
		name  string
		plan  string
		after map[string]any
		want  []string // rule table subnet, of each finding
	}{
		{"the fix keeps the gateway's subnet on its table", "fix-ignore-changes", nil, nil},
		{"inline blocks without route_table_id detach both subnets", "detach-inline-subnets",
			map[string]any{"name": "appgw-subnet", "address_prefixes": []any{"10.240.1.0/24"}, "route_table_id": ""},
			[]string{RuleInlineSubnet + " kubernetes-routes kubernetes-subnet", RuleInlineSubnet + " appgw-routes appgw-subnet"}},
		{"the gateway's subnet moved to the node table", "fix-ignore-changes",
			map[string]any{"name": "appgw-subnet", "address_prefixes": []any{"10.240.1.0/24"}, "route_table_id": kthwTable},
			[]string{RuleInlineSubnet + " appgw-routes appgw-subnet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mutate(t, tc.plan, func(p *Plan) { withAppGateway(t, p, tc.after) })
			rep, err := Check(context.Background(), p, mirrorInput())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, f.Rule+" "+armid.Name(f.Evidence.RouteTable)+" "+armid.Name(f.Evidence.Subnet))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s\n(%+v)", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), rep.Findings)
			}
		})
	}
}

// A value Azure would refuse is bad input: the error names the resource
// address and the value, and no report is made from it.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, p *Plan)
		says   []string
	}{
		{"a route whose id is not a route's", func(t *testing.T, p *Plan) {
			p.ResourceChanges = append(p.ResourceChanges, ResourceChange{Address: "azurerm_route.extra", Mode: "managed", Type: "azurerm_route",
				Change: Change{Actions: []string{"update"}, Before: map[string]any{"id": "routes/x", "name": "x"}, After: map[string]any{"id": "routes/x", "name": "x"}}})
		}, []string{"azurerm_route.extra", `"routes/x"`}},
		{"an address space that is not CIDRs", func(t *testing.T, p *Plan) {
			c := change(t, p, "azurerm_virtual_network.kubernetes")
			c.Actions = []string{"update"}
			c.After["address_space"] = []any{"10.240.0.0/16", "10.300.0.0/16"}
		}, []string{"azurerm_virtual_network.kubernetes", "10.300.0.0/16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mutate(t, "fix-ignore-changes", func(p *Plan) { tc.mutate(t, p) })
			rep, err := Check(context.Background(), p, kthwInput())
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("Check = %+v, %v; want ErrBadValue", rep, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
}
