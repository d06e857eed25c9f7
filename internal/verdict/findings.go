package verdict

// findings.go says, from a verdict alone, what a person must do: the one
// answer every command's exit code comes from (run --once, diff, doctor,
// trace, iac check: 0 nothing to do, 3 findings).
//
//	rule                severity  when
//	route-table         error     the table cannot be read, is missing and not created, is Failed,
//	                              the plan is refused as invalid, or its write failed
//	route-table         warning   the table is missing and run creates it (a dry run)
//	table-claim         error     the table is another cluster's
//	table-write         warning   run writes the table (a dry run): creates, updates, deletes, the claim
//	route-limit         error     the table holds more routes than the limit (info: how many it holds
//	                              of which limit, and where the limit came from)
//	subnet-association  error     a guarded subnet is off the table, and nothing this pass does puts it
//	                              back (or the repair failed); a migration is in progress (warning)
//	subnet-association  warning   a guarded subnet is off the table and run associates it (a dry run)
//	node-route          error     a node is not routed, for a reason of its own (a table or subnet
//	                              reason is that finding's)
//	delete-guard        warning   deletions are held back (too many, an empty source, an unconfirmed
//	                              stand-down)
//	stale-route         warning   a route of a node that is gone is still in the table (or of a node
//	                              this cluster does not have, in a table the write just claimed)
//	pod-reachability    error     Azure's route selection does not deliver a node's pod traffic from a
//	                              guarded subnet (the network was read)
//	shadowing-route     warning   a route routekeeper does not own takes part of a pod CIDR elsewhere
//	ip-forwarding       error     a node's NIC has IP forwarding off (the NICs were read)
//	permission          error     an action routekeeper needs is refused (RBAC, a lock, a policy)
//
// Everything else is information (severity info): a migration or swap
// followed, an unclaimed table, a table near its limit, a route
// routekeeper does not own that carries a node, a subnet associated but
// not configured, what could not be checked.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
)

// The rules of the findings, stable identifiers for scripts and docs.
const (
	RuleTable          = "route-table"
	RuleClaim          = "table-claim"
	RuleTableWrite     = "table-write"
	RuleLimit          = "route-limit"
	RuleAssociation    = "subnet-association"
	RuleNodeRoute      = "node-route"
	RuleStaleRoute     = "stale-route"
	RuleShadow         = "shadowing-route"
	RuleNodes          = "nodes"
	RuleUnmanaged      = "unmanaged-route"
	RuleDeleteGuard    = "delete-guard"
	RuleUnclaimedRoute = "unclaimed-route"
	RulePermission     = "permission"
	RuleReachability   = "pod-reachability"
	RuleIPForwarding   = "ip-forwarding"
)

// Findings are what the verdict leaves for someone to do: its errors and
// warnings. A state with none is one where nothing needs doing; every
// command's exit code is 3 when there is one.
func (v *Verdict) Findings() []finding.Finding {
	return slices.DeleteFunc(v.Report(), func(f finding.Finding) bool { return f.Severity == finding.Info })
}

