package iac

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Input is what a plan is checked against.
type Input struct {
	// Want is the configuration and the nodes, as run judges with them.
	Want verdict.Desired
	// Subnets are the guarded subnets.
	Subnets []string
	// Live is the cloud as it stands, observed with Networks (and Routing,
	// for the tables every subnet uses); nil rebuilds it from the plan's
	// before-values, with routekeeper's table as routekeeper keeps it when
	// the plan does not hold it.
	Live *observe.Observation
	// Mirrors are the mirror tables (config mirrors:), judged like the
	// main table: a planned change that takes a mirror's subnet off it, or
	// its pod routes out of it, is a finding too.
	Mirrors []Mirror
	// Standing are the findings of the cloud as it stands (the verdict of
	// run's dry run, doctor's): those the plan does not resolve remain
	// after the apply. Nil (the cloud was not read): none.
	Standing []finding.Finding
}

// Mirror is one mirror table a plan is checked against.
type Mirror struct {
	// Want is the mirror's desired state (controller.MirrorConfig's), with
	// the same nodes as the main table's.
	Want    verdict.Desired
	Subnets []string
	// Live is the mirror's observation when the cloud was read.
	Live *observe.Observation
}

// hazard is one planned change that breaks pod routing, as it is
// gathered: it becomes a finding whose resource is the change's address
// (azurerm_virtual_network.kubernetes) and whose fix is the HCL that
// avoids it.
type hazard struct {
	Rule     string
	Severity finding.Severity
	Address  string
	Subnet   string
	Table    string
	// Nodes lose their route (PodCIDRs are theirs); Reason is the
	// verdict's for them after the apply.
	Nodes    []string
	PodCIDRs []string
	Reason   reason.Reason
}

// finding is the hazard as a finding, with its message and fix.
func (h *hazard) finding(message, fix string) finding.Finding {
	return finding.Finding{
		Severity: h.Severity, Rule: h.Rule, Resource: h.Address, Message: message, Fix: fix,
		Evidence: &finding.Evidence{Subnet: h.Subnet, RouteTable: h.Table, Nodes: h.Nodes, PodCIDRs: h.PodCIDRs, Reason: h.Reason},
	}
}

// Report is the outcome of Check.
type Report struct {
	// Live: the cloud was read; else it was rebuilt from the plan.
	Live     bool              `json:"live"`
	Nodes    int               `json:"nodes"`
	Findings []finding.Finding `json:"findings"`
	// Remaining are the findings of the cloud as it stands that the apply
	// leaves in place: after it, they still need someone.
	Remaining []finding.Finding `json:"remaining,omitempty"`
	// Notes say what the check assumed.
	Notes []string `json:"notes,omitempty"`
}

// Problems counts what the state after the apply leaves to do: the
// hazards of the plan and the findings it leaves standing. iac check
// exits 3 when there is one, as every command does on a state with a
// finding; on a plan that changes nothing it is doctor's answer.
func (r *Report) Problems() int { return len(r.Findings) + len(r.Remaining) }

// Errors counts the error findings.
func (r *Report) Errors() int { return finding.Errors(r.Findings) }

// Check judges the cloud as it stands and as the plan's apply (or the
// what-if's deployment) leaves it,
// and reports every planned change after which a node the verdict finds
// routed now is not, or a subnet now on the table is not: for the main
// table and for each mirror.
func Check(ctx context.Context, p Changes, in Input) (*Report, error) {
	// The main table and each mirror, judged alike.
	targets := append([]Mirror{{Want: in.Want, Subnets: in.Subnets, Live: in.Live}}, in.Mirrors...)
	x := ids{subscription: armid.Subscription(targets[0].table())}
	rep := &Report{Live: in.Live != nil, Nodes: len(in.Want.Nodes), Findings: []finding.Finding{}}
	var base *memcloud.Cloud
	if in.Live != nil {
		var lives []*observe.Observation
		for _, t := range targets {
			if t.Live != nil {
				lives = append(lives, t.Live)
			}
		}
		base = memcloud.FromObservation(lives...)
	} else {
		base = p.beforeWorld(x)
		for _, t := range targets {
			if note := keepUnmanaged(base, t); note != "" {
				rep.Notes = append(rep.Notes, note)
			}
		}
	}
	after, cs, err := p.apply(base, x)
	if err != nil {
		return nil, err
	}
	resolved := map[string]bool{}
	for _, t := range targets {
		j := judgeTable(ctx, base, after, cs, t, p.fix, p.next())
		rep.Findings = append(rep.Findings, j.hazards...)
		for k := range j.resolved {
			resolved[k] = true
		}
	}
	// Only the cloud as read says what stands: a world rebuilt from the
	// plan's before-values holds only what the plan touches (a subnet it
	// does not declare would look missing).
	for _, f := range in.Standing {
		if !resolved[findingKey(f)] {
			rep.Remaining = append(rep.Remaining, f)
		}
	}
	space, err := spaceFindings(after, cs, in.Want, p.fix)
	if err != nil {
		return nil, err
	}
	rep.Findings = append(rep.Findings, space...)
	return rep, nil
}

