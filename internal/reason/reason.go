// Package reason is routekeeper's one closed vocabulary of why a node is,
// or is not, routed. Every reason a node, table or subnet can be given is a
// constant here, and the same word is used everywhere it is shown: the log,
// the NetworkUnavailable condition and the events on Nodes, the metrics'
// labels, doctor, diff, routes list, trace, run --once and iac check. The
// verdict (internal/verdict) picks the reason; nothing else invents one.
//
//	reason                       routed  set by            meaning
//	RouteCreated                 yes     verdict           every pod CIDR has its correct route in the table its subnet uses
//	RouteNotManaged              yes     plan              a route routekeeper does not own sends the pod CIDR to the node
//	HostRoutesNotNeeded          yes     verdict           the cluster stands down from host routes (it moved to an overlay CNI): no route is wanted
//	NoPodCIDR                    no      plan              the node has no (valid) pod CIDR yet
//	PodCIDRExhausted             no      source            the built-in IPAM found no free pod CIDR for the node
//	NoNodeIP                     no      plan              no internal address of the pod CIDR's family
//	OutsideClusterCIDR           no      plan              the pod CIDR is in none of the cluster CIDRs
//	OverlappingPodCIDR           no      plan              two nodes' pod CIDRs overlap
//	DuplicateNode                no      plan              two nodes share a name
//	InvalidRouteName             no      plan              the route name is not valid in Azure
//	NameConflict                 no      plan              a route routekeeper does not own has the route's name
//	PrefixConflict               no      plan              a route routekeeper does not own holds the pod CIDR, elsewhere
//	NextHopOutsideVNet           no      plan              the node's IP is in no subnet a NIC could hold it in
//	RouteTableFull               no      plan              the table holds its route limit
//	RouteTableClaimed            no      plan              the table is another cluster's
//	RouteTableInvalid            no      plan              the table breaks Azure's own rules
//	InvalidConfiguration         no      plan              routekeeper's configuration cannot be planned
//	RouteTableMissing            no      verdict           the table does not exist and is not created
//	RouteWriteFailed             no      verdict           the write carrying the route failed
//	RouteWriteDenied             no      verdict           ARM refused the write: a missing permission, a lock or a policy
//	RouteNotReadBack             no      verdict           the write succeeded but its route was not read back
//	NoRouteCreated               no      verdict           the route is not in the table (not written yet; observe: the platform's)
//	RouteTableDetached           no      verdict           the node's subnet has no route table: Azure ignores the route
//	SubnetRouteTableLacksRoute   no      verdict           the node's subnet uses another table without the route
//	RouteProvisioning            no      verdict           the route is right but not Succeeded yet (another writer's operation), and the node was not routed before
//	PodTrafficNotDelivered       reach   verdict           Azure's route selection does not deliver the pod traffic from a guarded subnet (the network was read)
//	PodCIDRShadowed              reach   verdict           a route routekeeper does not own, more specific than the pod CIDR, takes part of it elsewhere
//	IPForwardingDisabled         reach   verdict           the node's NIC has IP forwarding off: Azure drops what a VirtualAppliance route sends it (the NICs were read)
//
// The three "reach" reasons say what stops the pod traffic of a node whose
// route exists (verdict.Reach): the node stays routed, and each is a
// finding.
//
// Three more reasons say why deletions were held back (plan.HeldReason),
// not why a node is unrouted: TooManyDeletes, EmptySource and
// StandDownUnconfirmed (the stand-down from host routes, or every node
// without a pod CIDR, waits for its confirmation).
package reason

// Reason is one word of the vocabulary.
type Reason string

// The reasons; the table in the package comment says what each means.
const (
	RouteCreated        Reason = "RouteCreated"
	RouteNotManaged     Reason = "RouteNotManaged"
	HostRoutesNotNeeded Reason = "HostRoutesNotNeeded"

	NoPodCIDR            Reason = "NoPodCIDR"
	PodCIDRExhausted     Reason = "PodCIDRExhausted"
	NoNodeIP             Reason = "NoNodeIP"
	OutsideClusterCIDR   Reason = "OutsideClusterCIDR"
	OverlappingPodCIDR   Reason = "OverlappingPodCIDR"
	DuplicateNode        Reason = "DuplicateNode"
	InvalidRouteName     Reason = "InvalidRouteName"
	NameConflict         Reason = "NameConflict"
	PrefixConflict       Reason = "PrefixConflict"
	NextHopOutsideVNet   Reason = "NextHopOutsideVNet"
	RouteTableFull       Reason = "RouteTableFull"
	RouteTableClaimed    Reason = "RouteTableClaimed"
	RouteTableInvalid    Reason = "RouteTableInvalid"
	InvalidConfiguration Reason = "InvalidConfiguration"

	RouteTableMissing Reason = "RouteTableMissing"
	RouteWriteFailed  Reason = "RouteWriteFailed"
	RouteWriteDenied  Reason = "RouteWriteDenied"
	RouteNotReadBack  Reason = "RouteNotReadBack"
	NoRouteCreated    Reason = "NoRouteCreated"

	RouteTableDetached         Reason = "RouteTableDetached"
	SubnetRouteTableLacksRoute Reason = "SubnetRouteTableLacksRoute"
	RouteProvisioning          Reason = "RouteProvisioning"

	PodTrafficNotDelivered Reason = "PodTrafficNotDelivered"
	PodCIDRShadowed        Reason = "PodCIDRShadowed"
	IPForwardingDisabled   Reason = "IPForwardingDisabled"

	TooManyDeletes       Reason = "TooManyDeletes"
	EmptySource          Reason = "EmptySource"
	StandDownUnconfirmed Reason = "StandDownUnconfirmed"
)

// All is the whole vocabulary, in the package comment's order.
var All = []Reason{
	RouteCreated, RouteNotManaged, HostRoutesNotNeeded,
	NoPodCIDR, PodCIDRExhausted, NoNodeIP, OutsideClusterCIDR, OverlappingPodCIDR, DuplicateNode, InvalidRouteName,
	NameConflict, PrefixConflict, NextHopOutsideVNet, RouteTableFull, RouteTableClaimed,
	RouteTableInvalid, InvalidConfiguration,
	RouteTableMissing, RouteWriteFailed, RouteWriteDenied, RouteNotReadBack, NoRouteCreated,
	RouteTableDetached, SubnetRouteTableLacksRoute, RouteProvisioning,
	PodTrafficNotDelivered, PodCIDRShadowed, IPForwardingDisabled,
	TooManyDeletes, EmptySource, StandDownUnconfirmed,
}

// Routed reports whether a node with this reason counts as routed.
func (r Reason) Routed() bool {
	return r == RouteCreated || r == RouteNotManaged || r == HostRoutesNotNeeded
}

// Known reports whether r is in the vocabulary.
func (r Reason) Known() bool {
	for _, k := range All {
		if r == k {
			return true
		}
	}
	return false
}

// Table reports whether the reason is about the route table as a whole
// (every node of the table gets it), not about one node.
func (r Reason) Table() bool {
	switch r {
	case RouteTableClaimed, RouteTableInvalid, InvalidConfiguration, RouteTableMissing:
		return true
	}
	return false
}
