package network

import (
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Provider serves Microsoft.Network, the resource groups that hold its
// resources, and the long-running operations on both.
type Provider struct {
	store      *store.Store
	opDuration time.Duration
	routeLimit int
	pageSize   int
	log        *slog.Logger
	now        func() time.Time
	faults     FaultInjector
	polls      PollAuthorizer
	types      map[string]*resourceType // the types served (types.go)
}

// Config is what a Provider is made of.
type Config struct {
	Store      *store.Store
	OpDuration time.Duration
	RouteLimit int
	PageSize   int
	Log        *slog.Logger
	Now        func() time.Time
	Faults     FaultInjector
	Polls      PollAuthorizer
}

// New returns the provider of Microsoft.Network.
func New(c Config) *Provider {
	p := &Provider{store: c.Store, opDuration: c.OpDuration, routeLimit: c.RouteLimit, pageSize: c.PageSize,
		log: c.Log, now: c.Now, faults: c.Faults, polls: c.Polls}
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
