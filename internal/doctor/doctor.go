// Package doctor is routekeeper doctor's report: the verdict of a dry run
// (internal/verdict: the same observation and judgement as run, without
// writes) laid out for a person — the table routekeeper keeps, how many
// nodes are routed, and the verdict's own report (its findings, which
// decide the exit code, and the information besides them). Doctor has no
// rule of its own: whether a node is routed and why, and what is a
// finding, are the verdict's, so it cannot disagree with run, diff,
// trace or iac check.
package doctor

import (
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Report is doctor's result.
type Report struct {
	// Table is the table routekeeper keeps (after a migration or a followed
	// swap, not the configured one).
	Table    string            `json:"routeTable"`
	Nodes    int               `json:"nodes"`
	Routed   int               `json:"routed"`
	Findings []finding.Finding `json:"findings"`
}

// Errors counts the error findings.
func (r *Report) Errors() int { return finding.Errors(r.Findings) }

// Problems counts the findings that are not information: the ones the
// exit code counts.
func (r *Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity != finding.Info {
			n++
		}
	}
	return n
}

// Check is the report of a verdict.
func Check(v *verdict.Verdict) *Report {
	return &Report{Table: v.Table, Nodes: len(v.SourceNodes()), Routed: v.Routed(), Findings: v.Report()}
}

// Add adds findings to the report, keeping errors before warnings before
// remarks.
func (r *Report) Add(fs ...finding.Finding) {
	r.Findings = append(r.Findings, fs...)
	finding.Sort(r.Findings)
}
