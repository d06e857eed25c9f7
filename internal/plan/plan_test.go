package plan

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

type planCase struct {
	name string
	in   Input
	raw  bool // do not fill in Cluster and ClusterCIDRs

	changes   []string
	conflicts []string
	nodes     map[string]string
	claim     bool
	refused   reason.Reason
}

func runCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if !tc.raw {
				if in.Cluster == "" {
					in.Cluster = cluster
				}
				if in.ClusterCIDRs == nil {
					in.ClusterCIDRs = clusterCIDRs
				}
			}
			before := in.Current.Clone()
			nodesBefore := slices.Clone(in.Nodes)
			p := Compute(in)
			if !reflect.DeepEqual(before, in.Current) {
				t.Errorf("Compute modified the current table:\n%s", cmp.Diff(before, in.Current))
			}
			if !reflect.DeepEqual(nodesBefore, in.Nodes) {
				t.Errorf("Compute modified the nodes")
			}
			if p.RefusedReason != tc.refused {
				t.Errorf("refused = %q (%s), want %q", p.RefusedReason, p.Refused, tc.refused)
			}
			if diff := cmp.Diff(tc.changes, changeStrings(p.Changes), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.conflicts, conflictStrings(p.Conflicts), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
				for _, c := range p.Conflicts {
					t.Logf("  %s", c.Message)
				}
			}
			if tc.nodes != nil {
				if diff := cmp.Diff(tc.nodes, nodeStrings(p.Nodes)); diff != "" {
					t.Errorf("nodes (-want +got):\n%s", diff)
				}
			}
			if p.Claim != tc.claim {
				t.Errorf("claim = %v, want %v", p.Claim, tc.claim)
			}
			checkInvariants(t, in, p, nil)
			checkConverges(t, in, p)
		})
	}
}

func TestBasics(t *testing.T) {
	runCases(t, []planCase{
		{
			name: "empty claimed table: one create per node",
			in: Input{
				Nodes:   []source.Node{node("worker-1", "10.0.0.5", "10.244.1.0/24"), node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster),
			},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"create worker-1____102441024 10.244.1.0/24 10.0.0.5",
			},
			nodes: map[string]string{"worker-0": "Pending", "worker-1": "Pending"},
		},
		{
			name: "steady state writes nothing",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("worker-1", "10.244.1.0/24", "10.0.0.5")),
			},
			nodes: map[string]string{"worker-0": "Routed", "worker-1": "Routed"},
		},
		{
			name: "node IP changed: next hop updated in place",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.9", "10.244.0.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			changes: []string{"update worker-0____102440024 10.244.0.0/24 10.0.0.9"},
			nodes:   map[string]string{"worker-0": "Pending"},
		},
		{
			name: "next hop type drifted (portal edit to None, VnetLocal): repaired",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster,
					rt("worker-0____102440024", "10.244.0.0/24", "None"),
					rt("worker-1____102441024", "10.244.1.0/24", "VnetLocal")),
			},
			changes: []string{
				"update worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"update worker-1____102441024 10.244.1.0/24 10.0.0.5",
			},
			nodes: map[string]string{"worker-0": "Pending", "worker-1": "Pending"},
		},
		{
			name: "VirtualAppliance without an address: repaired",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, rt("worker-0____102440024", "10.244.0.0/24", "VirtualAppliance")),
			},
			changes: []string{"update worker-0____102440024 10.244.0.0/24 10.0.0.4"},
		},
		{
			name: "route whose provisioning failed is written again",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: func() *route.Table {
					r := ours("worker-0", "10.244.0.0/24", "10.0.0.4")
					r.ProvisioningState = "Failed"
					return table(cluster, r)
				}(),
			},
			changes: []string{"update worker-0____102440024 10.244.0.0/24 10.0.0.4"},
			nodes:   map[string]string{"worker-0": "Pending"},
		},
		{
			name: "node gone: its route deleted",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("worker-1", "10.244.1.0/24", "10.0.0.5")),
			},
			changes: []string{"delete worker-1____102441024"},
			nodes:   map[string]string{"worker-0": "Routed"},
		},
		{
			name: "no nodes at all, AllowEmptySource: every owned route deleted, custom kept",
			in: Input{
				AllowEmptySource: true,
				Current:          table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), rt("default", "0.0.0.0/0", "10.0.100.4")),
			},
			changes: []string{"delete worker-0____102440024"},
			nodes:   map[string]string{},
		},
		{
			name: "pod CIDR changed: stale route deleted, new one created (cloud-provider-azure #8175)",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.7.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			changes: []string{
				"create worker-0____102447024 10.244.7.0/24 10.0.0.4",
				"delete worker-0____102440024",
			},
			nodes: map[string]string{"worker-0": "Pending"},
		},
		{
			name: "pod CIDR moved to another node: delete and create in the same write",
			in: Input{
				Nodes:   []source.Node{node("worker-1", "10.0.0.5", "10.244.0.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			changes: []string{
				"create worker-1____102440024 10.244.0.0/24 10.0.0.5",
				"delete worker-0____102440024",
			},
			nodes: map[string]string{"worker-1": "Pending"},
		},
		{
			name: "pod CIDRs swapped between two nodes",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.1.0/24"), node("b", "10.0.0.5", "10.244.0.0/24")},
				Current: table(cluster, ours("a", "10.244.0.0/24", "10.0.0.4"), ours("b", "10.244.1.0/24", "10.0.0.5")),
			},
			changes: []string{
				"create a____102441024 10.244.1.0/24 10.0.0.4",
				"create b____102440024 10.244.0.0/24 10.0.0.5",
				"delete a____102440024",
				"delete b____102441024",
			},
			nodes: map[string]string{"a": "Pending", "b": "Pending"},
		},
		{
			name: "route names compare case-insensitively: no churn",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.6", "10.244.1.0/24")},
				Current: table(cluster,
					rt("WORKER-0____102440024", "10.244.0.0/24", "10.0.0.4"),
					rt("Worker-1____102441024", "10.244.1.0/24", "10.0.0.5")),
			},
			changes: []string{"update Worker-1____102441024 10.244.1.0/24 10.0.0.6"},
			nodes:   map[string]string{"worker-0": "Routed", "worker-1": "Pending"},
		},
		{
			name: "route decoded from JSON (Prefix unset, only AddressPrefix) is matched",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, route.Route{Name: "worker-0____102440024", AddressPrefix: "10.244.0.0/24",
					NextHopType: route.VirtualAppliance, NextHopIP: addr("10.0.0.4")}),
			},
			nodes: map[string]string{"worker-0": "Routed"},
		},
		{
			name: "node listed twice with the same pod CIDR is planned once",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24", "10.244.0.0/24")},
				Current: table(cluster),
			},
			changes: []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
		},
		{
			name: "pod CIDR not in canonical form is masked",
			in: Input{
				Nodes:   []source.Node{{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.0.0.4")}, PodCIDRs: []netip.Prefix{netip.PrefixFrom(addr("10.244.0.9"), 24)}}},
				Current: table(cluster),
			},
			changes: []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
		},
	})
}

