package controller

import (
	"errors"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// A write Azure refuses for who routekeeper is or what governs the scope
// (armerr.ErrDenied: a missing role, a missing join, a lock, a deny
// policy) fails the same way until someone grants, unlocks or exempts, so
// it is not retried at every guard cycle: the refused resource waits, a
// guard interval first and twice as long each time it is refused again
// (at most deniedMaxWait guard intervals, and never longer than
// MaxRetryBackoff), while every other write goes on. Meanwhile the pass
// reports the refusal it remembers, so the finding, the node condition and
// the metric stay; the first write after the wait that succeeds clears it.
// A permission granted back is thus used at the next attempt, at most that
// wait later, without a restart.

// deniedMaxWait caps the wait of a refused write, in guard intervals.
const deniedMaxWait = 16

// refusal is a resource whose write was refused.
type refusal struct {
	err  error
	wait time.Duration
	next time.Time
}

// heldBack returns the refusal remembered for the write of id while it
// waits; ok is false when the write may be tried.
func (c *Controller) heldBack(id string) (err error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.refusals[armid.Key(id)]
	if r == nil || !c.now().Before(r.next) {
		return nil, false
	}
	return r.err, true
}

// heldOutcome is the outcome of a write not sent because its last refusal
// err is being waited out.
func heldOutcome(err error) verdict.Write {
	w := outcome(err)
	w.Held = true
	return w
}

// wrote records the outcome of a write of id: a refusal starts (or
// doubles) its wait, a lost answer is logged and changes nothing, anything
// else ends the wait.
func (c *Controller) wrote(write, id string, err error) {
	w := outcome(err)
	if w.Lost {
		// Sent, and nothing known of it: a refusal waited out stays as
		// it was until an answer says more.
		cause := err
		if ue := (*armerr.OutcomeUnknownError)(nil); errors.As(err, &ue) {
			cause = ue.Err
		}
		c.log.Warn("the answer to a write was lost, so its outcome is unknown: reading the resource back and planning from what is there instead of sending the write again",
			"write", write, "resource", id, "cause", cause)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := armid.Key(id)
	r := c.refusals[key]
	if w.Refused == nil {
		if r != nil {
			delete(c.refusals, key)
			if err == nil {
				c.log.Info("a write Azure refused before went through", "write", write, "resource", id)
			}
		}
		return
	}
	if r == nil {
		r = &refusal{}
		if c.refusals == nil {
			c.refusals = map[string]*refusal{}
		}
		c.refusals[key] = r
	}
	limit := min(c.cfg.MaxRetryBackoff, deniedMaxWait*c.cfg.GuardInterval)
	r.err, r.wait = err, min(max(r.wait*2, c.cfg.GuardInterval), max(limit, c.cfg.GuardInterval))
	r.next = c.now().Add(r.wait)
	d := verdict.Deny(write, id, *w.Refused)
	c.log.Warn("Azure refused a write; not retried until the wait is over, the other writes go on",
		"write", write, "resource", id, "code", d.Code, "why", d.Why, "fix", d.Fix, "retryIn", r.wait)
}

// outcome classifies a write's error for the verdict: raced (412, 409: the
// pass observes again), lost (sent, its answer lost: the pass observes
// again, invariant 2), refused (what ARM's refusal named) or full (too many
// routes for Azure, with its number).
func outcome(err error) verdict.Write {
	if errors.Is(err, armerr.ErrOutcomeUnknown) {
		return verdict.Write{Err: err, Lost: true}
	}
	w := verdict.Write{Err: err, Raced: errors.Is(err, armerr.ErrPreconditionFailed) || errors.Is(err, armerr.ErrConflict),
		Refused: observe.RefusalOf(err)}
	var rl *armerr.RouteLimitError
	if errors.As(err, &rl) {
		w.Full, w.FullLimit = true, rl.Limit
	}
	return w
}
