package routing

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gaissmai/bart"

	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// Subnet is a subnet as a trace sees it: where it is, its virtual network
// and the route table it really uses.
type Subnet struct {
	ID       string
	Name     string
	Prefixes []netip.Prefix
	// VNet is the subnet's virtual network (for the system routes).
	VNetName string
	VNet     Network
	// RouteTableID is the table the subnet is associated with, "" for none.
	RouteTableID string
}

// State is the network a trace runs on, as read.
type State struct {
	Subnets []Subnet
	// Tables holds the route tables the subnets use, by ID (any case).
	Tables []*route.Table
	Nodes  []source.Node
	// ConfiguredTableID is the table routekeeper keeps the pod routes in;
	// a subnet that uses another one is pointed out.
	ConfiguredTableID string
}

// Endpoint is one end of a trace: an address, and the node it is said to
// belong to ("" when not said; Resolve finds it from the nodes).
type Endpoint struct {
	Addr netip.Addr `json:"address"`
	Node string     `json:"node,omitempty"`
}

// Verdict is what happens to the packet.
type Verdict string

// The verdicts. Only Delivered means the packet reaches DST.
const (
	Delivered Verdict = "delivered"
	// WrongNode: the route sends the packet to a node whose pod CIDRs do
	// not contain the destination.
	WrongNode  Verdict = "wrong-node"
	Dropped    Verdict = "dropped"
	ToInternet Verdict = "internet"
	// ToAppliance: a virtual appliance that is not a node of the cluster.
	ToAppliance Verdict = "appliance"
	ToGateway   Verdict = "gateway"
	// Unreachable: the route is VnetLocal (or peering) but no node has the
	// address: the virtual network delivers only to its NICs' addresses.
	Unreachable Verdict = "unreachable"
	// NoSubnet: the source is in none of the subnets.
	NoSubnet Verdict = "no-subnet"
)

// Result is the answer of a trace.
type Result struct {
	Source      Endpoint `json:"source"`
	Destination Endpoint `json:"destination"`
	// Subnet is the subnet the packet leaves from.
	Subnet   string `json:"subnet,omitempty"`
	SubnetID string `json:"subnetId,omitempty"`
	// RouteTableID is the table the subnet uses, "" for none.
	RouteTableID string `json:"routeTableId,omitempty"`
	// Route is the effective route chosen; nil when no route matches.
	Route *Route `json:"route,omitempty"`
	// Shadowed are the other routes that contain the destination.
	Shadowed []Route `json:"shadowed,omitempty"`
	// NextHop* are Network Watcher's next-hop answer.
	NextHopType       NextHopType `json:"nextHopType"`
	NextHopIP         netip.Addr  `json:"nextHopIpAddress,omitzero"`
	NextHopRouteTable string      `json:"nextHopRouteTableId"`
	Verdict           Verdict     `json:"verdict"`
	// Node is the node the packet is sent to, if any.
	Node string `json:"node,omitempty"`
	// DestinationNode is the node whose pod CIDR (or address) holds DST.
	DestinationNode string `json:"destinationNode,omitempty"`
	// Reasons is the chain of reasoning, one step a line.
	Reasons []string `json:"reasons"`
}

// OK reports whether the packet is delivered.
func (r *Result) OK() bool { return r.Verdict == Delivered }

// SystemRouteID is what Network Watcher says for the route table of a
// system route.
const SystemRouteID = "System Route"

// Resolve turns a trace argument into an endpoint: an IP, a node name (for
// a source, the node's address of family fam; for a destination, the first
// pod address of the node's pod CIDR of that family, see PodAddr), or
// node/IP. fam is 4 or 6, 0 for either.
func Resolve(nodes []source.Node, arg string, asDestination bool, fam int) (Endpoint, error) {
	if name, ip, ok := strings.Cut(arg, "/"); ok {
		if a, err := netip.ParseAddr(ip); err == nil && !strings.Contains(name, ":") {
			n := findNode(nodes, name)
			if n == nil {
				return Endpoint{}, fmt.Errorf("%q: no node named %q", arg, name)
			}
			return Endpoint{Addr: a.Unmap(), Node: n.Name}, nil
		}
	}
	if a, err := netip.ParseAddr(arg); err == nil {
		return Endpoint{Addr: a.Unmap()}, nil
	}
	n := findNode(nodes, arg)
	if n == nil {
		return Endpoint{}, fmt.Errorf("%q is neither an IP address, a node name nor node/pod-ip", arg)
	}
	if asDestination {
		for _, p := range n.PodCIDRs {
			if fam == 0 || family(p.Addr()) == fam {
				return Endpoint{Addr: PodAddr(p), Node: n.Name}, nil
			}
		}
		return Endpoint{}, fmt.Errorf("node %s has no pod CIDR (of IPv%d): give a pod IP", n.Name, fam)
	}
	for _, ip := range n.InternalIPs {
		if fam == 0 || family(ip) == fam {
			return Endpoint{Addr: ip, Node: n.Name}, nil
		}
	}
	return Endpoint{}, fmt.Errorf("node %s has no internal IP (of IPv%d)", n.Name, fam)
}

