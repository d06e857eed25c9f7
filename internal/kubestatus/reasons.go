package kubestatus

// The NetworkUnavailable condition's reasons are the verdict's, from
// internal/reason: RouteCreated and RouteNotManaged when False, any other
// reason when True.

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
