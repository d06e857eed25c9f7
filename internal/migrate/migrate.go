// Package migrate moves a cluster's pod routes, and the subnets that use
// them, from one route table to another without a moment where a subnet
// points to a table that lacks a node route: the route-table swap done
// right.
//
// A migration is a list of steps computed from the live state by Compute,
// which is pure, and executed one at a time by Run, which reads the state
// again before each step. Every step is idempotent and its completion is
// read from the live state, never from a local file, so a migration
// interrupted at any point (a failed write, ^C, a crash) continues where it
// stopped when run again, and a finished one has nothing left to do.
//
// The steps, in order:
//
//	step         action         done when (live state)                       writes
//	-----------  -------------  -------------------------------------------  ------------------------------
//	check        read, refuse   -                                            none; conflicts refuse the whole
//	                            (conflicts: new table claimed by another         migration
//	                             cluster, a prefix or name held by another
//	                             route, route limit, other region)
//	copy-routes  copy           the new table holds every owned and custom    one PUT of the new table
//	                            route of the old one, is claimed by this          (If-Match), keeping its routes
//	                            cluster and names the old one (migrated-from)
//	verify       read back      the copy is done (the state was just read)   none
//	associate    per subnet     the subnet is on the new table               one subnet PUT (If-Match) each
//	mark-old     re-tag         the old table has migrated-to=<new> and no    one PUT of the old table
//	                            claim; a running controller follows it
//	delete-old   (--delete-old) the old table does not exist                 one DELETE (If-Match)
//
// A subnet is associated only after the new table was read back holding
// every owned route of the old one as read just before: a route the
// controller added to the old table meanwhile makes copy-routes pending
// again, and it runs first. Routes are never removed from the old table,
// and the old table is deleted only when no subnet uses it.
package migrate

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Options say what to migrate.
type Options struct {
	// Cluster and ClusterCIDRs decide which routes of the old table are
	// this cluster's (route.Ownership).
	Cluster      string
	ClusterCIDRs []netip.Prefix
	// From is the table the cluster uses now, To the one it moves to.
	From, To string
	// Subnets are the configured subnets; every subnet associated with the
	// old table is moved too.
	Subnets []string
	// Limit is the most routes the new table may hold (0: plan.DefaultLimit).
	Limit int
	// DeleteOld deletes the old table once no subnet uses it.
	DeleteOld bool
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Cluster == "":
		return errors.New("cluster name is empty")
	case len(o.ClusterCIDRs) == 0:
		return errors.New("cluster CIDRs are empty")
	case o.From == "":
		return errors.New("the route table to migrate from is empty (routeTable.id)")
	case o.To == "":
		return errors.New("the route table to migrate to is empty (--to)")
	case armid.Same(o.From, o.To):
		return fmt.Errorf("--to %s is the table routekeeper already uses", o.To)
	case len(o.From) > route.MaxTagValueLength || len(o.To) > route.MaxTagValueLength:
		return fmt.Errorf("a route table ID longer than %d characters cannot be recorded in a tag", route.MaxTagValueLength)
	}
	return nil
}

// Actions of the steps.
const (
	ActionCheck     = "check"
	ActionCopy      = "copy-routes"
	ActionVerify    = "verify"
	ActionAssociate = "associate"
	ActionMark      = "mark-old"
	ActionDelete    = "delete-old"
)

// Status of a step.
type Status string

// The statuses.
const (
	// Pending: to do.
	Pending Status = "pending"
	// Done: the live state already shows it done.
	Done Status = "done"
	// Applied: done by this run.
	Applied Status = "applied"
	// Skipped: not part of this migration (a subnet on a third table,
	// delete-old without --delete-old).
	Skipped Status = "skipped"
)