// Report is everything the verdict has to say, errors first: its findings
// and the information besides them.
func (v *Verdict) Report() []finding.Finding {
	var out []finding.Finding
	add := func(s finding.Severity, rule, resource, fix, format string, args ...any) {
		out = append(out, finding.Finding{Severity: s, Rule: rule, Resource: resource, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	v.reportDecision(add)
	if t := v.Current; t != nil {
		v.reportTable(t, add)
	}
	d := v.Decision
	if v.Err != nil && d.TableExists && d.TableErr == nil && v.Plan != nil && v.Plan.Refused == "" {
		add(finding.Error, RuleTable, v.Table, "", "%v", v.Err)
	}
	v.reportWrite(add)
	v.reportNodes(add)
	v.reportReach(add)
	v.reportAccess(add)
	finding.Sort(out)
	return out
}

type addFunc func(s finding.Severity, rule, resource, fix, format string, args ...any)

// reportDecision reports the table routekeeper keeps and each subnet's
// association.
func (v *Verdict) reportDecision(add addFunc) {
	d := v.Decision
	switch d.Switch {
	case assoc.Migrated:
		add(finding.Info, RuleTable, d.Table, "set routeTable.id: "+d.Table, "%s was migrated to this table: routekeeper run keeps it (the configuration still names the old one)", d.From)
	case assoc.Swapped:
		add(finding.Info, RuleTable, d.Table, "set routeTable.id: "+d.Table+" (or use routekeeper migrate to swap tables)",
			"the subnets were moved from %s to this table: routekeeper run (association policy follow) writes the node routes into it and keeps it", d.From)
	}
	switch {
	case d.TableErr != nil:
		add(finding.Error, RuleTable, d.Table, "", "reading the route table failed: %v", d.TableErr)
	case !d.TableExists && d.Create && !v.acted:
		add(finding.Warning, RuleTable, d.Table, "routekeeper run", "the route table does not exist; routekeeper run will create it (tagged as this cluster's), fill it with the node routes, then associate it")
	case !d.TableExists && !d.Create && v.StandingDown():
		add(finding.Info, RuleTable, d.Table, "", "the route table does not exist: %s", d.CreateBlocked)
	case !d.TableExists && !d.Create:
		add(finding.Error, RuleTable, d.Table, "", "the route table does not exist and routekeeper run will not create it: %s", d.CreateBlocked)
	}
	if len(v.guarded) == 0 {
		add(finding.Info, RuleAssociation, d.Table, "subnets: [the node subnet IDs]", "no subnets are configured: nothing makes sure the table stays associated with the node subnet")
	}
	for _, s := range v.Subnets {
		v.reportSubnet(s, add)
	}
}

// reportSubnet reports one guarded subnet, as the verdict leaves it.
func (v *Verdict) reportSubnet(s Subnet, add addFunc) {
	routes := ""
	if s.State != assoc.Associated && s.State != assoc.SubnetMissing && s.State != assoc.Unreadable {
		routes = fmt.Sprintf(" [the table the subnet uses holds %d of %d node routes]", s.HasRoutes, s.NodeRoutes)
	}
	fix, then := s.Fix, ""
	pending := !v.acted && s.Action != assoc.None && s.Action != ""
	if pending {
		fix, then = "routekeeper run", fmt.Sprintf("; routekeeper run will %s", s.Action)
	}
	switch {
	case s.State == assoc.Associated:
	case s.State.OnTable() && !s.RepairFailed:
		// Followed, re-associated: information.
		add(finding.Info, RuleAssociation, s.Subnet, "", "%s%s", s.Message, routes)
	case s.State == assoc.Migrating:
		add(finding.Warning, RuleAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
	case s.Outage():
		add(finding.Error, RuleAssociation, s.Subnet, fix, "%s (it looks like DNS failures; see docs/association.md)%s", dropped(s.Message+routes), then)
	case pending:
		add(finding.Warning, RuleAssociation, s.Subnet, fix, "%s%s%s", s.Message, routes, then)
	case s.Problem():
		add(finding.Error, RuleAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
	}
}

// dropped says that pod traffic is dropped, unless msg says so already.
func dropped(msg string) string {
	if strings.Contains(msg, "dropped") {
		return msg
	}
	return msg + ": pod traffic to those nodes is dropped"
}

// reportTable reports the table as it stands. Whether routekeeper may
// write it (the claim rule) is the plan's: this says what it decided.
func (v *Verdict) reportTable(t *route.Table, add addFunc) {
	p, want := v.Plan, v.want
	claimed := len(t.ClaimValues()) > 0
	switch {
	case p != nil && p.RefusedReason == reason.RouteTableClaimed:
		add(finding.Error, RuleClaim, t.ID, "", "%s. Two clusters must not share a route table (their pod routes would fight); give this cluster its own table", p.Refused)
	case p != nil && p.RefusedReason == reason.RouteTableInvalid:
		add(finding.Error, RuleTable, t.ID, "", "routekeeper refuses to write the table: %s", p.Refused)
	case claimed:
	case p != nil && p.Claim && !v.acted:
		add(finding.Info, RuleClaim, t.ID, "", "the table has no %s tag: routekeeper run claims it with its next write (routeTable.claim: true); then routes of nodes this cluster does not have are deleted", route.ClaimTag)
	case !want.Claim:
		add(finding.Info, RuleClaim, t.ID, "routeTable.claim: true", "the table has no %s tag: routekeeper run manages its nodes' routes but deletes no route of a node this cluster does not have; set routeTable.claim: true to claim it", route.ClaimTag)
	}
	if t.ProvisioningState == "Failed" {
		add(finding.Error, RuleTable, t.ID, "", "the table's provisioning state is Failed: its last write did not complete; routekeeper run rewrites it")
	}
	limit, from := want.Limit, want.LimitFrom
	if limit <= 0 {
		limit = plan.DefaultLimit
	}
	if from == "" {
		from = "routeTable.routeLimit"
	}
	switch n := len(t.Routes); {
	case n > limit:
		add(finding.Error, RuleLimit, t.ID, "routeTable.routeLimit", "the table holds %d routes, over the limit of %d (%s; see docs/configuration.md, Route limit)", n, limit, from)
	case n*10 >= limit*9:
		add(finding.Info, RuleLimit, t.ID, "routeTable.routeLimit", "the table holds %d of at most %d routes (%d%%): new nodes will soon get no route (%s; see docs/configuration.md, Route limit)", n, limit, n*100/limit, from)
	case want.LimitFrom != "":
		add(finding.Info, RuleLimit, t.ID, "", "the table holds %d of at most %d routes (%s)", n, limit, from)
	}
	for _, sn := range t.Subnets {
		if !armid.Contains(v.guarded, sn) {
			add(finding.Info, RuleAssociation, sn, "subnets: [..., "+sn+"]", "the subnet is associated with the table but not configured: routekeeper does not guard its association")
		}
	}
	if t.DisableBGPRoutePropagation {
		add(finding.Info, RuleTable, t.ID, "", "BGP route propagation is disabled on the table (routes from a VPN or ExpressRoute gateway do not reach the subnet)")
	}
}

// reportWrite reports the table write a dry run's verdict calls for.
func (v *Verdict) reportWrite(add addFunc) {
	if v.write == nil {
		return
	}
	var what []string
	creates, updates, deletes := v.Plan.Counts()
	// An adoption is a create (or update) of our route and the delete of
	// the one it renames, in the same write: one rename.
	adoptingCreates, renames := 0, 0
	for _, ch := range v.Plan.Changes {
		switch {
		case ch.Kind == plan.Create && ch.Adopts != "":
			adoptingCreates++
		case ch.Kind == plan.Delete && ch.AdoptedBy != "":
			renames++
		}
	}
	for _, c := range []struct {
		n    int
		what string
	}{{creates - adoptingCreates, "create"}, {updates, "update"}, {renames, "rename"}, {deletes - renames, "delete"}} {
		if c.n > 0 {
			what = append(what, fmt.Sprintf("%d %s(s)", c.n, c.what))
		}
	}
	if v.Plan.Create {
		what = append([]string{"create the table"}, what...)
	} else if v.Plan.Claim {
		what = append(what, "the claim tag")
	}
	add(finding.Warning, RuleTableWrite, v.Table, "routekeeper run", "routekeeper run writes route table %s: %s (routekeeper diff lists them)", shortName(v.Table), strings.Join(what, ", "))
}

// reportNodes reports every node not routed, once per cause: a node
// unrouted by its subnet's association or by the table as a whole is left
// to that finding; and the deletions held back, the stale routes and the
// routes of nodes this cluster does not have in an unclaimed table.
func (v *Verdict) reportNodes(add addFunc) {
	p, observe := v.Plan, v.mode == Observe
	if p != nil {
		if p.HeldMessage != "" {
			add(finding.Warning, RuleDeleteGuard, v.Table, "", "%s", p.HeldMessage)
		}
		for _, ch := range p.Unclaimed {
			if v.Wrote && p.Claim && v.mode != Observe {
				// The write claimed the table: the route is this
				// cluster's now, of a node it does not have, and the next
				// pass deletes it.
				add(finding.Warning, RuleStaleRoute, ch.Route.Name, "routekeeper run", "stale route %s -> %s (node %s is not in this cluster): the write claimed the table, so routekeeper run deletes it next",
					ch.Route.AddressPrefix, hopText(ch.Route), ch.Node)
				continue
			}
			add(finding.Info, RuleUnclaimedRoute, ch.Route.Name, fmt.Sprintf("az network route-table route delete --ids %s/routes/%s", v.Table, ch.Route.Name),
				"route %s (%s -> %s): %s", ch.Route.Name, ch.Route.AddressPrefix, hopText(ch.Route), ch.Reason)
		}
	}
	if len(v.nodeList) == 0 {
		add(finding.Info, RuleNodes, v.Table, "", "the node source returned no nodes")
		return
	}
	fix := "routekeeper run"
	if observe {
		fix = ""
	}
	for _, name := range slices.Sorted(maps.Keys(v.Nodes)) {
		nv := v.Nodes[name]
		switch {
		case nv.Routed && nv.Reason == reason.RouteNotManaged && nv.Actionable:
			add(finding.Info, RuleUnmanaged, name, fix, "%s", nv.Message)
		case nv.Routed && nv.Reason == reason.RouteNotManaged:
			add(finding.Info, RuleUnmanaged, name, "routeTable.adopt: matching", "%s", nv.Message)
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
			case observe:
				msg = "the platform (AKS) should write it; routekeeper observes only"
			case !nv.Actionable:
				msg, f = nv.Message, ""
			}
			add(finding.Error, RuleNodeRoute, name, f, "no correct route for the node's pod CIDR in %s (%s): %s", shortName(v.Table), strings.Join(what, "; "), msg)
		default:
			add(finding.Error, RuleNodeRoute, name, "", "%s: %s", nv.Reason, nv.Message)
		}
	}
	if p != nil && !v.Wrote { // a write that succeeded deleted them
		for _, ch := range p.Changes {
			if ch.Stale() {
				msg := "routekeeper run deletes it"
				if observe {
					msg = "the platform (AKS) should delete it; routekeeper observes only"
				}
				add(finding.Warning, RuleStaleRoute, ch.Route.Name, fix, "stale route %s -> %s (%s): %s", ch.Route.AddressPrefix, hopText(ch.Route), ch.Reason, msg)
			}
		}
	}
}

// reportAccess reports every action routekeeper needs that the identity
// may not do (read through the permissions API), and every write Azure
// refused in the pass: one finding each, with the command that fixes it.
func (v *Verdict) reportAccess(add addFunc) {
	for _, a := range v.Access {
		if refused, why := a.Refused(); refused {
			add(finding.Error, RulePermission, a.Scope, a.Fix, "routekeeper cannot %s: %s", a.For, why)
		} else if a.Unknown != "" {
			add(finding.Info, RulePermission, a.Scope, "", "could not tell whether routekeeper may %s (%s on %s): %s", a.For, a.Action, a.Scope, a.Unknown)
		}
	}
	for _, d := range v.Denials {
		add(finding.Error, RulePermission, d.Resource, d.Fix, "%s", d.Message())
	}
}

// shortName is a resource's name for messages.
func shortName(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// hopText is a route's next hop for messages: the IP for a virtual
// appliance, else the next hop type.
func hopText(r route.Route) string {
	if r.NextHopIP.IsValid() {
		return r.NextHopIP.String()
	}
	return string(r.NextHopType)
}
