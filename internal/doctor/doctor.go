// Package doctor checks a cluster's routing against the live route table
// and subnets, read-only: is the table there, claimed by this cluster,
// within its limit, associated with every node subnet, and does it hold one
// correct route per node? Each problem is a finding with a severity, the
// check that found it, the resource and a message that says what to do.
// It reuses the planner (internal/plan) so that doctor and run never
// disagree about what is wrong.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Cloud is what doctor reads.
type Cloud interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
	GetSubnet(ctx context.Context, id string) (*cloud.Subnet, error)
}

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
)

// Finding is one problem (or remark).
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	Resource string   `json:"resource"`
	Message  string   `json:"message"`
}

// Input is the cluster doctor checks.
type Input struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	Limit        int
	TableID      string
	Subnets      []string
	// CreateTable: routekeeper may create the table, so a missing one is a
	// warning rather than an error.
	CreateTable bool
	// Observe: the platform writes the routes (AKS); missing routes are
	// still errors, but the advice differs.
	Observe bool
	Nodes   []source.Node
}

// Report is doctor's result.
type Report struct {
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

// Check reads the table and the subnets and reports every problem. An error
// is returned only when the cloud could not be read at all.
func Check(ctx context.Context, c Cloud, in Input) (*Report, error) {
	r := &Report{Table: in.TableID, Nodes: len(in.Nodes)}
	add := func(s Severity, check, res, format string, args ...any) {
		r.Findings = append(r.Findings, Finding{Severity: s, Check: check, Resource: res, Message: fmt.Sprintf(format, args...)})
	}

	t, err := c.GetRouteTable(ctx, in.TableID)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		t = nil
		if in.CreateTable && !in.Observe {
			add(Warning, CheckTable, in.TableID, "the route table does not exist; routekeeper run will create it, fill it and associate it")
		} else {
			add(Error, CheckTable, in.TableID, "the route table does not exist and routekeeper may not create it (routeTable.create: false): no pod route can exist, pod traffic between nodes is dropped")
		}
	case err != nil:
		return nil, err // it names the operation and the table
	}

	if t != nil {
		checkTable(t, in, add)
	}
	checkSubnets(ctx, c, in, t, add)
	routed := checkNodes(t, in, add)
	r.Routed = routed
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	return r, nil
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

type addFunc func(s Severity, check, res, format string, args ...any)

func checkTable(t *route.Table, in Input, add addFunc) {
	switch claims := t.ClaimValues(); {
	case len(claims) > 1:
		add(Error, CheckClaim, t.ID, "the table is claimed by several clusters (%s): routekeeper refuses to write it until only one %s tag is left", strings.Join(claims, ", "), route.ClaimTag)
	case len(claims) == 1 && claims[0] != in.Cluster:
		add(Error, CheckClaim, t.ID, "the table is claimed by cluster %q, not by this cluster %q: routekeeper refuses to write it. Two clusters must not share a route table (their pod routes would fight); give this cluster its own table", claims[0], in.Cluster)
	case len(claims) == 0:
		add(Info, CheckClaim, t.ID, "the table has no %s tag: routekeeper run adopts it with its first write (its routes in the naming scheme inside the cluster CIDRs become managed)", route.ClaimTag)
	}
	if t.ProvisioningState == "Failed" {
		add(Error, CheckTable, t.ID, "the table's provisioning state is Failed: its last write did not complete; routekeeper run rewrites it")
	}
	limit := in.Limit
	if limit <= 0 {
		limit = plan.DefaultLimit
	}
	switch n := len(t.Routes); {
	case n > limit:
		add(Error, CheckLimit, t.ID, "the table holds %d routes, over the limit of %d", n, limit)
	case n*10 >= limit*9:
		add(Warning, CheckLimit, t.ID, "the table holds %d of at most %d routes (%d%%): new nodes will soon get no route", n, limit, n*100/limit)
	}
	if t.DisableBGPRoutePropagation {
		add(Info, CheckTable, t.ID, "BGP route propagation is disabled on the table (routes from a VPN or ExpressRoute gateway do not reach the subnet)")
	}
}

func checkSubnets(ctx context.Context, c Cloud, in Input, t *route.Table, add addFunc) {
	if len(in.Subnets) == 0 {
		add(Warning, CheckAssociation, in.TableID, "no subnets are configured: nothing makes sure the table stays associated with the node subnet")
	}
	for _, id := range in.Subnets {
		s, err := c.GetSubnet(ctx, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			add(Error, CheckAssociation, id, "the subnet does not exist")
			continue
		case err != nil:
			add(Error, CheckAssociation, id, "reading the subnet failed: %v", err)
			continue
		}
		switch {
		case sameID(s.RouteTableID, in.TableID):
		case s.RouteTableID == "":
			add(Error, CheckAssociation, id, "the subnet has no route table: pod traffic between nodes is dropped (it looks like DNS failures). An IaC redeploy that does not declare the association removes it; see docs/association.md. routekeeper run with association policy enforce re-associates it")
		default:
			add(Error, CheckAssociation, id, "the subnet uses route table %s, not %s: the pod routes are in the other table", s.RouteTableID, in.TableID)
		}
	}
	if t == nil {
		return
	}
	for _, s := range t.Subnets {
		if !slices.ContainsFunc(in.Subnets, func(c string) bool { return sameID(c, s) }) {
			add(Info, CheckAssociation, s, "the subnet is associated with the table but not configured: routekeeper does not guard its association")
		}
	}
}

// checkNodes plans against the table and reports every node without a
// correct route, and every stale route run would delete. It returns the
// number of routed nodes.
func checkNodes(t *route.Table, in Input, add addFunc) int {
	if len(in.Nodes) == 0 {
		add(Warning, CheckNodes, in.TableID, "the node source returned no nodes")
		return 0
	}
	p := plan.Compute(plan.Input{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs, Limit: in.Limit, Nodes: in.Nodes, Current: t})
	fix := "routekeeper run writes it"
	if in.Observe {
		fix = "the platform (AKS) should write it; routekeeper observes only"
	}
	routed := 0
	for _, n := range in.Nodes {
		st := p.Nodes[n.Name]
		switch st.State {
		case plan.Routed:
			routed++
		case plan.Pending:
			if t == nil {
				continue // the missing table is the finding
			}
			var what []string
			for _, ch := range p.Changes {
				if ch.Node == n.Name && ch.Kind != plan.Delete {
					what = append(what, ch.Reason+" "+ch.Route.AddressPrefix)
				}
			}
			add(Error, CheckNodeRoute, n.Name, "no correct route for the node's pod CIDR (%s): %s", strings.Join(what, "; "), fix)
		default:
			if p.Refused != "" {
				continue // the claim finding says it
			}
			add(Error, CheckNodeRoute, n.Name, "%s: %s", st.Reason, st.Message)
		}
	}
	for _, ch := range p.Changes {
		if ch.Kind == plan.Delete {
			add(Warning, CheckStaleRoute, ch.Route.Name, "stale route %s -> %s (%s): %s", ch.Route.AddressPrefix, hop(ch.Route), ch.Reason, strings.Replace(fix, "writes it", "deletes it", 1))
		}
	}
	if t != nil {
		checkShadowing(t, in, add)
	}
	return routed
}

// checkShadowing finds routes that routekeeper does not own which are more
// specific than a node's pod CIDR: longest prefix match sends that part of
// the node's pods somewhere else. Azure accepts it; it is rarely meant.
func checkShadowing(t *route.Table, in Input, add addFunc) {
	own := route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs}
	cls := own.ClassifyTable(t)
	for _, n := range in.Nodes {
		for _, pod := range n.PodCIDRs {
			for i, r := range t.Routes {
				p, ok := r.CIDR()
				if !ok || cls[i].Owner == route.OwnerThisCluster || p.Bits() <= pod.Bits() || !pod.Contains(p.Addr()) {
					continue
				}
				add(Warning, CheckShadow, r.Name, "route %s (%s -> %s) is more specific than node %s's pod CIDR %s: traffic to those pods follows it, not the node route",
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