// PodAddr is the address a trace to a pod CIDR uses: the first one after
// the network address (the pod bridge's, on most CNIs).
func PodAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if n := a.Next(); p.Contains(n) {
		return n
	}
	return a
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

func findNode(nodes []source.Node, name string) *source.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

// Tracer answers traces on one State; it compiles each subnet's routes
// once, so all-pairs traces stay cheap.
type Tracer struct {
	st     State
	tables map[string]*route.Table
	sel    map[*Subnet]*Selector
	read   map[*Subnet]bool // the subnet's table was read
	byIP   map[netip.Addr]*source.Node
	byName map[string]*source.Node
	pods   bart.Table[podOwner]
}

type podOwner struct {
	node *source.Node
	cidr netip.Prefix
}

// NewTracer prepares traces on st.
func NewTracer(st State) *Tracer {
	t := &Tracer{st: st, tables: map[string]*route.Table{}, sel: map[*Subnet]*Selector{}, read: map[*Subnet]bool{},
		byIP: map[netip.Addr]*source.Node{}, byName: map[string]*source.Node{}}
	for _, tb := range st.Tables {
		if tb != nil {
			t.tables[strings.ToLower(tb.ID)] = tb
		}
	}
	for i := range st.Nodes {
		n := &st.Nodes[i]
		t.byName[n.Name] = n
		for _, ip := range n.InternalIPs {
			if _, dup := t.byIP[ip]; !dup {
				t.byIP[ip] = n
			}
		}
		for _, p := range n.PodCIDRs {
			if _, dup := t.pods.Get(p.Masked()); !dup {
				t.pods.Insert(p.Masked(), podOwner{n, p})
			}
		}
	}
	return t
}

// Trace is NewTracer(st).Trace(src, dst).
func Trace(st State, src, dst Endpoint) *Result { return NewTracer(st).Trace(src, dst) }

func (t *Tracer) table(id string) *route.Table {
	if id == "" {
		return nil
	}
	return t.tables[strings.ToLower(id)]
}

func (t *Tracer) selector(s *Subnet) *Selector {
	if sel, ok := t.sel[s]; ok {
		return sel
	}
	var udrs []route.Route
	tb := t.table(s.RouteTableID)
	if tb != nil {
		udrs = tb.Routes
	}
	t.read[s] = tb != nil
	sel := NewSelector(Effective(s.VNet, udrs))
	t.sel[s] = sel
	return sel
}

// owner returns the node whose internal IP is a (and an invalid prefix),
// or the node whose pod CIDR contains a, with the CIDR.
func (t *Tracer) owner(a netip.Addr) (*source.Node, netip.Prefix) {
	if n := t.byIP[a]; n != nil {
		return n, netip.Prefix{}
	}
	if o, ok := t.pods.Lookup(a); ok {
		return o.node, o.cidr
	}
	return nil, netip.Prefix{}
}

// SubnetOf returns the subnet a packet from a leaves: the node's subnet
// when a is a pod of a node, else the subnet whose prefix contains a.
func (t *Tracer) SubnetOf(src Endpoint) (*Subnet, netip.Addr) {
	from := src.Addr
	var n *source.Node
	if src.Node != "" {
		n = t.byName[src.Node]
	} else if o, p := t.owner(src.Addr); o != nil && p.IsValid() {
		n = o
	}
	if n != nil {
		// The NIC address of the packet's family, else any.
		for _, same := range []bool{true, false} {
			for _, ip := range n.InternalIPs {
				if ip.Is4() != src.Addr.Is4() && same {
					continue
				}
				if s := t.subnetContaining(ip); s != nil {
					return s, ip
				}
			}
		}
	}
	return t.subnetContaining(from), from
}

