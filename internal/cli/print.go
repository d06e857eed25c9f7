package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/output"
)

// humanOutput reports whether the command prints for people (-o table
// without --query): only then may it add prose around its result.
func (a *shell) humanOutput() bool { return a.out.Human() }

// print writes v, the command's result, as -o and --query ask; tbl lays it
// out for -o table (nil: a generic table of v's JSON form).
func (a *shell) print(v any, tbl func() output.Table) error {
	return output.Write(a.stdout, a.out, v, tbl)
}

// findingsOutput is what a command that reports findings prints: its
// result v for table, json, yaml and tsv, and for -o sarif the findings as
// a SARIF log of tool, located at artifact (the file checked, "" for
// none). For -o table the findings table follows head (what precedes it,
// nil for nothing) and the fixes that span lines follow it.
type findingsOutput struct {
	v        any
	findings []finding.Finding
	tool     finding.Tool
	artifact string
}

// printFindings prints a command's findings report (see findingsOutput).
func (a *shell) printFindings(o findingsOutput) error {
	if a.out.Format == "sarif" {
		if o.tool.Version == "" {
			o.tool.Version = buildVersion().Version
		}
		return output.WriteJSON(a.stdout, finding.SARIF(o.findings, o.tool, o.artifact))
	}
	var long []finding.LongFix
	err := a.print(o.v, func() output.Table {
		var t output.Table
		t.Header, t.Rows, long = finding.Table(o.findings, armid.Short)
		return t
	})
	if err != nil {
		return err
	}
	for _, f := range long {
		fmt.Fprintf(a.stdout, "\nFix for %s (%s):\n%s\n", f.Resource, f.Rule, strings.TrimRight(f.Fix, "\n"))
	}
	return nil
}

// docsURL is where a command's findings are explained.
func docsURL(page string) string {
	return "https://github.com/routekeeper/routekeeper/blob/main/docs/" + page
}

// printFindingsBelow prints, under a command's own result, what the
// verdicts leave to do: the findings its exit code comes from.
func (a *shell) printFindingsBelow(fs []finding.Finding) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "\nFindings (%d: exit status 3; routekeeper doctor explains each):\n", len(fs))
	header, rows, long := finding.Table(fs, armid.Short)
	_ = output.WriteTable(a.stdout, output.Table{Header: header, Rows: rows})
	for _, f := range long {
		fmt.Fprintf(a.stdout, "\nFix for %s (%s):\n%s\n", f.Resource, f.Rule, strings.TrimRight(f.Fix, "\n"))
	}
}

// logFindings logs, in one line, what a reconcile leaves to do (the
// lines above it say each node's reason; doctor explains every finding).
func (a *shell) logFindings(fs []finding.Finding) {
	by := map[string]int{}
	for _, f := range fs {
		by[f.Rule]++
	}
	var rules []string
	for _, r := range slices.Sorted(maps.Keys(by)) {
		rules = append(rules, fmt.Sprintf("%s=%d", r, by[r]))
	}
	a.log.Warn(fmt.Sprintf("the reconcile leaves %d finding(s) (exit status 3): %s; routekeeper doctor explains each", len(fs), strings.Join(rules, " ")))
}
