package plan

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

const cluster = "prod"

var clusterCIDRs = []netip.Prefix{pfx("10.244.0.0/16"), pfx("fd00:10:244::/56")}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

// node builds a node: ips and cidrs are told apart by the '/'.
func node(name string, ipsAndCIDRs ...string) source.Node {
	n := source.Node{Name: name}
	for _, s := range ipsAndCIDRs {
		if strings.Contains(s, "/") {
			n.PodCIDRs = append(n.PodCIDRs, pfx(s))
		} else {
			n.InternalIPs = append(n.InternalIPs, addr(s))
		}
	}
	return n
}

// ours is a route in this cluster's naming scheme, as ARM returns it.
func ours(nodeName, cidr, hop string) route.Route {
	p := pfx(cidr)
	return route.Route{Name: route.Name(nodeName, p), AddressPrefix: cidr, Prefix: p, NextHopType: route.VirtualAppliance, NextHopIP: addr(hop), ProvisioningState: "Succeeded"}
}

// rt is any route; hop is a next hop type or an IP (VirtualAppliance).
func rt(name, prefix, hop string) route.Route {
	r := route.Route{Name: name, AddressPrefix: prefix, ProvisioningState: "Succeeded"}
	if p, err := netip.ParsePrefix(prefix); err == nil {
		r.Prefix = p
	}
	if ip, err := netip.ParseAddr(hop); err == nil {
		r.NextHopType, r.NextHopIP = route.VirtualAppliance, ip
	} else {
		r.NextHopType = route.NextHopType(hop)
	}
	return r
}

// table is a route table claimed by claim ("" = unclaimed).
func table(claim string, routes ...route.Route) *route.Table {
	t := &route.Table{
		ID:       "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt",
		Name:     "rt",
		Location: "eastus",
		Etag:     `W/"1"`,
		Tags:     map[string]string{"env": "test"},
		Routes:   routes,
		Subnets:  []string{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"},
	}
	if claim != "" {
		t.Tags[route.ClaimTag] = claim
	}
	return t
}

// changeStrings renders changes compactly for comparison.
func changeStrings(cs []Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		s := fmt.Sprintf("%s %s %s %s", c.Kind, c.Route.Name, c.Route.AddressPrefix, hopText(&c.Route))
		if c.Kind == Delete {
			s = fmt.Sprintf("delete %s", c.Route.Name)
		}
		out = append(out, s)
	}
	return out
}

// conflictStrings renders conflicts as "node prefix Reason other".
func conflictStrings(cs []Conflict) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		p := "-"
		if c.Prefix.IsValid() {
			p = c.Prefix.String()
		}
		s := fmt.Sprintf("%s %s %s", c.Node, p, c.Reason)
		if c.Route != "" {
			s += " " + c.Route
		}
		if c.Forwarding {
			s += " forwarding"
		}
		out = append(out, s)
	}
	return out
}

// nodeStrings renders node states as "Routed", "Pending" or "NotRouted/Reason".
func nodeStrings(ns map[string]NodeStatus) map[string]string {
	out := make(map[string]string, len(ns))
	for k, v := range ns {
		s := string(v.State)
		if v.Reason != "" {
			s += "/" + string(v.Reason)
		}
		out[k] = s
	}
	return out
}

// apply returns the table ARM would hold after the plan's PUT succeeded:
// the desired table as read back (new etag, prefixes parsed from text, the
// read-only provisioning state filled in).
func apply(in Input, p *Plan) *route.Table {
	if p.Desired == nil {
		return in.Current
	}
	t := *p.Desired
	t.Etag = t.Etag + "+"
	t.Routes = slices.Clone(p.Desired.Routes)
	for i := range t.Routes {
		r := &t.Routes[i]
		r.Prefix = netip.Prefix{}
		if x, err := netip.ParsePrefix(r.AddressPrefix); err == nil {
			r.Prefix = x
		}
		if r.ProvisioningState == "" {
			r.ProvisioningState = "Succeeded"
		}
	}
	return &t
}

