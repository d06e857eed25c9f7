// Package source defines the desired state routekeeper works from: the nodes
// of a cluster with their addresses and pod CIDRs. Implementations live in
// sub-packages: kube (client-go informer) and inventory (a YAML file).
package source

import (
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/reason"
)

// Node is what routekeeper needs to know of a cluster node.
type Node struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	// InternalIPs are the node's internal addresses; the pod route of a CIDR
	// points to the first one of the same IP family.
	InternalIPs []netip.Addr `json:"internalIPs"`
	// PodCIDRs are the node's pod ranges (spec.podCIDRs); empty when none is
	// assigned yet.
	PodCIDRs []netip.Prefix    `json:"podCIDRs,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// NetworkAvailable: the cluster holds the node's network available
	// (its NetworkUnavailable condition is False), so its route was in
	// effect when it was last judged. The verdict keeps such a node routed
	// while another writer's operation holds its route (Updating); a node
	// not routed before becomes routed only once its route reads
	// Succeeded.
	NetworkAvailable bool `json:"networkAvailable,omitempty"`
	// Problem is set when the source could not make the node complete
	// (the inventory's IPAM had no free pod CIDR for it). The node stays
	// in the list: the planner reports it NotRouted with the problem and
	// every other node is served.
	Problem *Problem `json:"problem,omitempty"`
}

// Problem is why a source could not complete one node.
type Problem struct {
	// Reason is a word of internal/reason's vocabulary, for example
	// PodCIDRExhausted.
	Reason  reason.Reason `json:"reason"`
	Message string        `json:"message"`
}

// NextHop returns the node's internal address of the same family as
// podCIDR, and false when the node has none.
func (n Node) NextHop(podCIDR netip.Prefix) (netip.Addr, bool) {
	for _, ip := range n.InternalIPs {
		if ip.Is4() == podCIDR.Addr().Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}
