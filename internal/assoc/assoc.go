// Package assoc is routekeeper's association decision: given the subnets
// and route tables as one pass observed them and the association policy,
// it says, per configured subnet, what state it is in, what routekeeper
// does about it (nothing, associate our table, adopt the subnet's table,
// create our table and then associate it) and, for a human, why and which
// command fixes it.
//
// It is pure: no I/O, no clock, no memory between calls. The controller
// (run), diff, doctor and routes list all call Decide on what they read,
// so they cannot disagree about a subnet. The decision table (the cases of
// docs/association.md) is tested as one table in assoc_test.go.
//
//	subnet as read                 enforce                 follow                  report
//	on our table                   none                    none                    none
//	no table (detached)            associate               associate               none
//	dangling (table gone)          associate               associate               none
//	on a table we kept before      associate               associate               none
//	on another table, lacking      associate (outage)      adopt, fill it first    none
//	  the node routes
//	on another table holding       none (restore:          adopt                   none
//	  the node routes                associate)
//	on the new table of an         none (migrating)        none                    none
//	  unfinished migration
//	on a table of another cluster  none (conflict)         none                    none
//
// "associate" becomes "create, then associate" when our table does not
// exist and creating it is allowed (never in routes: observe mode); a
// missing table that no subnet would be associated with is never created.
// Under follow, one other table is adopted only when it is the only other
// table the subnets point to, it is not another cluster's and it was not
// migrated away from; in observe mode follow acts as enforce.
package assoc

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Policy is what routekeeper does when a configured subnet is not on its
// route table.
type Policy string

// The association policies.
const (
	Enforce Policy = "enforce"
	Follow  Policy = "follow"
	Report  Policy = "report"
)

// State is what a subnet was found in.
type State string

// The subnet states.
const (
	// Associated: the subnet is on routekeeper's table.
	Associated State = "Associated"
	// Reassociated: the subnet was not on routekeeper's table and the
	// pass put it (back) there: the state after a successful Associate
	// (internal/verdict sets it from the write's outcome; Decide never
	// returns it).
	Reassociated State = "Reassociated"
	// Followed: the subnet was moved to another table and routekeeper
	// adopts that table (policy follow).
	Followed State = "Followed"
	// Migrating: the subnet is on the new table of an unfinished
	// `routekeeper migrate` from routekeeper's table.
	Migrating State = "Migrating"
	// Detached: the subnet has no route table, or points to one that no
	// longer exists (a dangling reference).
	Detached State = "Detached"
	// Previous: the subnet is on a table routekeeper kept before (it
	// followed a swap or a migration away from it).
	Previous State = "PreviousTable"
	// OtherTable: the subnet uses another table.
	OtherTable State = "OtherTable"
	// Conflict: the subnet uses, or would be given, a table claimed by
	// another cluster.
	Conflict State = "Conflict"
	// SubnetMissing: the configured subnet does not exist.
	SubnetMissing State = "SubnetMissing"
	// Unreadable: the subnet could not be read.
	Unreadable State = "Error"
)

// OnTable reports whether a subnet in state s is on routekeeper's table:
// the one it keeps, the one it followed a swap to, or the new table of an
// unfinished migration from it.
func (s State) OnTable() bool {
	switch s {
	case Associated, Reassociated, Followed, Migrating:
		return true
	}
	return false
}

// Action is what routekeeper does about a subnet.
type Action string

// The actions.
const (
	None Action = "none"
	// Associate: point the subnet to routekeeper's table (one subnet PUT
	// with If-Match).
	Associate Action = "associate"
	// Adopt: the subnet's table becomes routekeeper's table; the node
	// routes are written into it (policy follow).
	Adopt Action = "adopt"
	// CreateThenAssociate: create routekeeper's table (tagged, filled with
	// the node routes), then associate it.
	CreateThenAssociate Action = "create-then-associate"
)

// Switch says why the decision moved routekeeper to another table.
type Switch string

