package kubestatus

import (
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/plan"
)

// Reasons of the NetworkUnavailable condition. RouteCreated and
// NoRouteCreated are the Kubernetes route controller's; the others name
// what routekeeper found, so that `kubectl describe node` says why.
const (
	// ReasonRouteCreated (status False): every pod CIDR of the node has its
	// route, written and read back.
	ReasonRouteCreated = "RouteCreated"
	// ReasonNoRouteCreated (status True): the route is not in the table and
	// nothing more specific is known.
	ReasonNoRouteCreated = "NoRouteCreated"
	// ReasonRouteTableFull: the route table holds its route limit.
	ReasonRouteTableFull = "RouteTableFull"
	// ReasonRouteNotManaged (status False): a route routekeeper does not
	// own sends the node's pod CIDR to it; traffic flows, and
	// routeTable.adopt matching takes the route over with no outage.
	ReasonRouteNotManaged = "RouteNotManaged"
	// ReasonRouteTableDetached: the node's route exists, but the route table
	// is not associated with the node's subnet, so Azure does not use it.
	ReasonRouteTableDetached = "RouteTableDetached"
	// ReasonRouteTableClaimed: the route table belongs to another cluster.
	ReasonRouteTableClaimed = "RouteTableClaimed"
	// ReasonRouteTableUnclaimed: the table has no claim tag and adopting
	// it is not allowed.
	ReasonRouteTableUnclaimed = "RouteTableUnclaimed"
	// ReasonRouteTableInvalid: the table breaks Azure's own rules.
	ReasonRouteTableInvalid = "RouteTableInvalid"
	// ReasonRouteTableMissing: the table does not exist and may not be
	// created.
	ReasonRouteTableMissing = "RouteTableMissing"
	// ReasonRouteWriteFailed: the write carrying the node's route failed.
	ReasonRouteWriteFailed = "RouteWriteFailed"
	// ReasonInvalidConfiguration: routekeeper's configuration is invalid.
	ReasonInvalidConfiguration = "InvalidConfiguration"
)

// conditionReason maps a node's reason from the controller or the planner
// to the reason of its NetworkUnavailable condition. Reasons that already
// say what is wrong (PrefixConflict, OverlappingPodCIDR,
// OutsideClusterCIDR, NameConflict, NoNodeIP, NextHopOutsideVNet,
// InvalidRouteName, DuplicateNode) are kept as they are.
func conditionReason(r string) string {
	switch r {
	case controller.ReasonRouteCreated:
		return ReasonRouteCreated
	case string(plan.ReasonRouteLimit):
		return ReasonRouteTableFull
	case string(plan.ReasonTableClaimed):
		return ReasonRouteTableClaimed
	case string(plan.ReasonTableUnclaimed):
		return ReasonRouteTableUnclaimed
	case string(plan.ReasonInvalidTable):
		return ReasonRouteTableInvalid
	case string(plan.ReasonInvalidInput):
		return ReasonInvalidConfiguration
	case controller.ReasonTableMissing:
		return ReasonRouteTableMissing
	case controller.ReasonWriteFailed:
		return ReasonRouteWriteFailed
	case controller.ReasonNotReadBack, controller.ReasonRouteMissing, "":
		return ReasonNoRouteCreated
	case string(plan.ReasonPrefixConflict), string(plan.ReasonNameConflict), string(plan.ReasonOverlappingPodCIDR),
		string(plan.ReasonOutsideClusterCIDR), string(plan.ReasonNoNodeIP), string(plan.ReasonInvalidRouteName),
		string(plan.ReasonDuplicateNode), string(plan.ReasonNextHopOutsideVNet), string(plan.ReasonRouteNotManaged),
		controller.ReasonSubnetTable:
		return r
	}
	return ReasonNoRouteCreated
}

// Event reasons.
const (
	// EventFailedToCreateRoute (Warning, on the Node) is the Kubernetes
	// route controller's reason; the note starts with the specific reason.
	EventFailedToCreateRoute = "FailedToCreateRoute"
	// EventRouteMissing (Warning, on the Node) is observe mode's: the
	// platform has not written the node's route (or wrote a wrong one).
	EventRouteMissing = "RouteMissing"
	// EventRouteConflict (Warning, on the Node) is observe mode's for a
	// node whose route cannot exist as the cluster is configured.
	EventRouteConflict = "RouteConflict"
	// EventRouteForwardedByForeignRoute (Warning, on the Node): a route
	// routekeeper does not own already sends the pod CIDR to the node.
	EventRouteForwardedByForeignRoute = "RouteNotManaged"
	// EventStaleRoutes (Warning, on routekeeper's Pod) is observe mode's:
	// routes of deleted nodes or old pod CIDRs are still in the table.
	EventStaleRoutes = "StaleRoutes"
)

// The event actions (events.k8s.io requires one).
const (
	actionCreateRoute   = "CreateRoute"
	actionObserveRoutes = "ObserveRoutes"
	actionGuardSubnet   = "GuardSubnetAssociation"
)

// associationEvent returns the event reason of a guard finding ("" for
// none) and whether it is a warning: the controller's own
// (Association.EventReason and EventType), so logs, events and doctor
// agree.
func associationEvent(a controller.Association) (reason string, warning bool) {
	return a.EventReason(), a.EventType() == "Warning"
}
