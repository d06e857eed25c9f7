package controller

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/verdict"

	"github.com/routekeeper/routekeeper/internal/source"
)

// Mirror is another route table that holds the cluster's pod routes beside
// its own routes (mirror route tables, docs/mirrors.md): an Application
// Gateway subnet's table, a hub subnet's. Each mirror is kept by a
// controller of its own, made with MirrorConfig, so that a throttled,
// missing, full or conflicting mirror never delays the main table or the
// other mirrors.
type Mirror struct {
	RouteTableID string
	// Subnets must stay associated with the mirror table.
	Subnets []string
	// Policy and Restore are the mirror's association guard's.
	Policy  assoc.Policy
	Restore bool
	// CreateTable allows creating the mirror table when it is missing;
	// Location is where (default: the main table's Location).
	CreateTable bool
	Location    string
}

// MirrorConfig is the configuration of a mirror's controller: the main
// controller's cluster, CIDRs, route limit and timings, with the mirror's
// table, subnets and association policy. A mirror is in manage mode: in
// observe mode the platform (AKS) writes the main table only, so
// routekeeper writes the mirrors from the nodes. When the main table
// stands down from host routes, so do the mirrors: their pod routes lead
// nowhere once the cluster runs an overlay.
func MirrorConfig(main Config, m Mirror) Config {
	c := main
	c.RouteTableID = m.RouteTableID
	c.Subnets = append([]string(nil), m.Subnets...)
	c.Policy, c.Restore = m.Policy, m.Restore
	c.CreateTable = m.CreateTable
	if m.Location != "" {
		c.Location = m.Location
	}
	if c.Mode != verdict.StandDown {
		c.Mode = verdict.Manage
	}
	// Listing a table under mirrors: is the claim: routekeeper tags it as
	// this cluster's with its first write, so routes of nodes that left
	// are deleted from it like from the main table (an unclaimed table
	// keeps them, since they might be another cluster's).
	c.ClaimTable = true
	return c
}

// TableName is the short name of a route table for logs, metrics (the
// `table` label) and events: the last segment of its ARM ID.
func TableName(id string) string { return armid.Name(id) }

// Set is the controllers of one cluster: the main table's and one per
// mirror table, all fed by one node source. Each runs its own loop (batch
// window, resync, guard, backoff) and reads and writes only its own table
// and subnets, so they never wait for each other.
type Set struct {
	Main    *Controller
	Mirrors []*Controller
}

// All returns the main controller followed by the mirrors'.
func (s *Set) All() []*Controller {
	return append([]*Controller{s.Main}, s.Mirrors...)
}

// Reconcile reconciles every table once, all at the same time, from one
// read of the nodes; results[0] is the main table's, then the mirrors' in
// order. A failing mirror shows in its own result only. more widens the
// main table's observation (run --once judges what doctor judges).
func (s *Set) Reconcile(ctx context.Context, more observe.Scope) []*Result {
	return s.each(ctx, false, more)
}

// DryRun is Reconcile without writes (diff, doctor, trace); more widens
// the main table's observation (Controller.DryRun).
func (s *Set) DryRun(ctx context.Context, more observe.Scope) []*Result {
	return s.each(ctx, true, more)
}

// each runs f on every controller at the same time, with the nodes of
// one read of the main controller's source: the tables are judged from
// the same nodes, and an inventory's IPAM runs once. No controller's
// source is touched, so a Set's loops may run meanwhile.
func (s *Set) each(ctx context.Context, dryRun bool, more observe.Scope) []*Result {
	nodes, err := s.Main.src.Nodes(s.Main.forTable(ctx))
	all := s.All()
	out := make([]*Result, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The main table's observation is widened as asked; each
			// mirror's reads the permissions it needs too.
			scope := observe.Scope{Access: more.Access}
			if i == 0 {
				scope = more
			}
			out[i] = c.pass(ctx, slices.Clone(nodes), err, dryRun, scope)
		}()
	}
	wg.Wait()
	return out
}

// Run runs every controller's loop until ctx is done (then nil) or one of
// them fails for good (the node source's watch ended with an error), which
// stops the others. The controllers must share one source made with Share.
func (s *Set) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := s.All()
	errs := make(chan error, len(all))
	for _, c := range all {
		go func() { errs <- c.Run(ctx) }()
	}
	var first error
	for range all {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// Shared is a node source that several controllers watch through one
// underlying Watch (the Kubernetes source keeps a single change callback).
// Nodes reads the underlying source.
type Shared struct {
	src Source
	log *slog.Logger

	mu      sync.Mutex
	subs    map[int]func()
	next    int
	started bool
	done    chan struct{}
	err     error
}

// Share makes src watchable by several controllers at once.
func Share(src Source, log *slog.Logger) *Shared {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Shared{src: src, log: log, subs: map[int]func(){}, done: make(chan struct{})}
}

// Nodes implements Source.
func (s *Shared) Nodes(ctx context.Context) ([]source.Node, error) { return s.src.Nodes(ctx) }

// Watch implements Source: changed is called on every change until ctx is
// done. The underlying Watch starts with the first watcher and runs until
// that watcher's ctx is done; a Set's controllers share one ctx.
func (s *Shared) Watch(ctx context.Context, changed func()) error {
	s.mu.Lock()
	id := s.next
	s.next++
	s.subs[id] = changed
	if !s.started {
		s.started = true
		go func() {
			err := s.src.Watch(ctx, s.notify)
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			close(s.done)
		}()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}()
	// A change delivered before this registration (to the watchers that
	// came first) would be missed until a resync: look once now.
	changed()
	select {
	case <-ctx.Done():
		return nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err == nil && ctx.Err() == nil {
			return errors.New("the node source stopped watching")
		}
		return s.err
	}
}

func (s *Shared) notify() {
	s.mu.Lock()
	subs := make([]func(), 0, len(s.subs))
	for _, f := range s.subs {
		subs = append(subs, f)
	}
	s.mu.Unlock()
	for _, f := range subs {
		f()
	}
}
