package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// kthwTable is the table of Kubernetes the Hard Way: one hand-made route per
// worker, named kubernetes-route-<cidr>, no claim.
func kthwTable() *route.Table {
	return table("",
		rt("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", "10.0.0.4"),
		rt("kubernetes-route-10-244-1-0-24", "10.244.1.0/24", "10.0.0.5"),
		rt("default", "0.0.0.0/0", "10.0.100.4"))
}

func kthwNodes() []source.Node {
	return []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")}
}

func TestAdoption(t *testing.T) {
	runCases(t, []planCase{
		{
			name:      "KTHW without Adopt: traffic flows, the nodes are routed, nothing written",
			in:        Input{Nodes: kthwNodes(), Current: kthwTable()},
			conflicts: []string{"worker-0 10.244.0.0/24 RouteNotManaged kubernetes-route-10-244-0-0-24 forwarding", "worker-1 10.244.1.0/24 RouteNotManaged kubernetes-route-10-244-1-0-24 forwarding"},
			nodes:     map[string]string{"worker-0": "Routed/RouteNotManaged", "worker-1": "Routed/RouteNotManaged"},
		},
		{
			name: "KTHW with Adopt matching: both renamed in one write",
			in:   Input{Adopt: AdoptMatching, Nodes: kthwNodes(), Current: kthwTable()},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"create worker-1____102441024 10.244.1.0/24 10.0.0.5",
				"delete kubernetes-route-10-244-0-0-24",
				"delete kubernetes-route-10-244-1-0-24",
			},
			nodes: map[string]string{"worker-0": "Pending", "worker-1": "Pending"},
		},
		{
			name: "Adopt matching, next hop differs: a prefix conflict, nothing adopted",
			in: Input{Adopt: AdoptMatching, Nodes: []source.Node{node("worker-0", "10.0.0.9", "10.244.0.0/24")},
				Current: table(cluster, rt("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", "10.0.0.4"))},
			conflicts: []string{"worker-0 10.244.0.0/24 PrefixConflict kubernetes-route-10-244-0-0-24"},
			nodes:     map[string]string{"worker-0": "NotRouted/PrefixConflict"},
		},
		{
			name: "Adopt matching, the route's provisioning failed: not adopted, a prefix conflict",
			in: Input{Adopt: AdoptMatching, Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, func() route.Route {
					r := rt("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", "10.0.0.4")
					r.ProvisioningState = "Failed"
					return r
				}())},
			conflicts: []string{"worker-0 10.244.0.0/24 PrefixConflict kubernetes-route-10-244-0-0-24"},
		},
		{
			name: "cloud-provider-azure single-stack name (<node>) adopted",
			in: Input{Adopt: AdoptMatching, Nodes: []source.Node{node("aks-nodepool1-1234-vmss000000", "10.240.0.4", "10.244.0.0/24")},
				Current: table(cluster, rt("aks-nodepool1-1234-vmss000000", "10.244.0.0/24", "10.240.0.4"))},
			changes: []string{"create aks-nodepool1-1234-vmss000000____102440024 10.244.0.0/24 10.240.0.4", "delete aks-nodepool1-1234-vmss000000"},
		},
		{
			name: "AKS route of another node name in a claimed table is ours and stale: moved in the same write",
			in: Input{Nodes: []source.Node{node("worker-0", "10.240.0.4", "10.244.0.0/24")},
				Current: table(cluster, ours("aks-nodepool1-1234-vmss000000", "10.244.0.0/24", "10.240.0.4"))},
			changes: []string{"create worker-0____102440024 10.244.0.0/24 10.240.0.4", "delete aks-nodepool1-1234-vmss000000____102440024"},
		},
		{
			name: "a route holding the name of another node's route is not adopted (it would free that name only next time)",
			in: Input{Adopt: AdoptMatching,
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster, rt("worker-1____102441024", "10.244.0.0/24", "10.0.0.4"))},
			changes:   []string{},
			conflicts: []string{"worker-0 10.244.0.0/24 RouteNotManaged worker-1____102441024 forwarding", "worker-1 10.244.1.0/24 NameConflict worker-1____102441024"},
		},
		{
			name: "adoption needs no room: a full table still takes over",
			in:   Input{Adopt: AdoptMatching, Limit: 3, Nodes: kthwNodes(), Current: kthwTable()},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"create worker-1____102441024 10.244.1.0/24 10.0.0.5",
				"delete kubernetes-route-10-244-0-0-24",
				"delete kubernetes-route-10-244-1-0-24",
			},
		},
	})
	t.Run("the create names the adopted route, the delete says why, the desired table never lacks the prefix", func(t *testing.T) {
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Adopt: AdoptMatching, Nodes: kthwNodes(), Current: kthwTable()})
		if p.Changes[0].Adopts != "kubernetes-route-10-244-0-0-24" || !strings.Contains(p.Changes[0].Reason, "adopts route kubernetes-route-10-244-0-0-24") {
			t.Errorf("create = %+v", p.Changes[0])
		}
		if !strings.Contains(p.Changes[2].Reason, "adopted, renamed to worker-0____102440024") {
			t.Errorf("delete reason = %q", p.Changes[2].Reason)
		}
		if p.Claim || p.Desired.Claim() != "" {
			t.Errorf("adoption claimed the table: %v %q", p.Claim, p.Desired.Claim())
		}
		for _, want := range []string{"10.244.0.0/24", "10.244.1.0/24", "0.0.0.0/0"} {
			n := 0
			for _, r := range p.Desired.Routes {
				if r.AddressPrefix == want {
					n++
				}
			}
			if n != 1 {
				t.Errorf("desired table holds %d routes for %s, want 1", n, want)
			}
		}
	})
	t.Run("invalid adopt policy is refused", func(t *testing.T) {
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Adopt: "all"})
		if p.RefusedReason != reason.InvalidConfiguration || !strings.Contains(p.Refused, `"all"`) {
			t.Errorf("refused = %s %q", p.RefusedReason, p.Refused)
		}
	})
}

