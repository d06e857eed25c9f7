package plan

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// TestStandDown is the stand-down from host routes after a move to an
// overlay: the configured one (Input.StandDown) and the one the nodes imply
// (no node with a pod CIDR), confirmed or not.
func TestStandDown(t *testing.T) {
	const foreignDefault = "default-to-firewall"
	withForeign := func(t *route.Table) *route.Table {
		t.Routes = append(t.Routes, rt(foreignDefault, "0.0.0.0/0", "10.0.0.254"), rt("kubernetes-route-10-244-9-0-24", "10.244.9.0/24", "10.0.0.9"))
		return t
	}
	big, bigNodes := manyOwned(30)
	withForeign(big)
	noCIDRs := func(nodes []source.Node) []source.Node {
		out := make([]source.Node, len(nodes))
		for i, n := range nodes {
			n.PodCIDRs = nil
			out[i] = n
		}
		return out
	}
	small := withForeign(table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("worker-1", "10.244.1.0/24", "10.0.0.5")))
	smallNodes := []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")}
	for _, tc := range []struct {
		name      string
		in        Input
		standDown bool
		deletes   int
		held      int
		heldWhy   reason.Reason
		nodeState NodeState
		nodeWhy   reason.Reason
		msgWants  []string
	}{
		{name: "configured, not confirmed: every owned route held, nodes not needed",
			in: Input{Current: small, Nodes: smallNodes, StandDown: true}, standDown: true,
			held: 2, heldWhy: reason.StandDownUnconfirmed, nodeState: NotNeeded,
			msgWants: []string{"2 routes", "worker-0____102440024, worker-1____102441024", "--confirm-stand-down", "controller.confirmStandDown: true"}},
		{name: "configured and confirmed: every owned route goes in one write; foreign routes stay",
			in: Input{Current: small, Nodes: smallNodes, StandDown: true, ConfirmStandDown: true}, standDown: true,
			deletes: 2, nodeState: NotNeeded},
		{name: "confirmed: the deletion cap does not apply",
			in: Input{Current: big, Nodes: bigNodes, StandDown: true, ConfirmStandDown: true}, standDown: true,
			deletes: 30, nodeState: NotNeeded},
		{name: "confirmed: the empty-source guard does not apply",
			in: Input{Current: small, StandDown: true, ConfirmStandDown: true}, standDown: true, deletes: 2},
		{name: "not confirmed, many routes: held for the stand-down, listing five",
			in: Input{Current: big, Nodes: bigNodes, StandDown: true}, standDown: true,
			held: 30, heldWhy: reason.StandDownUnconfirmed, nodeState: NotNeeded, msgWants: []string{"30 routes", "and 25 more"}},
		{name: "no node has a pod CIDR, not confirmed: nothing deleted whatever the cap",
			in:   Input{Current: small, Nodes: noCIDRs(smallNodes), MaxDeletes: -1},
			held: 2, heldWhy: reason.StandDownUnconfirmed, nodeState: NotRouted, nodeWhy: reason.NoPodCIDR,
			msgWants: []string{"no node has a pod CIDR", "IPAM has not assigned", "routes: standDown", "--confirm-stand-down"}},
		{name: "no node has a pod CIDR, confirmed: the plan stands down",
			in: Input{Current: small, Nodes: noCIDRs(smallNodes), ConfirmStandDown: true}, standDown: true,
			deletes: 2, nodeState: NotNeeded},
		{name: "the confirmation alone stands nothing down while nodes have pod CIDRs",
			in:      Input{Current: small, Nodes: smallNodes[:1], ConfirmStandDown: true},
			deletes: 1, nodeState: Routed},
		{name: "one node still has a pod CIDR: an ordinary plan",
			in:      Input{Current: small, Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5")}},
			deletes: 1},
		{name: "nodes IPAM could not complete are no stand-down",
			in: Input{Current: small, ConfirmStandDown: true, Nodes: []source.Node{{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.0.0.4")},
				Problem: &source.Problem{Reason: "PodCIDRExhausted", Message: "no free pod CIDR"}}}},
			deletes: 2, nodeState: NotRouted, nodeWhy: "PodCIDRExhausted"},
		{name: "nothing of ours in the table: nothing to hold",
			in: Input{Current: withForeign(table(cluster)), Nodes: smallNodes, StandDown: true}, standDown: true, nodeState: NotNeeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Cluster, in.ClusterCIDRs = cluster, clusterCIDRs
			p := Compute(in)
			c, u, d := p.Counts()
			if p.StandDown != tc.standDown || in.StandsDown() != tc.standDown {
				t.Errorf("StandDown %v (input says %v), want %v", p.StandDown, in.StandsDown(), tc.standDown)
			}
			if c != 0 && tc.standDown || u != 0 || d != tc.deletes || len(p.HeldDeletes) != tc.held || p.HeldReason != tc.heldWhy {
				t.Errorf("creates %d updates %d deletes %d held %d (%s); want 0, 0, %d, %d (%s)", c, u, d, len(p.HeldDeletes), p.HeldReason, tc.deletes, tc.held, tc.heldWhy)
			}
			for _, w := range tc.msgWants {
				if !strings.Contains(p.HeldMessage, w) {
					t.Errorf("held message lacks %q: %s", w, p.HeldMessage)
				}
			}
			if tc.nodeState != "" {
				for _, n := range in.Nodes {
					if st := p.Nodes[n.Name]; st.State != tc.nodeState || st.Reason != tc.nodeWhy {
						t.Errorf("node %s: %s/%s, want %s/%s", n.Name, st.State, st.Reason, tc.nodeState, tc.nodeWhy)
					}
				}
			}
			if p.Claim {
				t.Error("the plan writes the claim")
			}
			if tc.standDown && p.Desired != nil {
				// Only our routes leave: the foreign ones, the claim and the
				// tags stay, bit for bit.
				var names []string
				for _, r := range p.Desired.Routes {
					names = append(names, r.Name)
				}
				if got := strings.Join(names, ","); got != foreignDefault+",kubernetes-route-10-244-9-0-24" {
					t.Errorf("desired routes %s, want the foreign ones alone", got)
				}
				if p.Desired.Claim() != cluster || p.Desired.Tags["env"] != "test" || p.Desired.Etag != in.Current.Etag {
					t.Errorf("desired tags %v etag %s: want the claim and tags kept, If-Match %s", p.Desired.Tags, p.Desired.Etag, in.Current.Etag)
				}
				for _, ch := range p.Changes {
					if ch.Reason != "the cluster stands down from host routes" {
						t.Errorf("delete %s: reason %q", ch.Route.Name, ch.Reason)
					}
				}
			}
			checkInvariants(t, in, p, nil)
		})
	}
}

// An unclaimed table (AKS's, or one never claimed): the stand-down removes
// the routes of the cluster's own nodes only; a route of a node the
// cluster does not have may be another cluster's and stays.
func TestStandDownUnclaimedTable(t *testing.T) {
	cur := table("", ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("other-0", "10.244.7.0/24", "10.0.0.7"))
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, StandDown: true, ConfirmStandDown: true,
		Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")}})
	if got := fmt.Sprint(changeStrings(p.Changes)); got != "[delete worker-0____102440024]" || len(p.Unclaimed) != 1 || p.Claim {
		t.Errorf("changes %s, unclaimed %d, claim %v; want worker-0's delete alone, other-0's reported, no claim", got, len(p.Unclaimed), p.Claim)
	}
	// Not confirmed: the held message warns that on AKS the routes are the
	// platform's.
	p = Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, StandDown: true,
		Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")}})
	if !strings.Contains(p.HeldMessage, "on AKS these are the platform's routes") {
		t.Errorf("held message: %s", p.HeldMessage)
	}
}
