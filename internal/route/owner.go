package route

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Owner says whom a route belongs to, seen from one cluster.
type Owner int

// The owners of a route. Only OwnerThisCluster routes may be changed or
// deleted by routekeeper; the others are carried through every write
// unchanged.
const (
	// OwnerCustom: not a pod route of any cluster as far as the naming
	// scheme can tell: a name outside the scheme ("to-firewall",
	// "kubernetes-route-10-200-0-0-24"), a prefix that is not a CIDR (a
	// service tag such as "AzureCloud"), or a scheme-looking name whose
	// mangled CIDR does not match the route's prefix.
	OwnerCustom Owner = iota
	// OwnerOtherCluster: in the naming scheme, but not ours: its prefix lies
	// outside this cluster's CIDRs, or the table is claimed by another
	// cluster.
	OwnerOtherCluster
	// OwnerThisCluster: in the naming scheme, the mangled CIDR in the name
	// matches the prefix, the prefix lies inside this cluster's CIDRs and
	// the table is claimed by this cluster (or unclaimed and adopted by
	// routekeeper's next write).
	OwnerThisCluster
)

// String returns the form `routes list` prints: "this cluster", "other
// cluster" or "custom".
func (o Owner) String() string {
	switch o {
	case OwnerThisCluster:
		return "this cluster"
	case OwnerOtherCluster:
		return "other cluster"
	case OwnerCustom:
		return "custom"
	}
	return fmt.Sprintf("Owner(%d)", int(o))
}

// MarshalText makes JSON and YAML output carry the String form.
func (o Owner) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Ownership holds what ownership is decided against: the cluster's name (the
// value of the claim tag) and its CIDRs.
//
// The rules, in order (the first that applies decides):
//
//	prefix is not a CIDR (service tag, garbage)            custom
//	name not in the scheme <node>____<mangled CIDR>        custom (see LegacyNames)
//	mangled CIDR in the name != the route's prefix         custom
//	prefix outside every cluster CIDR                      other cluster
//	table claimed by another cluster                       other cluster
//	otherwise (claimed by us, or unclaimed)                this cluster
//
// The next hop type does not take part: a route named in the scheme for one
// of our prefixes in a table we claim is ours even when someone changed its
// next hop to None or VnetLocal in the portal, and routekeeper repairs it.
// Azure routes cannot carry tags, so the name is the only record of the
// owner (cloud-provider-azure relies on the same), and the table's claim
// tag is what keeps two clusters with overlapping CIDRs apart.
//
// In an unclaimed table scheme routes count as ours, so that a table made by
// cloud-provider-azure (which has no tag) is taken over without churn. The
// planner narrows this to the routes of the cluster's own nodes until the
// claim tag exists (a route of an unknown node may be another cluster's and
// is never deleted), writes the claim only at creation or when asked
// (plan.Input.Claim).
//
// Tag keys compare case-insensitively (ARM tag names do); the claim value
// compares case-sensitively, as ARM tag values do: "Prod" and "prod" are two
// clusters, and a mismatch refuses the write, the safe side.
type Ownership struct {
	Cluster      string
	ClusterCIDRs []netip.Prefix
	// LegacyNames also owns routes named exactly after a node, the scheme
	// of cloud-provider-azure before Kubernetes 1.21 turned dual-stack
	// naming on, when such a route points (VirtualAppliance) into the
	// cluster CIDRs. The name carries no marker at all, so this is opt-in:
	// any custom route with a VirtualAppliance next hop into the cluster
	// CIDRs becomes ours and is replaced or deleted.
	LegacyNames bool
}

// Classification is the outcome of Ownership.Classify for one route.
type Classification struct {
	Owner Owner
	// Node is the node named by the route ("" for custom routes).
	Node string
	// Prefix is the route's prefix, masked; invalid for service tags.
	Prefix netip.Prefix
	// Legacy marks an owned route named by the legacy scheme (the node
	// name alone); see Ownership.LegacyNames.
	Legacy bool
	// Why says in a few words why the route has this owner.
	Why string
}

// Classify decides the owner of r in a table whose claim tag holds claim
// (Table.Claim; "" when unclaimed).
func (o Ownership) Classify(r Route, claim string) Classification {
	return o.classify(&r, claim)
}

// ClassifyAt is Classify for a route in place, without copying it; the
// planner calls it for every route of large tables.
func (o Ownership) ClassifyAt(r *Route, claim string) Classification {
	return o.classify(r, claim)
}

func (o Ownership) classify(r *Route, claim string) Classification {
	p, canonical, ok := r.cidr()
	if !ok {
		return Classification{Owner: OwnerCustom, Why: "prefix is not a CIDR"}
	}
	c := Classification{Prefix: p}
	node, mangled, inScheme := ParseName(r.Name)
	switch {
	case !inScheme && o.LegacyNames && r.Name != "" && r.NextHopType == VirtualAppliance && o.Contains(p):
		c.Node, c.Legacy = r.Name, true
	case !inScheme:
		c.Owner, c.Why = OwnerCustom, "name not in the naming scheme"
		return c
	case canonical && !mangledEqualText(mangled, r.AddressPrefix) || !canonical && !mangledEqual(mangled, p):
		c.Owner, c.Why = OwnerCustom, "name does not match the prefix"
		return c
	default:
		c.Node = node
	}
	switch {
	case !o.Contains(p):
		c.Owner, c.Why = OwnerOtherCluster, "prefix outside the cluster CIDRs"
	case claim != "" && claim != o.Cluster:
		c.Owner, c.Why = OwnerOtherCluster, "table claimed by another cluster"
	case c.Legacy:
		c.Owner, c.Why = OwnerThisCluster, "legacy name of a node"
	case claim == "":
		c.Owner, c.Why = OwnerThisCluster, "unclaimed table, adopted on write"
	default:
		c.Owner, c.Why = OwnerThisCluster, "named for this cluster"
	}
	return c
}

