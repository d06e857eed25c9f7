package verdict

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

type judge struct {
	o    *observe.Observation
	want Desired
	out  *Outcome
	v    *Verdict
}

func (j *judge) run() *Verdict {
	v := &Verdict{mode: j.want.Mode, Nodes: map[string]Node{}, acted: j.out != nil, nodeList: j.want.Nodes, want: j.want, guarded: j.o.Scope().Subnets}
	j.v = v
	d := j.standDownDecision(assoc.Decide(j.assocInput()))
	v.Decision, v.Table = d, d.Table
	v.Denials = readDenials(j.o)
	if d.TableErr != nil {
		// Nothing is known of the nodes; the subnets' decisions stand.
		v.Err = d.TableErr // it names the operation and the table
		v.Subnets = j.subnets(nil, false)
		v.Access = j.access()
		return v
	}
	cur := j.table(d.Table)
	nets, _ := j.o.NodeNetworks() // an unreadable network leaves next hops unchecked
	p := plan.Compute(plan.Input{
		Cluster:      j.want.Cluster,
		ClusterCIDRs: j.want.ClusterCIDRs,
		Limit:        j.want.Limit,
		LimitFrom:    j.want.LimitFrom,
		Nodes:        j.want.Nodes,
		Current:      cur,
		Adopt:        j.want.Adopt,
		// A table followed to (a swap, a migration) is adopted on purpose: claim it.
		Claim:            j.want.Claim || !armid.Same(d.Table, j.want.Configured),
		MaxDeletes:       j.want.MaxDeletes,
		AllowEmptySource: j.want.AllowEmptySource,
		StandDown:        j.want.Mode == StandDown,
		ConfirmStandDown: j.want.ConfirmStandDown,
		NodeNetworks:     nets,
		NodeNetworksNote: j.o.NodeNetworksNote(),
	})
	v.Plan = p
	switch {
	case cur == nil && !d.Create && j.standingDown():
		// Nothing of ours is left to remove.
	case cur == nil && !d.Create:
		v.Err = fmt.Errorf("%w: %s: %s", ErrTableMissing, d.Table, d.CreateBlocked)
	case p.Refused != "":
		v.Err = fmt.Errorf("%w %s: %s", ErrRefused, d.Table, p.Refused)
	case j.out == nil && j.want.Mode != Observe && p.NeedsWrite():
		w := *p.Desired
		if cur == nil {
			w.ID = d.Table
			if w.Location == "" {
				w.Location = j.want.Location
			}
		} else {
			v.etag = cur.Etag
		}
		v.write = &w
	}
	after, created := cur, false
	if j.out != nil && j.out.Table != nil {
		if tw := j.out.Table; tw.Err == nil && tw.ReadBack != nil {
			after, created, v.Wrote = tw.ReadBack, cur == nil, true
		} else if tw.Err != nil {
			v.Err = tw.Err
		}
	}
	v.Current = after
	j.nodes(cur, after)
	v.Subnets = j.subnets(after, created)
	j.subnetTruth()
	j.nodeSubnets()
	v.Routes = countRoutes(after, j.wantedNodes(), route.Ownership{Cluster: j.want.Cluster, ClusterCIDRs: j.want.ClusterCIDRs})
	v.Access = j.access()
	j.reach()
	return v
}

// access checks what routekeeper needs for the table it keeps now.
func (j *judge) access() []Access {
	if !j.o.AccessRead() {
		// Nothing to check the writes' documents against: do not build
		// them (a 1,000-route table's document is a third of a guard
		// cycle's allocations).
		return nil
	}
	decided := j.want
	decided.Table = j.v.Table
	return access(j.o, decided, writeDocuments(j.o, decided, j.v))
}

// table is the table id as observed, nil when missing or not read.
func (j *judge) table(id string) *route.Table {
	r, _ := j.o.Table(id)
	return r.Table
}