// Step is one step of the migration.
type Step struct {
	N        int    `json:"step"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Status   Status `json:"status"`
	Detail   string `json:"detail"`
	// Routes are the names of the routes copy-routes adds to the new table.
	Routes []string `json:"routes,omitempty"`
}

// key identifies a step across the re-computations of one run.
func (s Step) key() string { return s.Action + " " + strings.ToLower(s.Resource) }

// Conflict is a reason the migration is refused.
type Conflict struct {
	Resource string `json:"resource"`
	// Route is the route of the old table that cannot be copied, if any.
	Route   string `json:"route,omitempty"`
	Message string `json:"message"`
}

// Plan is the migration as computed from the live state.
type Plan struct {
	From      string     `json:"from"`
	To        string     `json:"to"`
	Steps     []Step     `json:"steps"`
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Writes counts the ARM writes Run made (0 for a dry run).
	Writes int64 `json:"writes"`

	// desired is the new table as copy-routes writes it.
	desired *route.Table
	// copyRoutes are the routes of the old table the new one must hold.
	copyRoutes []copied
}

// copied is a route of the old table that the new one must hold; owned
// routes must keep their name (the controller manages them by name).
type copied struct {
	r     route.Route
	owned bool
}

// Pending returns the steps still to do.
func (p *Plan) Pending() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Status == Pending {
			out = append(out, s)
		}
	}
	return out
}

// Complete reports whether nothing is left to do.
func (p *Plan) Complete() bool { return len(p.Conflicts) == 0 && len(p.Pending()) == 0 }

// SubnetState is a subnet as read; Subnet is nil when it does not exist.
type SubnetState struct {
	ID     string
	Subnet *observe.Subnet
}

// State is the live state a plan is computed from.
type State struct {
	// Old and New are the tables; nil when they do not exist.
	Old, New *route.Table
	// Subnets are the configured subnets and every subnet associated with
	// either table, each once.
	Subnets []SubnetState
}

// ErrMissing is returned when a table the migration needs does not exist.
var ErrMissing = errors.New("route table does not exist")

// Compute plans the migration from the live state. It fails when the new
// table does not exist, or the old one does not and the new one does not
// say it was migrated from it (a migration that finished with
// --delete-old).
func Compute(o Options, st State) (*Plan, error) {
	p := &Plan{From: o.From, To: o.To}
	switch {
	case st.New == nil:
		return nil, fmt.Errorf("%w: %s (the table to migrate to is created first, for example by Terraform, in the region of the virtual network)", ErrMissing, o.To)
	case st.Old == nil && !armid.Same(st.New.Tag(route.MigratedFromTag), o.From):
		return nil, fmt.Errorf("%w: %s (the table to migrate from)", ErrMissing, o.From)
	}
	n := 0
	add := func(s Step) {
		n++
		s.N = n
		p.Steps = append(p.Steps, s)
	}

	p.conflicts(o, st)
	var missing []string
	if st.Old != nil {
		missing = p.copyPlan(o, st)
	}
	owned, custom := 0, 0
	for _, c := range p.copyRoutes {
		if c.owned {
			owned++
		} else {
			custom++
		}
	}
	check := Step{Action: ActionCheck, Resource: o.To, Status: Done}
	switch {
	case len(p.Conflicts) > 0:
		check.Status = Pending
		check.Detail = fmt.Sprintf("%d conflict(s): the migration is refused", len(p.Conflicts))
	case st.Old == nil:
		check.Detail = "the old table is gone; the new one names it as the table it was migrated from"
	default:
		check.Detail = fmt.Sprintf("the old table holds %d route(s) of this cluster and %d custom route(s) to carry over; no conflicts", owned, custom)
	}

	cp := Step{Action: ActionCopy, Resource: o.To}
	ver := Step{Action: ActionVerify, Resource: o.To}
	if st.Old == nil {
		cp.Status, cp.Detail = Done, "the old table is gone; the new table was filled before"
		ver.Status, ver.Detail = Done, cp.Detail
	} else {
		tagsDone := st.New.Claim() == o.Cluster && armid.Same(st.New.Tag(route.MigratedFromTag), o.From) && st.New.Tag(route.MigratedToTag) == ""
		switch {
		case len(missing) == 0 && tagsDone:
			cp.Status = Done
			cp.Detail = fmt.Sprintf("the new table holds all %d route(s) and is claimed by %s", len(p.copyRoutes), o.Cluster)
		default:
			cp.Status = Pending
			cp.Routes = missing
			cp.Detail = fmt.Sprintf("add %d of %d route(s) (%d of this cluster, %d custom) to the new table, keeping its %d own route(s); tag it %s=%s and %s=<old table>",
				len(missing), len(p.copyRoutes), owned, custom, len(st.New.Routes), route.ClaimTag, o.Cluster, route.MigratedFromTag)
		}
		ver.Status = cp.Status
		ver.Detail = "read the new table back: every copied route present, with its next hop, provisioned"
	}
	add(check)
	add(cp)
	add(ver)

	for _, s := range st.Subnets {
		step := Step{Action: ActionAssociate, Resource: s.ID}
		switch {
		case s.Subnet == nil:
			step.Status, step.Detail = Skipped, "the subnet does not exist"
		case armid.Same(s.Subnet.RouteTableID, o.To):
			step.Status, step.Detail = Done, "on the new table"
		case armid.Same(s.Subnet.RouteTableID, o.From):
			step.Status, step.Detail = Pending, "move the subnet from the old table to the new one (subnet PUT, If-Match), after verify"
		case s.Subnet.RouteTableID == "" && armid.Contains(o.Subnets, s.ID):
			step.Status, step.Detail = Pending, "the subnet has no route table: associate the new one, after verify"
		case s.Subnet.RouteTableID == "":
			step.Status, step.Detail = Skipped, "not configured and has no route table"
		default:
			step.Status, step.Detail = Skipped, fmt.Sprintf("on route table %s, neither the old nor the new one: not touched", s.Subnet.RouteTableID)
		}
		add(step)
	}

	mark := Step{Action: ActionMark, Resource: o.From}
	switch {
	case st.Old == nil:
		mark.Status, mark.Detail = Done, "the old table is gone"
	case armid.Same(st.Old.Tag(route.MigratedToTag), o.To) && len(st.Old.ClaimValues()) == 0:
		mark.Status, mark.Detail = Done, fmt.Sprintf("tagged %s=<new table>, claim removed", route.MigratedToTag)
	default:
		mark.Status = Pending
		mark.Detail = fmt.Sprintf("tag the old table %s=<new table> and remove the %s claim (routes kept), so that a running controller moves to the new table", route.MigratedToTag, route.ClaimTag)
	}
	add(mark)

	del := Step{Action: ActionDelete, Resource: o.From}
	switch {
	case st.Old == nil:
		del.Status, del.Detail = Done, "the old table does not exist"
	case !o.DeleteOld:
		del.Status, del.Detail = Skipped, "kept (--delete-old deletes it once no subnet uses it)"
	default:
		del.Status, del.Detail = Pending, "delete the old table once no subnet uses it (DELETE, If-Match)"
	}
	add(del)
	return p, nil
}

// conflicts fills p.Conflicts: what makes the migration unsafe.
func (p *Plan) conflicts(o Options, st State) {
	bad := func(res, rt, format string, args ...any) {
		p.Conflicts = append(p.Conflicts, Conflict{Resource: res, Route: rt, Message: fmt.Sprintf(format, args...)})
	}
	// The planner's claim rule: a table another cluster claims is not
	// this cluster's to write, nor to migrate from.
	if why, msg := plan.ClaimRefusal(st.New, "the new table", o.Cluster, o.ClusterCIDRs); why != "" {
		bad(o.To, "", "%s", msg)
	}
	if st.Old == nil {
		return
	}
	if why, msg := plan.ClaimRefusal(st.Old, "the old table", o.Cluster, o.ClusterCIDRs); why != "" {
		bad(o.From, "", "%s: it is not this cluster's to migrate", msg)
	}
	if !strings.EqualFold(st.Old.Location, st.New.Location) && st.Old.Location != "" && st.New.Location != "" {
		bad(o.To, "", "the new table is in %s, the old one in %s: Azure associates a route table only with subnets of its own region", st.New.Location, st.Old.Location)
	}
	if sub(o.From) != sub(o.To) {
		bad(o.To, "", "the new table is in subscription %s, the old one in %s: Azure associates a route table only with subnets of its own subscription", sub(o.To), sub(o.From))
	}
}

// copyPlan decides which routes of the old table the new one must hold and
// which of them it lacks, adding conflicts for routes that cannot be
// copied; it builds the new table as copy-routes writes it.
func (p *Plan) copyPlan(o Options, st State) (missing []string) {
	own := route.Ownership{Cluster: o.Cluster, ClusterCIDRs: o.ClusterCIDRs}
	cls := own.ClassifyTable(st.Old)
	newByName := map[string]*route.Route{}
	newByPrefix := map[string]*route.Route{}
	for i := range st.New.Routes {
		r := &st.New.Routes[i]
		newByName[strings.ToLower(r.Name)] = r
		newByPrefix[prefixKey(*r)] = r
	}
	desired := cloneTable(st.New)
	for i, r := range st.Old.Routes {
		owned := cls[i].Owner == route.OwnerThisCluster
		if cls[i].Owner == route.OwnerOtherCluster {
			continue // another cluster's route: its cluster keeps it
		}
		p.copyRoutes = append(p.copyRoutes, copied{r: r, owned: owned})
		byName := newByName[strings.ToLower(r.Name)]
		byPrefix := newByPrefix[prefixKey(r)]
		switch {
		case byPrefix != nil && !sameHop(*byPrefix, r):
			p.Conflicts = append(p.Conflicts, Conflict{Resource: o.To, Route: r.Name, Message: fmt.Sprintf(
				"the new table's route %s holds %s with next hop %s; the old table's route %s sends it to %s", byPrefix.Name, r.AddressPrefix, hopText(*byPrefix), r.Name, hopText(r))})
		case byPrefix != nil && owned && !strings.EqualFold(byPrefix.Name, r.Name):
			p.Conflicts = append(p.Conflicts, Conflict{Resource: o.To, Route: r.Name, Message: fmt.Sprintf(
				"the new table's route %s holds %s under another name: routekeeper manages the route by its name %s; delete or rename %s", byPrefix.Name, r.AddressPrefix, r.Name, byPrefix.Name)})
		case byName != nil && byPrefix == nil:
			p.Conflicts = append(p.Conflicts, Conflict{Resource: o.To, Route: r.Name, Message: fmt.Sprintf(
				"the new table has a route named %s for %s; the old one's is for %s", r.Name, byName.AddressPrefix, r.AddressPrefix)})
		case byPrefix != nil && provisioned(*byPrefix):
			// Already there.
		case byPrefix != nil:
			missing = append(missing, r.Name) // there but not provisioned: written again
		default:
			missing = append(missing, r.Name)
			c := r
			c.ProvisioningState = ""
			desired.Routes = append(desired.Routes, c)
		}
	}
	limit := o.Limit
	if limit <= 0 {
		limit = plan.DefaultLimit
	}
	if len(desired.Routes) > limit {
		p.Conflicts = append(p.Conflicts, Conflict{Resource: o.To, Message: fmt.Sprintf(
			"the new table would hold %d routes (its %d and %d from the old table), over the limit of %d", len(desired.Routes), len(st.New.Routes), len(desired.Routes)-len(st.New.Routes), limit)})
	}
	if desired.Tags == nil {
		desired.Tags = map[string]string{}
	}
	route.SetTag(desired.Tags, route.ClaimTag, o.Cluster)
	route.SetTag(desired.Tags, route.ClusterCIDRsTag, route.FormatCIDRs(o.ClusterCIDRs))
	route.SetTag(desired.Tags, route.MigratedFromTag, o.From)
	route.DeleteTag(desired.Tags, route.MigratedToTag)
	p.desired = desired
	return missing
}

// holds reports whether t holds every route the copy must carry.
func (p *Plan) holds(t *route.Table) (missing []string) {
	byPrefix := map[string]*route.Route{}
	for i := range t.Routes {
		byPrefix[prefixKey(t.Routes[i])] = &t.Routes[i]
	}
	for _, c := range p.copyRoutes {
		r := byPrefix[prefixKey(c.r)]
		if r == nil || !sameHop(*r, c.r) || !provisioned(*r) || c.owned && !strings.EqualFold(r.Name, c.r.Name) {
			missing = append(missing, c.r.Name)
		}
	}
	return missing
}

func prefixKey(r route.Route) string {
	if p, ok := r.CIDR(); ok {
		return p.String()
	}
	return strings.ToLower(r.AddressPrefix)
}

func sameHop(a, b route.Route) bool {
	return a.NextHopType == b.NextHopType && a.NextHopIP == b.NextHopIP
}

func provisioned(r route.Route) bool {
	return r.ProvisioningState == "" || r.ProvisioningState == "Succeeded"
}

func hopText(r route.Route) string {
	if r.NextHopIP.IsValid() {
		return fmt.Sprintf("%s %s", r.NextHopType, r.NextHopIP)
	}
	return string(r.NextHopType)
}

// cloneTable is a copy of t whose tags can be set.
func cloneTable(t *route.Table) *route.Table {
	c := t.Clone()
	if c.Tags == nil {
		c.Tags = map[string]string{}
	}
	return c
}

// sub returns the subscription of an ARM ID, lower-case.
func sub(id string) string {
	parts := strings.Split(strings.Trim(id, "/"), "/")
	if len(parts) >= 2 && strings.EqualFold(parts[0], "subscriptions") {
		return strings.ToLower(parts[1])
	}
	return ""
}
