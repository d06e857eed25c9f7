package finding

import (
	"strconv"
	"strings"
)

// Table lays findings out for -o table: Severity, Rule, then the columns
// that some finding fills (Resource; of the evidence Subnet, Nodes,
// Plugins, Reason), Message, and Fix when some finding has a fix and every
// fix fits on one line. Fixes that span lines
// (HCL, Bicep) are returned as Long instead, to print below the table.
// short shortens an ARM ID for a cell (nil: as it is).
func Table(fs []Finding, short func(string) string) (header []string, rows [][]string, long []LongFix) {
	if short == nil {
		short = func(s string) string { return s }
	}
	var resource, subnet, nodes, plugins, reasons, fixes, longFixes bool
	for _, f := range fs {
		resource = resource || f.Resource != ""
		fixes = fixes || f.Fix != ""
		if e := f.Evidence; e != nil {
			subnet = subnet || e.Subnet != "" || e.RouteTable != ""
			nodes = nodes || len(e.Nodes) > 0
			plugins = plugins || len(e.Plugins) > 0
			reasons = reasons || e.Reason != ""
		}
		longFixes = longFixes || strings.Contains(f.Fix, "\n")
	}
	fixCol := fixes && !longFixes
	header = []string{"Severity", "Rule"}
	if resource {
		header = append(header, "Resource")
	}
	if subnet {
		header = append(header, "Subnet")
	}
	if nodes {
		header = append(header, "Nodes")
	}
	if plugins {
		header = append(header, "Plugins")
	}
	if reasons {
		header = append(header, "Reason")
	}
	header = append(header, "Message")
	if fixCol {
		header = append(header, "Fix")
	}
	for _, f := range fs {
		e := f.Evidence
		if e == nil {
			e = &Evidence{}
		}
		row := []string{string(f.Severity), f.Rule}
		if resource {
			row = append(row, short(f.Resource))
		}
		if subnet {
			s := short(e.Subnet)
			if e.Subnet == "" && e.RouteTable != "" {
				s = "(" + short(e.RouteTable) + ")"
			}
			row = append(row, s)
		}
		if nodes {
			n := strconv.Itoa(len(e.Nodes))
			if len(e.Nodes) > 0 {
				n += ": " + strings.Join(e.Nodes, ", ")
			}
			row = append(row, n)
		}
		if plugins {
			row = append(row, orDash(strings.Join(e.Plugins, ",")))
		}
		if reasons {
			row = append(row, string(e.Reason))
		}
		row = append(row, f.Message)
		if fixCol {
			row = append(row, f.Fix)
		} else if f.Fix != "" {
			long = append(long, LongFix{Resource: f.Resource, Rule: f.Rule, Fix: f.Fix})
		}
		rows = append(rows, row)
	}
	return header, rows, long
}

// LongFix is a fix that spans lines, printed below the findings table.
type LongFix struct {
	Resource, Rule, Fix string
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