// nodes judges every node against the table as it stands (after).
func (j *judge) nodes(cur, after *route.Table) {
	v, p, d := j.v, j.v.Plan, j.v.Decision
	if j.standingDown() {
		j.standDownNodes()
		return
	}
	if cur == nil && !d.Create {
		for _, n := range j.want.Nodes {
			v.Nodes[n.Name] = Node{Reason: reason.RouteTableMissing, Message: fmt.Sprintf("route table %s does not exist", d.Table)}
		}
		return
	}
	missing, why := reason.NoRouteCreated, ""
	var carried map[string]bool
	if j.out != nil && j.out.Table != nil {
		tw := j.out.Table
		switch {
		case tw.Err == nil:
			missing, carried = reason.RouteNotReadBack, map[string]bool{}
			for _, ch := range p.Changes {
				if ch.Kind != plan.Delete {
					carried[strings.ToLower(ch.Route.Name)] = true
				}
			}
		case tw.Refused != nil:
			den := Deny(OpTableWrite, d.Table, *tw.Refused)
			missing, why = reason.RouteWriteDenied, ": "+den.Message()
			v.Denials = append(v.Denials, den)
		case tw.Full:
			missing, why = reason.RouteTableFull, ": Azure refused the write of "+d.Table+" for holding more routes than it allows"
			if tw.FullLimit > 0 {
				why += fmt.Sprintf(" (its limit: %d routes per route table)", tw.FullLimit)
			}
			why += "; routekeeper plans with Azure's limit from now on, and the nodes that do not fit stay unrouted"
		default:
			missing = reason.RouteWriteFailed
		}
	}
	writes := v.write != nil
	owned := owners(after, j.want)
	ownedBefore := owners(cur, j.want)
	afterIx, curIx := indexTable(after), indexTable(cur)
	for _, n := range j.want.Nodes {
		st := p.Nodes[n.Name]
		fwd, note := forwardedOnly(p, n.Name)
		if st.State == plan.NotRouted && !fwd {
			v.Nodes[n.Name] = Node{Reason: st.Reason, Message: st.Message}
			continue
		}
		rs := routeState(n, afterIx, carried, owned)
		switch {
		case len(rs.missing) > 0:
			v.Nodes[n.Name] = Node{Reason: missing, Message: "no correct route in route table for " + strings.Join(rs.missing, ", ") + why,
				Actionable: writes && writesNode(p, n.Name)}
		case fwd || st.Reason == reason.RouteNotManaged || len(rs.foreign) > 0:
			msg := st.Message
			if fwd {
				msg = note
			}
			if msg == "" {
				msg = fmt.Sprintf("traffic flows, route not managed: route %s, which routekeeper does not own, sends the pod CIDR to the node", strings.Join(rs.foreign, ", "))
				if writes && writesNode(p, n.Name) {
					msg += "; routekeeper run takes it over with no outage (routeTable.adopt: matching)"
				}
			}
			v.Nodes[n.Name] = j.pending(n, rs, curIx, ownedBefore, Node{Routed: true, Reason: reason.RouteNotManaged, Message: msg})
		default:
			// The message stays the same while another writer's operation
			// is in progress, so that the node's condition is not rewritten.
			v.Nodes[n.Name] = j.pending(n, rs, curIx, ownedBefore, Node{Routed: true, Reason: reason.RouteCreated, Message: "routekeeper created a route"})
		}
	}
}

// pending applies invariant 4 to a node whose routes are right by content
// (nv): with a route not read Succeeded (another writer's operation), a
// node routed before stays routed, and one that was not is not routed yet.
// Routed before: the cluster says so (NetworkAvailable), the controller
// remembers it, or its routes read Succeeded in before (the table as this
// pass observed it, before its own write).
func (j *judge) pending(n source.Node, rs routes, before *tableIndex, owned map[string]route.Owner, nv Node) Node {
	if len(rs.pending) == 0 {
		return nv
	}
	nv.Pending = true
	if n.NetworkAvailable || j.want.Routed[n.Name] {
		return nv
	}
	if b := routeState(n, before, nil, owned); len(b.missing) == 0 && len(b.pending) == 0 {
		return nv
	}
	return Node{Pending: true, Reason: reason.RouteProvisioning,
		Message: "the route is in the table but not provisioned yet (" + strings.Join(rs.pending, ", ") + "): another writer's operation is in progress; the node counts as routed once its route reads Succeeded"}
}

