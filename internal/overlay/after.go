package overlay

import (
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Leftovers says what is left once routekeeper stood down from host
// routes (routes: standDown, confirmed): a table that holds no route of
// the cluster any more but is still associated with subnets (an overlay
// needs none; the association is the operator's), a table gone, and
// mirrors still configured, whose subnets reach no pod through them any
// more. A table that still holds routes of the cluster is left to the
// deletion guard's finding (held until the stand-down is confirmed).
// Nothing here is an error: the move is done, these are the operator's to
// tidy.
func Leftovers(in Input) []finding.Finding {
	var out []finding.Finding
	add := func(s finding.Severity, resource, fix, format string, args ...any) {
		out = append(out, finding.Finding{Severity: s, Rule: RuleStandDown, Resource: resource, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	own := route.Ownership{Cluster: in.Cluster, ClusterCIDRs: in.ClusterCIDRs}
	left := func(t *route.Table) (ours, others []string) {
		for i, cl := range own.ClassifyTable(t) {
			if cl.Owner == route.OwnerThisCluster {
				ours = append(ours, t.Routes[i].Name)
			} else {
				others = append(others, t.Routes[i].Name)
			}
		}
		return ours, others
	}
	name := armid.Name(in.TableID)
	switch t := in.Table; {
	case t == nil:
		add(finding.Info, in.TableID, "", "route table %s no longer exists: nothing of routekeeper's is left in it", name)
	default:
		ours, others := left(t)
		if len(ours) > 0 {
			break // held until confirmed: the deletion guard's finding names them
		}
		if len(t.Subnets) == 0 {
			add(finding.Info, in.TableID, "az network route-table delete --ids "+in.TableID+" (if nothing else needs it)",
				"route table %s holds no route of this cluster and no subnet uses it%s", name, keptNote(others))
			break
		}
		var subnets []string
		for _, s := range t.Subnets {
			subnets = append(subnets, armid.Name(s))
		}
		what := "holds no route at all"
		if len(others) > 0 {
			what = "holds no route of this cluster any more" + keptNote(others)
		}
		add(finding.Info, in.TableID, fmt.Sprintf("az network vnet subnet update --ids %s --route-table \"\" (if its other routes are not needed)", t.Subnets[0]),
			"route table %s %s and is still associated with %s: an overlay needs no route table there; the association is yours to keep or remove", name, what, strings.Join(subnets, ", "))
	}
	for i, m := range in.Mirrors {
		mname := armid.Name(m.TableID)
		if m.Table != nil {
			if ours, _ := left(m.Table); len(ours) > 0 {
				continue // held until confirmed, like the main table's
			}
		}
		add(finding.Info, m.TableID, fmt.Sprintf("remove mirrors[%d] from the configuration", i),
			"mirror route table %s holds no route of this cluster any more and is still configured: its subnets reach no pod through it in an overlay; its own routes and its associations are yours", mname)
	}
	return out
}

func keptNote(others []string) string {
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf(" (it keeps routes that are not the cluster's: %s)", list(others))
}
