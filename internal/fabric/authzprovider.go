package fabric

import (
	"context"
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// authzProvider checks every request as ARM does (role assignments, the
// join actions of what a write references, locks, deny policies) and
// serves Microsoft.Authorization at every scope and the principals of the
// control endpoint.
type authzProvider struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	// view reads the state in a transaction after settling the operations
	// that are due (the resource provider's view), for a policy check of
	// a write against the resource as stored.
	view  func(ctx context.Context, fn func(*store.Txn) error) error
	authz authzCache // the authorization state (authz_store.go); has its own lock
}

// authzConfig is what an authzProvider is made of.
type authzConfig struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	view  func(ctx context.Context, fn func(*store.Txn) error) error
}

// newAuthzProvider returns the authorization of a fabric.
func newAuthzProvider(c authzConfig) *authzProvider {
	return &authzProvider{store: c.store, log: c.log, now: c.now, view: c.view}
}
