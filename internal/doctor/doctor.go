// Package doctor turns a pass's verdict (internal/verdict: the same
// observation and judgement as run, without writes) into findings: is the
// table there, claimed by this cluster, within its limit, is every node
// subnet on it, and is every node routed in the table its subnet really
// uses, and if not why? Each problem is a finding with a severity, the
// check that found it, the resource, a message and, when there is one, the
// command that fixes it. Doctor has no association or route rules of its
// own — whether a node is routed and why is the verdict's — so it cannot
// disagree with run; it only chooses how to present each verdict (one
// finding per cause, not one per consequence).
package doctor

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// The rules, stable identifiers for scripts and docs.
const (
	RuleTable       = "route-table"
	RuleClaim       = "table-claim"
	RuleLimit       = "route-limit"
	RuleAssociation = "subnet-association"
	RuleNodeRoute   = "node-route"
	RuleStaleRoute  = "stale-route"
	RuleShadow      = "shadowing-route"
	RuleNodes       = "nodes"
	// RuleUnmanaged: a route routekeeper does not own carries a node's
	// traffic (routeTable.adopt matching takes it over).
	RuleUnmanaged = "unmanaged-route"
	// RuleDeleteGuard: run would hold deletions back (controller.maxDeletes,
	// controller.allowEmptySource).
	RuleDeleteGuard = "delete-guard"
	// RuleUnclaimedRoute: a route of a node this cluster does not have in
	// an unclaimed table; never deleted by routekeeper.
	RuleUnclaimedRoute = "unclaimed-route"
	// RulePermission: an action routekeeper needs that the identity may
	// not do (or that Azure refused), with the role assignment that grants it.
	RulePermission = "permission"
)

// Input is the cluster doctor checks.
type Input struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	Limit        int
	// TableID is the configured route table (routeTable.id).
	TableID string
	Subnets []string
	// Observe: the platform writes the routes (AKS); missing routes are
	// still errors, but the advice differs.
	Observe bool
	// Claim: routeTable.claim, so an unclaimed table is claimed by run's
	// next write.
	Claim bool
}

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

