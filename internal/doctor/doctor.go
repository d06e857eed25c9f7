// Package doctor turns what a pass observed and decided (a dry run of the
// controller: internal/controller observe + plan.Compute + assoc.Decide)
// into findings: is the table there, claimed by this cluster, within its
// limit, is every node subnet on it, and does the table each subnet really
// uses hold one correct route per node? Each problem is a finding with a
// severity, the check that found it, the resource, a message and, when
// there is one, the command that fixes it. Doctor has no association or
// route rules of its own, so it cannot disagree with run.
package doctor

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Severity of a finding.
type Severity string

// The severities. Errors make `routekeeper doctor` exit 3.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// The checks, stable identifiers for scripts and docs.
const (
	CheckTable       = "route-table"
	CheckClaim       = "table-claim"
	CheckLimit       = "route-limit"
	CheckAssociation = "subnet-association"
	CheckNodeRoute   = "node-route"
	CheckStaleRoute  = "stale-route"
	CheckShadow      = "shadowing-route"
	CheckNodes       = "nodes"
	// CheckUnmanaged: a route routekeeper does not own carries a node's
	// traffic (routeTable.adopt matching takes it over).
	CheckUnmanaged = "unmanaged-route"
	// CheckDeleteGuard: run would hold deletions back (controller.maxDeletes,
	// controller.allowEmptySource).
	CheckDeleteGuard = "delete-guard"
	// CheckUnclaimedRoute: a route of a node this cluster does not have in
	// an unclaimed table; never deleted by routekeeper.
	CheckUnclaimedRoute = "unclaimed-route"
)

// Finding is one problem (or remark).
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	Resource string   `json:"resource"`
	Message  string   `json:"message"`
	// Fix is the command (or setting) that resolves it, when there is one.
	Fix string `json:"fix,omitempty"`
}

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
	Table    string    `json:"routeTable"`
	Nodes    int       `json:"nodes"`
	Routed   int       `json:"routed"`
	Findings []Finding `json:"findings"`
}

