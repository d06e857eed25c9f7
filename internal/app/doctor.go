package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/doctor"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/overlay"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// DoctorResult is doctor's report and whether routekeeper stands down
// from host routes (then the findings say what is left).
type DoctorResult struct {
	*doctor.Report
	StandDown bool
}

// Doctor is routekeeper doctor: the verdict of a dry run of every table of
// cfg (the main one, with its interconnect, the NICs and the caller's
// access; each mirror) laid out as one report. A table that could not be
// read is in the report, and its error is returned beside it (readErrs).
func (a *App) Doctor(ctx context.Context, cfg *config.Config) (*DoctorResult, error) {
	all, closeConn, err := a.dryRun(ctx, cfg, judgeScope(cfg, true))
	if err != nil {
		return nil, err
	}
	defer closeConn()
	res := all[0]
	rep := doctor.Check(res.Verdict)
	out := &DoctorResult{Report: rep, StandDown: res.Verdict.StandingDown()}
	if out.StandDown {
		// No pod is reached through routes any more: say what is left.
		in, err := a.overlayInput(ctx, cfg, all, overlay.Target{})
		if err != nil {
			return nil, err
		}
		rep.Add(overlay.Leftovers(in)...)
	}
	rep.Add(mirrorFindings(cfg, all[1:])...)
	return out, readErrs(cfg, all)
}

// readErrs are the errors of the dry runs that could not judge their table
// (a read failed), each mirror's naming it; a decision of a verdict
// (verdict.Decided) is one of its findings instead. The report is made
// all the same, and the command exits with them, as diff does.
func readErrs(cfg *config.Config, all []*controller.Result) error {
	var errs []error
	if err := failed(all[0].Err); err != nil {
		errs = append(errs, err)
	}
	for i, r := range all[1:] {
		if i >= len(cfg.Mirrors) {
			break
		}
		if err := failed(r.Err); err != nil {
			errs = append(errs, fmt.Errorf("mirror route table %s: %w", controller.TableName(cfg.Mirrors[i].RouteTable), err))
		}
	}
	return errors.Join(errs...)
}

// mirrorFindings are each mirror's verdict report, their messages
// starting with the mirror's table, to add to the main report.
func mirrorFindings(cfg *config.Config, results []*controller.Result) []finding.Finding {
	var out []finding.Finding
	for i, r := range results {
		if i >= len(cfg.Mirrors) {
			break
		}
		m := cfg.Mirrors[i]
		if r.Verdict == nil {
			out = append(out, finding.Finding{Severity: finding.Error, Rule: verdict.RuleTable, Resource: m.RouteTable,
				Message: fmt.Sprintf("mirror route table %s: %v", controller.TableName(m.RouteTable), r.Err)})
			continue
		}
		for _, f := range r.Verdict.Report() {
			f.Message = "mirror route table " + controller.TableName(m.RouteTable) + ": " + f.Message
			out = append(out, f)
		}
	}
	return out
}
