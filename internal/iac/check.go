package iac

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
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
}

// Severities of findings.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Finding is one planned change that breaks pod routing.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	// Address is the resource address of the change (azurerm_virtual_network.kubernetes).
	Address string `json:"address"`
	Subnet  string `json:"subnet,omitempty"`
	Table   string `json:"routeTable,omitempty"`
	// Nodes lose their route (PodCIDRs are theirs); Reason is the
	// verdict's for them after the apply.
	Nodes    []string      `json:"nodes"`
	PodCIDRs []string      `json:"podCIDRs"`
	Reason   reason.Reason `json:"reason,omitempty"`
	Message  string        `json:"message"`
	// Fix is the HCL that avoids it.
	Fix string `json:"fix"`
}

// Report is the outcome of Check.
type Report struct {
	// Live: the cloud was read; else it was rebuilt from the plan.
	Live     bool      `json:"live"`
	Nodes    int       `json:"nodes"`
	Findings []Finding `json:"findings"`
	// Notes say what the check assumed.
	Notes []string `json:"notes,omitempty"`
}

// Errors counts the error findings.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Check judges the cloud as it stands and as the plan's apply leaves it,
// and reports every planned change after which a node the verdict finds
// routed now is not, or a subnet now on the table is not.
func Check(ctx context.Context, p *Plan, in Input) (*Report, error) {
	want := in.Want
	table := cmpStr(want.Table, want.Configured)
	x := ids{subscription: armid.Subscription(table)}
	rep := &Report{Live: in.Live != nil, Nodes: len(want.Nodes), Findings: []Finding{}}
	var base *memcloud.Cloud
	if in.Live != nil {
		base = memcloud.FromObservation(in.Live)
	} else {
		base = beforeWorld(p, x)
		if base.Tables[armid.Key(table)] == nil && referenced(base, table) {
			// The plan does not manage routekeeper's table (routekeeper
			// created it): it is taken as routekeeper keeps it.
			t := plan.Compute(plan.Input{Cluster: want.Cluster, ClusterCIDRs: want.ClusterCIDRs, Nodes: want.Nodes, Current: nil}).Desired
			if t != nil {
				t.ID, t.Name = table, armid.Name(table)
				base.Tables[armid.Key(table)] = t
				rep.Notes = append(rep.Notes, fmt.Sprintf("the cloud was not read and the plan does not hold route table %s: it is taken to hold the node routes, as routekeeper keeps it", armid.Name(table)))
			}
		}
	}
	after, cs := applyPlan(base, p, x)
	scope := observe.Scope{Table: table, Subnets: in.Subnets, Networks: true}
	now := verdict.Judge(observe.Observe(ctx, base, scope), want, nil)
	then := verdict.Judge(observe.Observe(ctx, after, scope), want, nil)

	groups := map[cause]*Finding{}
	var order []cause
	finding := func(c cause, subnet string) *Finding {
		k := c
		if f := groups[k]; f != nil {
			return f
		}
		f := &Finding{Rule: c.Rule, Severity: SeverityError, Address: c.Address, Subnet: subnet, Table: table, Nodes: []string{}, PodCIDRs: []string{}}
		groups[k] = f
		order = append(order, k)
		return f
	}
	// Nodes routed now and not after, by the change that unroutes them.
	for _, n := range want.Nodes {
		if !now.Nodes[n.Name].Routed || then.Nodes[n.Name].Routed {
			continue
		}
		sub := subnetOf(base, in.Subnets, n)
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
		f := finding(c, sub)
		f.Nodes = append(f.Nodes, n.Name)
		for _, p := range n.PodCIDRs {
			f.PodCIDRs = append(f.PodCIDRs, p.String())
		}
		f.Reason = then.Nodes[n.Name].Reason
	}
	// Subnets on the table now and not after, even with no node in them.
	for i, s := range now.Subnets {
		if i >= len(then.Subnets) || !onTable(s) || onTable(then.Subnets[i]) {
			continue
		}
		if c, ok := cs.subnet[armid.Key(s.Subnet)]; ok {
			f := finding(c, s.Subnet)
			if f.Reason == "" {
				f.Reason = reason.RouteTableDetached
			}
		}
	}
	// The table itself.
	if c, ok := cs.table[armid.Key(table)]; ok {
		finding(c, "")
	}
	for _, k := range order {
		f := groups[k]
		f.Message = message(k, f)
		f.Fix = fix(k.Rule, k.Address)
		if k.Rule == RuleAssociationReplaced {
			f.Severity = SeverityWarning
		}
		rep.Findings = append(rep.Findings, *f)
	}
	rep.Findings = append(rep.Findings, spaceFindings(after, cs, want)...)
	return rep, nil
}

// onTable reports whether a subnet's verdict puts it on routekeeper's table.
func onTable(s verdict.Subnet) bool {
	switch s.State {
	case "Associated", "Reassociated", "Followed", "Migrating":
		return true
	}
	return false
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

// subnetOf is the guarded subnet that holds one of the node's addresses,
// as w has it.
func subnetOf(w *memcloud.Cloud, guarded []string, n source.Node) string {
	for _, id := range guarded {
		s := w.Subnets[armid.Key(id)]
		if s == nil {
			continue
		}
		for _, ps := range s.AddressPrefixes {
			p, err := netip.ParsePrefix(ps)
			if err != nil {
				continue
			}
			for _, ip := range n.InternalIPs {
				if p.Contains(ip) {
					return id
				}
			}
		}
	}
	return ""
}

func message(c cause, f *Finding) string {
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
		msg += fmt.Sprintf(": %d node(s) lose their route (%s, pod CIDRs %s), verdict %s; pod traffic of %s is dropped until routekeeper repairs it, and the next plan undoes the repair",
			n, joinNames(f.Nodes), strings.Join(f.PodCIDRs, ", "), f.Reason, target)
	}
	return msg
}

// spaceFindings are the address spaces the plan sets that overlap the pod
// CIDRs, by ipplan's overlap rule.
func spaceFindings(after *memcloud.Cloud, cs *causes, want verdict.Desired) []Finding {
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(cs.space)) {
		c, v := cs.space[k], after.VNets[k]
		if v == nil {
			continue
		}
		var pods []string
		for _, p := range want.ClusterCIDRs {
			pods = append(pods, p.String())
		}
		rep, err := ipplan.Analyze(ipplan.Plan{VNet: v.AddressPrefixes, PodCIDR: pods, Plugins: []ipplan.Plugin{ipplan.Kubenet}})
		if err != nil {
			continue
		}
		for _, f := range rep.Findings {
			if f.Rule != ipplan.RuleOverlap || !strings.Contains(strings.ToLower(f.Message), "pod") {
				continue
			}
			out = append(out, Finding{Rule: RuleAddressSpace, Severity: SeverityError, Address: c.Address, Table: want.Configured,
				Nodes: []string{}, PodCIDRs: pods,
				Message: fmt.Sprintf("%s %s: %s", c.Address, c.What, f.Message), Fix: fix(RuleAddressSpace, c.Address)})
		}
	}
	return out
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
