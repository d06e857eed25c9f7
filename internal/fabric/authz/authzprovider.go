package authz

import (
	"context"
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Provider checks every request as ARM does (role assignments, the
// join actions of what a write references, locks, deny policies) and
// serves Microsoft.Authorization at every scope and the principals of the
// control endpoint.
type Provider struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	// view reads the state in a transaction after settling the operations
	// that are due (the resource provider's view), for a policy check of
	// a write against the resource as stored.
	view   func(ctx context.Context, fn func(*store.Txn) error) error
	groups Groups
	authz  authzCache // the authorization state (authz_store.go); has its own lock
}

// Groups are the resource groups as their provider keeps them:
// authorization checks that the scope of an extension resource exists, and
// evaluates policy on a group as ARM returns it.
type Groups interface {
	// Require returns a resource group: 404 when it does not exist, 409
	// for a write while it is being deleted.
	Require(tx *store.Txn, sub, rg string, write bool) (*store.RGRow, error)
	// Body is a resource group as GET returns it.
	Body(rg *store.RGRow) any
}

// Config is what a Provider is made of.
type Config struct {
	Store  *store.Store
	Log    *slog.Logger
	Now    func() time.Time
	View   func(ctx context.Context, fn func(*store.Txn) error) error
	Groups Groups
}

// New returns the authorization of a fabric.
func New(c Config) *Provider {
	return &Provider{store: c.Store, log: c.Log, now: c.Now, view: c.View, groups: c.Groups}
}