func (t *Tracer) subnetContaining(a netip.Addr) *Subnet {
	var best *Subnet
	bits := -1
	for i := range t.st.Subnets {
		s := &t.st.Subnets[i]
		for _, p := range s.Prefixes {
			if p.Contains(a) && p.Bits() > bits {
				best, bits = s, p.Bits()
			}
		}
	}
	return best
}

// Trace follows a packet from src to dst and explains it.
func (t *Tracer) Trace(src, dst Endpoint) *Result {
	r, f := t.decide(src, dst, true)
	r.Reasons = t.explain(r, f)
	return r
}

// Verdict follows a packet from src to dst without the explanation and the
// shadowed routes: what all-pairs checks (doctor) need, fast. Explain adds
// them to a result that needs them.
func (t *Tracer) Verdict(src, dst Endpoint) *Result {
	r, _ := t.decide(src, dst, false)
	return r
}

// facts are what decide found that the result does not carry.
type facts struct {
	subnet    *Subnet
	from      netip.Addr // the NIC address the packet leaves from
	dstNode   *source.Node
	dstCIDR   netip.Prefix
	tableRead bool
	dstNodeIP bool // dst is the address of Node
}

func (t *Tracer) decide(src, dst Endpoint, shadowed bool) (*Result, facts) {
	r := &Result{Source: src, Destination: dst}
	var f facts
	if src.Node == "" {
		if o, _ := t.owner(src.Addr); o != nil {
			r.Source.Node = o.Name
		}
	}
	f.subnet, f.from = t.SubnetOf(r.Source)
	if f.subnet == nil {
		r.Verdict = NoSubnet
		return r, f
	}
	s := f.subnet
	r.Subnet, r.SubnetID, r.RouteTableID = s.Name, s.ID, s.RouteTableID
	f.dstNode, f.dstCIDR = t.owner(dst.Addr)
	if f.dstNode != nil {
		r.DestinationNode = f.dstNode.Name
	}
	sel := t.selector(s)
	f.tableRead = t.read[s]
	best, ok := sel.Lookup(dst.Addr)
	r.NextHopRouteTable = SystemRouteID
	if ok {
		r.Route = &best
		if shadowed {
			r.Shadowed = slices.DeleteFunc(sel.Matches(dst.Addr), func(m Route) bool { return m == best })
		}
		r.NextHopType, r.NextHopIP = best.NextHopType, best.NextHopIP
		if !best.IsSystem() {
			r.NextHopRouteTable = s.RouteTableID
		}
	} else {
		r.NextHopType = None
	}

	switch r.NextHopType {
	case None:
		r.Verdict = Dropped
	case Internet:
		r.Verdict = ToInternet
	case VirtualNetworkGateway:
		r.Verdict = ToGateway
	case VirtualAppliance:
		n := t.byIP[r.NextHopIP]
		if n == nil {
			r.Verdict = ToAppliance
			break
		}
		r.Node = n.Name
		r.Verdict = WrongNode
		if slices.Contains(n.InternalIPs, dst.Addr) {
			r.Verdict, f.dstNodeIP = Delivered, true
		} else if slices.ContainsFunc(n.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(dst.Addr) }) {
			r.Verdict = Delivered
		}
	default: // VnetLocal, VNetPeering
		r.Verdict = Unreachable
		if n := t.byIP[dst.Addr]; n != nil {
			r.Node, r.Verdict, f.dstNodeIP = n.Name, Delivered, true
		}
	}
	return r, f
}

// Explain fills r.Reasons (and the shadowed routes) of a result of Verdict.
func (t *Tracer) Explain(r *Result) {
	full, f := t.decide(r.Source, r.Destination, true)
	*r = *full
	r.Reasons = t.explain(r, f)
}