// manyOwned is a claimed table with n routes of nodes node-0..node-n-1.
func manyOwned(n int) (*route.Table, []source.Node) {
	t := table(cluster)
	var nodes []source.Node
	for i := range n {
		cidr := fmt.Sprintf("10.244.%d.0/24", i)
		ip := fmt.Sprintf("10.0.%d.%d", i/250, 4+i%250)
		name := fmt.Sprintf("node-%03d", i)
		t.Routes = append(t.Routes, ours(name, cidr, ip))
		nodes = append(nodes, node(name, ip, cidr))
	}
	return t, nodes
}

func TestDeleteGuard(t *testing.T) {
	cur, nodes := manyOwned(30)
	newNode := node("new", "10.0.9.9", "10.244.200.0/24")
	for _, tc := range []struct {
		name      string
		in        Input
		deletes   int
		held      int
		heldWhy   reason.Reason
		creates   int
		maxApplie int
	}{
		{"default cap of 30 owned routes is 10: 10 deletes go", Input{Nodes: nodes[10:]}, 10, 0, "", 0, 10},
		{"default cap: 11 deletes are all held", Input{Nodes: nodes[11:]}, 0, 11, reason.TooManyDeletes, 0, 10},
		{"held deletes do not stop creates", Input{Nodes: append([]source.Node{newNode}, nodes[11:]...)}, 0, 11, reason.TooManyDeletes, 1, 10},
		{"MaxDeletes raised lets them go", Input{Nodes: nodes[11:], MaxDeletes: 11}, 11, 0, "", 0, 11},
		{"MaxDeletes negative: no cap", Input{Nodes: nodes[29:], MaxDeletes: -1}, 29, 0, "", 0, -1},
		{"MaxDeletes 1", Input{Nodes: nodes[2:], MaxDeletes: 1}, 0, 2, reason.TooManyDeletes, 0, 1},
		{"empty source deletes nothing", Input{}, 0, 30, reason.EmptySource, 0, 10},
		{"empty source with AllowEmptySource is still capped", Input{AllowEmptySource: true}, 0, 30, reason.TooManyDeletes, 0, 10},
		{"empty source with AllowEmptySource and no cap deletes all", Input{AllowEmptySource: true, MaxDeletes: -1}, 30, 0, "", 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Cluster, in.ClusterCIDRs, in.Current = cluster, clusterCIDRs, cur
			p := Compute(in)
			c, _, d := p.Counts()
			if d != tc.deletes || len(p.HeldDeletes) != tc.held || p.HeldReason != tc.heldWhy || c != tc.creates || p.MaxDeletes != tc.maxApplie {
				t.Errorf("creates %d deletes %d held %d (%s) cap %d; want %d, %d, %d (%s), %d", c, d, len(p.HeldDeletes), p.HeldReason, p.MaxDeletes, tc.creates, tc.deletes, tc.held, tc.heldWhy, tc.maxApplie)
			}
			if tc.held > 0 {
				for _, w := range []string{fmt.Sprint(tc.held)} {
					if !strings.Contains(p.HeldMessage, w) {
						t.Errorf("held message %q lacks %q", p.HeldMessage, w)
					}
				}
				want := "--max-deletes"
				if tc.heldWhy == reason.EmptySource {
					want = "--allow-empty-source"
				}
				if !strings.Contains(p.HeldMessage, want) {
					t.Errorf("held message %q does not name the override %s", p.HeldMessage, want)
				}
				if p.Desired != nil && len(p.Desired.Routes) != len(cur.Routes)+c {
					t.Errorf("desired table has %d routes, want %d", len(p.Desired.Routes), len(cur.Routes)+c)
				}
			}
			checkInvariants(t, in, p, nil)
		})
	}
	t.Run("a moved pod CIDR is no deletion: its stale route goes even with everything held", func(t *testing.T) {
		in := Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, MaxDeletes: 1,
			Nodes: append([]source.Node{node("moved", "10.0.9.9", "10.244.29.0/24")}, nodes[2:29]...)}
		p := Compute(in)
		got := changeStrings(p.Changes)
		want := []string{"create moved____1024429024 10.244.29.0/24 10.0.9.9", "delete node-029____1024429024"}
		if strings.Join(got, "|") != strings.Join(want, "|") || len(p.HeldDeletes) != 2 {
			t.Errorf("changes %q held %d; want %q and 2 held", got, len(p.HeldDeletes), want)
		}
		checkInvariants(t, in, p, nil)
	})
	t.Run("DefaultMaxDeletes", func(t *testing.T) {
		for owned, want := range map[int]int{0: 10, 50: 10, 100: 10, 101: 11, 400: 40, 1000: 100} {
			if got := DefaultMaxDeletes(owned); got != want {
				t.Errorf("DefaultMaxDeletes(%d) = %d, want %d", owned, got, want)
			}
		}
	})
}