// owners classifies the routes of t (nil: none) with this cluster's
// ownership rules, by lower-case name.
func owners(t *route.Table, want Desired) map[string]route.Owner {
	if t == nil {
		return nil
	}
	own := route.Ownership{Cluster: want.Cluster, ClusterCIDRs: want.ClusterCIDRs}
	out := make(map[string]route.Owner, len(t.Routes))
	for i, cl := range own.ClassifyTable(t) {
		out[strings.ToLower(t.Routes[i].Name)] = cl.Owner
	}
	return out
}

// forwardedOnly reports whether every conflict of node is a route that
// routekeeper does not own sending the pod CIDR to the node: traffic
// flows. note is the first one's message.
func forwardedOnly(p *plan.Plan, node string) (ok bool, note string) {
	for _, c := range p.Conflicts {
		if c.Node != node {
			continue
		}
		if !c.Forwarding {
			return false, ""
		}
		if note == "" {
			note = c.Message
		}
	}
	return note != "", note
}

// writesNode reports whether the plan writes a route of node.
func writesNode(p *plan.Plan, node string) bool {
	for _, ch := range p.Changes {
		if ch.Node == node && ch.Kind != plan.Delete {
			return true
		}
	}
	return false
}

// routes is where a node's pod CIDRs stand in a table.
type routes struct {
	// missing: no route with the right prefix and next hop that is not
	// Failed (a route this pass wrote must read Succeeded).
	missing []string
	// pending: the right route, not (yet) Succeeded.
	pending []string
	// foreign: names of routes routekeeper does not own that carry a pod
	// CIDR (the node's own route by name is missing or wrong).
	foreign []string
}

// routeState finds each pod CIDR's route in t: by the node's route name
// first, else by content (any route with the prefix and next hop).
func routeState(n source.Node, ix *tableIndex, carried map[string]bool, owners map[string]route.Owner) routes {
	var rs routes
	t := ix.table()
	if len(n.PodCIDRs) == 0 {
		rs.missing = []string{"(no pod CIDR)"}
		return rs
	}
	for _, cidr := range n.PodCIDRs {
		hop, ok := n.NextHop(cidr)
		if !ok || t == nil {
			rs.missing = append(rs.missing, cidr.String())
			continue
		}
		r := ix.byName[strings.ToLower(route.Name(n.Name, cidr))]
		if r == nil || !carries(r, cidr, hop) {
			r = findByContent(t, cidr, hop)
			if r == nil {
				rs.missing = append(rs.missing, cidr.String())
				continue
			}
			if owners[strings.ToLower(r.Name)] != route.OwnerThisCluster {
				rs.foreign = append(rs.foreign, r.Name)
			}
		}
		switch {
		case succeeded(r):
		case carried[strings.ToLower(r.Name)]:
			rs.missing = append(rs.missing, cidr.String())
		default:
			rs.pending = append(rs.pending, cidr.String()+" "+r.ProvisioningState)
		}
	}
	return rs
}

// carries reports whether r sends cidr to hop and is not Failed.
func carries(r *route.Route, cidr netip.Prefix, hop netip.Addr) bool {
	p, ok := r.CIDR()
	return ok && p.Masked() == cidr.Masked() && r.NextHopType == route.VirtualAppliance && r.NextHopIP == hop && r.ProvisioningState != "Failed"
}

func succeeded(r *route.Route) bool {
	return r.ProvisioningState == "" || r.ProvisioningState == "Succeeded"
}

// tableIndex is a route table with its routes by name (lower case), made
// once per table a verdict judges nodes against: a table of 1,000 node
// routes is looked up, not scanned, for each node.
type tableIndex struct {
	t      *route.Table
	byName map[string]*route.Route
}

// indexTable indexes t (nil: no table).
func indexTable(t *route.Table) *tableIndex {
	ix := &tableIndex{t: t}
	if t == nil {
		return ix
	}
	ix.byName = make(map[string]*route.Route, len(t.Routes))
	for i := range t.Routes {
		k := strings.ToLower(t.Routes[i].Name)
		if _, dup := ix.byName[k]; !dup { // the first, as a scan would find
			ix.byName[k] = &t.Routes[i]
		}
	}
	return ix
}