// explain is the chain of reasoning of a decided result.
func (t *Tracer) explain(r *Result, f facts) []string {
	var out []string
	why := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	src, dst := r.Source, r.Destination
	s := f.subnet
	if s == nil {
		why("%s is in none of the subnets %s", src.Addr, t.subnetNames())
		return out
	}
	if r.Source.Node != "" && f.from != src.Addr {
		why("%s is on node %s, whose NIC %s is in %s (%s)", src.Addr, r.Source.Node, f.from, s.Name, prefixes(s.Prefixes))
	} else {
		who := ""
		if r.Source.Node != "" {
			who = " (" + r.Source.Node + ")"
		}
		why("%s%s is in %s (%s)", src.Addr, who, s.Name, prefixes(s.Prefixes))
	}

	target := dst.Addr.String() // what the messages say the route is for
	switch {
	case f.dstNode != nil && f.dstCIDR.IsValid():
		target = f.dstCIDR.String()
		why("%s is in node %s's pod CIDR %s", dst.Addr, f.dstNode.Name, f.dstCIDR)
	case f.dstNode != nil:
		why("%s is node %s's address", dst.Addr, f.dstNode.Name)
	default:
		why("%s is outside every node's pod CIDR", dst.Addr)
	}
	if dst.Node != "" && f.dstNode != nil && dst.Node != f.dstNode.Name {
		why("%s was given as a pod of %s, but %s's pod CIDR holds it", dst.Addr, dst.Node, f.dstNode.Name)
	}

	best := r.Route
	tableName := lastSegment(s.RouteTableID)
	switch {
	case s.RouteTableID == "":
		why("%s has no route table: %s matches %s", s.Name, target, describe(best))
	case !f.tableRead:
		why("%s uses route table %s, which could not be read: only system routes are shown", s.Name, tableName)
	case best != nil && !best.IsSystem() && f.dstCIDR.IsValid() && best.Prefix.Bits() < f.dstCIDR.Bits():
		why("%s uses %s, which has no route for %s: %s matches %s", s.Name, tableName, target, dst.Addr, describe(best))
	case best != nil && !best.IsSystem():
		why("%s uses %s: %s matches %s", s.Name, tableName, dst.Addr, describe(best))
	default:
		why("%s uses %s, which has no route for %s: it matches %s", s.Name, tableName, target, describe(best))
	}
	if t.st.ConfiguredTableID != "" && s.RouteTableID != "" && !strings.EqualFold(s.RouteTableID, t.st.ConfiguredTableID) {
		why("%s is not the configured route table %s", tableName, lastSegment(t.st.ConfiguredTableID))
	}
	for _, sh := range r.Shadowed {
		if sh.State != StateInvalid && best != nil && sh.Prefix == best.Prefix {
			why("it wins over %s of the same prefix", describe(&sh))
		}
	}

	switch r.Verdict {
	case Dropped:
		why("dropped: next hop None")
	case ToInternet:
		why("sent to the Internet (outbound through Azure's SNAT), not to a node")
	case ToGateway:
		why("sent to the virtual network gateway, not to a node")
	case ToAppliance:
		why("sent to the virtual appliance %s, which is not a node of the cluster", r.NextHopIP)
	case Unreachable:
		why("the virtual network delivers %s only to a NIC that has this address, and no node has it", dst.Addr)
	case WrongNode:
		n := t.byName[r.Node]
		why("sent to node %s (%s), whose pod CIDRs %s do not contain %s: the node drops or misroutes it", n.Name, r.NextHopIP, prefixes(n.PodCIDRs), dst.Addr)
	case Delivered:
		n := t.byName[r.Node]
		switch {
		case r.NextHopType != VirtualAppliance:
			why("delivered to node %s (%s) in the virtual network", n.Name, dst.Addr)
		case f.dstNodeIP:
			why("delivered to node %s (%s)", n.Name, r.NextHopIP)
		default:
			for _, p := range n.PodCIDRs {
				if p.Contains(dst.Addr) {
					why("delivered to node %s (%s), whose pod CIDR %s contains %s", n.Name, r.NextHopIP, p, dst.Addr)
					break
				}
			}
		}
	}
	return out
}

func (t *Tracer) subnetNames() string {
	var names []string
	for _, s := range t.st.Subnets {
		names = append(names, fmt.Sprintf("%s (%s)", s.Name, prefixes(s.Prefixes)))
	}
	if len(names) == 0 {
		return "(none configured)"
	}
	return strings.Join(names, ", ")
}

// describe says a route for the chain of reasoning.
func describe(r *Route) string {
	if r == nil {
		return "no route (dropped)"
	}
	hop := string(r.NextHopType)
	if r.NextHopIP.IsValid() {
		hop += " " + r.NextHopIP.String()
	}
	if r.IsSystem() {
		return fmt.Sprintf("the system route %s → %s", r.Prefix, hop)
	}
	if r.Source == SourceBGP {
		return fmt.Sprintf("the BGP route %s → %s", r.Prefix, hop)
	}
	return fmt.Sprintf("the user route %s %s → %s", r.Name, r.Prefix, hop)
}

func prefixes(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

func lastSegment(id string) string {
	if i := strings.LastIndex(strings.TrimSuffix(id, "/"), "/"); i >= 0 {
		return id[i+1:]
	}
	return id
}
