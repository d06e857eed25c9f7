package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
)

// The rules that keep routekeeper from taking away what is not its to take:
// the unclaimed-table rule, adoption's match and the deletion guard.

// known reports whether the cluster has a node of this name (compared
// case-insensitively, as route names are).
func (pl *planner) known(node string) bool {
	ln := strings.ToLower(node)
	_, found := slices.BinarySearchFunc(pl.order, ln, func(n int32, t string) int { return strings.Compare(pl.lnames[n], t) })
	return found
}

// unclaimedRoutes, in a table that is not claimed yet, takes the scheme
// routes of nodes this cluster does not have out of ownership: another
// cluster may share the table, and nothing but the claim says otherwise.
func (pl *planner) unclaimedRoutes() {
	if pl.claim != "" || pl.p.Create {
		return
	}
	for i := range pl.routes {
		if c := &pl.routes[i]; c.owned && !pl.known(c.node) {
			c.owned, c.unclaimed = false, true
		}
	}
}

// forwards reports whether current route h sends e's prefix to e's next
// hop, provisioned: taking it over changes nothing for traffic.
func (pl *planner) forwards(h int32, e *entry) bool {
	r := &pl.cur.Routes[h]
	return pl.routes[h].prefix == e.cidr && r.NextHopType == route.VirtualAppliance && r.NextHopIP == e.hop && !strings.EqualFold(r.ProvisioningState, "Failed")
}

// guardDeletes holds back every plain deletion (a route whose prefix
// leaves the table) when there are more than the cap allows, or when the
// source is empty and that is not allowed. Creates and updates go on.
func (pl *planner) guardDeletes() {
	owned, dels := 0, 0
	for i := range pl.routes {
		c := &pl.routes[i]
		if c.owned {
			owned++
		}
		if c.fate == fateDelete {
			dels++
		}
	}
	capDeletes := pl.in.MaxDeletes
	if capDeletes == 0 {
		capDeletes = DefaultMaxDeletes(owned)
	}
	p := pl.p
	p.MaxDeletes = capDeletes
	switch {
	case dels == 0:
		return
	case p.StandDown && pl.in.ConfirmStandDown:
		return // the confirmed stand-down: every owned route goes at once
	case p.StandDown:
		p.HeldReason = reason.StandDownUnconfirmed
		p.HeldMessage = fmt.Sprintf("routes: standDown: the cluster no longer uses host routes, and %s holds %d routes of this cluster (%s): none is removed until the stand-down is confirmed. Check that every node runs the overlay CNI, then run with --confirm-stand-down (controller.confirmStandDown: true) to remove them all in one write; routes routekeeper does not own, the claim and the subnet associations stay",
			pl.table, dels, pl.heldNames())
		if pl.claim == "" {
			p.HeldMessage += fmt.Sprintf(". The table is not claimed (tag %s): on AKS these are the platform's routes, which its move to Overlay deletes itself; do not confirm before it", route.ClaimTag)
		}
	case PodCIDRsGone(pl.in.Nodes):
		p.HeldReason = reason.StandDownUnconfirmed
		p.HeldMessage = fmt.Sprintf("no node has a pod CIDR while %s holds %d routes of this cluster (%s): none is deleted. A new cluster whose IPAM has not assigned pod CIDRs yet looks the same; if the cluster moved to an overlay CNI (Azure CNI Overlay, Cilium, Calico VXLAN), set routes: standDown and confirm it (--confirm-stand-down) to remove them in one write (docs/aks-overlay.md)",
			pl.table, dels, pl.heldNames())
	case len(pl.in.Nodes) == 0 && !pl.in.AllowEmptySource:
		p.HeldReason = reason.EmptySource
		p.HeldMessage = fmt.Sprintf("the node source returned no nodes while %s holds %d routes of this cluster: none is deleted (an empty or wrong source must not empty the table); if the cluster really has no nodes, run with --allow-empty-source (controller.allowEmptySource: true)", pl.table, owned)
	case capDeletes >= 0 && dels > capDeletes:
		p.HeldReason = reason.TooManyDeletes
		p.HeldMessage = fmt.Sprintf("this pass would delete %d routes from %s, more than the %d allowed per pass (controller.maxDeletes; by default the larger of 10 and 10%% of the cluster's routes): none is deleted, creates and updates go through; check the node source, then run with --max-deletes %d to let them go", dels, pl.table, capDeletes, dels)
	default:
		return
	}
	for i := range pl.routes {
		if c := &pl.routes[i]; c.fate == fateDelete {
			c.fate = fateHeld
		}
	}
}

// maxHeldNames is how many route names a stand-down's held message lists.
const maxHeldNames = 5

// heldNames lists the first routes to be deleted, in table order, and how
// many more.
func (pl *planner) heldNames() string {
	var names []string
	n := 0
	for i := range pl.routes {
		if pl.routes[i].fate != fateDelete {
			continue
		}
		if n++; n <= maxHeldNames {
			names = append(names, pl.cur.Routes[i].Name)
		}
	}
	s := strings.Join(names, ", ")
	if n > maxHeldNames {
		s += fmt.Sprintf(" and %d more", n-maxHeldNames)
	}
	return s
}

// standDownNote is a NotNeeded node's message.
const standDownNote = "the cluster stands down from host routes: the node needs no route"

// removeCommand is the Azure CLI command that deletes route name from t.
func removeCommand(t *route.Table, name string) string {
	if t.ID != "" {
		return fmt.Sprintf("az network route-table route delete --ids %s/routes/%s", strings.TrimSuffix(t.ID, "/"), name)
	}
	return fmt.Sprintf("az network route-table route delete --route-table-name %s --name %s --resource-group <group>", t.Name, name)
}
