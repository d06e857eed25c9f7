package network

import (
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Azure's limits, as the platform has them by default since Azure update
// 562695 (May 2026: "Azure Virtual Network has increased the default
// platform limits for 1,000 routes per route table, and 600 route tables
// per subscription", quoted in MicrosoftDocs/azure-docs PR #128572; the
// limits page, azure-subscription-service-limits, lists "User-defined
// routes per route table: 1,000"). Networking limits apply per
// subscription and region, which is how the usages API reports them
// (usages.go). Older subscriptions and documents have 400 and 200: the
// fabric's flags keep them for tests.
const (
	DefaultRouteLimit  = 1000
	DefaultTablesLimit = 600
)

// Provider serves Microsoft.Network, the resource groups that hold its
// resources, and the long-running operations on both.
type Provider struct {
	store      *store.Store
	opDuration time.Duration
	routeLimit int
	// tablesLimit is the route tables a subscription may hold in one
	// location.
	tablesLimit int
	pageSize    int
	log         *slog.Logger
	now         func() time.Time
	faults      FaultInjector
	polls       PollAuthorizer
	types       map[string]*resourceType // the types served (types.go)
}

// Config is what a Provider is made of.
type Config struct {
	Store      *store.Store
	OpDuration time.Duration
	// RouteLimit is the routes a route table may hold, and TablesLimit the
	// route tables a subscription may hold in one location; 0 means
	// Azure's (DefaultRouteLimit, DefaultTablesLimit).
	RouteLimit  int
	TablesLimit int
	PageSize    int
	Log         *slog.Logger
	Now         func() time.Time
	Faults      FaultInjector
	Polls       PollAuthorizer
}

// New returns the provider of Microsoft.Network.
func New(c Config) *Provider {
	p := &Provider{store: c.Store, opDuration: c.OpDuration, routeLimit: c.RouteLimit, tablesLimit: c.TablesLimit,
		pageSize: c.PageSize, log: c.Log, now: c.Now, faults: c.Faults, polls: c.Polls}
	if p.routeLimit <= 0 {
		p.routeLimit = DefaultRouteLimit
	}
	if p.tablesLimit <= 0 {
		p.tablesLimit = DefaultTablesLimit
	}
	p.types = p.resourceTypes()
	return p
}

// FaultInjector is the fault injection the provider's writes go through.
type FaultInjector interface {
	// FailOperation reports whether the operation starting now on the
	// resource fails, and with which code.
	FailOperation(resourceID string) (code string, fail bool)
	// Intrude decides whether the intruder rewrites the route table
	// right after a GET of it, and tosses the coin it plays with.
	Intrude(tableKey string) (strike bool, coin int)
}

// PollAuthorizer decides whether the caller may poll an operation.
type PollAuthorizer interface {
	AuthorizePoll(q *api.Request, o *store.Operation, endpoint string) error
}
