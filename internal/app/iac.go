package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/iac"
)

// IacCheck is routekeeper iac check: the plan (or ARM what-if result)
// judged against the cloud as it stands (read as run reads it, unless offline or unreadable: then
// rebuilt from the plan's own before-values), for the main table and each
// mirror. The report's notes say what was assumed.
func (a *App) IacCheck(ctx context.Context, cfg *config.Config, p iac.Changes, offline bool) (*iac.Report, error) {
	in, notes, err := a.iacInput(ctx, cfg, offline)
	if err != nil {
		return nil, err
	}
	rep, err := iac.Check(ctx, p, in)
	if errors.Is(err, iac.ErrBadValue) {
		return nil, BadInput(err)
	}
	if err != nil {
		return nil, err
	}
	rep.Notes = append(notes, rep.Notes...)
	return rep, nil
}

// iacInput is what the plan is judged with: the configuration, the nodes
// and, unless offline or unreachable, the cloud as it stands (run's
// observation, with the networks and the tables every subnet uses), for
// the main table and each mirror. The notes say what was not read when it
// was wanted: the cloud, or a mirror table (the plan is then not checked
// against that mirror).
func (a *App) iacInput(ctx context.Context, cfg *config.Config, offline bool) (iac.Input, []string, error) {
	if !offline {
		conn, err := a.Connect(ctx, cfg, ConnectOptions{ReadOnly: true})
		if err == nil {
			defer conn.Close()
			set, setErr := a.NewSet(ctx, cfg, conn.Client)
			if setErr != nil {
				return iac.Input{}, nil, setErr
			}
			// The cloud as doctor judges it: its findings are what the
			// apply may leave standing.
			all := set.DryRun(ctx, judgeScope(cfg, true))
			res := all[0]
			if res.Verdict != nil && res.Verdict.Decision.TableErr == nil {
				nodes := res.SourceNodes()
				in := iac.Input{Want: set.Main.Desired(nodes), Subnets: cfg.Subnets, Live: res.Observation, Standing: Findings(cfg, all)}
				var notes []string
				for i, m := range set.Mirrors {
					mr := all[i+1]
					if mr.Verdict == nil || mr.Verdict.Decision.TableErr != nil {
						// Judged without its table, the mirror would look
						// unassociated now and after: no finding, wrongly.
						a.Log.Warn("a mirror route table could not be read: the plan is not checked against it", "routeTable", cfg.Mirrors[i].RouteTable, "err", mr.Err)
						notes = append(notes, fmt.Sprintf("mirror route table %s could not be read (%v): the plan was not checked against it", armid.Short(cfg.Mirrors[i].RouteTable), mr.Err))
						continue
					}
					in.Mirrors = append(in.Mirrors, iac.Mirror{Want: m.Desired(nodes), Subnets: cfg.Mirrors[i].Subnets, Live: mr.Observation})
				}
				return in, notes, nil
			}
			// The route table could not be read (err was the
			// connection's, nil: this is the error of the read).
			err = res.Err
			if err == nil && res.Verdict != nil {
				err = res.Verdict.Decision.TableErr
			}
			if err == nil {
				err = errors.New("the route table could not be judged")
			}
		}
		if errors.Is(err, ErrBadInput) {
			return iac.Input{}, nil, err
		}
		a.Log.Warn("the cloud could not be read: the plan is judged against its own before-values", "err", err)
		note := "the cloud could not be read (" + err.Error() + "): the plan was judged against its own before-values"
		in, err := a.iacOffline(ctx, cfg)
		return in, []string{note}, err
	}
	in, err := a.iacOffline(ctx, cfg)
	return in, nil, err
}

// iacOffline is what the plan is judged with when the cloud is not read:
// the configuration as written and the nodes.
func (a *App) iacOffline(ctx context.Context, cfg *config.Config) (iac.Input, error) {
	src, err := a.NodeSource(ctx, cfg, nil)
	if err != nil {
		return iac.Input{}, err
	}
	nodes, err := src.Nodes(ctx)
	if err != nil {
		return iac.Input{}, fmt.Errorf("reading the nodes: %w", err)
	}
	ccfg := BaseControllerConfig(cfg)
	in := iac.Input{Want: controller.New(ccfg, nil, nil, a.Log).Desired(nodes), Subnets: cfg.Subnets}
	for _, m := range cfg.Mirrors {
		mc := controller.MirrorConfig(ccfg, MirrorOf(m))
		in.Mirrors = append(in.Mirrors, iac.Mirror{Want: controller.New(mc, nil, nil, a.Log).Desired(nodes), Subnets: m.Subnets})
	}
	return in, nil
}
