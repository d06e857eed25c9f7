package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Render is a verdict as the scripts expect it. actions: also the actions
// (a verdict before any write).
func Render(v *verdict.Verdict, actions bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	d := v.Decision
	line := "table " + armid.Name(v.Table)
	switch {
	case d.TableErr != nil:
		line += ": unreadable"
	case v.Current == nil && d.Create && !v.Wrote:
		line += ": missing, created"
	case v.Current == nil:
		line += ": missing"
	}
	if d.Switch != assoc.NoSwitch {
		line += fmt.Sprintf(" (%s from %s)", d.Switch, armid.Name(d.From))
	}
	p("%s", line)
	if d.CreateBlocked != "" && !d.TableExists {
		p("  not created: %s", d.CreateBlocked)
	}
	for _, n := range d.Notes {
		p("  note: %s", Short(n))
	}
	if actions {
		if t, etag, ok := v.TableWrite(); ok {
			ifm := "If-None-Match: *"
			if etag != "" {
				ifm = "If-Match: " + etag
			}
			p("write %s (%s): %s", armid.Name(t.ID), ifm, strings.Join(routeList(t), ", "))
			for _, c := range v.Plan.Changes {
				extra := ""
				if c.Adopts != "" {
					extra = " (adopts " + c.Adopts + ")"
				}
				p("  %s %s %s%s: %s", c.Kind, c.Route.Name, c.Route.AddressPrefix, extra, c.Reason)
			}
			if v.Plan.Claim {
				p("  claim")
			}
		}
		var as []string
		for _, s := range v.Associations() {
			as = append(as, ShortSubnet(s.Subnet))
		}
		if len(as) > 0 {
			p("associate: %s", strings.Join(as, ", "))
		}
	}
	if v.Plan != nil {
		for _, c := range v.Plan.HeldDeletes {
			p("held: %s %s: %s", c.Route.Name, c.Route.AddressPrefix, c.Reason)
		}
		for _, c := range v.Plan.Unclaimed {
			p("unclaimed: %s %s", c.Route.Name, c.Route.AddressPrefix)
		}
		if v.Plan.Refused != "" {
			p("refused: %s", v.Plan.RefusedReason)
		}
	}
	for _, s := range v.Subnets {
		on := "none"
		if s.Table != "" {
			on = armid.Name(s.Table)
		}
		flags := ""
		if s.Repaired {
			flags += " repaired"
		}
		if s.Recreated {
			flags += " recreated"
		}
		if s.RepairFailed {
			flags += " repair-failed"
		}
		if s.TableMissing {
			flags += " table-missing"
		}
		if s.Problem() {
			flags += " PROBLEM"
		}
		p("subnet %s: %s on %s, action %s%s", ShortSubnet(s.Subnet), s.State, on, s.Action, flags)
		p("  %s", Short(s.Message))
		if s.Fix != "" {
			p("  fix: %s", Short(s.Fix))
		}
	}
	for _, d := range v.Denials {
		p("denied: %s of %s: %s %s on %s", d.Op, Short(d.Resource), d.Code, Short(d.Action), Short(d.Scope))
		p("  fix: %s", Short(d.Fix))
	}
	for _, name := range slices.Sorted(maps.Keys(v.Nodes)) {
		n := v.Nodes[name]
		state := "routed"
		if !n.Routed {
			state = "NOT routed"
		}
		if n.Pending {
			state += " (pending)"
		}
		if n.Actionable {
			state += " (actionable)"
		}
		p("node %s: %s %s: %s", name, state, n.Reason, Short(n.Message))
	}
	if v.Err != nil {
		p("error: %s", Short(v.Err.Error()))
	}
	for _, a := range v.Access {
		if refused, why := a.Refused(); refused {
			p("access refused: %s on %s (to %s): %s", a.Action, Short(a.Scope), a.For, Short(why))
		} else if a.Unknown != "" {
			p("access unknown: %s on %s (to %s): %s", a.Action, Short(a.Scope), a.For, Short(a.Unknown))
		}
	}
	if rc := v.Routes; rc != nil {
		p("routes: desired %d, present %d, missing %d, owned %d, foreign %d, stale %d", rc.Desired, rc.Present, rc.Missing(), rc.Owned, rc.Foreign, rc.Stale)
	}
	for _, g := range v.Groups(maxGroupNames) {
		p("group %s", Short(g.String()))
	}
	return strings.TrimRight(b.String(), "\n")
}

// maxGroupNames is how many node names a group line shows.
const maxGroupNames = 3

// RenderFindings is what a person must do on a state, as the commands
// list it: each finding, then the exit code every command gives on the
// state.
func RenderFindings(fs []finding.Finding, exit int) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "finding: %s %s %s: %s\n", f.Severity, f.Rule, Short(f.Resource), Short(f.Message))
	}
	fmt.Fprintf(&b, "exit %d", exit)
	return b.String()
}

// The exit codes of a state (internal/cli's).
const (
	ExitOK       = 0
	ExitError    = 1
	ExitFindings = 3
)

// ExitCode is the exit code of every command on a state whose verdicts
// have the findings fs and, when one could not be judged (a read failed:
// a verdict's Err that is not one of its decisions, verdict.Decided),
// that error.
func ExitCode(fs []finding.Finding, failed bool) int {
	switch {
	case failed:
		return ExitError
	case len(fs) > 0:
		return ExitFindings
	}
	return ExitOK
}

func routeList(t *route.Table) []string {
	var out []string
	for _, r := range t.Routes {
		hop := string(r.NextHopType)
		if r.NextHopIP.IsValid() {
			hop = r.NextHopIP.String()
		}
		out = append(out, r.AddressPrefix+">"+hop)
	}
	if len(out) == 0 {
		return []string{"(no routes)"}
	}
	return out
}