// table is the route table a target keeps.
func (t Mirror) table() string { return cmpStr(t.Want.Table, t.Want.Configured) }

// keepUnmanaged puts a target's table into a world rebuilt from the plan
// when the plan does not manage it (routekeeper created it) but a subnet
// points to it: it is taken as routekeeper keeps it. The note says so.
func keepUnmanaged(base *memcloud.Cloud, t Mirror) string {
	table, want := t.table(), t.Want
	if base.Tables[armid.Key(table)] != nil || !referenced(base, table) {
		return ""
	}
	kept := plan.Compute(plan.Input{Cluster: want.Cluster, ClusterCIDRs: want.ClusterCIDRs, Nodes: want.Nodes, Current: nil}).Desired
	if kept == nil {
		return ""
	}
	kept.ID, kept.Name = table, armid.Name(table)
	base.Tables[armid.Key(table)] = kept
	return fmt.Sprintf("the cloud was not read and the plan does not hold route table %s: it is taken to hold the node routes, as routekeeper keeps it", armid.Name(table))
}

// judged is one table judged now and after the apply.
type judged struct {
	// hazards are the planned changes that break pod routing.
	hazards []finding.Finding
	// resolved are the verdict's findings of the world as it stands that
	// the apply makes go away, by findingKey.
	resolved map[string]bool
}

// findingKey tells whether a finding is still the same after the apply:
// the same rule on the same resource, saying the same thing. A finding
// whose message changes was changed by the plan (made better, or a hazard
// of its own).
func findingKey(f finding.Finding) string {
	return f.Rule + "|" + armid.Key(f.Resource) + "|" + string(f.Severity) + "|" + f.Message
}

// judgeTable judges one table, the main one or a mirror, now and after the
// apply.
func judgeTable(ctx context.Context, base, after *memcloud.Cloud, cs *causes, t Mirror, fix func(rule, address string) string, next string) judged {
	want, table := t.Want, t.table()
	scope := observe.Scope{Table: table, Subnets: t.Subnets, Networks: true, Routing: true, NICs: true}
	now := verdict.Judge(observe.Observe(ctx, base, scope), want, nil)
	then := verdict.Judge(observe.Observe(ctx, after, scope), want, nil)
	j := judged{resolved: map[string]bool{}}
	for _, f := range now.Findings() {
		j.resolved[findingKey(f)] = true
	}
	for _, f := range then.Findings() {
		delete(j.resolved, findingKey(f))
	}

	groups := map[cause]*hazard{}
	var order []cause
	hazardOf := func(c cause, subnet string) *hazard {
		if f := groups[c]; f != nil {
			return f
		}
		f := &hazard{Rule: c.Rule, Severity: finding.Error, Address: c.Address, Subnet: subnet, Table: table, Nodes: []string{}, PodCIDRs: []string{}}
		groups[c] = f
		order = append(order, c)
		return f
	}
	// Nodes routed now and not after, by the change that unroutes them.
	for _, n := range want.Nodes {
		if !now.Nodes[n.Name].Routed || then.Nodes[n.Name].Routed {
			continue
		}
		// The guarded subnet that held the node now (the verdict's).
		sub := now.Nodes[n.Name].Subnet
		c, ok := cs.subnet[armid.Key(sub)]
		switch {
		case ok:
		case cs.table[armid.Key(table)] != (cause{}):
			c, sub = cs.table[armid.Key(table)], ""
		case cs.routes[armid.Key(table)] != (cause{}):
			c, sub = cs.routes[armid.Key(table)], ""
		default:
			c, sub = cause{Rule: "node-unrouted", What: "after the apply"}, ""
		}
		f := hazardOf(c, sub)
		f.Nodes = append(f.Nodes, n.Name)
		for _, p := range n.PodCIDRs {
			f.PodCIDRs = append(f.PodCIDRs, p.String())
		}
		f.Reason = then.Nodes[n.Name].Reason
	}
	// Subnets on the table now and not after, even with no node in them
	// (an Application Gateway's subnet on a mirror), with the reason the
	// verdict gives their state after the apply.
	for _, s := range now.Subnets {
		i := slices.IndexFunc(then.Subnets, func(x verdict.Subnet) bool { return armid.Same(x.Subnet, s.Subnet) })
		if i < 0 || !s.State.OnTable() || then.Subnets[i].State.OnTable() {
			continue
		}
		if c, ok := cs.subnet[armid.Key(s.Subnet)]; ok {
			f := hazardOf(c, s.Subnet)
			if f.Reason == "" {
				f.Reason = then.Subnets[i].Reason()
			}
		}
	}
	// The table itself.
	if c, ok := cs.table[armid.Key(table)]; ok {
		hazardOf(c, "")
	}
	out := make([]finding.Finding, 0, len(order))
	for _, k := range order {
		f := groups[k]
		if k.Rule == RuleAssociationReplaced {
			f.Severity = finding.Warning
		}
		out = append(out, f.finding(message(k, f, next), fix(k.Rule, k.Address)))
	}
	j.hazards = out
	return j
}