func (ix *tableIndex) table() *route.Table {
	if ix == nil {
		return nil
	}
	return ix.t
}

func findByContent(t *route.Table, cidr netip.Prefix, hop netip.Addr) *route.Route {
	for i := range t.Routes {
		if carries(&t.Routes[i], cidr, hop) {
			return &t.Routes[i]
		}
	}
	return nil
}

// subnets turns the association decision into subnet verdicts, with what
// became of their actions. after is our table as it stands (nil when
// missing); created says this pass's write created it.
func (j *judge) subnets(after *route.Table, created bool) []Subnet {
	d := j.v.Decision
	out := make([]Subnet, 0, len(d.Subnets))
	for _, sd := range d.Subnets {
		s := Subnet{SubnetDecision: sd, Repaired: sd.State == assoc.Followed}
		if j.out != nil && (sd.Action == assoc.Associate || sd.Action == assoc.CreateThenAssociate) {
			j.outcome(&s, after, created)
		}
		out = append(out, s)
	}
	return out
}

// outcome applies the association write's outcome to s.
func (j *judge) outcome(s *Subnet, after *route.Table, created bool) {
	ours := s.RouteTable
	w, tried := j.out.Subnets[armid.Key(s.Subnet)]
	switch {
	case !tried && after == nil:
		s.TableMissing = true
		s.Message += fmt.Sprintf("; route table %s does not exist, so it cannot be associated", ours)
		return
	case !tried:
		return // not attempted: still to do
	case w.Raced:
		s.RepairFailed, s.Err = true, w.Err
		s.Message += "; the subnet changed while being repaired: checked again at the next cycle"
		return
	case w.Lost:
		s.RepairFailed, s.Err = true, w.Err
		s.Message += "; the answer to the association was lost, so whether it was made is unknown: the subnet is read again before any other write"
		return
	case w.Refused != nil:
		s.RepairFailed, s.RepairHeld, s.Err = true, w.Held, w.Err
		d := Deny(OpSubnetWrite, s.Subnet, *w.Refused)
		s.Message += "; " + d.Message()
		s.Fix = d.Fix
		j.v.Denials = append(j.v.Denials, d)
		return
	case w.Err != nil:
		s.RepairFailed, s.Err = true, w.Err
		s.Message += "; repair failed: " + w.Err.Error()
		return
	}
	was := s.State
	s.Repaired, s.Fix = true, ""
	s.State = assoc.Reassociated
	switch {
	case created && !j.want.TableExisted:
		s.State, s.Repaired = assoc.Associated, false
		s.Message = "associated the new route table " + ours
	case created:
		s.Recreated = true
		s.Message = fmt.Sprintf("route table %s was deleted out of band: re-created it (tagged %s=%s), filled it with the node routes and re-associated it (was %s)",
			ours, route.ClaimTag, j.want.Cluster, orNone(s.Table))
	case was == assoc.Previous:
		s.Message = fmt.Sprintf("moved the subnet from route table %s, which routekeeper kept before and no longer writes, to %s", s.Table, ours)
	case was == assoc.OtherTable:
		s.Message = fmt.Sprintf("re-associated route table %s (was %s, which holds %d of %d node routes). To swap route tables without an outage, use routekeeper migrate --to %s",
			ours, s.Table, s.HasRoutes, s.NodeRoutes, s.Table)
	default:
		s.Message = fmt.Sprintf("re-associated route table %s (was %s)", ours, orNone(s.Table))
	}
}