// The switches.
const (
	NoSwitch Switch = ""
	// Migrated: the table was migrated (its migrated-to tag, or, when it is
	// gone, a subnet's table whose migrated-from tag names it).
	Migrated Switch = "migrated"
	// Swapped: policy follow adopts the table the subnets were moved to.
	Swapped Switch = "followed"
)

// Subnet is a configured subnet as read.
type Subnet struct {
	ID string
	// RouteTableID is the table it points to, "" when none.
	RouteTableID string
	// AddressPrefixes are the subnet's prefixes.
	AddressPrefixes []netip.Prefix
	// NotFound: the subnet does not exist. Err: it could not be read.
	NotFound bool
	Err      error
}

// TableRead is one route table as read: Table when it exists, NotFound
// when it does not, Err when it could not be read.
type TableRead struct {
	Table    *route.Table
	NotFound bool
	Err      error
}

// Exists reports whether the table was read and exists.
func (r TableRead) Exists() bool { return r.Table != nil }

// Want is one node route, by content: the prefix and the next hop.
type Want struct {
	Prefix  netip.Prefix
	NextHop netip.Addr
}

// Input is everything one pass observed.
type Input struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	Policy       Policy
	// Restore lets enforce put our table back over another table that
	// holds the node routes.
	Restore bool
	// Observe: routes: observe mode (the platform writes the routes):
	// routekeeper neither creates nor adopts a table.
	Observe bool
	// CreateAllowed: routeTable.create.
	CreateAllowed bool
	// Table is the table routekeeper keeps: the configured one, or one it
	// followed or migrated to earlier in this process.
	Table string
	// Previous are the tables routekeeper kept before.
	Previous []string
	// FollowedFrom is set when an earlier pass (the guard) followed a swap
	// from that table to Table and the node routes have not been written
	// into Table since: this pass still adopts it (fills it, reports it).
	FollowedFrom string
	// Subnets are the configured subnets, as read.
	Subnets []Subnet
	// Tables holds every table read this pass, by ID (any case): ours, the
	// tables its migrated-to tags name, and the tables subnets point to.
	Tables map[string]TableRead
	// NodeRoutes are the node routes as they should be; a table "holds
	// the node routes" when it has each of them.
	NodeRoutes []Want
}

// Lookup returns what was read of table id; ok is false when it was not read.
func (in *Input) Lookup(id string) (TableRead, bool) {
	r, ok := in.Tables[armid.Key(id)]
	return r, ok
}

// SubnetDecision is the decision for one subnet.
type SubnetDecision struct {
	Subnet string `json:"subnet"`
	State  State  `json:"state"`
	// Table is the table the subnet points to as read ("" = none).
	Table string `json:"table,omitempty"`
	// AddressPrefixes are the subnet's prefixes, as read.
	AddressPrefixes []netip.Prefix `json:"-"`
	// Action is what routekeeper does.
	Action Action `json:"action"`
	// RouteTable is routekeeper's table (after a switch: the new one).
	RouteTable string `json:"routeTable"`
	// TableMissing: the subnet should be associated with our table, which
	// does not exist and may not be created.
	TableMissing bool `json:"tableMissing,omitempty"`
	// ClaimedBy is the other cluster of a Conflict.
	ClaimedBy string `json:"claimedBy,omitempty"`
	// HasRoutes and NodeRoutes: how many of the node routes the table the
	// subnet uses holds (0 when it uses none).
	HasRoutes  int `json:"hasRoutes"`
	NodeRoutes int `json:"nodeRoutes"`
	// Message says what was found and what routekeeper does.
	Message string `json:"message"`
	// Fix is the command that resolves a problem routekeeper leaves alone.
	Fix string `json:"fix,omitempty"`
}

// Problem reports whether the subnet needs attention: it is not on our
// table and routekeeper does not put it there (or adopt its table) now.
func (s SubnetDecision) Problem() bool {
	switch {
	case s.State == Associated, s.State == Reassociated, s.State == Followed, s.State == Migrating:
		return false
	}
	return s.Action == None
}