func TestDualStack(t *testing.T) {
	runCases(t, []planCase{
		{
			name: "IPv4 and IPv6 routes, IPv6 name mangles ':' away",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "fd00:1::4", "10.244.0.0/24", "fd00:10:244::/64")},
				Current: table(cluster),
			},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"create worker-0____fd001024464 fd00:10:244::/64 fd00:1::4",
			},
			nodes: map[string]string{"worker-0": "Pending"},
		},
		{
			name: "IPv6 next hop changed",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "fd00:1::9", "10.244.0.0/24", "fd00:10:244::/64")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("worker-0", "fd00:10:244::/64", "fd00:1::4")),
			},
			changes: []string{"update worker-0____fd001024464 fd00:10:244::/64 fd00:1::9"},
		},
		{
			name: "upper-case IPv6 hex in an existing name still matches",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "fd00:1::4", "fd00:10:244:ab::/64")},
				Current: table(cluster, rt("worker-0____FD0010244AB64", "fd00:10:244:ab::/64", "fd00:1::4")),
			},
			nodes: map[string]string{"worker-0": "Routed"},
		},
		{
			name: "no IPv6 address: only the IPv6 CIDR is reported, the IPv4 route is written",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24", "fd00:10:244::/64")},
				Current: table(cluster),
			},
			changes:   []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
			conflicts: []string{"worker-0 fd00:10:244::/64 NoNodeIP"},
			nodes:     map[string]string{"worker-0": "NotRouted/NoNodeIP"},
		},
	})
}

