package app

import (
	"context"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/doctor"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/overlay"
	"github.com/routekeeper/routekeeper/internal/source"
)

// DoctorResult is doctor's report and whether routekeeper stands down
// from host routes (then the findings say what is left).
type DoctorResult struct {
	*doctor.Report
	StandDown bool
}

// Doctor is routekeeper doctor: the verdict of a dry run of every table of
// cfg (the main one, with its interconnect, the NICs and the caller's
// access; each mirror) turned into findings.
func (a *App) Doctor(ctx context.Context, cfg *config.Config) (*DoctorResult, error) {
	all, closeConn, err := a.dryRun(ctx, cfg, routingScope(cfg, true, true))
	if err != nil {
		return nil, err
	}
	defer closeConn()
	res := all[0]
	rep := doctor.Check(doctor.Input{
		Cluster:      cfg.Cluster.Name,
		ClusterCIDRs: cfg.Cluster.ClusterCIDRs,
		Limit:        cfg.RouteTable.RouteLimit,
		TableID:      cfg.RouteTable.ID,
		Subnets:      cfg.Subnets,
		Observe:      cfg.Routes == config.RoutesObserve,
		Claim:        cfg.RouteTable.Claim,
	}, res.Verdict)
	out := &DoctorResult{Report: rep, StandDown: res.Verdict.StandingDown()}
	if out.StandDown {
		// No pod is reached through routes any more: say what is left.
		in, err := a.overlayInput(ctx, cfg, all, overlay.Target{})
		if err != nil {
			return nil, err
		}
		rep.Add(overlay.Leftovers(in)...)
	} else {
		rin, err := routingInput(res.Observation, cfg, res.SourceNodes())
		if err != nil {
			return nil, err
		}
		rep.Add(doctor.CheckRouting(rin)...)
	}
	rep.Findings = append(rep.Findings, mirrorDoctor(cfg, all[1:])...)
	return out, nil
}

// routingInput is doctor's input for the routing checks, from the
// observation of its dry run: the network as trace sees it, and the NICs
// when they could be read (the permission is optional: a failure to list
// them is reported, not fatal).
func routingInput(o *observe.Observation, cfg *config.Config, nodes []source.Node) (doctor.RoutingInput, error) {
	st, err := o.RoutingState(nodes)
	if err != nil {
		return doctor.RoutingInput{}, err
	}
	in := doctor.RoutingInput{State: st, Subnets: cfg.Subnets}
	nics, read, err := o.NICs()
	if err != nil {
		in.NICsError = err.Error()
		return in, nil
	}
	in.NICsRead = read
	for _, n := range nics {
		in.NICs = append(in.NICs, doctor.NIC{ID: n.ID, Name: n.Name, IPs: n.IPs, IPForwarding: n.IPForwarding})
	}
	return in, nil
}

// mirrorDoctor turns each mirror's dry run into doctor findings, their
// messages starting with the mirror's table, to add to the main report.
func mirrorDoctor(cfg *config.Config, results []*controller.Result) []finding.Finding {
	var out []finding.Finding
	for i, r := range results {
		if i >= len(cfg.Mirrors) {
			break
		}
		m := cfg.Mirrors[i]
		if r.Verdict == nil {
			out = append(out, finding.Finding{Severity: finding.Error, Rule: doctor.RuleNodes, Resource: m.RouteTable,
				Message: fmt.Sprintf("mirror route table %s: %v", controller.TableName(m.RouteTable), r.Err)})
			continue
		}
		rep := doctor.Check(doctor.Input{
			Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs, Limit: cfg.RouteTable.RouteLimit,
			TableID: m.RouteTable, Subnets: m.Subnets,
		}, r.Verdict)
		for _, f := range rep.Findings {
			f.Message = "mirror route table " + controller.TableName(m.RouteTable) + ": " + f.Message
			out = append(out, f)
		}
	}
	return out
}