// Outage reports whether the subnet, as read, uses a table lacking some
// node route (or none): pod traffic of those nodes is dropped.
func (s SubnetDecision) Outage() bool {
	switch s.State {
	case SubnetMissing, Unreadable, Conflict:
		return false
	}
	return s.HasRoutes < s.NodeRoutes || s.Table == ""
}

// Decision is the outcome of Decide.
type Decision struct {
	// Table is the table routekeeper keeps after this decision.
	Table string `json:"routeTable"`
	// Switch and From: routekeeper moves from From to Table.
	Switch Switch `json:"switch,omitempty"`
	From   string `json:"from,omitempty"`
	// TableExists: Table was read and exists. TableErr: it could not be read.
	TableExists bool  `json:"tableExists"`
	TableErr    error `json:"-"`
	// Create: Table does not exist and is created (then associated).
	// CreateBlocked says why a missing table is not created.
	Create        bool   `json:"create,omitempty"`
	CreateBlocked string `json:"createBlocked,omitempty"`
	// Subnets is one decision per configured subnet, in order.
	Subnets []SubnetDecision `json:"subnets"`
	// Notes are remarks for the log (a migrated-to tag not followed, several
	// tables not followed).
	Notes []string `json:"notes,omitempty"`
}

// Actions counts the subnets with something to do.
func (d *Decision) Actions() int {
	n := 0
	for _, s := range d.Subnets {
		if s.Action != None {
			n++
		}
	}
	return n
}

// Problems counts the subnets left in a state that needs attention.
func (d *Decision) Problems() int {
	n := 0
	for _, s := range d.Subnets {
		if s.Problem() {
			n++
		}
	}
	return n
}

// maxMigrationHops bounds a chain of migrated-to tags (a cycle is a
// mistake, never followed for ever).
const maxMigrationHops = 4

// Decide makes the association decision for one pass.
func Decide(in Input) *Decision {
	d := &Decision{Table: in.Table}
	prev := map[string]bool{}
	for _, p := range in.Previous {
		prev[armid.Key(p)] = true
	}
	prev[armid.Key(in.Table)] = false

	d.followMigration(&in, prev)
	if d.Switch == NoSwitch && in.Policy == Follow && !in.Observe {
		d.followSwap(&in, prev)
	}
	if d.Switch == NoSwitch && in.FollowedFrom != "" {
		d.Switch, d.From = Swapped, in.FollowedFrom
	}
	ours, _ := in.Lookup(d.Table)
	d.TableExists, d.TableErr = ours.Exists(), ours.Err

	d.Subnets = make([]SubnetDecision, 0, len(in.Subnets))
	wants := false
	for _, s := range in.Subnets {
		sd := decideSubnet(&in, d, s, prev)
		if sd.Action == Associate {
			wants = true
		}
		d.Subnets = append(d.Subnets, sd)
	}
	if d.TableExists || d.TableErr != nil {
		return d
	}
	// Our table does not exist.
	switch {
	case !in.CreateAllowed:
		d.CreateBlocked = "creating it is not allowed (routeTable.create: false)"
	case in.Observe:
		d.CreateBlocked = "routes: observe never creates the table (the platform owns it)"
	case len(in.Subnets) == 0 || wants:
		d.Create = true
	default:
		var notes []string
		for _, s := range d.Subnets {
			notes = append(notes, fmt.Sprintf("subnet %s: %s", s.Subnet, s.State))
		}
		d.CreateBlocked = "no configured subnet would be associated with it (" + strings.Join(notes, "; ") +
			"), and routekeeper does not create a route table that nothing uses"
	}
	for i := range d.Subnets {
		s := &d.Subnets[i]
		if s.Action != Associate {
			continue
		}
		if d.Create {
			s.Action = CreateThenAssociate
			s.Message += fmt.Sprintf("; route table %s does not exist: routekeeper creates it (tagged %s=%s), fills it with the node routes, then associates it",
				d.Table, route.ClaimTag, in.Cluster)
			continue
		}
		s.Action, s.TableMissing = None, true
		s.Message += fmt.Sprintf("; route table %s does not exist, so it cannot be associated (%s)", d.Table, d.CreateBlocked)
		s.Fix = missingTableFix(s, in.Observe)
	}
	return d
}

