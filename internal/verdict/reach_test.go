package verdict_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/scenario"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// reachCloud is the KTHW network: one subnet, optionally on table rt with
// routes, and the two workers' NICs.
func reachCloud(table string, fwd1 bool, routes ...route.Route) *memcloud.Cloud {
	c := memcloud.New()
	c.VNets[armid.Key(scenario.VNetID(scenario.DefaultVNet))] = &observe.VirtualNetwork{ID: scenario.VNetID(scenario.DefaultVNet), Name: scenario.DefaultVNet, AddressPrefixes: []string{"10.240.0.0/16"}}
	sn := &observe.Subnet{ID: scenario.SubnetID(scenario.DefaultVNet, "nodes"), Name: "nodes", AddressPrefixes: []string{"10.240.0.0/24"}}
	if table != "" {
		sn.RouteTableID = scenario.TableID(table)
	}
	c.Subnets[armid.Key(sn.ID)] = sn
	c.Tables[armid.Key(scenario.TableID("rt"))] = &route.Table{ID: scenario.TableID("rt"), Name: "rt", Tags: map[string]string{route.ClaimTag: "kthw"}, Routes: routes}
	c.NICs = []observe.NetworkInterface{
		{ID: "nic0", Name: "worker-0-nic", IPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, IPForwarding: true},
		{ID: scenario.Prefix + "networkInterfaces/worker-1-nic", Name: "worker-1-nic", IPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, IPForwarding: fwd1},
	}
	return c
}

func podRoute(node, cidr, ip string, state ...string) route.Route {
	p := netip.MustParsePrefix(cidr)
	r := route.Route{Name: route.Name(node, p), AddressPrefix: cidr, Prefix: p, NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(ip)}
	if len(state) > 0 {
		r.ProvisioningState = state[0]
	}
	return r
}

// TestReach: pod traffic is traced from every guarded subnet by Azure's
// route selection, as part of the verdict, when the network was read.
func TestReach(t *testing.T) {
	both := []route.Route{podRoute("worker-0", "10.200.0.0/24", "10.240.0.20"), podRoute("worker-1", "10.200.1.0/24", "10.240.0.21")}
	tests := []struct {
		name    string
		cloud   *memcloud.Cloud
		routing bool
		want    []string // reason: message fragment, one per Reach
		unknown string
	}{
		{name: "healthy", cloud: reachCloud("rt", true, both...), routing: true},
		// A node not routed is its own verdict's finding, not one of reach.
		{name: "detached: the association's finding", cloud: reachCloud("", true, both...), routing: true},
		{name: "missing route: the node's finding", cloud: reachCloud("rt", true, both[0]), routing: true},
		// A route that shadows the pod address the trace uses: routed by
		// its own route, not delivered by Azure.
		{name: "a more specific route to the Internet", cloud: reachCloud("rt", true, append(both, route.Route{Name: "leak", AddressPrefix: "10.200.1.0/25", NextHopType: route.Internet})...), routing: true,
			want: []string{"PodCIDRShadowed: route leak (10.200.1.0/25 -> Internet) is more specific than node worker-1's pod CIDR 10.200.1.0/24",
				"PodTrafficNotDelivered: pod traffic from nodes to 1 node pod CIDR(s) is not delivered (internet): worker-1 (10.200.1.0/24). Example 10.240.0.4 → 10.200.1.1"}},
		{name: "IP forwarding off", cloud: reachCloud("rt", false, both...), routing: true,
			want: []string{"IPForwardingDisabled: node worker-1's NIC worker-1-nic has IP forwarding disabled"}},
		{name: "a route more specific than a pod CIDR", cloud: reachCloud("rt", true, append(both, route.Route{Name: "inspect", AddressPrefix: "10.200.1.128/25", NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr("10.240.0.4")})...),
			want: []string{"PodCIDRShadowed: route inspect (10.200.1.128/25 -> 10.240.0.4) is more specific than node worker-1's pod CIDR 10.200.1.0/24"}},
		{name: "not traced without the network", cloud: reachCloud("", false, both...)},
	}
	nodes := []source.Node{node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observe.Observe(context.Background(), tt.cloud, observe.Scope{Table: scenario.TableID("rt"), Subnets: []string{scenario.SubnetID(scenario.DefaultVNet, "nodes")},
				Networks: true, Routing: tt.routing, NICs: tt.routing})
			v := verdict.Judge(o, verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
				Configured: scenario.TableID("rt"), Nodes: nodes}, nil)
			if len(v.Reach) != len(tt.want) {
				t.Fatalf("%d reach verdicts, want %d: %+v", len(v.Reach), len(tt.want), v.Reach)
			}
			for i, r := range v.Reach {
				if s := string(r.Reason) + ": " + r.Message; !strings.Contains(s, tt.want[i]) {
					t.Errorf("reach %d = %q, want it to contain %q", i, s, tt.want[i])
				}
			}
			_, traced := v.Trace(verdictEndpoint("10.240.0.20"), verdictEndpoint("10.200.1.5"))
			if traced != tt.routing {
				t.Errorf("trace possible = %v, want %v (the network was read: %v)", traced, tt.routing, tt.routing)
			}
		})
	}
	t.Run("NICs unreadable: said, not a finding", func(t *testing.T) {
		c := reachCloud("rt", true, both...)
		c.NICsErr = errors.New("403 AuthorizationFailed")
		o := observe.Observe(context.Background(), c, observe.Scope{Table: scenario.TableID("rt"), Subnets: []string{scenario.SubnetID(scenario.DefaultVNet, "nodes")}, Networks: true, Routing: true, NICs: true})
		v := verdict.Judge(o, verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: scenario.TableID("rt"), Nodes: nodes}, nil)
		if !strings.Contains(v.ReachUnknown, "network interfaces could not be read") || len(v.Findings()) != 0 {
			t.Errorf("reach unknown %q, findings %+v", v.ReachUnknown, v.Findings())
		}
	})
}