// subnetTruth makes a routed node unrouted when a guarded subnet holding
// its address is, after the pass, on no table or on a table other than
// ours that lacks its route: our table's route does not reach it.
func (j *judge) subnetTruth() {
	v := j.v
	for _, s := range v.Subnets {
		detached := false
		var uses *route.Table
		switch s.State {
		case assoc.Associated, assoc.Reassociated, assoc.Followed, assoc.SubnetMissing, assoc.Unreadable:
			continue
		case assoc.Detached:
			detached = true
		default:
			uses = j.table(s.Table)
		}
		pending := !v.acted && (s.Action == assoc.Associate || s.Action == assoc.CreateThenAssociate)
		usesIx, usesOwners := indexTable(uses), owners(uses, j.want)
		for _, n := range j.want.Nodes {
			nv := v.Nodes[n.Name]
			if !nv.Routed || !inPrefixes(n, s.AddressPrefixes) {
				continue
			}
			if detached {
				msg := fmt.Sprintf("the node's route exists, but subnet %s has no route table: Azure does not use the route", s.Subnet)
				if s.Table != "" {
					msg = fmt.Sprintf("the node's route exists, but subnet %s points to route table %s, which does not exist: Azure does not use the route", s.Subnet, s.Table)
				}
				v.Nodes[n.Name] = Node{Reason: reason.RouteTableDetached, Message: msg, Actionable: pending}
				continue
			}
			switch rs := routeState(n, usesIx, nil, usesOwners); {
			case len(rs.missing) > 0:
				v.Nodes[n.Name] = Node{Reason: reason.SubnetRouteTableLacksRoute, Actionable: pending, Message: fmt.Sprintf(
					"the node's subnet %s uses route table %s, which lacks its route for %s", s.Subnet, orNone(s.Table), strings.Join(rs.missing, ", "))}
			case len(rs.foreign) > 0:
				v.Nodes[n.Name] = j.pending(n, rs, usesIx, owners(uses, j.want), Node{Routed: true, Reason: reason.RouteNotManaged, Message: fmt.Sprintf(
					"traffic flows, route not managed: the node's subnet %s uses route table %s, where route %s, which routekeeper does not own, carries it", s.Subnet, s.Table, strings.Join(rs.foreign, ", "))})
			}
		}
	}
}

// inPrefixes reports whether one of the node's addresses is in prefixes.
func inPrefixes(n source.Node, prefixes []netip.Prefix) bool {
	for _, ip := range n.InternalIPs {
		for _, p := range prefixes {
			if p.Contains(ip) {
				return true
			}
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// countRoutes compares the table with the nodes.
func countRoutes(t *route.Table, nodes []source.Node, own route.Ownership) *RouteCounts {
	rc := &RouteCounts{}
	var byName map[string]*route.Route
	if t != nil {
		byName = make(map[string]*route.Route, len(t.Routes))
		for i := range t.Routes {
			byName[strings.ToLower(t.Routes[i].Name)] = &t.Routes[i]
		}
	}
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		rc.Desired += len(n.PodCIDRs)
		for _, cidr := range n.PodCIDRs {
			name := strings.ToLower(route.Name(n.Name, cidr))
			want[name] = true
			hop, ok := n.NextHop(cidr)
			if r := byName[name]; ok && r != nil && carries(r, cidr, hop) && succeeded(r) {
				rc.Present++
			}
		}
	}
	if t == nil {
		return rc
	}
	for i, cl := range own.ClassifyTable(t) {
		if cl.Owner != route.OwnerThisCluster {
			rc.Foreign++
			continue
		}
		rc.Owned++
		if !want[strings.ToLower(t.Routes[i].Name)] {
			rc.Stale++
		}
	}
	return rc
}

// readDenials are the reads of the observation ARM refused, each with the
// grant that fixes it.
func readDenials(o *observe.Observation) []Denial {
	var out []Denial
	for _, t := range o.Tables() {
		if t.Refused != nil {
			out = append(out, Deny(OpTableRead, t.ID, *t.Refused))
		}
	}
	for _, s := range o.Subnets() {
		if s.Refused != nil {
			out = append(out, Deny(OpSubnetRead, s.ID, *s.Refused))
		}
	}
	for _, n := range o.Networks() {
		if n.Refused != nil && !n.Earlier {
			out = append(out, Deny(OpNetworkRead, n.ID, *n.Refused))
		}
	}
	return out
}

// nodeSubnets records, for every node, the guarded subnet that holds its
// address.
func (j *judge) nodeSubnets() {
	for _, n := range j.want.Nodes {
		nv, ok := j.v.Nodes[n.Name]
		if !ok {
			continue
		}
		for _, s := range j.v.Subnets {
			if inPrefixes(n, s.AddressPrefixes) {
				nv.Subnet = s.Subnet
				j.v.Nodes[n.Name] = nv
				break
			}
		}
	}
}
