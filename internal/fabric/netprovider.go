package fabric

import (
	"context"
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// netProvider serves Microsoft.Network, the resource groups that hold its
// resources, and the long-running operations on both.
type netProvider struct {
	store      *store.Store
	opDuration time.Duration
	routeLimit int
	pageSize   int
	log        *slog.Logger
	now        func() time.Time
	faults     faultInjector
	polls      pollAuthorizer
	types      map[string]*resourceType // the types served (types.go)
}

// netConfig is what a netProvider is made of.
type netConfig struct {
	store      *store.Store
	opDuration time.Duration
	routeLimit int
	pageSize   int
	log        *slog.Logger
	now        func() time.Time
	faults     faultInjector
	polls      pollAuthorizer
}

// newNetProvider returns the provider of Microsoft.Network.
func newNetProvider(c netConfig) *netProvider {
	p := &netProvider{store: c.store, opDuration: c.opDuration, routeLimit: c.routeLimit, pageSize: c.pageSize,
		log: c.log, now: c.now, faults: c.faults, polls: c.polls}
	p.types = p.resourceTypes()
	return p
}

// faultInjector is the fault injection the provider's writes go through.
type faultInjector interface {
	// failOperation reports whether the operation starting now on the
	// resource fails, and with which code.
	failOperation(resourceID string) (code string, fail bool)
	// maybeIntrude plays another writer right after a GET of a route table.
	maybeIntrude(ctx context.Context, tableKey string)
}

// pollAuthorizer decides whether the caller may poll an operation.
type pollAuthorizer interface {
	authorizePoll(q *api.Request, o *store.Operation, endpoint string) error
}