// Check turns a verdict into findings.
func Check(in Input, v *verdict.Verdict) *Report {
	nodes := v.SourceNodes()
	r := &Report{Table: v.Table, Nodes: len(nodes)}
	add := func(s finding.Severity, check, resource, fix, format string, args ...any) {
		r.Findings = append(r.Findings, finding.Finding{Severity: s, Rule: check, Resource: resource, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	d := v.Decision
	checkDecision(in, d, add)
	t := v.Current
	if t != nil {
		checkTable(t, v.Plan, in, add)
	}
	if v.Err != nil && d.TableExists && d.TableErr == nil && v.Plan != nil && v.Plan.Refused == "" {
		add(finding.Error, RuleTable, v.Table, "", "%v", v.Err)
	}
	r.Routed = checkNodes(in, v, add)
	checkAccess(v, add)
	finding.Sort(r.Findings)
	return r
}

// checkDecision reports the table routekeeper keeps and each subnet's
// association decision.
func checkDecision(in Input, d *assoc.Decision, add addFunc) {
	switch d.Switch {
	case assoc.Migrated:
		add(finding.Info, RuleTable, d.Table, "set routeTable.id: "+d.Table, "%s was migrated to this table: routekeeper run keeps it (the configuration still names the old one)", d.From)
	case assoc.Swapped:
		add(finding.Warning, RuleTable, d.Table, "set routeTable.id: "+d.Table+" (or use routekeeper migrate to swap tables)",
			"the subnets were moved from %s to this table: routekeeper run (association policy follow) writes the node routes into it and keeps it", d.From)
	}
	switch {
	case d.TableErr != nil:
		add(finding.Error, RuleTable, d.Table, "", "reading the route table failed: %v", d.TableErr)
	case !d.TableExists && d.Create:
		add(finding.Warning, RuleTable, d.Table, "routekeeper run", "the route table does not exist; routekeeper run will create it (tagged as this cluster's), fill it with the node routes, then associate it")
	case !d.TableExists:
		add(finding.Error, RuleTable, d.Table, "", "the route table does not exist and routekeeper run will not create it: %s", d.CreateBlocked)
	}
	if len(in.Subnets) == 0 {
		add(finding.Warning, RuleAssociation, d.Table, "subnets: [the node subnet IDs]", "no subnets are configured: nothing makes sure the table stays associated with the node subnet")
	}
	for _, s := range d.Subnets {
		routes := ""
		if s.State != assoc.Associated && s.State != assoc.SubnetMissing && s.State != assoc.Unreadable {
			routes = fmt.Sprintf(" [the table the subnet uses holds %d of %d node routes]", s.HasRoutes, s.NodeRoutes)
		}
		fix, then := s.Fix, ""
		if s.Action != assoc.None {
			fix, then = "routekeeper run", fmt.Sprintf("; routekeeper run will %s", s.Action)
		}
		switch {
		case s.State == assoc.Associated:
		case s.State == assoc.Migrating:
			add(finding.Warning, RuleAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
		case s.Outage():
			msg := s.Message + routes
			if !strings.Contains(msg, "dropped") {
				msg += ": pod traffic to those nodes is dropped"
			}
			add(finding.Error, RuleAssociation, s.Subnet, fix, "%s (it looks like DNS failures; see docs/association.md)%s", msg, then)
		case s.Action != assoc.None:
			add(finding.Warning, RuleAssociation, s.Subnet, fix, "%s%s%s", s.Message, routes, then)
		default:
			add(finding.Error, RuleAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
		}
	}
}

type addFunc func(s finding.Severity, check, resource, fix, format string, args ...any)

// checkTable reports the table as read. Whether routekeeper may write it
// (the claim rule) is the plan's: doctor says what the verdict decided.
func checkTable(t *route.Table, p *plan.Plan, in Input, add addFunc) {
	claimed := len(t.ClaimValues()) > 0
	switch {
	case p != nil && p.RefusedReason == reason.RouteTableClaimed:
		add(finding.Error, RuleClaim, t.ID, "", "%s. Two clusters must not share a route table (their pod routes would fight); give this cluster its own table", p.Refused)
	case p != nil && p.RefusedReason == reason.RouteTableInvalid:
		add(finding.Error, RuleTable, t.ID, "", "routekeeper refuses to write the table: %s", p.Refused)
	case claimed:
	case p != nil && p.Claim:
		add(finding.Info, RuleClaim, t.ID, "", "the table has no %s tag: routekeeper run claims it with its next write (routeTable.claim: true); then routes of nodes this cluster does not have are deleted", route.ClaimTag)
	case !in.Claim:
		add(finding.Info, RuleClaim, t.ID, "routeTable.claim: true", "the table has no %s tag: routekeeper run manages its nodes' routes but deletes no route of a node this cluster does not have; set routeTable.claim: true to claim it", route.ClaimTag)
	}
	if t.ProvisioningState == "Failed" {
		add(finding.Error, RuleTable, t.ID, "", "the table's provisioning state is Failed: its last write did not complete; routekeeper run rewrites it")
	}
	limit := in.Limit
	if limit <= 0 {
		limit = plan.DefaultLimit
	}
	switch n := len(t.Routes); {
	case n > limit:
		add(finding.Error, RuleLimit, t.ID, "routeTable.routeLimit", "the table holds %d routes, over the limit of %d (routeTable.routeLimit; Azure allows 400 routes per route table: see docs/configuration.md, Route limit)", n, limit)
	case n*10 >= limit*9:
		add(finding.Warning, RuleLimit, t.ID, "routeTable.routeLimit", "the table holds %d of at most %d routes (%d%%): new nodes will soon get no route (routeTable.routeLimit; Azure allows 400 routes per route table: see docs/configuration.md, Route limit)", n, limit, n*100/limit)
	}
	for _, sn := range t.Subnets {
		if !armid.Contains(in.Subnets, sn) {
			add(finding.Info, RuleAssociation, sn, "subnets: [..., "+sn+"]", "the subnet is associated with the table but not configured: routekeeper does not guard its association")
		}
	}
	if t.DisableBGPRoutePropagation {
		add(finding.Info, RuleTable, t.ID, "", "BGP route propagation is disabled on the table (routes from a VPN or ExpressRoute gateway do not reach the subnet)")
	}
}

// checkNodes reports every node the verdict found not routed, once per
// cause: a node unrouted by its subnet's association or by the table as a
// whole is left to that finding. It reports the stale routes run would
// delete, and returns the number of routed nodes.
func checkNodes(in Input, v *verdict.Verdict, add addFunc) int {
	nodes := v.SourceNodes()
	p := v.Plan
	if p != nil {
		if p.HeldMessage != "" {
			add(finding.Warning, RuleDeleteGuard, v.Table, "", "%s", p.HeldMessage)
		}
		for _, ch := range p.Unclaimed {
			add(finding.Warning, RuleUnclaimedRoute, ch.Route.Name, fmt.Sprintf("az network route-table route delete --ids %s/routes/%s", v.Table, ch.Route.Name),
				"route %s (%s -> %s): %s", ch.Route.Name, ch.Route.AddressPrefix, hop(ch.Route), ch.Reason)
		}
	}
	if len(nodes) == 0 {
		add(finding.Warning, RuleNodes, v.Table, "", "the node source returned no nodes")
		return 0
	}
	fix := "routekeeper run"
	if in.Observe {
		fix = ""
	}
	for _, name := range slices.Sorted(maps.Keys(v.Nodes)) {
		nv := v.Nodes[name]
		switch {
		case nv.Routed && nv.Reason == reason.RouteNotManaged && nv.Actionable:
			add(finding.Warning, RuleUnmanaged, name, fix, "%s", nv.Message)
		case nv.Routed && nv.Reason == reason.RouteNotManaged:
			add(finding.Warning, RuleUnmanaged, name, "routeTable.adopt: matching", "%s", nv.Message)
		case nv.Routed:
		case nv.Reason == reason.SubnetRouteTableLacksRoute, nv.Reason == reason.RouteTableDetached:
			// the association finding says it
		case nv.Reason.Table(), v.Current == nil && nv.Actionable:
			// the table finding says it (missing, claimed, refused, or to
			// be created)
		case nv.Reason == reason.NoRouteCreated:
			var what []string
			for _, ch := range p.Changes {
				if ch.Node == name && ch.Kind != plan.Delete {
					what = append(what, ch.Reason+" "+ch.Route.AddressPrefix)
				}
			}
			msg, f := "routekeeper run writes it", fix
			switch {
			case in.Observe:
				msg = "the platform (AKS) should write it; routekeeper observes only"
			case !nv.Actionable:
				msg, f = nv.Message, ""
			}
			add(finding.Error, RuleNodeRoute, name, f, "no correct route for the node's pod CIDR in %s (%s): %s", shortTable(v.Table), strings.Join(what, "; "), msg)
		default:
			add(finding.Error, RuleNodeRoute, name, "", "%s: %s", nv.Reason, nv.Message)
		}
	}
	if p != nil {
		for _, ch := range p.Changes {
			if ch.Stale() {
				msg := "routekeeper run deletes it"
				if in.Observe {
					msg = "the platform (AKS) should delete it; routekeeper observes only"
				}
				add(finding.Warning, RuleStaleRoute, ch.Route.Name, fix, "stale route %s -> %s (%s): %s", ch.Route.AddressPrefix, hop(ch.Route), ch.Reason, msg)
			}
		}
	}
	if t := v.Current; t != nil {
		checkShadowing(t, in, nodes, add)
	}
	return v.Routed()
}

// shortTable is a table's name for messages.
func shortTable(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// checkShadowing finds routes that routekeeper does not own which are more
// specific than a node's pod CIDR: longest prefix match sends that part of
// the node's pods somewhere else. Azure accepts it; it is rarely meant.
func checkShadowing(t *route.Table, in Input, nodes []source.Node, add addFunc) {
	own := route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs}
	cls := own.ClassifyTable(t)
	for _, n := range nodes {
		for _, pod := range n.PodCIDRs {
			for i, r := range t.Routes {
				p, ok := r.CIDR()
				if !ok || cls[i].Owner == route.OwnerThisCluster || p.Bits() <= pod.Bits() || !pod.Contains(p.Addr()) {
					continue
				}
				add(finding.Warning, RuleShadow, r.Name, "", "route %s (%s -> %s) is more specific than node %s's pod CIDR %s: traffic to those pods follows it, not the node route",
					r.Name, r.AddressPrefix, hop(r), n.Name, pod)
			}
		}
	}
}

// hop is a route's next hop for messages: the IP for a virtual appliance,
// else the next hop type.
func hop(r route.Route) string {
	if r.NextHopIP.IsValid() {
		return r.NextHopIP.String()
	}
	return string(r.NextHopType)
}

// checkAccess reports every action routekeeper needs that the identity
// may not do (read through the permissions API), and every write Azure
// refused in the pass: one finding each, with the command that fixes it.
func checkAccess(v *verdict.Verdict, add addFunc) {
	for _, a := range v.Access {
		if refused, why := a.Refused(); refused {
			add(finding.Error, RulePermission, a.Scope, a.Fix, "routekeeper cannot %s: %s", a.For, why)
		} else if a.Unknown != "" {
			add(finding.Warning, RulePermission, a.Scope, "", "could not tell whether routekeeper may %s (%s on %s): %s", a.For, a.Action, a.Scope, a.Unknown)
		}
	}
	for _, d := range v.Denials {
		add(finding.Error, RulePermission, d.Resource, d.Fix, "%s", d.Message())
	}
}
