package controller

import (
	"context"
	"errors"
	"time"

	"github.com/routekeeper/routekeeper/internal/cloud"
)

// shutdownGrace bounds the reconcile that is in flight when Run is asked to
// stop: it finishes (a PUT already sent completes in ARM anyway, and the
// node status must say what happened) but not forever.
const shutdownGrace = 30 * time.Second

// Run is the daemon: it reconciles at start, after node changes (batched
// for BatchWindow), every Resync, and after a failure with growing backoff
// (or after ARM's Retry-After when throttled). It returns nil when ctx is
// cancelled, after the reconcile in flight has finished.
func (c *Controller) Run(ctx context.Context) error {
	trigger := make(chan struct{}, 1)
	notify := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	watchErr := make(chan error, 1)
	go func() { watchErr <- c.src.Watch(ctx, notify) }()

	resync := time.NewTicker(c.cfg.Resync)
	defer resync.Stop()
	guardTick := time.NewTicker(c.cfg.GuardInterval)
	defer guardTick.Stop()
	var batch, retry <-chan time.Time
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
		case <-trigger:
			if batch == nil {
				batch = time.After(c.cfg.BatchWindow)
			}
			continue
		case <-guardTick.C:
			if len(c.cfg.Subnets) == 0 || retry != nil {
				continue
			}
			gctx, cancel := graceContext(ctx, shutdownGrace)
			g := c.Guard(gctx)
			cancel()
			if g.Repairs() > 0 || g.AssociationProblems() > 0 || g.Err != nil {
				c.log.Info(g.Summary())
			}
			if !g.NeedsReconcile() {
				continue
			}
			// A swap was followed or a repair needs the table: reconcile now.
		case <-batch:
		case <-resync.C:
		case <-retry:
		case <-reconcileNow:
		}
		batch, retry = nil, nil

		// The reconcile in flight finishes even if ctx is cancelled now.
		rctx, cancel := graceContext(ctx, shutdownGrace)
		res := c.Reconcile(rctx)
		cancel()
		c.log.Info(res.Summary())
		if res.Err == nil {
			backoff = c.cfg.RetryBackoff
			continue
		}
		wait := backoff
		var te *cloud.ThrottledError
		if errors.As(res.Err, &te) && te.RetryAfter > wait {
			wait = te.RetryAfter
		}
		c.log.Error("reconcile failed; will retry", "err", res.Err, "retry_in", wait)
		retry = time.After(wait)
		backoff = min(backoff*2, c.cfg.MaxRetryBackoff)
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
