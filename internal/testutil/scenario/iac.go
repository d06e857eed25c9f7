package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/routekeeper/routekeeper/internal/iac"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// DefaultPlanDir is where an iac step finds its plan: the recorded
// OpenTofu plans of internal/iac, from the directory of a test of
// internal/<package>.
const DefaultPlanDir = "../iac/testdata"

// doIac is the iac step: iac.Check of the plan file named (in
// World.PlanDir) against the cloud as it stands, observed as iac check
// observes it (every table's dry run, with the network), with the findings
// of that state as those the apply may leave standing. It prints the
// plan's findings (rule, resource, subnet, table, nodes, reason), the
// remaining ones and the exit code iac check gives.
func (w *World) doIac(args []string) (out string, code int, err error) {
	if len(args) != 1 {
		return "", 0, fmt.Errorf("iac: want iac PLAN.json")
	}
	p, err := w.Plan(args[0])
	if err != nil {
		return "", 0, err
	}
	in := iac.Input{Subnets: w.cfg.Subnets}
	for _, t := range w.tables {
		t.want = w.desired(t)
		t.obs = w.observe(t, true)
		t.judged, t.out = verdict.Judge(t.obs, t.want, nil), nil
		t.last = t.judged
		if t.mirror < 0 {
			in.Want, in.Live = t.want, t.obs
			continue
		}
		in.Mirrors = append(in.Mirrors, iac.Mirror{Want: t.want, Subnets: w.cfg.Mirrors[t.mirror].Subnets, Live: t.obs})
	}
	in.Standing = w.Findings()
	rep, err := iac.Check(context.Background(), p, in)
	if err != nil {
		return "", 0, err
	}
	var b strings.Builder
	pr := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	for _, f := range rep.Findings {
		pr("finding: %s %s %s: %s", f.Severity, f.Rule, f.Resource, Short(f.Message))
		if e := f.Evidence; e != nil {
			var ev []string
			if e.Subnet != "" {
				ev = append(ev, "subnet "+ShortSubnet(e.Subnet))
			}
			if e.RouteTable != "" {
				ev = append(ev, "table "+Short(e.RouteTable))
			}
			if len(e.Nodes) > 0 {
				ev = append(ev, "nodes "+strings.Join(e.Nodes, ", "))
			}
			if len(e.PodCIDRs) > 0 {
				ev = append(ev, "pod CIDRs "+strings.Join(e.PodCIDRs, ", "))
			}
			if e.Reason != "" {
				ev = append(ev, "reason "+string(e.Reason))
			}
			pr("  %s", strings.Join(ev, "; "))
		}
	}
	for _, f := range rep.Remaining {
		pr("remaining: %s %s %s: %s", f.Severity, f.Rule, Short(f.Resource), Short(f.Message))
	}
	for _, n := range rep.Notes {
		pr("note: %s", Short(n))
	}
	code = ExitOK
	if rep.Problems() > 0 {
		code = ExitFindings
	}
	pr("exit %d", code)
	return strings.TrimRight(b.String(), "\n"), code, nil
}

// Plan reads the plan file name from World.PlanDir, its IDs moved into
// the script's subscription and resource group: the recorded plans name
// the fabric's (00000000-..., kubernetes), a script's cloud is in s and
// rg, under the same resource names.
func (w *World) Plan(name string) (*iac.Plan, error) {
	b, err := os.ReadFile(filepath.Join(w.PlanDir, name))
	if err != nil {
		return nil, fmt.Errorf("iac: %w", err)
	}
	p, err := iac.ParsePlan(b)
	if err != nil {
		return nil, fmt.Errorf("iac %s: %w", name, err)
	}
	MovePlan(p, "/subscriptions/"+Subscription+"/resourceGroups/"+ResourceGroup)
	return p, nil
}

var planGroup = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)`)

// MovePlan moves every ID of p into the resource group group (its ID,
// /subscriptions/S/resourceGroups/G) from the first one the plan names,
// and every resource_group_name with it.
func MovePlan(p *iac.Plan, group string) {
	from, fromName := "", ""
	var find func(v any)
	find = func(v any) {
		switch t := v.(type) {
		case string:
			if m := planGroup.FindStringSubmatch(t); m != nil && from == "" {
				from, fromName = m[0], m[1]
			}
		case map[string]any:
			for _, x := range t {
				find(x)
			}
		case []any:
			for _, x := range t {
				find(x)
			}
		}
	}
	for _, rc := range p.ResourceChanges {
		find(rc.Change.Before)
		find(rc.Change.After)
	}
	if from == "" {
		return
	}
	_, toName, _ := strings.Cut(group, "/resourceGroups/")
	var move func(v any) any
	move = func(v any) any {
		switch t := v.(type) {
		case string:
			if strings.HasPrefix(strings.ToLower(t), strings.ToLower(from)) {
				return group + t[len(from):]
			}
		case map[string]any:
			for k, x := range t {
				if k == "resource_group_name" && x == fromName {
					t[k] = toName
					continue
				}
				t[k] = move(x)
			}
		case []any:
			for i, x := range t {
				t[i] = move(x)
			}
		}
		return v
	}
	for i := range p.ResourceChanges {
		c := &p.ResourceChanges[i].Change
		if c.Before != nil {
			move(c.Before)
		}
		if c.After != nil {
			move(c.After)
		}
	}
}
