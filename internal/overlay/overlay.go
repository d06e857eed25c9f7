// Package overlay is the pre-flight of a move from host routes to an
// overlay CNI — an AKS kubenet cluster's `az aks update
// --network-plugin-mode overlay`, or a self-managed cluster's move from
// routekeeper's pod routes to Cilium or Calico VXLAN — and the account of
// what is left once routekeeper stood down (`routekeeper doctor --target
// overlay`, docs/aks-overlay.md). It reads nothing: the caller hands it
// what one dry run observed and judged (the route table as it stands, the
// interconnect as internal/routing sees it, the nodes) with the
// configuration's facts and the target, and it returns findings. The rules,
// each with the Azure document or known issue it rests on (the docs cite
// them in full):
//
//	check                   severity  rule                                                  source
//	overlay-shared-table    error     the cluster's route table is associated with another  azure-aks-docs#334; Upgrade Azure CNI
//	                                  subnet (an Application Gateway's): AKS's move fails,  (kubenet: the pod routes are deleted)
//	                                  and that subnet loses the pod routes it uses
//	overlay-reachability    error     something outside the cluster reaches pod IPs today   Azure CNI Overlay overview ("endpoints
//	                                  (traced with internal/routing from every other       outside the cluster can't connect to a
//	                                  subnet, peered subnet and on-premises range)          pod directly"); Upgrade Azure CNI
//	overlay-mirror          warning   a mirror keeps pod routes for other subnets: remove   same; AGIC issue 1524 (Overlay support:
//	                                  it after the move (App Gateway: Overlay support)      no route table needed)
//	overlay-cluster-routes  info      the cluster's routes in the table: the move deletes   Upgrade Azure CNI (kubenet note)
//	                                  them (AKS), or routekeeper's stand-down does
//	overlay-foreign-route   warn/info routes of others are kept: does each still make       Upgrade Azure CNI; Azure CNI Overlay
//	                                  sense (a hand-made pod route does not; a default      overview (UDR egress on the cluster
//	                                  route to a firewall does)                             subnet, no custom routes for pods)
//	overlay-pod-cidr        error     the target pod CIDR overlaps the node VNet, a peered  Azure CNI Overlay overview, IP address
//	                                  VNet, an on-premises range or the service range       planning; Upgrade Azure CNI (--pod-cidr)
//	overlay-capacity        err/info  the target plan's size: a /24 per node, 10-250 pods   Azure CNI Overlay overview (pods,
//	                                  per node, the nodes it holds (internal/ipplan)        maximum pods per node)
//	overlay-dual-stack      warning   an IPv6 pod CIDR: IPv6 traffic breaks while AKS       Azure/AKS#5120
//	                                  migrates (until every node is reimaged)
//	overlay-masquerade      err/warn  a custom ip-masq-agent config: pods reach those       Upgrade Azure CNI (ip-masq-agent warning)
//	                                  ranges unmasqueraded today; in Overlay they cannot
//	overlay-names           error     AKS: the node subnet, VNet or resource group name     Azure CNI Overlay overview, limitations
//	                                  is longer than 63 characters
//	overlay-unread          info      part of the network could not be read: not checked
//
// After the stand-down (Leftovers), the check `stand-down` says what is
// left: a table still associated with subnets though no route of the
// cluster is left in it, and mirrors still configured.
package overlay

import (
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// The checks of the pre-flight and of the account after the stand-down.
const (
	RuleSharedTable   = "overlay-shared-table"
	RuleReachability  = "overlay-reachability"
	RuleMirror        = "overlay-mirror"
	RuleClusterRoutes = "overlay-cluster-routes"
	RuleForeignRoute  = "overlay-foreign-route"
	RulePodCIDR       = "overlay-pod-cidr"
	RuleCapacity      = "overlay-capacity"
	RuleDualStack     = "overlay-dual-stack"
	RuleMasquerade    = "overlay-masquerade"
	RuleNames         = "overlay-names"
	RuleUnread        = "overlay-unread"
	RuleStandDown     = "stand-down"
)

// Input is everything the pre-flight judges, read by the caller.
type Input struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs are the cluster's service ranges (cluster.serviceCIDRs);
	// empty: the service range is not checked.
	ServiceCIDRs []netip.Prefix
	// Platform: the platform (AKS) writes the routes (routes: observe), so
	// the move is AKS's `az aks update`, which deletes its pod routes
	// itself; else the cluster is self-managed and routekeeper's
	// stand-down removes them.
	Platform bool
	// Subnets are the guarded node subnets.
	Subnets []string
	// TableID is the route table routekeeper keeps; Table is it as it
	// stands (nil when it does not exist).
	TableID string
	Table   *route.Table
	// Mirrors are the configured mirrors (mirrors[]), each with its table
	// as read.
	Mirrors []Mirror
	// Routing is the network the dry run's verdict judged (subnets, route
	// tables, virtual networks with peerings and gateways) with the
	// cluster's nodes; Deliver is the verdict's route selection on it
	// (verdict.Verdict.Deliver): the pre-flight asks it who reaches the
	// pods today and keeps no routing rule of its own.
	Routing routing.State
	Deliver func(src, dst routing.Endpoint) *routing.Result
	// Target is where the cluster moves.
	Target Target
	// Masq is the ip-masq-agent configuration read from the cluster; nil
	// when it was not read, MasqNote then says why.
	Masq     *Masq
	MasqNote string
}