// Errors counts the error findings.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// Check turns a dry run's result into findings.
func Check(in Input, res *controller.Result) *Report {
	nodes := res.SourceNodes()
	r := &Report{Table: res.TableID, Nodes: len(nodes)}
	add := func(s Severity, check, resource, fix, format string, args ...any) {
		r.Findings = append(r.Findings, Finding{Severity: s, Check: check, Resource: resource, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	d := res.Decision
	if d == nil {
		// The pass ended before deciding (the nodes could not be read).
		add(Error, CheckNodes, in.TableID, "", "%v", res.Err)
		return r
	}
	checkDecision(in, d, add)
	t := res.Table
	if t != nil {
		checkTable(t, in, add)
	}
	if res.Err != nil && d.TableExists && d.TableErr == nil && res.Plan != nil && res.Plan.Refused == "" {
		add(Error, CheckTable, res.TableID, "", "%v", res.Err)
	}
	r.Routed = checkNodes(t, in, res, add)
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	return r
}

// checkDecision reports the table routekeeper keeps and each subnet's
// association decision.
func checkDecision(in Input, d *assoc.Decision, add addFunc) {
	switch d.Switch {
	case assoc.Migrated:
		add(Info, CheckTable, d.Table, "set routeTable.id: "+d.Table, "%s was migrated to this table: routekeeper run keeps it (the configuration still names the old one)", d.From)
	case assoc.Swapped:
		add(Warning, CheckTable, d.Table, "set routeTable.id: "+d.Table+" (or use routekeeper migrate to swap tables)",
			"the subnets were moved from %s to this table: routekeeper run (association policy follow) writes the node routes into it and keeps it", d.From)
	}
	switch {
	case d.TableErr != nil:
		add(Error, CheckTable, d.Table, "", "reading the route table failed: %v", d.TableErr)
	case !d.TableExists && d.Create:
		add(Warning, CheckTable, d.Table, "routekeeper run", "the route table does not exist; routekeeper run will create it (tagged as this cluster's), fill it with the node routes, then associate it")
	case !d.TableExists:
		add(Error, CheckTable, d.Table, "", "the route table does not exist and routekeeper run will not create it: %s", d.CreateBlocked)
	}
	if len(in.Subnets) == 0 {
		add(Warning, CheckAssociation, d.Table, "subnets: [the node subnet IDs]", "no subnets are configured: nothing makes sure the table stays associated with the node subnet")
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
			add(Warning, CheckAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
		case s.Outage():
			msg := s.Message + routes
			if !strings.Contains(msg, "dropped") {
				msg += ": pod traffic to those nodes is dropped"
			}
			add(Error, CheckAssociation, s.Subnet, fix, "%s (it looks like DNS failures; see docs/association.md)%s", msg, then)
		case s.Action != assoc.None:
			add(Warning, CheckAssociation, s.Subnet, fix, "%s%s%s", s.Message, routes, then)
		default:
			add(Error, CheckAssociation, s.Subnet, s.Fix, "%s%s", s.Message, routes)
		}
	}
}

func severityRank(s Severity) int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

type addFunc func(s Severity, check, resource, fix, format string, args ...any)

func checkTable(t *route.Table, in Input, add addFunc) {
	switch claims := t.ClaimValues(); {
	case len(claims) > 1:
		add(Error, CheckClaim, t.ID, "", "the table is claimed by several clusters (%s): routekeeper refuses to write it until only one %s tag is left", strings.Join(claims, ", "), route.ClaimTag)
	case len(claims) == 1 && claims[0] != in.Cluster:
		add(Error, CheckClaim, t.ID, "", "the table is claimed by cluster %q, not by this cluster %q: routekeeper refuses to write it. Two clusters must not share a route table (their pod routes would fight); give this cluster its own table", claims[0], in.Cluster)
	case len(claims) == 0 && in.Claim:
		add(Info, CheckClaim, t.ID, "", "the table has no %s tag: routekeeper run claims it with its next write (routeTable.claim: true); then routes of nodes this cluster does not have are deleted", route.ClaimTag)
	case len(claims) == 0:
		add(Info, CheckClaim, t.ID, "routeTable.claim: true", "the table has no %s tag: routekeeper run manages its nodes' routes but deletes no route of a node this cluster does not have; set routeTable.claim: true to claim it", route.ClaimTag)
	}
	if t.ProvisioningState == "Failed" {
		add(Error, CheckTable, t.ID, "", "the table's provisioning state is Failed: its last write did not complete; routekeeper run rewrites it")
	}
	limit := in.Limit
	if limit <= 0 {
		limit = plan.DefaultLimit
	}
	switch n := len(t.Routes); {
	case n > limit:
		add(Error, CheckLimit, t.ID, "routeTable.routeLimit", "the table holds %d routes, over the limit of %d (routeTable.routeLimit; Azure's limit depends on the subscription, 400 by default, 1000 in some: see docs/configuration.md, Route limit)", n, limit)
	case n*10 >= limit*9:
		add(Warning, CheckLimit, t.ID, "routeTable.routeLimit", "the table holds %d of at most %d routes (%d%%): new nodes will soon get no route (routeTable.routeLimit; Azure's limit depends on the subscription, 400 by default, 1000 in some: see docs/configuration.md, Route limit)", n, limit, n*100/limit)
	}
	for _, sn := range t.Subnets {
		if !slices.ContainsFunc(in.Subnets, func(c string) bool { return sameID(c, sn) }) {
			add(Info, CheckAssociation, sn, "subnets: [..., "+sn+"]", "the subnet is associated with the table but not configured: routekeeper does not guard its association")
		}
	}
	if t.DisableBGPRoutePropagation {
		add(Info, CheckTable, t.ID, "", "BGP route propagation is disabled on the table (routes from a VPN or ExpressRoute gateway do not reach the subnet)")
	}
}

// checkNodes reports every node the pass found not routed, with the
// planner's or the verification's reason, and every stale route run would
// delete. It returns the number of routed nodes.
func checkNodes(t *route.Table, in Input, res *controller.Result, add addFunc) int {
	nodes := res.SourceNodes()
	p := res.Plan
	if p != nil {
		if p.HeldMessage != "" {
			add(Warning, CheckDeleteGuard, res.TableID, "", "%s", p.HeldMessage)
		}
		for _, ch := range p.Unclaimed {
			add(Warning, CheckUnclaimedRoute, ch.Route.Name, fmt.Sprintf("az network route-table route delete --ids %s/routes/%s", res.TableID, ch.Route.Name),
				"route %s (%s -> %s): %s", ch.Route.Name, ch.Route.AddressPrefix, hop(ch.Route), ch.Reason)
		}
	}
	if len(nodes) == 0 {
		add(Warning, CheckNodes, res.TableID, "", "the node source returned no nodes")
		return 0
	}
	fix := "routekeeper run"
	if in.Observe {
		fix = ""
	}
	routed := 0
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		st := plan.NodeStatus{}
		if p != nil {
			st = p.Nodes[name]
		}
		if nr.Routed {
			routed++
			if st.Reason == plan.ReasonRouteNotManaged {
				add(Warning, CheckUnmanaged, name, "routeTable.adopt: matching", "%s", st.Message)
			}
			continue
		}
		switch {
		case nr.Reason == controller.ReasonSubnetTable, t == nil && st.State == plan.Pending:
			continue // the association (or the missing table) finding says it
		case nr.Reason == controller.ReasonTableMissing, p != nil && p.Refused != "" && st.State != plan.Routed && st.State != plan.Pending:
			continue // the table finding says it
		case st.State == plan.Pending:
			var what []string
			adoptions := 0
			for _, ch := range p.Changes {
				if ch.Node == name && ch.Kind != plan.Delete {
					what = append(what, ch.Reason+" "+ch.Route.AddressPrefix)
					if ch.Adopts != "" {
						adoptions++
					}
				}
			}
			if len(what) > 0 && adoptions == len(what) {
				// Every route of the node is there under another name:
				// traffic flows, and run takes it over in one write.
				routed++
				add(Warning, CheckUnmanaged, name, fix, "traffic flows, route not managed yet: %s; routekeeper run takes it over with no outage (routeTable.adopt: matching)", strings.Join(what, "; "))
				continue
			}
			msg := "routekeeper run writes it"
			if in.Observe {
				msg = "the platform (AKS) should write it; routekeeper observes only"
			}
			add(Error, CheckNodeRoute, name, fix, "no correct route for the node's pod CIDR in %s (%s): %s", shortTable(res.TableID), strings.Join(what, "; "), msg)
		default:
			add(Error, CheckNodeRoute, name, "", "%s: %s", nr.Reason, nr.Message)
		}
	}
	if p != nil {
		for _, ch := range p.Changes {
			if ch.Kind == plan.Delete && ch.Adopts == "" && !strings.HasPrefix(ch.Reason, "adopted") {
				msg := "routekeeper run deletes it"
				if in.Observe {
					msg = "the platform (AKS) should delete it; routekeeper observes only"
				}
				add(Warning, CheckStaleRoute, ch.Route.Name, fix, "stale route %s -> %s (%s): %s", ch.Route.AddressPrefix, hop(ch.Route), ch.Reason, msg)
			}
		}
	}
	if t != nil {
		checkShadowing(t, in, nodes, add)
	}
	return routed
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
				add(Warning, CheckShadow, r.Name, "", "route %s (%s -> %s) is more specific than node %s's pod CIDR %s: traffic to those pods follows it, not the node route",
					r.Name, r.AddressPrefix, hop(r), n.Name, pod)
			}
		}
	}
}

func sameID(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}

// hop is a route's next hop for messages: the IP for a virtual appliance,
// else the next hop type.
func hop(r route.Route) string {
	if r.NextHopIP.IsValid() {
		return r.NextHopIP.String()
	}
	return string(r.NextHopType)
}