func TestOwnershipAndPeerDefects(t *testing.T) {
	custom := []route.Route{
		rt("default-via-firewall", "0.0.0.0/0", "10.0.100.4"),
		rt("azure-cloud", "AzureCloud", "Internet"),
		rt("to-onprem", "192.168.0.0/16", "VirtualNetworkGateway"),
		rt("blackhole", "10.244.200.0/24", "None"),
		rt("garbage", "not a prefix", "VnetLocal"),
	}
	runCases(t, []planCase{
		{
			name: "custom routes are carried through creates and deletes untouched",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, append(slices.Clone(custom), ours("gone", "10.244.9.0/24", "10.0.0.9"))...),
			},
			changes: []string{
				"create worker-0____102440024 10.244.0.0/24 10.0.0.4",
				"delete gone____102449024",
			},
		},
		{
			name: "node-1 gone: node-10 and node-11 keep their routes (no delete by name prefix)",
			in: Input{
				Nodes: []source.Node{node("node-10", "10.0.0.10", "10.244.10.0/24"), node("node-11", "10.0.0.11", "10.244.11.0/24")},
				Current: table(cluster,
					ours("node-1", "10.244.1.0/24", "10.0.0.1"),
					ours("node-10", "10.244.10.0/24", "10.0.0.10"),
					ours("node-11", "10.244.11.0/24", "10.0.0.11")),
			},
			changes: []string{"delete node-1____102441024"},
			nodes:   map[string]string{"node-10": "Routed", "node-11": "Routed"},
		},
		{
			name: "node-10 gone: node-1 keeps its route",
			in: Input{
				Nodes:   []source.Node{node("node-1", "10.0.0.1", "10.244.1.0/24")},
				Current: table(cluster, ours("node-1", "10.244.1.0/24", "10.0.0.1"), ours("node-10", "10.244.10.0/24", "10.0.0.10")),
			},
			changes: []string{"delete node-10____1024410024"},
		},
		{
			name: "scheme-looking name whose CIDR does not match the prefix is custom",
			in: Input{
				Nodes:   []source.Node{},
				Current: table(cluster, rt("worker-9____102449024", "10.244.10.0/24", "10.0.0.9")),
			},
		},
		{
			name: "another cluster's scheme routes (outside our CIDRs) are never deleted",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, ours("dev-0", "10.245.0.0/24", "10.1.0.4"), ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			nodes: map[string]string{"worker-0": "Routed"},
		},
		{
			name: "a non-owned route holding the pod CIDR: prefix conflict, the rest still written",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.200.0/24")},
				Current: table(cluster, append(slices.Clone(custom),
					rt("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", "10.0.0.4"))...),
			},
			conflicts: []string{
				"worker-0 10.244.0.0/24 RouteNotManaged kubernetes-route-10-244-0-0-24 forwarding",
				"worker-1 10.244.200.0/24 PrefixConflict blackhole",
			},
			nodes: map[string]string{"worker-0": "Routed/RouteNotManaged", "worker-1": "NotRouted/PrefixConflict"},
		},
		{
			name: "legacy names without LegacyNames: RouteConflict is reported, never sent (cloud-provider-azure #657)",
			in: Input{
				Nodes: []source.Node{
					node("aks-node-vmss000000", "10.240.0.4", "10.244.6.0/24"),
					node("aks-node-vmss000001", "10.240.0.5", "10.244.5.0/24"),
					node("aks-node-vmss000002", "10.240.0.6", "10.244.7.0/24"),
				},
				Current: table(cluster,
					rt("aks-node-vmss000000", "10.244.5.0/24", "10.240.0.4"),
					rt("aks-node-vmss000002", "10.244.7.0/24", "10.240.0.6")),
			},
			changes: []string{"create aks-node-vmss000000____102446024 10.244.6.0/24 10.240.0.4"},
			conflicts: []string{
				"aks-node-vmss000001 10.244.5.0/24 PrefixConflict aks-node-vmss000000",
				"aks-node-vmss000002 10.244.7.0/24 RouteNotManaged aks-node-vmss000002 forwarding",
			},
		},
		{
			name: "legacy names with LegacyNames: stale legacy route deleted, current one renamed, same write",
			in: Input{
				LegacyNames: true,
				Nodes: []source.Node{
					node("aks-node-vmss000000", "10.240.0.4", "10.244.6.0/24"),
					node("aks-node-vmss000001", "10.240.0.5", "10.244.5.0/24"),
					node("aks-node-vmss000002", "10.240.0.6", "10.244.7.0/24"),
				},
				Current: table(cluster,
					rt("aks-node-vmss000000", "10.244.5.0/24", "10.240.0.4"),
					rt("aks-node-vmss000002", "10.244.7.0/24", "10.240.0.6"),
					rt("default-via-firewall", "0.0.0.0/0", "10.0.100.4"),
					rt("blackhole", "10.244.200.0/24", "None")),
			},
			changes: []string{
				"create aks-node-vmss000000____102446024 10.244.6.0/24 10.240.0.4",
				"create aks-node-vmss000001____102445024 10.244.5.0/24 10.240.0.5",
				"create aks-node-vmss000002____102447024 10.244.7.0/24 10.240.0.6",
				"delete aks-node-vmss000000",
				"delete aks-node-vmss000002",
			},
			nodes: map[string]string{"aks-node-vmss000000": "Pending", "aks-node-vmss000001": "Pending", "aks-node-vmss000002": "Pending"},
		},
		{
			name: "legacy rename needs no room in a full table",
			in: Input{
				LegacyNames: true,
				Limit:       2,
				Nodes:       []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current:     table(cluster, rt("worker-0", "10.244.0.0/24", "10.0.0.4"), rt("default", "0.0.0.0/0", "10.0.100.4")),
			},
			changes:   []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4", "delete worker-0"},
			conflicts: []string{"worker-1 10.244.1.0/24 RouteTableFull"},
		},
		{
			name: "legacy route of a node without its IP is kept as it is",
			in: Input{
				LegacyNames: true,
				Nodes:       []source.Node{node("worker-0", "10.244.0.0/24")},
				Current:     table(cluster, rt("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			conflicts: []string{"worker-0 10.244.0.0/24 NoNodeIP"},
		},
		{
			name: "a non-owned route has the exact name we need: name conflict",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster,
					rt("worker-0____102440024", "AzureCloud", "Internet")),
			},
			conflicts: []string{"worker-0 10.244.0.0/24 NameConflict worker-0____102440024"},
			nodes:     map[string]string{"worker-0": "NotRouted/NameConflict"},
		},
		{
			name: "names of two CIDRs mangle alike: our route with the exact name but the old prefix is updated",
			in: Input{
				ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")},
				Nodes:        []source.Node{node("worker-0", "192.168.0.4", "10.2.44.0/24")},
				Current:      table(cluster, ours("worker-0", "10.24.4.0/24", "192.168.0.4")),
			},
			changes: []string{"update worker-0____10244024 10.2.44.0/24 192.168.0.4"},
		},
		{
			name: "two pod CIDRs of one node mangle to one name: both reported",
			in: Input{
				ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")},
				Nodes:        []source.Node{node("worker-0", "192.168.0.4", "10.24.4.0/24", "10.2.44.0/24")},
				Current:      table(cluster),
			},
			conflicts: []string{
				"worker-0 10.24.4.0/24 NameConflict worker-0____10244024",
				"worker-0 10.2.44.0/24 NameConflict worker-0____10244024",
			},
		},
	})
}

