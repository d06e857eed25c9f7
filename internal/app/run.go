package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/finding"
)

// Reconciled is one reconcile of every table of a configuration: the main
// table's result and each mirror's, and what their verdicts leave to do.
type Reconciled struct {
	Main     *controller.Result
	Mirrors  []*controller.Result
	Findings []finding.Finding
}

// RunOnce is run --once: one reconcile of every table of cfg at once (a
// failing mirror delays neither the main table nor the other mirrors).
func (a *App) RunOnce(ctx context.Context, cfg *config.Config) (*Reconciled, error) {
	s, err := a.OpenSession(ctx, cfg, ConnectOptions{ApplyTopology: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	all := s.Set.Reconcile(ctx, judgeScope(cfg, true))
	return &Reconciled{Main: all[0], Mirrors: all[1:], Findings: Findings(cfg, all)}, nil
}

// Err is the main table's error: the reconcile failed. A decision of its
// verdict (verdict.Decided: the table is missing and not created, the
// plan refused) is not one: the findings report it.
func (r *Reconciled) Err() error { return failed(r.Main.Err) }

// MirrorErr is the mirrors' errors, each naming its mirror; a decision of
// a mirror's verdict is one of the findings instead.
func (r *Reconciled) MirrorErr() error {
	var errs []error
	for _, m := range r.Mirrors {
		if err := failed(m.Err); err != nil {
			errs = append(errs, fmt.Errorf("mirror route table %s: %w", controller.TableName(m.TableID), err))
		}
	}
	return errors.Join(errs...)
}
