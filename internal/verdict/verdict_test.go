package verdict_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/scenario"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

func kthw(nodes []source.Node) verdict.Desired {
	return verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")},
		Configured: scenario.TableID("rt"), CreateAllowed: true, Nodes: nodes}
}

func node(name, ip string, cidrs ...string) source.Node {
	n := source.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}}
	for _, c := range cidrs {
		n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(c))
	}
	return n
}

func observed(t *testing.T, cloudText string) *observe.Observation {
	t.Helper()
	c, err := scenario.ParseCloud(strings.Split(cloudText, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return observe.Observe(context.Background(), c, observe.Scope{Table: scenario.TableID("rt"), Subnets: []string{scenario.SubnetID(scenario.DefaultVNet, "nodes")}, Networks: true})
}

// 450 nodes on a /16 of /25s: one log line per reason, not one per node.
func TestGroups(t *testing.T) {
	var nodes []source.Node
	for i := range 450 {
		nodes = append(nodes, node(fmt.Sprintf("node-%03d", i), "10.0.0.4", netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i / 2), byte(i%2) * 128}), 25).String()))
	}
	nodes = append(nodes, node("kthw", "10.0.0.4"), node("far", "10.0.0.4", "10.99.0.0/24"))
	o := observed(t, "vnet v 10.0.0.0/16\nsubnet nodes 10.0.0.0/24 table=rt\ntable rt claim=kthw")
	want := kthw(nodes)
	// A subscription of before May 2026, whose usages API says 400.
	want.Limit, want.LimitFrom = 400, "Azure's limit in eastus of 400 routes per route table, read from the usages API"
	v := verdict.Judge(o, want, nil)
	var lines []string
	for _, g := range v.Groups(3) {
		lines = append(lines, g.String())
	}
	wantLines := []string{
		"NoPodCIDR: 1 node not routed (kthw); first: node kthw has no pod CIDR yet (spec.podCIDRs is empty)",
		"NoRouteCreated: 400 nodes not routed (node-000, node-001, node-002 and 397 more); first: no correct route in route table for 10.244.0.0/25",
		"OutsideClusterCIDR: 1 node not routed (far); first: pod CIDR 10.99.0.0/24 of node far is outside the cluster CIDRs 10.244.0.0/16, fd00:10:244::/56",
		"RouteTableFull: 50 nodes not routed (node-400, node-401, node-402 and 47 more); first: route table rt is full: it may hold 400 routes (Azure's limit in eastus of 400 routes per route table, read from the usages API)",
	}
	if len(lines) != len(wantLines) {
		t.Fatalf("groups:\n%s", strings.Join(lines, "\n"))
	}
	for i := range wantLines {
		if !strings.HasPrefix(lines[i], wantLines[i]) {
			t.Errorf("group %d:\n got %s\nwant %s…", i, lines[i], wantLines[i])
		}
	}
}

// Judge is a function of its inputs: judged twice, the same verdict; and
// it leaves the observation's tables as they were.
func TestJudgeIsPure(t *testing.T) {
	o := observed(t, `vnet v 10.240.0.0/16
subnet nodes 10.240.0.0/24
table rt claim=kthw
  route worker-0____102440024 10.244.0.0/24 10.240.0.20
  route gone____102449024 10.244.9.0/24 10.240.0.29`)
	want := kthw([]source.Node{node("worker-0", "10.240.0.20", "10.244.0.0/24"), node("worker-1", "10.240.0.21", "10.244.1.0/24")})
	before := snapshot(o)
	a, b := verdict.Judge(o, want, nil), verdict.Judge(o, want, nil)
	if ra, rb := scenario.Render(a, true), scenario.Render(b, true); ra != rb {
		t.Errorf("two verdicts of the same inputs differ:\n%s\n---\n%s", ra, rb)
	}
	if after := snapshot(o); !reflect.DeepEqual(before, after) {
		t.Errorf("Judge modified the observation:\nbefore %v\nafter  %v", before, after)
	}
	if tw, _, ok := a.TableWrite(); !ok || len(tw.Routes) != 2 {
		t.Errorf("the verdict should write worker-1's route and delete gone's: %+v", tw)
	}
}

func snapshot(o *observe.Observation) []route.Table {
	var out []route.Table
	for _, r := range o.Tables() {
		if r.Table != nil {
			c := *r.Table.Clone()
			out = append(out, c)
		}
	}
	return out
}

// A table write Azure refused for too many routes leaves the nodes it
// carried RouteTableFull with Azure's number, never RouteWriteFailed.
func TestRouteTableFullRefusal(t *testing.T) {
	o := observed(t, "vnet v 10.0.0.0/16\nsubnet nodes 10.0.0.0/24 table=rt\ntable rt claim=kthw")
	want := kthw([]source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.1.0/24")})
	out := &verdict.Outcome{Table: &verdict.TableWrite{Write: verdict.Write{Err: errors.New("400 RouteTableRouteLimitExceeded"), Full: true, FullLimit: 400}}}
	v := verdict.Judge(o, want, out)
	for _, name := range []string{"a", "b"} {
		n := v.Nodes[name]
		if n.Routed || n.Reason != reason.RouteTableFull || !strings.Contains(n.Message, "its limit: 400 routes per route table") {
			t.Errorf("node %s: routed %v %s %q, want RouteTableFull with Azure's 400", name, n.Routed, n.Reason, n.Message)
		}
	}
}