// followMigration moves d.Table along migrated-to tags, or, when our
// table is gone, to the subnets' table that names it as migrated from.
func (d *Decision) followMigration(in *Input, prev map[string]bool) {
	cur, _ := in.Lookup(d.Table)
	if cur.NotFound {
		for _, s := range in.Subnets {
			if s.NotFound || s.Err != nil || s.RouteTableID == "" || armid.Same(s.RouteTableID, d.Table) {
				continue
			}
			t, _ := in.Lookup(s.RouteTableID)
			if t.Exists() && armid.Same(t.Table.Tag(route.MigratedFromTag), d.Table) && t.Table.Claim() == in.Cluster {
				d.switchTo(s.RouteTableID, Migrated, prev)
				return
			}
		}
		return
	}
	for range maxMigrationHops {
		if !cur.Exists() {
			return
		}
		to := cur.Table.Tag(route.MigratedToTag)
		if to == "" || armid.Same(to, d.Table) {
			return
		}
		next, _ := in.Lookup(to)
		switch {
		case !next.Exists():
			d.Notes = append(d.Notes, fmt.Sprintf("route table %s is marked as migrated to %s, which does not exist (or could not be read): staying on it", d.Table, to))
			return
		case next.Table.Claim() != in.Cluster && !armid.Same(next.Table.Tag(route.MigratedFromTag), d.Table):
			d.Notes = append(d.Notes, fmt.Sprintf("route table %s is marked as migrated to %s, which is claimed by %q, not this cluster %q: staying on it",
				d.Table, to, next.Table.Claim(), in.Cluster))
			return
		}
		d.switchTo(to, Migrated, prev)
		cur = next
	}
}

// followSwap adopts, under policy follow, the one other table the subnets
// were moved to.
func (d *Decision) followSwap(in *Input, prev map[string]bool) {
	var cands []string
	for _, s := range in.Subnets {
		if s.Err != nil {
			d.Notes = append(d.Notes, fmt.Sprintf("subnet %s could not be read: no swap is followed in this pass", s.ID))
			return
		}
		if s.NotFound || s.RouteTableID == "" || armid.Same(s.RouteTableID, d.Table) || prev[armid.Key(s.RouteTableID)] {
			continue
		}
		if !armid.Contains(cands, s.RouteTableID) {
			cands = append(cands, s.RouteTableID)
		}
	}
	if len(cands) > 1 {
		d.Notes = append(d.Notes, fmt.Sprintf("the subnets were moved to several route tables (%s): none is followed", strings.Join(cands, ", ")))
	}
	if len(cands) != 1 {
		return
	}
	t, _ := in.Lookup(cands[0])
	switch {
	case !t.Exists():
		return // a dangling reference: nothing to adopt
	case t.Table.Claim() != "" && t.Table.Claim() != in.Cluster:
		return // a conflict, reported per subnet
	case t.Table.Tag(route.MigratedToTag) != "":
		d.Notes = append(d.Notes, fmt.Sprintf("route table %s was migrated away from (to %s): not following it", cands[0], t.Table.Tag(route.MigratedToTag)))
		return
	case armid.Same(t.Table.Tag(route.MigratedFromTag), d.Table):
		return // an unfinished migration: migrate finishes it
	}
	d.switchTo(cands[0], Swapped, prev)
}

func (d *Decision) switchTo(to string, why Switch, prev map[string]bool) {
	if d.From == "" {
		d.From = d.Table
	}
	prev[armid.Key(d.Table)] = true
	prev[armid.Key(to)] = false
	d.Table, d.Switch = to, why
}

