package routing

import (
	"net/netip"
	"slices"

	"github.com/gaissmai/bart"

	"github.com/routekeeper/routekeeper/internal/armid"
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
	// VNetID is the ID of the subnet's virtual network. When State.VNets
	// holds that network, VNet is derived from it (NetworkOf): its peerings
	// and gateways.
	VNetID string
	// Peered: the subnet is in a peered network, not one of the
	// cluster's, so its route table is not expected to be the configured
	// one.
	Peered bool
	// RouteTableID is the table the subnet is associated with, "" for none.
	RouteTableID string
}

// FirstAddr is an address of the subnet of the family asked: the first one
// Azure hands out (the network address + 4), or the prefix's own address
// when the prefix is too small to hold it.
func (s *Subnet) FirstAddr(v4 bool) (netip.Addr, bool) {
	for _, p := range s.Prefixes {
		if p.Addr().Is4() != v4 {
			continue
		}
		a := p.Masked().Addr()
		for range 4 {
			a = a.Next()
		}
		if p.Contains(a) {
			return a, true
		}
		return p.Addr(), true
	}
	return netip.Addr{}, false
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
	// VNets are the virtual networks of the subnets and those peered with them,
	// with their peerings and gateways (network.go). Optional: without them a
	// subnet's routes are its VNet field's, and no peering is crossed.
	VNets []VNet
	// Unread names what of the interconnect could not be read (a permission is
	// missing); the reasons of a trace mention it.
	Unread []string
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
	// NotForwarded: the packet crosses a peering with a source address
	// outside the network it leaves (a pod's, forwarded by a node) and the
	// receiving network's peering does not allow forwarded traffic.
	NotForwarded Verdict = "not-forwarded"
	// NoReturn: the packet reaches the pod, but the pod's replies do not
	// find their way back to a source outside the pod's network.
	NoReturn Verdict = "no-return"
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
	// Gateway is the virtual network gateway an on-premises source enters
	// Azure through (its GatewaySubnet is Subnet).
	Gateway string `json:"gateway,omitempty"`
	// Peering is the peering the packet crosses to its next hop
	// ("<vnet>/<peering>"), if any.
	Peering string `json:"peering,omitempty"`
	// ReturnRoute is the route the pod's replies take from the
	// destination node's subnet, when the source is outside the pod's
	// network (another virtual network, on premises).
	ReturnRoute *Route `json:"returnRoute,omitempty"`
	// Reasons is the chain of reasoning, one step a line.
	Reasons []string `json:"reasons"`
}

// OK reports whether the packet is delivered.
func (r *Result) OK() bool { return r.Verdict == Delivered }

// SystemRouteID is what Network Watcher says for the route table of a
// system route.
const SystemRouteID = "System Route"

// Tracer answers traces on one State; it compiles each subnet's routes
// once, so all-pairs traces stay cheap. It is not safe for concurrent use
// (the compiled selectors are cached as they are needed).
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
			t.tables[armid.Key(tb.ID)] = tb
		}
	}
	if len(st.VNets) > 0 {
		subnets := slices.Clone(st.Subnets)
		for i := range subnets {
			if n, ok := NetworkOf(st.VNets, subnets[i].VNetID); ok {
				subnets[i].VNet = n
			}
		}
		t.st.Subnets = subnets
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
	return t.tables[armid.Key(id)]
}

func (t *Tracer) selector(s *Subnet) *Selector {
	if sel, ok := t.sel[s]; ok {
		return sel
	}
	var udrs []route.Route
	n := s.VNet
	tb := t.table(s.RouteTableID)
	if tb != nil {
		udrs = tb.Routes
		if tb.DisableBGPRoutePropagation {
			n.Gateway = nil // the gateway's routes do not reach the subnet
		}
	}
	t.read[s] = tb != nil
	sel := NewSelector(Effective(n, udrs))
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
	// The interconnect (crossing.go): where an on-premises source enters, the
	// peering the packet crosses, the replies' way back.
	onPrem  *entry
	cross   *crossing
	reply   *reply
	noBGPIn string // the table that left the gateway's routes out
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
		if e := t.onPremEntry(src.Addr); e != nil {
			f.onPrem, f.subnet = e, e.subnet
			r.Gateway = e.gateway.Name
		}
	}
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
	t.applyInterconnect(r, &f)
	return r, f
}