func TestClaim(t *testing.T) {
	cpa := table("", ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("worker-1", "10.244.1.0/24", "10.0.0.5"), rt("default", "0.0.0.0/0", "10.0.100.4"))
	runCases(t, []planCase{
		{
			name: "table made by cloud-provider-azure (no tag): its routes are the nodes', no churn, no claim unless asked",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: cpa,
			},
			nodes: map[string]string{"worker-0": "Routed", "worker-1": "Routed"},
		},
		{
			name: "table made by cloud-provider-azure, Claim: the claim is written alone",
			in: Input{
				Claim:   true,
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: cpa,
			},
			claim: true,
			nodes: map[string]string{"worker-0": "Routed", "worker-1": "Routed"},
		},
		{
			name: "unclaimed table: a scheme route of an unknown node may be another cluster's and is kept",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: cpa,
			},
			nodes: map[string]string{"worker-0": "Routed"},
		},
		{
			name: "unclaimed table, Claim: the claim is written first, the unknown node's route is still kept in that write",
			in: Input{
				Claim:   true,
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: cpa,
			},
			claim: true,
		},
		{
			name: "unclaimed table: a known node's stale route is deleted, its new one created",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.9.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: cpa,
			},
			changes: []string{"create worker-0____102449024 10.244.9.0/24 10.0.0.4", "delete worker-0____102440024"},
		},
		{
			name: "unclaimed table: an unknown node's route in the way is a prefix conflict, not deleted",
			in: Input{
				Nodes:   []source.Node{node("worker-9", "10.0.0.9", "10.244.1.0/24"), node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: cpa,
			},
			conflicts: []string{"worker-9 10.244.1.0/24 PrefixConflict worker-1____102441024"},
		},
		{
			name: "unclaimed table, Adopt matching: an unknown node's route with the same prefix and next hop is renamed (AKS node names)",
			in: Input{
				Adopt:   AdoptMatching,
				Nodes:   []source.Node{node("worker-9", "10.0.0.5", "10.244.1.0/24"), node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: cpa,
			},
			changes: []string{"create worker-9____102441024 10.244.1.0/24 10.0.0.5", "delete worker-1____102441024"},
			nodes:   map[string]string{"worker-0": "Routed", "worker-9": "Pending"},
		},
		{
			name: "table claimed by another cluster: nothing written at all",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")},
				Current: table("staging", ours("worker-0", "10.244.0.0/24", "10.0.0.9")),
			},
			refused: reason.RouteTableClaimed,
			nodes:   map[string]string{"worker-0": "NotRouted/RouteTableClaimed", "worker-1": "NotRouted/RouteTableClaimed"},
		},
		{
			name: "claim values compare case-sensitively: Prod is another cluster",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: table("Prod"),
			},
			refused: reason.RouteTableClaimed,
		},
		{
			name: "claim tag keys compare case-insensitively",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: func() *route.Table {
					t := table("", ours("worker-0", "10.244.0.0/24", "10.0.0.4"))
					t.Tags["RouteKeeper-Cluster"] = cluster
					return t
				}(),
			},
			nodes: map[string]string{"worker-0": "Routed"},
		},
		{
			name: "claim tag present with an empty value counts as unclaimed; its key is reused",
			in: Input{
				Claim: true,
				Current: func() *route.Table {
					t := table("")
					t.Tags["RouteKeeper-cluster"] = ""
					return t
				}(),
			},
			claim: true,
		},
		{
			name: "claim tags for two clusters: refused as an invalid table",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
				Current: func() *route.Table {
					t := table(cluster)
					t.Tags["ROUTEKEEPER-CLUSTER"] = "staging"
					return t
				}(),
			},
			refused: reason.RouteTableInvalid,
		},
		{
			name: "table missing: planned against an empty table, created with the claim",
			in: Input{
				Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")},
			},
			claim:   true,
			changes: []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
		},
	})

	t.Run("claim tag written into the desired table, other tags kept", func(t *testing.T) {
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cpa, Claim: true})
		want := map[string]string{"env": "test", route.ClaimTag: cluster, route.ClusterCIDRsTag: "10.244.0.0/16,fd00:10:244::/56"}
		if !reflect.DeepEqual(p.Desired.Tags, want) {
			t.Errorf("tags = %v, want %v", p.Desired.Tags, want)
		}
		if p.Desired.Etag != cpa.Etag || p.Desired.ID != cpa.ID || !slices.Equal(p.Desired.Subnets, cpa.Subnets) {
			t.Errorf("desired table lost identity: %+v", p.Desired)
		}
	})
	t.Run("an empty claim tag is filled in under its own spelling", func(t *testing.T) {
		cur := table("")
		cur.Tags["RouteKeeper-cluster"] = ""
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, Claim: true})
		want := map[string]string{"env": "test", "RouteKeeper-cluster": cluster, route.ClusterCIDRsTag: "10.244.0.0/16,fd00:10:244::/56"}
		if !reflect.DeepEqual(p.Desired.Tags, want) {
			t.Errorf("tags = %v, want %v", p.Desired.Tags, want)
		}
	})
	t.Run("refusal names both clusters", func(t *testing.T) {
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: table("staging")})
		if !strings.Contains(p.Refused, `"staging"`) || !strings.Contains(p.Refused, `"prod"`) {
			t.Errorf("refusal %q does not name both clusters", p.Refused)
		}
	})
	t.Run("the cluster CIDRs tag is refreshed with a write, under its own spelling", func(t *testing.T) {
		cur := table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"))
		cur.Tags["RouteKeeper-Cluster-CIDRs"] = "10.99.0.0/16"
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, AllowEmptySource: true}) // worker-0 gone: a delete
		want := map[string]string{"env": "test", route.ClaimTag: cluster, "RouteKeeper-Cluster-CIDRs": "10.244.0.0/16,fd00:10:244::/56"}
		if !reflect.DeepEqual(p.Desired.Tags, want) {
			t.Errorf("tags = %v, want %v", p.Desired.Tags, want)
		}
		if cur.Tags["RouteKeeper-Cluster-CIDRs"] != "10.99.0.0/16" {
			t.Error("the current table was modified")
		}
	})
	t.Run("a stale cluster CIDRs tag alone does not make a write", func(t *testing.T) {
		cur := table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"))
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur, Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24")}})
		if p.NeedsWrite() {
			t.Errorf("steady table without the CIDRs tag needs a write: %v", p)
		}
	})
	for _, tc := range []struct {
		name, theirs string
		want         []string
	}{
		{"overlapping pod CIDRs are named", "10.244.128.0/17", []string{`"staging"`, `"prod"`, "10.244.128.0/17", "overlap this cluster's (10.244.0.0/16,fd00:10:244::/56)"}},
		{"disjoint pod CIDRs are said to be disjoint", "10.50.0.0/16", []string{`"staging"`, "10.50.0.0/16", "do not overlap"}},
		{"no CIDRs tag: only the clusters", "", []string{`"staging"`, `"prod"`}},
		{"an unreadable CIDRs tag is ignored", "not-a-cidr", []string{`"staging"`, `"prod"`}},
	} {
		t.Run("refusal: "+tc.name, func(t *testing.T) {
			cur := table("staging")
			if tc.theirs != "" {
				cur.Tags[route.ClusterCIDRsTag] = tc.theirs
			}
			p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur})
			if p.RefusedReason != reason.RouteTableClaimed {
				t.Fatalf("refused %q, want %s", p.RefusedReason, reason.RouteTableClaimed)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Refused, w) {
					t.Errorf("refusal %q does not contain %q", p.Refused, w)
				}
			}
			if tc.theirs == "" || tc.theirs == "not-a-cidr" {
				if strings.Contains(p.Refused, "overlap") {
					t.Errorf("refusal %q talks of overlap without a readable tag", p.Refused)
				}
			}
		})
	}
	t.Run("new table from nil current has the claim and no identity", func(t *testing.T) {
		p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs})
		if !p.Create || p.Desired == nil || p.Desired.Claim() != cluster || p.Desired.Etag != "" {
			t.Errorf("plan for a missing table = %+v", p)
		}
	})
}