func TestUnclaimedReported(t *testing.T) {
	cur := table("", ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("other-3", "10.244.3.0/24", "10.0.0.7"))
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")}})
	if p.NeedsWrite() || len(p.Unclaimed) != 1 {
		t.Fatalf("plan %s: unclaimed %+v", p, p.Unclaimed)
	}
	u := p.Unclaimed[0]
	for _, w := range []string{"other-3", "not claimed", "az network route-table route delete --ids " + cur.ID + "/routes/other-3____102443024", "routeTable.claim: true"} {
		if !strings.Contains(u.Reason, w) {
			t.Errorf("unclaimed reason %q lacks %q", u.Reason, w)
		}
	}
	// Claimed: the same route is stale and goes.
	cur.Tags[route.ClaimTag] = cluster
	p = Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")}})
	if got := changeStrings(p.Changes); len(got) != 1 || got[0] != "delete other-3____102443024" || len(p.Unclaimed) != 0 {
		t.Errorf("claimed table: changes %q unclaimed %d", got, len(p.Unclaimed))
	}
}

func TestNodeProblem(t *testing.T) {
	exhausted := &source.Problem{Reason: "PodCIDRExhausted", Message: "no free /24 left in 10.244.0.0/22 for node worker-4"}
	n4 := node("worker-4", "10.0.0.8")
	n4.Problem = exhausted
	half := node("dual", "10.0.0.9", "fd00::9", "10.244.9.0/24")
	half.Problem = &source.Problem{Reason: "PodCIDRExhausted", Message: "no free IPv6 /64 for node dual"}
	runCases(t, []planCase{{
		name:      "a node the source could not complete is reported with its problem; the others are served",
		in:        Input{Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), n4, half}, Current: table(cluster)},
		changes:   []string{"create dual____102449024 10.244.9.0/24 10.0.0.9", "create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
		conflicts: []string{"worker-4 - PodCIDRExhausted"},
		nodes:     map[string]string{"worker-0": "Pending", "worker-4": "NotRouted/PodCIDRExhausted", "dual": "NotRouted/PodCIDRExhausted"},
	}})
}