func decideSubnet(in *Input, d *Decision, s Subnet, prev map[string]bool) SubnetDecision {
	ours := d.Table
	sd := SubnetDecision{Subnet: s.ID, Table: s.RouteTableID, RouteTable: ours, Action: None, NodeRoutes: len(in.NodeRoutes), AddressPrefixes: s.AddressPrefixes}
	switch {
	case s.NotFound:
		sd.State, sd.Message = SubnetMissing, fmt.Sprintf("subnet %s does not exist", s.ID)
		sd.Fix = "correct subnets[] in the configuration (or --subnet), or create the subnet"
		return sd
	case s.Err != nil:
		sd.State, sd.Message = Unreadable, fmt.Sprintf("reading subnet %s failed: %v", s.ID, s.Err)
		return sd
	}
	other, read := in.Lookup(s.RouteTableID)
	if other.Exists() {
		sd.HasRoutes = Holds(other.Table, in.NodeRoutes)
	}
	holds := sd.HasRoutes == sd.NodeRoutes
	routes := fmt.Sprintf("%d of %d node routes", sd.HasRoutes, sd.NodeRoutes)

	if armid.Same(s.RouteTableID, ours) {
		sd.State, sd.Message = Associated, "associated with "+ours
		if d.Switch == Swapped {
			sd.State, sd.Action = Followed, Adopt
			sd.Message = fmt.Sprintf("the subnet was moved from route table %s to %s (it holds %s): routekeeper follows the swap, writes the node routes into %s, keeps it from now on and no longer writes %s",
				d.From, ours, routes, ours, d.From)
		} else if d.Switch == Migrated {
			sd.Message = fmt.Sprintf("associated with %s, the table %s was migrated to", ours, d.From)
		}
		return sd
	}

	report := in.Policy == Report
	switch {
	case s.RouteTableID == "":
		sd.State = Detached
		sd.Message = fmt.Sprintf("subnet has no route table: pod traffic between nodes is dropped (route table %s is not associated)", ours)
	case read && other.NotFound:
		sd.State = Detached
		sd.Message = fmt.Sprintf("subnet points to route table %s, which does not exist (a dangling reference): pod traffic between nodes is dropped", s.RouteTableID)
	case prev[armid.Key(s.RouteTableID)] || (other.Exists() && armid.Same(other.Table.Tag(route.MigratedToTag), ours)):
		sd.State = Previous
		sd.Message = fmt.Sprintf("subnet is still on route table %s (%s), which routekeeper kept before and no longer writes (it now keeps %s)", s.RouteTableID, routes, ours)
	case other.Exists() && armid.Same(other.Table.Tag(route.MigratedFromTag), ours):
		sd.State = Migrating
		sd.Message = fmt.Sprintf("subnet is on route table %s (%s), the new table of a migration from %s that has not finished; left alone", s.RouteTableID, routes, ours)
		sd.Fix = "routekeeper migrate --to " + s.RouteTableID
		return sd
	case other.Exists() && other.Table.Claim() != "" && other.Table.Claim() != in.Cluster:
		sd.State, sd.ClaimedBy = Conflict, other.Table.Claim()
		sd.Message = fmt.Sprintf("subnet uses route table %s, claimed by cluster %q, not by this cluster %q: routekeeper writes nothing to the table or the subnet%s",
			s.RouteTableID, other.Table.Claim(), in.Cluster, plan.CIDROverlap(other.Table, other.Table.Claim(), in.ClusterCIDRs))
		sd.Fix = "give each cluster its own route table and its own node subnet; check subnets[] and routeTable.id"
		return sd
	default:
		sd.State = OtherTable
		sd.Message = fmt.Sprintf("subnet uses route table %s instead of %s; it holds %s", s.RouteTableID, ours, routes)
		if !read || other.Err != nil {
			sd.Message = fmt.Sprintf("subnet uses route table %s instead of %s, which could not be read", s.RouteTableID, ours)
		}
	}
	if report {
		sd.Message += "; association policy report: not repairing"
		sd.Fix = reportFix(sd, ours)
		return sd
	}
	if sd.State == OtherTable {
		switch {
		case in.Restore:
			sd.Message += "; association.restore puts " + ours + " back"
		case !holds || !read || other.Err != nil:
			// Enforce (and follow when it cannot adopt): never leave a
			// subnet on a table without the node routes.
			sd.Message += fmt.Sprintf("; it lacks node routes, so pod traffic is dropped: routekeeper re-associates %s. To swap route tables safely, run routekeeper migrate --to %s (or use --association-policy follow)", ours, s.RouteTableID)
		default:
			sd.Message += "; left alone (it holds the node routes)"
			sd.Fix = fmt.Sprintf("routekeeper migrate --to %s (make it routekeeper's table), or --association-restore (put %s back)", s.RouteTableID, ours)
			switch {
			case in.Policy == Follow && in.Observe:
				sd.Message += "; association policy follow does not adopt tables in routes: observe mode (the platform writes the routes)"
			case in.Policy == Follow:
				sd.Message += "; not followed: the subnets point to several tables, or it was migrated away from"
			}
			return sd
		}
	}
	if claimedOurs(&sd, in, d) {
		return sd
	}
	sd.Action = Associate
	return sd
}

