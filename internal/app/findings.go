package app

import (
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Findings are what the verdicts of every table of cfg leave for someone
// to do (verdict.Findings): the main table's, then each mirror's, its
// messages naming the mirror. Every command that judges the cluster (run
// --once, diff, doctor, trace, iac check) exits 3 when there is one, so one
// state gets one answer. A table that could not be judged is a finding
// with its error.
func Findings(cfg *config.Config, all []*controller.Result) []finding.Finding {
	var out []finding.Finding
	for i, r := range all {
		table, prefix := cfg.RouteTable.ID, ""
		if i > 0 {
			if i-1 >= len(cfg.Mirrors) {
				break
			}
			table = cfg.Mirrors[i-1].RouteTable
			prefix = "mirror route table " + controller.TableName(table) + ": "
		}
		if r.Verdict == nil {
			msg := "the route table could not be judged"
			if r.Err != nil {
				msg = r.Err.Error()
			}
			out = append(out, finding.Finding{Severity: finding.Error, Rule: verdict.RuleTable, Resource: table, Message: prefix + msg})
			continue
		}
		for _, f := range r.Verdict.Findings() {
			f.Message = prefix + f.Message
			out = append(out, f)
		}
	}
	finding.Sort(out)
	return out
}
