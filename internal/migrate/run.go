package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Cloud is what a migration needs of the cloud back-end
// (internal/cloud/azure implements it).
type Cloud interface {
	observe.Reader
	PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error)
	SetSubnetRouteTable(ctx context.Context, subnetID, routeTableID, etag string) (*observe.Subnet, error)
	DeleteRouteTable(ctx context.Context, id, etag string) error
}

// Errors of Run.
var (
	// ErrConflicts: the migration is refused; Plan.Conflicts says why.
	ErrConflicts = errors.New("the migration is refused")
	// ErrVerify: the new table read back after the copy lacks routes.
	ErrVerify = errors.New("the new route table does not hold the copied routes")
)

// maxRetries bounds the re-reads after a concurrent write (412), an
// operation in progress (409) or a lost answer (armerr.ErrOutcomeUnknown) in
// one run.
const maxRetries = 8

// settlePause is the first pause before reading again after a lost answer
// or a 409; it grows by as much with each retry (at most 18 s in all).
const settlePause = 500 * time.Millisecond

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RunOptions tune Run.
type RunOptions struct {
	// DryRun computes the plan from the live state and writes nothing.
	DryRun bool
	// Progress, if set, is called before each step runs (status Pending)
	// and after it ran (status Applied). An error stops the migration
	// there, as an interruption would: running again continues.
	Progress func(Step) error
}