// referenced reports whether a subnet of w points to table.
func referenced(w *memcloud.Cloud, table string) bool {
	for _, s := range w.Subnets {
		if armid.Same(s.RouteTableID, table) {
			return true
		}
	}
	return false
}

func message(c cause, f *hazard, next string) string {
	target := "route table " + armid.Name(f.Table)
	if f.Subnet != "" {
		target = "subnet " + armid.Name(f.Subnet) + " (" + target + ")"
	}
	msg := fmt.Sprintf("%s: %s", c.Address, c.What)
	if c.Address == "" {
		msg = "the apply leaves nodes unrouted"
	}
	switch n := len(f.Nodes); {
	case n == 0:
		msg += fmt.Sprintf(": %s loses its routes, though no node is in it now", target)
	default:
		msg += fmt.Sprintf(": %d node(s) lose their route (%s, pod CIDRs %s), verdict %s; pod traffic of %s is dropped until routekeeper repairs it, and the next %s undoes the repair",
			n, joinNames(f.Nodes), strings.Join(f.PodCIDRs, ", "), f.Reason, target, next)
	}
	return msg
}

// spaceFindings are the address spaces the plan sets that overlap the pod
// CIDRs, by ipplan's overlap rule.
func spaceFindings(after *memcloud.Cloud, cs *causes, want verdict.Desired, fix func(rule, address string) string) ([]finding.Finding, error) {
	var out []finding.Finding
	var pods []string
	for _, p := range want.ClusterCIDRs {
		pods = append(pods, p.String())
	}
	for _, k := range slices.Sorted(maps.Keys(cs.space)) {
		c, v := cs.space[k], after.VNets[k]
		if v == nil {
			continue
		}
		rep, err := ipplan.Analyze(ipplan.Plan{VNet: v.AddressPrefixes, PodCIDR: pods, Plugins: []ipplan.Plugin{ipplan.Kubenet}})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: address_space %s against the pod CIDRs %s: %w", ErrBadValue, c.Address, strings.Join(v.AddressPrefixes, ","), strings.Join(pods, ","), err)
		}
		for _, o := range rep.Overlaps {
			a, b := rep.Ranges[o.A], rep.Ranges[o.B]
			if b.Kind == ipplan.KindVNet {
				a, b = b, a
			}
			if a.Kind != ipplan.KindVNet || b.Kind != ipplan.KindPod {
				continue
			}
			h := hazard{Rule: RuleAddressSpace, Severity: finding.Error, Address: c.Address, Table: want.Configured, Nodes: []string{}, PodCIDRs: pods}
			out = append(out, h.finding(fmt.Sprintf("%s %s: %s overlaps %s (shared: %s): traffic for those pod addresses would go to the wrong place",
				c.Address, c.What, a.Label(), b.Label(), o.Prefix), fix(RuleAddressSpace, c.Address)))
		}
	}
	return out, nil
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