// checkInvariants asserts what every plan must satisfy, whatever its input.
// owned tells which current routes the plan may change; nil means the
// ownership rules' own verdict (the property test passes the generator's
// labels instead, so the check does not trust the code it checks).
func checkInvariants(t *testing.T, in Input, p *Plan, owned []bool) {
	t.Helper()
	if p.Refused != "" {
		if p.Desired != nil || len(p.Changes) != 0 || p.Claim {
			t.Errorf("refused plan still writes: desired=%v changes=%d claim=%v", p.Desired != nil, len(p.Changes), p.Claim)
		}
		for _, n := range in.Nodes {
			if st := p.Nodes[n.Name]; st.State != NotRouted || st.Reason != p.RefusedReason {
				t.Errorf("refused plan: node %s is %+v, want NotRouted/%s", n.Name, st, p.RefusedReason)
			}
		}
		return
	}
	cur := in.Current
	if cur == nil {
		cur = &route.Table{}
	}
	unclaimed := in.Current != nil && len(cur.ClaimValues()) == 0
	known := map[string]bool{}
	for _, n := range in.Nodes {
		known[strings.ToLower(n.Name)] = true
	}
	if owned == nil {
		own := in.Ownership()
		claim := in.Cluster
		if len(cur.ClaimValues()) == 0 {
			claim = ""
		}
		owned = make([]bool, len(cur.Routes))
		for i, r := range cur.Routes {
			cls := own.Classify(r, claim)
			owned[i] = cls.Owner == route.OwnerThisCluster && (!unclaimed || known[strings.ToLower(cls.Node)])
		}
	}
	// The deletion guard: plain deletions (the prefix leaves the table)
	// stay within the cap, and an empty source deletes nothing.
	if in.MaxDeletes != 0 && p.Refused == "" && p.MaxDeletes != in.MaxDeletes {
		t.Errorf("plan applied MaxDeletes %d, input says %d", p.MaxDeletes, in.MaxDeletes)
	}
	if len(p.HeldDeletes) > 0 && p.HeldReason == "" {
		t.Errorf("%d deletes held without a reason", len(p.HeldDeletes))
	}
	// The claim is written only at creation or when asked for.
	if p.Claim && in.Current != nil && !in.Claim {
		t.Errorf("plan claims an existing table without Input.Claim")
	}
	// Changes agree with Desired.
	if (len(p.Changes) > 0 || p.Claim) != (p.Desired != nil) {
		t.Fatalf("NeedsWrite=%v but %d changes, claim=%v", p.NeedsWrite(), len(p.Changes), p.Claim)
	}
	if p.Desired == nil {
		return
	}
	d := p.Desired
	// Every non-owned route is carried over bit for bit, exactly once.
	inDesired := make(map[string][]route.Route, len(d.Routes))
	for _, r := range d.Routes {
		inDesired[strings.ToLower(r.Name)] = append(inDesired[strings.ToLower(r.Name)], r)
	}
	// An adoption replaces a route not owned by one with the same prefix
	// and next hop, in the same write.
	adopted := map[string]bool{}
	for _, c := range p.Changes {
		if c.Adopts == "" {
			continue
		}
		if in.Adopt != AdoptMatching || c.Kind == Delete {
			t.Errorf("adoption %+v without Adopt matching", c)
		}
		i := slices.IndexFunc(cur.Routes, func(r route.Route) bool { return strings.EqualFold(r.Name, c.Adopts) })
		if i < 0 {
			t.Errorf("create %s adopts %s, which the table does not hold", c.Route.Name, c.Adopts)
			continue
		}
		o := cur.Routes[i]
		op, _ := o.CIDR()
		if op != c.Route.Prefix || o.NextHopType != c.Route.NextHopType || o.NextHopIP != c.Route.NextHopIP {
			t.Errorf("create %s adopts %s, which has another prefix or next hop: %+v", c.Route.Name, o.Name, o)
		}
		adopted[strings.ToLower(o.Name)] = true
	}
	for i, r := range cur.Routes {
		if owned[i] || adopted[strings.ToLower(r.Name)] {
			continue
		}
		got := inDesired[strings.ToLower(r.Name)]
		if len(got) != 1 || !reflect.DeepEqual(got[0], r) {
			t.Errorf("non-owned route %+v changed or dropped: desired has %+v", r, got)
		}
	}
	for _, c := range p.Changes {
		if c.Kind == Create {
			continue
		}
		old := c.Route
		if c.Old != nil {
			old = *c.Old
		}
		i := slices.IndexFunc(cur.Routes, func(r route.Route) bool { return reflect.DeepEqual(r, old) })
		if i < 0 || !owned[i] && !(c.Kind == Delete && adopted[strings.ToLower(old.Name)]) {
			t.Errorf("%s of a route the plan does not own: %+v", c.Kind, old)
		}
		if c.Kind == Delete && unclaimed && !adopted[strings.ToLower(old.Name)] && !known[strings.ToLower(c.Node)] {
			t.Errorf("delete of %s, a route of unknown node %q, in an unclaimed table", old.Name, c.Node)
		}
	}
	// Limit.
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if len(d.Routes) > limit && len(d.Routes) > len(cur.Routes) {
		t.Errorf("desired table has %d routes, limit %d, current %d", len(d.Routes), limit, len(cur.Routes))
	}
	// No new duplicate names or prefixes; valid names on everything added.
	curPrefixes := map[netip.Prefix]int{}
	for _, r := range cur.Routes {
		if p, ok := r.CIDR(); ok {
			curPrefixes[p]++
		}
	}
	names := map[string]bool{}
	prefixes := map[netip.Prefix]int{}
	for _, r := range d.Routes {
		ln := strings.ToLower(r.Name)
		if names[ln] {
			t.Errorf("desired table has two routes named %s", r.Name)
		}
		names[ln] = true
		if p, ok := r.CIDR(); ok {
			prefixes[p]++
			if prefixes[p] > 1 && prefixes[p] > curPrefixes[p] {
				t.Errorf("desired table has %d routes with prefix %s", prefixes[p], p)
			}
		}
	}
	for _, c := range p.Changes {
		if c.Kind != Delete {
			if err := route.ValidateName(c.Route.Name); err != nil {
				t.Errorf("plan writes an invalid name: %v", err)
			}
			if c.Route.NextHopType != route.VirtualAppliance || !c.Route.NextHopIP.IsValid() {
				t.Errorf("plan writes a route without a VirtualAppliance next hop: %+v", c.Route)
			}
		}
	}
	if got, want := d.Claim(), cur.Claim(); p.Claim && got != in.Cluster || !p.Claim && got != want {
		t.Errorf("desired table claim = %q, claim written %v, current %q", got, p.Claim, want)
	}
	// Adoption never removes a prefix: every prefix of the current table
	// that the desired one lacks left with a plain delete of an owned
	// route, and those stay within the guard.
	desiredPrefixes := map[netip.Prefix]bool{}
	for _, r := range d.Routes {
		if x, ok := r.CIDR(); ok {
			desiredPrefixes[x] = true
		}
	}
	for i, r := range cur.Routes {
		x, ok := r.CIDR()
		if ok && !desiredPrefixes[x] && (!owned[i] || adopted[strings.ToLower(r.Name)]) {
			t.Errorf("prefix %s of route %s (owned %v) left the table", x, r.Name, owned[i])
		}
	}
	plain := 0 // deletes whose prefix leaves the table (an update may move a prefix too)
	for _, c := range p.Changes {
		if x, ok := c.Route.CIDR(); c.Kind == Delete && (!ok || !desiredPrefixes[x]) {
			plain++
		}
	}
	// The confirmed stand-down is the one mass deletion allowed; without
	// its confirmation, a stand-down (configured or implied by nodes
	// without pod CIDRs) deletes nothing.
	confirmed := p.StandDown && in.ConfirmStandDown
	if plain > 0 && (p.StandDown || PodCIDRsGone(in.Nodes)) && !confirmed {
		t.Errorf("an unconfirmed stand-down deleted %d routes", plain)
	}
	if plain > 0 && len(in.Nodes) == 0 && !in.AllowEmptySource && !confirmed {
		t.Errorf("an empty source deleted %d routes", plain)
	}
	if p.MaxDeletes >= 0 && plain > p.MaxDeletes && !confirmed {
		t.Errorf("%d routes deleted, the cap is %d", plain, p.MaxDeletes)
	}
	if in.Current != nil && d.Etag != in.Current.Etag {
		t.Errorf("desired etag %q, want the etag planned from %q", d.Etag, in.Current.Etag)
	}
}