// ClassifyTable classifies every route of t against the table's claim. A
// table with claim tags for several clusters (which ARM cannot hold) counts
// as claimed by someone else: nothing in it is ours.
func (o Ownership) ClassifyTable(t *Table) []Classification {
	if t == nil {
		return nil
	}
	claim := ""
	switch vals := t.ClaimValues(); len(vals) {
	case 0:
	case 1:
		claim = vals[0]
	default:
		claim = "\x00ambiguous"
	}
	out := make([]Classification, len(t.Routes))
	for i := range t.Routes {
		out[i] = o.classify(&t.Routes[i], claim)
	}
	return out
}

// Owns reports whether r is owned by this cluster in a table with claim.
func (o Ownership) Owns(r Route, claim string) bool {
	return o.Classify(r, claim).Owner == OwnerThisCluster
}

// Contains reports whether p lies wholly inside one of the cluster CIDRs.
func (o Ownership) Contains(p netip.Prefix) bool {
	for _, c := range o.ClusterCIDRs {
		if c.Bits() <= p.Bits() && c.Masked().Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// CIDR returns the route's prefix, masked. It parses AddressPrefix, the text
// ARM holds (Prefix is not serialized and may be unset on a decoded table);
// it falls back to Prefix when AddressPrefix is empty. ok is false for
// service tags and anything else that is not a CIDR.
func (r Route) CIDR() (netip.Prefix, bool) {
	p, _, ok := r.cidr()
	return p, ok
}

// cidr is CIDR that also reports whether AddressPrefix is the canonical
// text of the masked prefix, so that the name check can read the text.
func (r *Route) cidr() (p netip.Prefix, canonical, ok bool) {
	if r.AddressPrefix == "" {
		return r.Prefix.Masked(), false, r.Prefix.IsValid()
	}
	if r.Prefix.IsValid() {
		var buf [64]byte
		if string(r.Prefix.AppendTo(buf[:0])) == r.AddressPrefix {
			// Already parsed; saves the work.
			m := r.Prefix.Masked()
			return m, m == r.Prefix, true
		}
	}
	p, err := netip.ParsePrefix(r.AddressPrefix)
	if err != nil {
		return netip.Prefix{}, false, false
	}
	m := p.Masked()
	var buf [64]byte
	return m, string(m.AppendTo(buf[:0])) == r.AddressPrefix, true
}

// MangleCIDR returns the CIDR as it appears in a route name: masked, with
// '.', ':' and '/' removed (10.244.1.0/24 -> 102441024).
func MangleCIDR(p netip.Prefix) string {
	return cidrMangler.Replace(p.Masked().String())
}

// mangledEqual compares mangled (from a route name) with MangleCIDR(p),
// case-insensitively (IPv6 hex digits) and without allocating.
func mangledEqual(mangled string, p netip.Prefix) bool {
	var buf [64]byte
	text := p.Masked().AppendTo(buf[:0])
	i := 0
	for _, b := range text {
		if b == '.' || b == ':' || b == '/' {
			continue
		}
		if i >= len(mangled) || lower(mangled[i]) != lower(b) {
			return false
		}
		i++
	}
	return i == len(mangled)
}

// mangledEqualText is mangledEqual for the canonical text of the prefix.
func mangledEqualText(mangled, text string) bool {
	i := 0
	for j := 0; j < len(text); j++ {
		b := text[j]
		if b == '.' || b == ':' || b == '/' {
			continue
		}
		if i >= len(mangled) || lower(mangled[i]) != b {
			return false
		}
		i++
	}
	return i == len(mangled)
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// MaxNameLength is the longest route name ARM accepts.
const MaxNameLength = 80

// ValidateName checks a route name against ARM's rules: 1–80 characters of
// letters, digits, '_', '.' and '-', starting with a letter or digit and
// ending with a letter, digit or '_'. A long node name makes a scheme name
// too long: <node>____<mangled CIDR> leaves a /24 IPv4 route 67 characters
// for the node name and an IPv6 one less.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("route name is empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("route name %q is %d characters long, Azure allows at most %d", name, len(name), MaxNameLength)
	case !isAlnum(name[0]):
		return fmt.Errorf("route name %q must start with a letter or digit", name)
	case !isAlnum(name[len(name)-1]) && name[len(name)-1] != '_':
		return fmt.Errorf("route name %q must end with a letter, digit or '_'", name)
	}
	for i, c := range name {
		if c >= 0x80 || !isAlnum(byte(c)) && c != '_' && c != '.' && c != '-' {
			return fmt.Errorf("route name %q has %q at byte %d; Azure allows letters, digits, '_', '.' and '-'", name, c, i+1)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// ClaimValues returns the distinct non-empty values of the table's claim
// tags (keys compared case-insensitively). ARM keeps tag names unique
// case-insensitively, so more than one value only happens in a table that
// did not come from ARM; callers treat that as an ambiguous claim.
func (t *Table) ClaimValues() []string {
	if t == nil {
		return nil
	}
	var vals []string
	for k, v := range t.Tags {
		if v == "" || !strings.EqualFold(k, ClaimTag) {
			continue
		}
		dup := false
		for _, x := range vals {
			dup = dup || x == v
		}
		if !dup {
			vals = append(vals, v)
		}
	}
	sort.Strings(vals)
	return vals
}