// claimedOurs turns an association with our table into a conflict when
// our table exists and is another cluster's: nothing is written then.
func claimedOurs(sd *SubnetDecision, in *Input, d *Decision) bool {
	ours, _ := in.Lookup(d.Table)
	if !ours.Exists() {
		return false
	}
	claim := ours.Table.Claim()
	if claim == "" || claim == in.Cluster {
		return false
	}
	sd.State, sd.ClaimedBy = Conflict, claim
	sd.Message += fmt.Sprintf("; route table %s is claimed by cluster %q, not by this cluster %q: routekeeper does not associate it%s",
		d.Table, claim, in.Cluster, plan.CIDROverlap(ours.Table, claim, in.ClusterCIDRs))
	sd.Fix = "give each cluster its own route table; check routeTable.id"
	return true
}

func reportFix(sd SubnetDecision, ours string) string {
	assoc := fmt.Sprintf("az network vnet subnet update --ids %s --route-table %s (or run with --association-policy enforce)", sd.Subnet, ours)
	if sd.State == OtherTable {
		return fmt.Sprintf("routekeeper migrate --to %s (keep the new table), or --association-policy follow, or %s", sd.Table, assoc)
	}
	return assoc
}

func missingTableFix(sd *SubnetDecision, observe bool) string {
	switch {
	case sd.Table != "" && sd.State == OtherTable:
		return fmt.Sprintf("--association-policy follow (adopt %s and fill it), or routeTable.id: %s, or --create-route-table (re-create %s)", sd.Table, sd.Table, sd.RouteTable)
	case observe:
		return "routeTable.id: the table the platform (AKS) uses"
	}
	return "--create-route-table (routekeeper creates, fills and associates it), or routeTable.id: an existing table"
}

// Holds counts the wants t has: a route with the same prefix and next hop
// (any name, any provisioning state but Failed).
func Holds(t *route.Table, wants []Want) int {
	if t == nil {
		return 0
	}
	have := make(map[Want]bool, len(t.Routes))
	for _, r := range t.Routes {
		p, ok := r.CIDR()
		if !ok || r.NextHopType != route.VirtualAppliance || r.ProvisioningState == "Failed" {
			continue
		}
		have[Want{Prefix: p.Masked(), NextHop: r.NextHopIP}] = true
	}
	n := 0
	for _, w := range wants {
		if have[Want{Prefix: w.Prefix.Masked(), NextHop: w.NextHop}] {
			n++
		}
	}
	return n
}
