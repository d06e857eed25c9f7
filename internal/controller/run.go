package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// shutdownGrace bounds the reconcile that is in flight when Run is asked to
// stop: it finishes (a PUT already sent completes in ARM anyway, and the
// node status must say what happened) but not forever.
const shutdownGrace = 30 * time.Second

// lostAnswerMaxWait caps the wait after a reconcile that gave up on lost
// answers (each of its attempts read the table back first): the backoff
// still doubles, so a path that keeps losing answers costs a pass of at
// most MaxAttempts reads and writes every few seconds.
const lostAnswerMaxWait = 5 * time.Second

// Run is the daemon: it reconciles at start, after node changes, every
// Resync, and after a failure with growing backoff (or after ARM's
// Retry-After when throttled; at most lostAnswerMaxWait when the writes'
// answers were lost). It returns nil when ctx is cancelled, after
// the reconcile in flight has finished.
//
// Node changes are debounced: each one pushes the reconcile BatchWindow
// further out, but never later than MaxBatchDelay after the first change
// still waiting. A single node gets its route BatchWindow after it changed;
// a burst of node registrations becomes one write per MaxBatchDelay instead
// of one per node. Changes that arrive while a reconcile runs are batched
// from the time they arrived, so they are not delayed by the reconcile.
func (c *Controller) Run(ctx context.Context) error {
	b := newBatcher(c.cfg.BatchWindow, c.cfg.MaxBatchDelay, time.Now)
	watchErr := make(chan error, 1)
	go func() { watchErr <- c.src.Watch(ctx, b.notify) }()

	// The guard runs on its own loop: a reconcile waiting on a long-running
	// write, on the SDK's retries or on the node source never delays an
	// association repair. When it needs a reconcile it kicks this loop.
	kick := make(chan struct{}, 1)
	guardDone := make(chan struct{})
	go func() {
		defer close(guardDone)
		c.guardLoop(ctx, kick)
	}()
	defer func() { <-guardDone }()

	resync := time.NewTicker(c.cfg.Resync)
	defer resync.Stop()
	batch := time.NewTimer(time.Hour)
	batch.Stop()
	defer batch.Stop()
	var retry <-chan time.Time
	backoff := c.cfg.RetryBackoff
	reconcileNow := make(chan struct{}, 1)
	reconcileNow <- struct{}{} // first reconcile at start

	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watchErr:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-b.signal:
			if d, ok := b.due(); ok {
				batch.Reset(d)
			}
			continue
		case <-kick:
			// The guard followed a swap, found a route missing or needs
			// the table (re)made; a failed reconcile waits for its retry.
			if retry != nil {
				continue
			}
		case <-batch.C:
		case <-resync.C:
		case <-retry:
		case <-reconcileNow:
		}
		retry = nil
		// Every change seen so far is covered by this reconcile, which
		// reads the nodes afresh; later ones start a new batch.
		b.take()
		batch.Stop()

		// The reconcile in flight finishes even if ctx is cancelled now.
		rctx, cancel := graceContext(ctx, shutdownGrace)
		res := c.Reconcile(rctx)
		cancel()
		c.log.Info(res.Summary())
		c.logUnrouted(res)
		if d, ok := b.due(); ok {
			// Changes arrived during the reconcile.
			batch.Reset(d)
		}
		if res.Err == nil {
			backoff = c.cfg.RetryBackoff
			continue
		}
		wait := backoff
		var te *armerr.ThrottledError
		switch {
		case errors.As(res.Err, &te) && te.RetryAfter > wait:
			wait = te.RetryAfter
		case errors.Is(res.Err, armerr.ErrOutcomeUnknown):
			// A lost answer says nothing of the next one: however many
			// passes in a row lost theirs, the next starts from a fresh
			// read seconds later, not minutes.
			wait = min(wait, lostAnswerMaxWait)
		}
		c.log.Error("reconcile failed; will retry", "err", res.Err, "retry_in", wait)
		retry = time.After(wait)
		backoff = min(backoff*2, c.cfg.MaxRetryBackoff)
	}
}

// guardLoop runs the association guard every GuardInterval until ctx is
// done, kicking the reconcile loop when a guard result needs one. It needs
// no nodes: association repair works while the node source is unavailable,
// and the route check uses the last known nodes.
func (c *Controller) guardLoop(ctx context.Context, kick chan<- struct{}) {
	if len(c.cfg.Subnets) == 0 {
		return
	}
	tick := time.NewTicker(c.cfg.GuardInterval)
	defer tick.Stop()
	logged := "" // the state of the last cycle logged
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gctx, cancel := graceContext(ctx, shutdownGrace)
		g := c.Guard(gctx)
		cancel()
		// A cycle is logged when it wrote (a repair, or a refused write
		// tried again after its wait) or found things otherwise than the
		// last cycle logged: a problem that stays, or a write held back
		// while a refusal is waited out, is said once, not every cycle.
		state := ""
		if g.AssociationProblems() > 0 || g.Err != nil || g.NeedsWrite {
			state = fmt.Sprint(g.AssociationProblems(), g.Unrouted(), g.NeedsWrite, g.WriteHeld, g.Err)
		}
		if g.Repairs() > 0 || g.Writes > 0 || state != logged && state != "" {
			c.log.Info(g.Summary())
		}
		logged = state
		if g.NeedsReconcile() {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
}

// batcher debounces node change notifications. notify may be called from
// any goroutine (the source's event handlers); the loop reads signal and
// asks due when the reconcile should start.
type batcher struct {
	window, maxDelay time.Duration
	now              func() time.Time
	signal           chan struct{}

	mu    sync.Mutex
	first time.Time // first change not yet covered by a reconcile; zero if none
	last  time.Time // latest such change
}

func newBatcher(window, maxDelay time.Duration, now func() time.Time) *batcher {
	return &batcher{window: window, maxDelay: maxDelay, now: now, signal: make(chan struct{}, 1)}
}

// notify records a change.
func (b *batcher) notify() {
	b.mu.Lock()
	t := b.now()
	if b.first.IsZero() {
		b.first = t
	}
	b.last = t
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// due returns how long from now the reconcile of the pending changes
// should start: BatchWindow after the latest change, but no later than
// MaxBatchDelay after the first. ok is false when nothing is pending.
func (b *batcher) due() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() {
		return 0, false
	}
	at := b.last.Add(b.window)
	if limit := b.first.Add(b.maxDelay); limit.Before(at) {
		at = limit
	}
	return max(at.Sub(b.now()), 0), true
}

// take marks every pending change as covered by the reconcile starting now.
func (b *batcher) take() {
	b.mu.Lock()
	b.first, b.last = time.Time{}, time.Time{}
	b.mu.Unlock()
	select {
	case <-b.signal:
	default:
	}
}

// graceContext is ctx without its cancellation, cancelled grace after ctx
// is: work started before shutdown gets to finish, within bounds.
func graceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(rctx, func() { t.Stop() })
	})
	return rctx, func() { stop(); cancel() }
}