func verdictEndpoint(ip string) routing.Endpoint {
	return routing.Endpoint{Addr: netip.MustParseAddr(ip)}
}

// A pass that creates the table and associates it judges reachability on
// the network as its writes left it: the subnet it associated is on the
// table now, so the pod traffic it traces from there is delivered (it was
// judged on the subnet as read, with no table, and found dropped).
func TestReachAfterCreateAndAssociate(t *testing.T) {
	c := reachCloud("", true)
	delete(c.Tables, armid.Key(scenario.TableID("rt")))
	nodes := []source.Node{node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")}
	want := verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: scenario.TableID("rt"),
		CreateAllowed: true, Location: "eastus", Nodes: nodes}
	o := observe.Observe(context.Background(), c, observe.Scope{Table: scenario.TableID("rt"), Subnets: []string{scenario.SubnetID(scenario.DefaultVNet, "nodes")},
		Networks: true, Routing: true, NICs: true})
	before := verdict.Judge(o, want, nil)
	tw, _, ok := before.TableWrite()
	if !ok || len(before.Associations()) != 1 {
		t.Fatalf("the first pass should create the table and associate the subnet:\n%s", scenario.Render(before, true))
	}
	rb := tw.Clone()
	for i := range rb.Routes {
		rb.Routes[i].ProvisioningState = "Succeeded"
	}
	out := &verdict.Outcome{Table: &verdict.TableWrite{ReadBack: rb},
		Subnets: map[string]verdict.Write{armid.Key(scenario.SubnetID(scenario.DefaultVNet, "nodes")): {}}}
	v := verdict.Judge(o, want, out)
	if len(v.Reach) != 0 || len(v.Findings()) != 0 {
		t.Errorf("after creating and associating the table: reach %+v, findings %+v", v.Reach, v.Findings())
	}
	if r, _ := v.Trace(verdictEndpoint("10.240.0.20"), routing.Endpoint{Addr: netip.MustParseAddr("10.200.1.1"), Node: "worker-1"}); r == nil || !r.OK() {
		t.Errorf("trace after the pass: %+v, want delivered", r)
	}
}