func TestReasons(t *testing.T) {
	long := strings.Repeat("n", 70)
	runCases(t, []planCase{
		{
			name: "NoPodCIDR",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4")},
				Current: table(cluster),
			},
			conflicts: []string{"worker-0 - NoPodCIDR"},
			nodes:     map[string]string{"worker-0": "NotRouted/NoPodCIDR"},
		},
		{
			name: "NoPodCIDR for an invalid prefix",
			in: Input{
				Nodes:   []source.Node{{Name: "worker-0", InternalIPs: []netip.Addr{addr("10.0.0.4")}, PodCIDRs: []netip.Prefix{{}}}},
				Current: table(cluster),
			},
			conflicts: []string{"worker-0 - NoPodCIDR"},
		},
		{
			name: "NoNodeIP: the node's existing route is kept, not deleted",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.244.0.0/24"), node("worker-1", "10.244.1.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			conflicts: []string{"worker-0 10.244.0.0/24 NoNodeIP", "worker-1 10.244.1.0/24 NoNodeIP"},
			nodes:     map[string]string{"worker-0": "NotRouted/NoNodeIP", "worker-1": "NotRouted/NoNodeIP"},
		},
		{
			name: "NoNodeIP for an unspecified address",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "0.0.0.0", "10.244.0.0/24")},
				Current: table(cluster),
			},
			conflicts: []string{"worker-0 10.244.0.0/24 NoNodeIP"},
		},
		{
			name: "OutsideClusterCIDR; the node's old route inside is stale",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.245.0.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			changes:   []string{"delete worker-0____102440024"},
			conflicts: []string{"worker-0 10.245.0.0/24 OutsideClusterCIDR"},
		},
		{
			name: "OutsideClusterCIDR for a prefix wider than the cluster CIDR",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.0.0.0/8")},
				Current: table(cluster),
			},
			conflicts: []string{"worker-0 10.0.0.0/8 OutsideClusterCIDR"},
		},
		{
			name: "InvalidRouteName: node name too long for 80 characters",
			in: Input{
				Nodes:   []source.Node{node(long, "10.0.0.4", "10.244.0.0/24"), node("short", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster),
			},
			changes:   []string{"create short____102441024 10.244.1.0/24 10.0.0.5"},
			conflicts: []string{long + " 10.244.0.0/24 InvalidRouteName"},
		},
		{
			name: "InvalidRouteName: characters Azure refuses",
			in: Input{
				Nodes:   []source.Node{node("-worker", "10.0.0.4", "10.244.0.0/24"), node("wörker", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster),
			},
			conflicts: []string{"-worker 10.244.0.0/24 InvalidRouteName", "wörker 10.244.1.0/24 InvalidRouteName"},
		},
		{
			name: "DuplicateNode: two nodes whose names differ only in case",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("Worker-0", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4")),
			},
			conflicts: []string{"Worker-0 10.244.1.0/24 DuplicateNode", "worker-0 10.244.0.0/24 DuplicateNode"},
			nodes:     map[string]string{"worker-0": "NotRouted/DuplicateNode", "Worker-0": "NotRouted/DuplicateNode"},
		},
		{
			name: "OverlappingPodCIDR: two new nodes with one CIDR, neither written",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.0.0/24"), node("c", "10.0.0.6", "10.244.2.0/24")},
				Current: table(cluster),
			},
			changes:   []string{"create c____102442024 10.244.2.0/24 10.0.0.6"},
			conflicts: []string{"a 10.244.0.0/24 OverlappingPodCIDR b", "b 10.244.0.0/24 OverlappingPodCIDR a"},
			nodes:     map[string]string{"a": "NotRouted/OverlappingPodCIDR", "b": "NotRouted/OverlappingPodCIDR", "c": "Pending"},
		},
		{
			name: "OverlappingPodCIDR: the node already routed keeps its route",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.0.0/24")},
				Current: table(cluster, ours("b", "10.244.0.0/24", "10.0.0.5")),
			},
			conflicts: []string{"a 10.244.0.0/24 OverlappingPodCIDR b"},
			nodes:     map[string]string{"a": "NotRouted/OverlappingPodCIDR", "b": "Routed"},
		},
		{
			name: "OverlappingPodCIDR: the routed node's next hop is still updated",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.9", "10.244.0.0/23")},
				Current: table(cluster, ours("b", "10.244.0.0/23", "10.0.0.5")),
			},
			changes:   []string{"update b____102440023 10.244.0.0/23 10.0.0.9"},
			conflicts: []string{"a 10.244.0.0/24 OverlappingPodCIDR b"},
		},
		{
			name: "OverlappingPodCIDR: nested CIDRs, none routed",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/23"), node("b", "10.0.0.5", "10.244.1.0/24"), node("c", "10.0.0.6", "10.244.0.128/25")},
				Current: table(cluster),
			},
			conflicts: []string{
				"a 10.244.0.0/23 OverlappingPodCIDR b",
				"b 10.244.1.0/24 OverlappingPodCIDR a",
				"c 10.244.0.128/25 OverlappingPodCIDR a",
			},
		},
		{
			name: "OverlappingPodCIDR: several routed, all reported, all routes kept",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/23"), node("b", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster, ours("a", "10.244.0.0/23", "10.0.0.4"), ours("b", "10.244.1.0/24", "10.0.0.9")),
			},
			conflicts: []string{"a 10.244.0.0/23 OverlappingPodCIDR b", "b 10.244.1.0/24 OverlappingPodCIDR a"},
		},
		{
			name: "OverlappingPodCIDR: adjacent CIDRs do not overlap",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.1.0/24"), node("c", "10.0.0.6", "10.244.2.0/23")},
				Current: table(cluster),
			},
			changes: []string{
				"create a____102440024 10.244.0.0/24 10.0.0.4",
				"create b____102441024 10.244.1.0/24 10.0.0.5",
				"create c____102442023 10.244.2.0/23 10.0.0.6",
			},
		},
		{
			name: "RouteLimit: custom routes count, new routes fill the table in node-name order",
			in: Input{
				Limit:   3,
				Nodes:   []source.Node{node("c", "10.0.0.6", "10.244.2.0/24"), node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster, rt("default", "0.0.0.0/0", "10.0.100.4"), rt("azure", "AzureCloud", "Internet")),
			},
			changes:   []string{"create a____102440024 10.244.0.0/24 10.0.0.4"},
			conflicts: []string{"b 10.244.1.0/24 RouteTableFull", "c 10.244.2.0/24 RouteTableFull"},
			nodes:     map[string]string{"a": "Pending", "b": "NotRouted/RouteTableFull", "c": "NotRouted/RouteTableFull"},
		},
		{
			name: "RouteLimit: existing routes are kept when the table is over the limit",
			in: Input{
				Limit: 2,
				Nodes: []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.9", "10.244.1.0/24"), node("c", "10.0.0.6", "10.244.2.0/24"), node("d", "10.0.0.7", "10.244.3.0/24")},
				Current: table(cluster, ours("a", "10.244.0.0/24", "10.0.0.4"), ours("b", "10.244.1.0/24", "10.0.0.5"),
					ours("c", "10.244.2.0/24", "10.0.0.6")),
			},
			changes:   []string{"update b____102441024 10.244.1.0/24 10.0.0.9"},
			conflicts: []string{"d 10.244.3.0/24 RouteTableFull"},
			nodes:     map[string]string{"a": "Routed", "b": "Pending", "c": "Routed", "d": "NotRouted/RouteTableFull"},
		},
		{
			name: "RouteLimit: deletes free room in the same plan",
			in: Input{
				Limit:   2,
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, ours("gone", "10.244.9.0/24", "10.0.0.9"), rt("default", "0.0.0.0/0", "10.0.100.4")),
			},
			changes: []string{"create a____102440024 10.244.0.0/24 10.0.0.4", "delete gone____102449024"},
		},
		{
			name: "RouteLimit: a dual-stack node gets both routes or none; a smaller node may still fit",
			in: Input{
				Limit:   1,
				Nodes:   []source.Node{node("a", "10.0.0.4", "fd00::4", "10.244.0.0/24", "fd00:10:244::/64"), node("b", "10.0.0.5", "10.244.1.0/24")},
				Current: table(cluster),
			},
			changes:   []string{"create b____102441024 10.244.1.0/24 10.0.0.5"},
			conflicts: []string{"a 10.244.0.0/24 RouteTableFull", "a fd00:10:244::/64 RouteTableFull"},
		},
		{
			name: "RouteLimit: zero means Azure's default, 1,000",
			in: Input{
				Nodes:   manyNodes(1001),
				Current: table(cluster),
			},
			changes:   manyCreates(1000),
			conflicts: []string{"n1000 10.244.250.0/26 RouteTableFull"},
		},
	})
}