// Read reads the live state of a migration through the observer: both
// tables and the subnets (configured, and associated with either table).
func Read(ctx context.Context, c Cloud, o Options) (State, error) {
	obs := observe.Observe(ctx, c, observe.Scope{Table: o.From, Tables: []string{o.To}, Subnets: o.Subnets, ListedSubnets: true})
	var st State
	var err error
	if st.Old, err = tableOf(obs, o.From); err != nil {
		return st, err
	}
	if st.New, err = tableOf(obs, o.To); err != nil {
		return st, err
	}
	var ids []string
	addIDs := func(list []string) {
		for _, id := range list {
			if !armid.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	addIDs(o.Subnets)
	if st.Old != nil {
		addIDs(st.Old.Subnets)
	}
	if st.New != nil {
		addIDs(st.New.Subnets)
	}
	for _, id := range ids {
		s, _ := obs.Subnet(id)
		if s.Err != nil {
			return st, s.Err // it names the operation and the subnet
		}
		st.Subnets = append(st.Subnets, SubnetState{ID: id, Subnet: s.Subnet})
	}
	return st, nil
}

// tableOf is the table id as obs read it: nil when it does not exist.
func tableOf(obs *observe.Observation, id string) (*route.Table, error) {
	t, _ := obs.Table(id)
	if t.Err != nil {
		return nil, t.Err // it names the operation and the table
	}
	return t.Table, nil
}

// Run migrates: it reads the live state, computes the plan, runs the first
// pending step, and starts over until nothing is pending. With DryRun it
// returns the plan without writing. The plan returned shows each step's
// final status (Applied for the steps this run did). Conflicts stop it
// before any write with ErrConflicts.
func Run(ctx context.Context, c Cloud, o Options, ro RunOptions) (*Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	_, w0 := c.Calls()
	// applied holds the steps this run did, as they were when they ran:
	// the final plan shows what was done, not the state it left.
	applied := map[string]Step{}
	finish := func(p *Plan) *Plan {
		if p == nil {
			return nil
		}
		for i := range p.Steps {
			if a, ok := applied[p.Steps[i].key()]; ok && p.Steps[i].Status == Done {
				p.Steps[i].Status, p.Steps[i].Detail, p.Steps[i].Routes = Applied, a.Detail, a.Routes
			}
		}
		_, w1 := c.Calls()
		p.Writes = w1 - w0
		return p
	}
	retries := 0
	runs := map[string]int{}
	for {
		st, err := Read(ctx, c, o)
		if err != nil {
			return nil, err
		}
		p, err := Compute(o, st)
		if err != nil {
			return nil, err
		}
		if len(p.Conflicts) > 0 {
			return finish(p), ErrConflicts
		}
		pending := p.Pending()
		if ro.DryRun || len(pending) == 0 {
			return finish(p), nil
		}
		step := pending[0]
		if ro.Progress != nil {
			if err := ro.Progress(step); err != nil {
				return finish(p), err
			}
		}
		err = runStep(ctx, c, o, p, st, step)
		switch {
		case errors.Is(err, armerr.ErrOutcomeUnknown) || errors.Is(err, armerr.ErrConflict):
			// The write was sent and its answer lost, or an operation
			// (ours, whose answer was lost, most likely) is still running
			// on the resource: give ARM a moment to finish it, then read
			// again; the next plan says whether the step is done or still
			// pending. A write is never sent again blind.
			if retries++; retries > maxRetries {
				return finish(p), fmt.Errorf("step %d %s %s: gave up after %d concurrent changes or lost answers: %w", step.N, step.Action, step.Resource, retries-1, err)
			}
			if errors.Is(err, armerr.ErrOutcomeUnknown) {
				applied[step.key()] = step // shown as applied if the read finds it done
			}
			if err := pause(ctx, time.Duration(retries)*settlePause); err != nil {
				return finish(p), err
			}
			continue
		case errors.Is(err, armerr.ErrPreconditionFailed) || errors.Is(err, errStale):
			// Someone wrote meanwhile (a running controller): read again.
			if retries++; retries > maxRetries {
				return finish(p), fmt.Errorf("step %d %s %s: gave up after %d concurrent changes or lost answers: %w", step.N, step.Action, step.Resource, retries-1, err)
			}
			continue
		case err != nil:
			return finish(p), fmt.Errorf("step %d %s %s: %w", step.N, step.Action, step.Resource, err)
		}
		if runs[step.key()]++; runs[step.key()] > maxRetries {
			return finish(p), fmt.Errorf("step %d %s %s ran %d times and is still not done: something keeps undoing the migration", step.N, step.Action, step.Resource, maxRetries)
		}
		applied[step.key()] = step
		if step.Action == ActionCopy {
			for _, v := range p.Steps {
				if v.Action == ActionVerify {
					applied[v.key()] = v
				}
			}
		}
		if ro.Progress != nil {
			step.Status = Applied
			if err := ro.Progress(step); err != nil {
				return finish(p), err
			}
		}
	}
}

// runStep does one step. Each write carries If-Match of the state the step
// was computed from.
func runStep(ctx context.Context, c Cloud, o Options, p *Plan, st State, s Step) error {
	switch s.Action {
	case ActionCopy:
		if _, err := c.PutRouteTable(ctx, p.desired, st.New.Etag); err != nil {
			return err
		}
		// Verify: read the table back (the PUT's answer is already a read
		// after the operation; a read makes sure nothing else wrote since).
		if err := verify(ctx, c, o, p); err != nil {
			return fmt.Errorf("verifying: %w", err)
		}
		return nil
	case ActionVerify:
		return verify(ctx, c, o, p)
	case ActionAssociate:
		// The state was read just now: the new table holds every route of
		// the old one (copy-routes and verify are done, or this step would
		// not be the first pending one).
		if i := slices.IndexFunc(p.Steps, func(x Step) bool { return x.Action == ActionCopy }); i >= 0 && p.Steps[i].Status != Done {
			return fmt.Errorf("internal error: associating before the copy is verified")
		}
		// Tables change under a running controller: check again, right
		// before the write, that the new table holds every route the old
		// one holds now.
		if err := recheck(ctx, c, o, st); err != nil {
			return err
		}
		var etag string
		for _, ss := range st.Subnets {
			if armid.Same(ss.ID, s.Resource) && ss.Subnet != nil {
				etag = ss.Subnet.Etag
			}
		}
		_, err := c.SetSubnetRouteTable(ctx, s.Resource, o.To, etag)
		return err
	case ActionMark:
		t := cloneTable(st.Old)
		route.SetTag(t.Tags, route.MigratedToTag, o.To)
		route.DeleteTag(t.Tags, route.ClaimTag)
		route.DeleteTag(t.Tags, route.ClusterCIDRsTag)
		_, err := c.PutRouteTable(ctx, t, st.Old.Etag)
		return err
	case ActionDelete:
		if len(st.Old.Subnets) > 0 {
			return fmt.Errorf("the old table is still associated with %s; not deleting it", strings.Join(st.Old.Subnets, ", "))
		}
		err := c.DeleteRouteTable(ctx, o.From, st.Old.Etag)
		if errors.Is(err, armerr.ErrNotFound) {
			return nil
		}
		return err
	}
	return fmt.Errorf("internal error: unknown step %q", s.Action)
}

// errStale: the state changed since the plan was computed; read again.
var errStale = errors.New("the route tables changed since they were read")

// verify reads the new table through the observer and fails with
// ErrVerify unless it holds every route the copy must carry.
func verify(ctx context.Context, c Cloud, o Options, p *Plan) error {
	back, err := tableOf(observe.Observe(ctx, c, observe.Scope{Table: o.To}), o.To)
	switch {
	case err != nil:
		return err
	case back == nil:
		return fmt.Errorf("%w: %s", ErrMissing, o.To)
	}
	if missing := p.holds(back); len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrVerify, strings.Join(missing, ", "))
	}
	return nil
}

// recheck reads both tables again and fails with errStale unless the new
// table holds every route of the old one that the copy must carry.
func recheck(ctx context.Context, c Cloud, o Options, st State) error {
	obs := observe.Observe(ctx, c, observe.Scope{Table: o.From, Tables: []string{o.To}})
	old, err := tableOf(obs, o.From)
	if err != nil || old == nil {
		return err
	}
	nt, err := tableOf(obs, o.To)
	if err != nil {
		return err
	}
	if nt == nil {
		return fmt.Errorf("%w: %s", ErrMissing, o.To)
	}
	fresh := State{Old: old, New: nt, Subnets: st.Subnets}
	p, err := Compute(o, fresh)
	if err != nil {
		return err
	}
	if len(p.Conflicts) > 0 {
		return errStale
	}
	if missing := p.holds(nt); len(missing) > 0 {
		return fmt.Errorf("%w: the old table gained %s", errStale, strings.Join(missing, ", "))
	}
	return nil
}