// checkConverges applies the plan and plans again: the second plan must
// change nothing, and every Pending node must now be Routed.
func checkConverges(t *testing.T, in Input, p *Plan) {
	t.Helper()
	if p.Refused != "" {
		return
	}
	in2 := in
	in2.Current = apply(in, p)
	p2 := Compute(in2)
	// A claim written by this plan turns the unclaimed table's routes of
	// unknown nodes into ours, and held deletions are re-decided as the
	// table grows: one more write may follow, then nothing.
	for extra := 0; extra < 2 && p2.NeedsWrite() && (p.Claim && len(p.Unclaimed) > 0 || len(p.HeldDeletes) > 0 || len(p2.HeldDeletes) > 0); extra++ {
		checkInvariants(t, in2, p2, nil)
		in, p = in2, p2
		in2.Current = apply(in, p)
		p2 = Compute(in2)
	}
	if p2.NeedsWrite() {
		t.Fatalf("plan does not converge: second plan %s: %v", p2, changeStrings(p2.Changes))
	}
	for name, st := range p.Nodes {
		st2 := p2.Nodes[name]
		want := st.State
		if want == Pending {
			want = Routed
		}
		if st2.State != want || st2.Reason != st.Reason {
			t.Errorf("node %s: %s/%s after the write, want %s/%s", name, st2.State, st2.Reason, want, st.Reason)
		}
	}
	c1, c2 := conflictStrings(p.Conflicts), conflictStrings(p2.Conflicts)
	sort.Strings(c1)
	sort.Strings(c2)
	if !slices.Equal(c1, c2) {
		t.Errorf("conflicts changed after the write:\nbefore %q\nafter  %q", c1, c2)
	}
}