// TestRouteTableFullSaysWhereTheLimitCameFrom: a node that does not fit
// is told the limit and where it came from.
func TestRouteTableFullSaysWhereTheLimitCameFrom(t *testing.T) {
	for _, tc := range []struct {
		name, from, want string
		limit            int
	}{
		{"Azure's, read", "Azure's limit in westeurope of 2 routes per route table, read from the usages API", "it may hold 2 routes (Azure's limit in westeurope of 2 routes per route table, read from the usages API) and the node needs 1 more", 2},
		{"configured", "", "it may hold 2 routes (routeTable.routeLimit)", 2},
		{"default", "", "it may hold 1000 routes (Azure's default of 1000 routes per route table)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := max(tc.limit, 1000) + 1
			if tc.limit > 0 {
				n = tc.limit + 1
			}
			p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Limit: tc.limit, LimitFrom: tc.from, Nodes: manyNodes(n), Current: table(cluster)})
			last := manyNodes(n)[n-1].Name
			if st := p.Nodes[last]; st.Reason != reason.RouteTableFull || !strings.Contains(st.Message, tc.want) {
				t.Errorf("node %s: %s %q, want RouteTableFull saying %q", last, st.Reason, st.Message, tc.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	runCases(t, []planCase{
		{name: "no cluster name", raw: true, in: Input{ClusterCIDRs: clusterCIDRs, Nodes: []source.Node{node("a")}}, refused: reason.InvalidConfiguration, nodes: map[string]string{"a": "NotRouted/InvalidConfiguration"}},
		{name: "no cluster CIDRs", raw: true, in: Input{Cluster: cluster}, refused: reason.InvalidConfiguration},
		{name: "invalid cluster CIDR", raw: true, in: Input{Cluster: cluster, ClusterCIDRs: []netip.Prefix{{}}}, refused: reason.InvalidConfiguration},
		{name: "negative limit", in: Input{Limit: -1}, refused: reason.InvalidConfiguration},
		{
			name: "two routes with one name (case-insensitively) in the table",
			in: Input{
				Nodes:   []source.Node{node("a", "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, rt("x", "10.1.0.0/16", "None"), rt("X", "10.2.0.0/16", "None")),
			},
			refused: reason.RouteTableInvalid,
			nodes:   map[string]string{"a": "NotRouted/RouteTableInvalid"},
		},
	})
}

func manyNodes(n int) []source.Node {
	out := make([]source.Node, n)
	for i := range out {
		name := "n" + pad4(i)
		out[i] = source.Node{
			Name:        name,
			InternalIPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})},
			PodCIDRs:    []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i >> 2), byte(i&3) << 6}), 26)},
		}
	}
	return out
}

func manyCreates(n int) []string {
	nodes := manyNodes(n)
	out := make([]string, n)
	for i, nd := range nodes {
		out[i] = "create " + route.Name(nd.Name, nd.PodCIDRs[0]) + " " + nd.PodCIDRs[0].String() + " " + nd.InternalIPs[0].String()
	}
	return out
}

func pad4(i int) string {
	s := "000" + strconv.Itoa(i)
	return s[len(s)-4:]
}

