package app

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// dryRun observes and judges cfg's tables as run would, without writing:
// the results of the main table first, then each mirror's. The caller
// must call closeConn. A main table that could not be judged is an error.
func (a *App) dryRun(ctx context.Context, cfg *config.Config, scope observe.Scope) (all []*controller.Result, closeConn func(), err error) {
	s, err := a.OpenSession(ctx, cfg, ConnectOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	all = s.Set.DryRun(ctx, scope)
	if all[0].Verdict == nil {
		s.Close()
		return nil, nil, all[0].Err
	}
	return all, s.Close, nil
}

// judgeScope is what every command that gives an exit code observes, so
// that one state gets one answer: the networks of the node subnets and the
// mirrors' (an App Gateway subnet may sit in another VNet: a trace can
// start in any of them), the route tables their subnets really use and the
// NICs, which the verdict's reachability needs; access adds the caller's
// permissions, the locks and the policies (doctor and diff, which say what
// routekeeper may not do).
func judgeScope(cfg *config.Config, access bool) observe.Scope {
	var more []string
	for _, m := range cfg.Mirrors {
		more = append(more, m.Subnets...)
	}
	return observe.Scope{Routing: true, RoutingSubnets: more, NICs: true, Access: access}
}