// Mirror is one configured mirror table.
type Mirror struct {
	TableID string
	Subnets []string
	// Table is the mirror as it stands; nil when it does not exist.
	Table *route.Table
}

// Target is the overlay the cluster moves to.
type Target struct {
	// PodCIDRs is the target pod CIDR, at most one per IP family. Empty
	// keeps the cluster CIDRs: AKS keeps a kubenet cluster's pod CIDR when
	// `az aks update` is not given --pod-cidr.
	PodCIDRs []netip.Prefix
	// MaxPods is the maximum pods per node (0: Overlay's default, 250).
	MaxPods int
}

// Masq is what the cluster's ip-masq-agent configuration says: its
// ConfigMaps in kube-system.
type Masq struct {
	ConfigMaps []MasqConfig
}

// MasqConfig is one ip-masq-agent ConfigMap.
type MasqConfig struct {
	Name string
	// NonMasqueradeCIDRs are the destinations pods reach with their own
	// address (not SNATed to the node's).
	NonMasqueradeCIDRs []netip.Prefix
	// Custom: the operator's configuration (AKS's azure-ip-masq-agent-config,
	// or ip-masq-agent), not AKS's reconciled one.
	Custom bool
}

// Report is the pre-flight's result.
type Report struct {
	// Target is the pod CIDR checked; KeptPodCIDR says it is the cluster's
	// current one (no --pod-cidr).
	Target      []netip.Prefix `json:"target"`
	KeptPodCIDR bool           `json:"keptPodCIDR"`
	Table       string         `json:"routeTable"`
	Nodes       int            `json:"nodes"`
	// Capacity is the target plan's (internal/ipplan).
	Capacity *ipplan.PluginCapacity `json:"capacity,omitempty"`
	// Reachers are who reaches pod IPs from outside the cluster today.
	Reachers []Reacher `json:"reachers"`
	// Routes are the table's routes with what the move does to them.
	Routes   []RouteFate       `json:"routes"`
	Findings []finding.Finding `json:"findings"`
}

// Errors counts the error findings.
func (r *Report) Errors() int { return finding.Errors(r.Findings) }

// Reacher is a place outside the cluster that reaches pod IPs today.
type Reacher struct {
	// Source names it: a subnet, or "on premises" with the range.
	Source   string `json:"source"`
	SourceID string `json:"sourceId,omitempty"`
	// Prefix is the subnet's (or the on-premises range's) prefix the
	// trace started from.
	Prefix netip.Prefix `json:"prefix"`
	VNet   string       `json:"vnet,omitempty"`
	// RouteTable is the table whose routes carry the pod traffic (empty:
	// system routes).
	RouteTable string `json:"routeTable,omitempty"`
	// Reached are the pod CIDRs delivered, of Total.
	Reached []netip.Prefix `json:"reached"`
	Total   int            `json:"total"`
	// Example is one trace: source address, pod address and the route.
	Example string `json:"example"`
}

// RouteFate is one route of the table and what the move does to it.
type RouteFate struct {
	Name          string `json:"name"`
	AddressPrefix string `json:"addressPrefix"`
	NextHop       string `json:"nextHop"`
	// Ours: a route of this cluster, which the move deletes.
	Ours bool `json:"ours"`
	// Sense says whether a route that stays still makes sense after the
	// move: "yes", "no" or "check".
	Sense string `json:"sense,omitempty"`
	Why   string `json:"why"`
}