func TestDeterministic(t *testing.T) {
	nodes := append(manyNodes(50), node("x", "10.0.0.4", "10.244.0.0/24"), node("y", "10.0.0.5", "10.244.1.0/24"))
	cur := table(cluster, ours("gone", "10.244.250.0/24", "10.0.0.9"), rt("default", "0.0.0.0/0", "10.0.100.4"), ours("n0003", "10.244.3.0/24", "10.9.9.9"))
	in := Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Limit: 40, Nodes: nodes, Current: cur}
	want := Compute(in)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := slices.Clone(nodes)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in.Nodes = shuffled
		if diff := cmp.Diff(want, Compute(in), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
			t.Fatalf("plan depends on node order (-first +shuffled):\n%s", diff)
		}
	}
}

func TestConflictMessages(t *testing.T) {
	in := Input{
		Cluster: cluster, ClusterCIDRs: clusterCIDRs,
		Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24"), node("worker-2", "10.0.0.6", "10.245.0.0/24")},
		Current: table(cluster,
			rt("kubernetes-route-10-244-0-0-24", "10.244.0.0/24", "10.0.0.4"),
			rt("blackhole", "10.244.1.0/24", "None")),
	}
	p := Compute(in)
	want := map[string][]string{
		"worker-0": {"10.244.0.0/24", "kubernetes-route-10-244-0-0-24", "traffic flows, route not managed", "`--adopt matching` takes it over with no outage", "worker-0____102440024"},
		"worker-1": {"10.244.1.0/24", "blackhole", "None", "delete"},
		"worker-2": {"10.245.0.0/24", "outside", "10.244.0.0/16"},
	}
	for _, c := range p.Conflicts {
		for _, s := range want[c.Node] {
			if !strings.Contains(c.Message, s) {
				t.Errorf("message for %s %q lacks %q", c.Node, c.Message, s)
			}
		}
		if p.Nodes[c.Node].Message != c.Message {
			t.Errorf("node %s status message %q differs from its conflict %q", c.Node, p.Nodes[c.Node].Message, c.Message)
		}
	}
}

func TestChangeDetails(t *testing.T) {
	cur := table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), ours("gone", "10.244.9.0/24", "10.0.0.9"))
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur,
		Nodes: []source.Node{node("worker-0", "10.0.0.7", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.244.1.0/24")}})
	if len(p.Changes) != 3 {
		t.Fatalf("changes = %v", changeStrings(p.Changes))
	}
	cr, up, de := p.Changes[0], p.Changes[1], p.Changes[2]
	if cr.Kind != Create || cr.Node != "worker-1" || cr.Old != nil || cr.Route.Prefix != pfx("10.244.1.0/24") || cr.Reason == "" {
		t.Errorf("create = %+v", cr)
	}
	if up.Kind != Update || up.Node != "worker-0" || up.Old == nil || !reflect.DeepEqual(*up.Old, cur.Routes[0]) || !strings.Contains(up.Reason, "10.0.0.4 -> 10.0.0.7") {
		t.Errorf("update = %+v", up)
	}
	if de.Kind != Delete || de.Node != "gone" || !reflect.DeepEqual(de.Route, cur.Routes[1]) || !strings.Contains(de.Reason, "no longer exists") {
		t.Errorf("delete = %+v", de)
	}
	// Updates stay in place, creates are appended.
	names := make([]string, len(p.Desired.Routes))
	for i, r := range p.Desired.Routes {
		names[i] = r.Name
	}
	if want := []string{"worker-0____102440024", "worker-1____102441024"}; !slices.Equal(names, want) {
		t.Errorf("desired routes = %v, want %v", names, want)
	}
	if st := p.Nodes["worker-0"]; !slices.Equal(st.Routes, []string{"worker-0____102440024"}) {
		t.Errorf("worker-0 routes = %v", st.Routes)
	}
	c, u, d := p.Counts()
	if c != 1 || u != 1 || d != 1 {
		t.Errorf("Counts = %d %d %d", c, u, d)
	}
	if s := p.String(); !strings.Contains(s, "1 to create, 1 to update, 1 to delete") {
		t.Errorf("String = %q", s)
	}
}

func TestSchemeNameIsRouteName(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var p netip.Prefix
		if r.IntN(2) == 0 {
			p = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}), r.IntN(33))
		} else {
			var a [16]byte
			for i := range a {
				if r.IntN(3) > 0 {
					a[i] = byte(r.Uint32())
				}
			}
			p = netip.PrefixFrom(netip.AddrFrom16(a), r.IntN(129))
		}
		node := strings.Repeat("n", r.IntN(120))
		if got, want := schemeName(node, p), route.Name(node, p); got != want {
			t.Fatalf("schemeName(%q, %s) = %q, want route.Name %q", node, p, got, want)
		}
	}
}

func TestDesiredIsACopy(t *testing.T) {
	cur := table(cluster, ours("worker-0", "10.244.0.0/24", "10.0.0.4"), rt("default", "0.0.0.0/0", "10.0.100.4"))
	before := cur.Clone()
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: cur,
		Nodes: []source.Node{node("worker-0", "10.0.0.9", "10.244.0.0/24")}})
	if !p.NeedsWrite() {
		t.Fatal("no write planned")
	}
	p.Desired.Routes[0].Name = "changed"
	p.Desired.Routes[1].NextHopIP = addr("1.2.3.4")
	p.Desired.Tags["x"] = "y"
	p.Desired.Subnets[0] = "changed"
	p.Changes[0].Old.Name = "changed"
	if !reflect.DeepEqual(before, cur) {
		t.Errorf("changing the plan changed the current table:\n%s", cmp.Diff(before, cur))
	}
}

func TestPlanJSON(t *testing.T) {
	p := Compute(Input{Cluster: cluster, ClusterCIDRs: clusterCIDRs, Current: table(cluster, ours("gone", "10.244.9.0/24", "10.0.0.9")),
		Nodes: []source.Node{node("worker-0", "10.0.0.4", "10.244.0.0/24"), node("worker-1", "10.0.0.5", "10.245.0.0/24")}})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"create"`, `"kind":"delete"`, `"reason":"OutsideClusterCIDR"`, `"prefix":"10.245.0.0/24"`, `"state":"Pending"`, `"addressPrefix":"10.244.0.0/24"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plan JSON lacks %s:\n%s", want, b)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	runCases(t, []planCase{
		{
			name:  "nothing at all: no table, no nodes",
			in:    Input{},
			claim: true,
		},
		{
			name: "dual-stack node whose IPv6 CIDR is held by a custom route: IPv4 still written",
			in: Input{
				Nodes:   []source.Node{node("worker-0", "10.0.0.4", "fd00::4", "10.244.0.0/24", "fd00:10:244::/64")},
				Current: table(cluster, rt("v6-blackhole", "fd00:10:244::/64", "None")),
			},
			changes:   []string{"create worker-0____102440024 10.244.0.0/24 10.0.0.4"},
			conflicts: []string{"worker-0 fd00:10:244::/64 PrefixConflict v6-blackhole"},
			nodes:     map[string]string{"worker-0": "NotRouted/PrefixConflict"},
		},
		{
			name: "prefix change in place blocked by a custom route: the stale route goes, the conflict is reported",
			in: Input{
				ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")},
				Nodes:        []source.Node{node("worker-0", "192.168.0.4", "10.2.44.0/24")},
				Current:      table(cluster, ours("worker-0", "10.24.4.0/24", "192.168.0.4"), rt("hand", "10.2.44.0/24", "192.168.0.4")),
			},
			changes:   []string{"delete worker-0____10244024"},
			conflicts: []string{"worker-0 10.2.44.0/24 RouteNotManaged hand forwarding"},
		},
		{
			name: "prefix change in place onto a custom route forwarding to the node, Adopt matching: moved and adopted in one write",
			in: Input{
				Adopt:        AdoptMatching,
				ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")},
				Nodes:        []source.Node{node("worker-0", "192.168.0.4", "10.2.44.0/24")},
				Current:      table(cluster, ours("worker-0", "10.24.4.0/24", "192.168.0.4"), rt("hand", "10.2.44.0/24", "192.168.0.4")),
			},
			changes: []string{"update worker-0____10244024 10.2.44.0/24 192.168.0.4", "delete hand"},
			nodes:   map[string]string{"worker-0": "Pending"},
		},
		{
			name: "prefix change in place onto the stale route of a gone node",
			in: Input{
				ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")},
				Nodes:        []source.Node{node("worker-0", "192.168.0.4", "10.2.44.0/24")},
				Current:      table(cluster, ours("worker-0", "10.24.4.0/24", "192.168.0.4"), ours("gone", "10.2.44.0/24", "192.168.0.9")),
			},
			changes: []string{"update worker-0____10244024 10.2.44.0/24 192.168.0.4", "delete gone____10244024"},
		},
		{
			name: "overlap with a node that lost its IP: its route is kept and wins",
			in: Input{
				Nodes:   []source.Node{node("a", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.0.0/24")},
				Current: table(cluster, ours("a", "10.244.0.0/24", "10.0.0.4")),
			},
			conflicts: []string{"a 10.244.0.0/24 NoNodeIP", "b 10.244.0.0/24 OverlappingPodCIDR a"},
		},
		{
			name: "over the limit with stale routes: deletes make room, but only as much as they free",
			in: Input{
				Limit: 3,
				Nodes: []source.Node{node("a", "10.0.0.4", "10.244.0.0/24"), node("b", "10.0.0.5", "10.244.1.0/24"), node("c", "10.0.0.6", "10.244.2.0/24")},
				Current: table(cluster, rt("default", "0.0.0.0/0", "10.0.100.4"), rt("x", "AzureCloud", "Internet"), rt("y", "Storage", "Internet"),
					rt("z", "192.168.0.0/16", "VirtualNetworkGateway"), ours("gone-1", "10.244.8.0/24", "10.0.0.8"), ours("gone-2", "10.244.9.0/24", "10.0.0.9")),
			},
			changes:   []string{"delete gone-1____102448024", "delete gone-2____102449024"},
			conflicts: []string{"a 10.244.0.0/24 RouteTableFull", "b 10.244.1.0/24 RouteTableFull", "c 10.244.2.0/24 RouteTableFull"},
		},
		{
			name: "a table ARM would not hold (owned and custom route with one prefix): nothing is added on top",
			in: Input{
				Nodes:   []source.Node{node("b", "10.0.0.5", "10.244.0.0/24")},
				Current: table(cluster, ours("a", "10.244.0.0/24", "10.0.0.4"), rt("hand", "10.244.0.0/24", "10.0.0.4")),
			},
			changes:   []string{"delete a____102440024"},
			conflicts: []string{"b 10.244.0.0/24 PrefixConflict hand"},
		},
		{
			name: "node names with underscores and dots",
			in: Input{
				Nodes:   []source.Node{node("n_", "10.0.0.4", "10.244.0.0/24"), node("n", "10.0.0.5", "10.244.1.0/24"), node("ip-10-0-0-6.ec2.internal", "10.0.0.6", "10.244.2.0/24")},
				Current: table(cluster, ours("n_", "10.244.0.0/24", "10.0.0.4")),
			},
			changes: []string{
				"create ip-10-0-0-6.ec2.internal____102442024 10.244.2.0/24 10.0.0.6",
				"create n____102441024 10.244.1.0/24 10.0.0.5",
			},
		},
		{
			name: "a route of a node with a too-long name is never deleted while the node has the CIDR",
			in: Input{
				Nodes:   []source.Node{node(strings.Repeat("x", 75), "10.0.0.4", "10.244.0.0/24")},
				Current: table(cluster, rt(strings.Repeat("x", 75)+"____102440024", "10.244.0.0/24", "10.0.0.4")),
			},
			conflicts: []string{strings.Repeat("x", 75) + " 10.244.0.0/24 InvalidRouteName"},
		},
	})
}
