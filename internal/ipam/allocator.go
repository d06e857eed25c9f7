// Package ipam hands out node pod CIDRs for the inventory source, with the
// rules of kube-controller-manager's range allocator: each cluster CIDR is
// cut into blocks of the node mask size (IPv4 /24, IPv6 /64 by default),
// CIDRs that nodes already hold are occupied first, blocks overlapping the
// service range are never handed out, and allocation scans round-robin from
// the block after the last one handed out. A dual-stack node gets one CIDR
// per IP family.
//
// Allocator is the in-memory allocator; Store keeps allocations in a file so
// that a node keeps its CIDR across runs, and serialises processes that
// share the file.
package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	// ErrCIDRExhausted: every node CIDR of a cluster CIDR is in use.
	ErrCIDRExhausted = errors.New("cluster CIDR exhausted")
	// ErrOutsideClusterCIDR: a CIDR does not lie inside the cluster CIDR
	// of its IP family.
	ErrOutsideClusterCIDR = errors.New("outside the cluster CIDRs")
	// ErrOverlap: a CIDR overlaps one held by another node.
	ErrOverlap = errors.New("overlaps another node's pod CIDR")
	// ErrServiceRange: a CIDR overlaps the service range.
	ErrServiceRange = errors.New("overlaps the service range")
)

// ExhaustedError says that no node CIDR is left in a cluster CIDR.
type ExhaustedError struct {
	Node        string
	ClusterCIDR netip.Prefix
	NodeMask    int
	// Blocks is the number of node CIDRs the cluster CIDR holds; all are
	// used by nodes or overlap the service range.
	Blocks int
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("no free /%d left in cluster CIDR %s for node %s: all %d node CIDRs are in use by nodes, the service range or reserved ranges (routes in the route table that are not routekeeper's, the virtual network's address space) (enlarge the cluster CIDR, lengthen the node CIDR mask, or remove nodes)",
		e.NodeMask, e.ClusterCIDR, e.Node, e.Blocks)
}

// Is makes errors.Is(err, ErrCIDRExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrCIDRExhausted }

// OutsideError says that a CIDR is not inside the cluster CIDR of its family.
type OutsideError struct {
	Node         string
	CIDR         netip.Prefix
	ClusterCIDRs []netip.Prefix
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("pod CIDR %s of node %s is outside the cluster CIDRs %s", e.CIDR, e.Node, joinPrefixes(e.ClusterCIDRs))
}

// Is makes errors.Is(err, ErrOutsideClusterCIDR) true.
func (e *OutsideError) Is(target error) bool { return target == ErrOutsideClusterCIDR }

// OverlapError says that a node's CIDR overlaps another node's.
type OverlapError struct {
	Node      string
	CIDR      netip.Prefix
	Other     string
	OtherCIDR netip.Prefix
}

func (e *OverlapError) Error() string {
	return fmt.Sprintf("pod CIDR %s of node %s overlaps %s of node %s", e.CIDR, e.Node, e.OtherCIDR, e.Other)
}

// Is makes errors.Is(err, ErrOverlap) true.
func (e *OverlapError) Is(target error) bool { return target == ErrOverlap }

// ServiceRangeError says that a node's CIDR overlaps a service CIDR.
type ServiceRangeError struct {
	Node        string
	CIDR        netip.Prefix
	ServiceCIDR netip.Prefix
}

func (e *ServiceRangeError) Error() string {
	return fmt.Sprintf("pod CIDR %s of node %s overlaps the service range %s", e.CIDR, e.Node, e.ServiceCIDR)
}

// Is makes errors.Is(err, ErrServiceRange) true.
func (e *ServiceRangeError) Is(target error) bool { return target == ErrServiceRange }

// Default node mask sizes, as kube-controller-manager's.
const (
	DefaultNodeMaskV4 = 24
	DefaultNodeMaskV6 = 64
)

// maxMaskDiff limits a cluster CIDR to 2^16 node CIDRs, as
// kube-controller-manager does.
const maxMaskDiff = 16

// Config is what the allocator cuts up.
type Config struct {
	// ClusterCIDRs are the pod ranges, at most one per IP family.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs are never handed out.
	ServiceCIDRs []netip.Prefix
	// NodeMaskV4 and NodeMaskV6 are the node CIDR prefix lengths; 0 means
	// 24 and 64.
	NodeMaskV4, NodeMaskV6 int
	// Reserved are ranges in use outside the cluster that node CIDRs must
	// keep away from (see Reservation). A recorded allocation they block
	// is released and the node gets a new CIDR.
	Reserved []Reservation
}

// Reservation is an address range that no allocated node CIDR may use.
type Reservation struct {
	Prefix netip.Prefix
	// What names the range in logs and errors: "route fw in route table
	// rt", "address space of virtual network vnet".
	What string
	// Route marks the prefix of a route in the route table that
	// routekeeper does not own. It blocks only the node CIDR it lies in
	// (a prefix as long as the node mask, or longer): Azure refuses a
	// second route with the same prefix, and a longer one takes part of
	// the node's traffic. A wider route (0.0.0.0/0 or 10.0.0.0/8 to a
	// firewall) blocks nothing: the node's route is more specific and
	// wins. Any other range blocks every node CIDR it overlaps, unless it
	// holds the whole cluster CIDR (a misconfiguration that would leave
	// no node a CIDR: it is ignored).
	Route bool
	// NextHop is a route's next hop address. A recorded allocation whose
	// prefix such a route already sends to the node itself (a route made
	// by hand) is kept: traffic flows, and moving the node's pod CIDR
	// would cut off its running pods.
	NextHop netip.Addr
}

func (r Reservation) String() string {
	if r.What != "" {
		return r.What
	}
	return "reserved range " + r.Prefix.String()
}

// span returns the blocks of s that r keeps from being handed out.
func (r Reservation) span(s *cidrSet) (first, last int, ok bool) {
	p := r.Prefix.Masked()
	if !p.IsValid() || p.Addr().Is4() != s.cluster.Addr().Is4() {
		return 0, 0, false
	}
	if r.Route && p.Bits() < s.mask {
		return 0, 0, false
	}
	if !r.Route && p.Bits() <= s.cluster.Bits() {
		return 0, 0, false // holds the whole cluster CIDR (or is disjoint)
	}
	return s.span(p)
}

func (c Config) maskFor(p netip.Prefix) int {
	if p.Addr().Is4() {
		if c.NodeMaskV4 == 0 {
			return DefaultNodeMaskV4
		}
		return c.NodeMaskV4
	}
	if c.NodeMaskV6 == 0 {
		return DefaultNodeMaskV6
	}
	return c.NodeMaskV6
}

// Allocator hands out node CIDRs from the cluster CIDRs. It is not safe for
// concurrent use; Store serialises its use.
type Allocator struct {
	cfg     Config
	sets    []*cidrSet
	service []netip.Prefix
	// nodes are the CIDRs each node holds (occupied or allocated).
	nodes map[string][]netip.Prefix
}

// New makes an allocator for cfg and marks the blocks overlapping the
// service CIDRs as used.
func New(cfg Config) (*Allocator, error) {
	if len(cfg.ClusterCIDRs) == 0 {
		return nil, errors.New("ipam: no cluster CIDR")
	}
	a := &Allocator{cfg: cfg, nodes: map[string][]netip.Prefix{}}
	for _, c := range cfg.ClusterCIDRs {
		if !c.IsValid() || c != c.Masked() {
			return nil, fmt.Errorf("ipam: cluster CIDR %s is not a network address", c)
		}
		for _, s := range a.sets {
			if s.cluster.Addr().Is4() == c.Addr().Is4() {
				return nil, fmt.Errorf("ipam: two cluster CIDRs of one IP family: %s and %s", s.cluster, c)
			}
		}
		mask := cfg.maskFor(c)
		if mask < c.Bits() || mask > c.Addr().BitLen() || mask-c.Bits() > maxMaskDiff {
			return nil, fmt.Errorf("ipam: node mask /%d does not fit cluster CIDR %s (it must be between /%d and /%d)", mask, c, c.Bits(), min(c.Bits()+maxMaskDiff, c.Addr().BitLen()))
		}
		a.sets = append(a.sets, newCIDRSet(c, mask))
	}
	for _, svc := range cfg.ServiceCIDRs {
		svc = svc.Masked()
		a.service = append(a.service, svc)
		for _, s := range a.sets {
			first, last, ok := s.span(svc)
			if !ok {
				continue
			}
			s.reserve(first, last)
		}
	}
	for _, r := range cfg.Reserved {
		for _, s := range a.sets {
			if first, last, ok := r.span(s); ok {
				s.reserve(first, last)
			}
		}
	}
	return a, nil
}

// Blocked returns the reservation that makes cidr, a node CIDR held by a
// node with addresses ips, unroutable: one whose blocks it overlaps, other
// than a route that already sends exactly cidr to one of ips.
func (a *Allocator) Blocked(cidr netip.Prefix, ips []netip.Addr) (Reservation, bool) {
	cidr = cidr.Masked()
	s := a.setFor(cidr)
	if s == nil {
		return Reservation{}, false
	}
	cf, cl, ok := s.span(cidr)
	if !ok {
		return Reservation{}, false
	}
	// Most CIDRs touch no reserved block: only then look for which
	// reservation it is, among up to hundreds of routes.
	anyReserved := false
	for i := cf; i <= cl && !anyReserved; i++ {
		anyReserved = s.isReserved(i)
	}
	if !anyReserved {
		return Reservation{}, false
	}
	for _, r := range a.cfg.Reserved {
		first, last, ok := r.span(s)
		if !ok || last < cf || first > cl {
			continue
		}
		if r.Route && r.Prefix.Masked() == cidr && r.NextHop.IsValid() && slices.Contains(ips, r.NextHop) {
			continue
		}
		return r, true
	}
	return Reservation{}, false
}

func (a *Allocator) setFor(p netip.Prefix) *cidrSet {
	for _, s := range a.sets {
		if s.cluster.Addr().Is4() == p.Addr().Is4() {
			return s
		}
	}
	return nil
}

// Occupy records that node holds cidr (an existing assignment) so that it
// is never handed to another node. It fails, marking nothing, when cidr
// overlaps the service range or a CIDR another node holds. It returns an
// OutsideError when cidr is not inside the cluster CIDR of its family; if it
// overlaps that cluster CIDR in part, the overlapped blocks are still
// marked, so that no other node is given an overlapping CIDR.
func (a *Allocator) Occupy(node string, cidr netip.Prefix) error {
	cidr = cidr.Masked()
	s := a.setFor(cidr)
	if s == nil || !s.cluster.Overlaps(cidr) {
		return &OutsideError{Node: node, CIDR: cidr, ClusterCIDRs: a.cfg.ClusterCIDRs}
	}
	contained := s.cluster.Contains(cidr.Addr()) && cidr.Bits() >= s.cluster.Bits()
	for _, svc := range a.service {
		if contained && svc.Overlaps(cidr) {
			return &ServiceRangeError{Node: node, CIDR: cidr, ServiceCIDR: svc}
		}
	}
	first, last, _ := s.span(cidr)
	for i := first; i <= last; i++ {
		for _, other := range s.owners[i] {
			if other == node {
				continue
			}
			for _, oc := range a.nodes[other] {
				if oc.Overlaps(cidr) {
					return &OverlapError{Node: node, CIDR: cidr, Other: other, OtherCIDR: oc}
				}
			}
		}
	}
	for i := first; i <= last; i++ {
		if !slices.Contains(s.owners[i], node) {
			s.owners[i] = append(s.owners[i], node)
		}
		s.setUsed(i, true)
	}
	if !slices.Contains(a.nodes[node], cidr) {
		a.nodes[node] = append(a.nodes[node], cidr)
	}
	if !contained {
		return &OutsideError{Node: node, CIDR: cidr, ClusterCIDRs: a.cfg.ClusterCIDRs}
	}
	return nil
}

// Allocate gives node a CIDR from every cluster CIDR in whose IP family it
// holds none yet, and returns all the CIDRs it holds. Either it gets all of
// them or none: on exhaustion it returns an ExhaustedError and keeps
// nothing new.
func (a *Allocator) Allocate(node string) ([]netip.Prefix, error) {
	var got []netip.Prefix
	for _, s := range a.sets {
		if a.holds(node, s.cluster.Addr().Is4()) {
			continue
		}
		p, err := a.allocateIn(s, node)
		if err != nil {
			for _, g := range got {
				a.release(node, g)
			}
			return nil, err
		}
		got = append(got, p)
	}
	return a.CIDRs(node), nil
}

// AllocateFamily gives node a CIDR from the cluster CIDR of one IP family
// (IPv4 when ipv4 is true), whether or not it holds one already. It fails
// when there is no cluster CIDR of that family.
func (a *Allocator) AllocateFamily(node string, ipv4 bool) (netip.Prefix, error) {
	for _, s := range a.sets {
		if s.cluster.Addr().Is4() == ipv4 {
			return a.allocateIn(s, node)
		}
	}
	fam := "IPv6"
	if ipv4 {
		fam = "IPv4"
	}
	return netip.Prefix{}, fmt.Errorf("ipam: no %s cluster CIDR to allocate node %s a pod CIDR from", fam, node)
}

func (a *Allocator) holds(node string, ipv4 bool) bool {
	for _, p := range a.nodes[node] {
		if p.Addr().Is4() == ipv4 {
			return true
		}
	}
	return false
}

func (a *Allocator) allocateIn(s *cidrSet, node string) (netip.Prefix, error) {
	i := s.free(s.next)
	if i < 0 {
		return netip.Prefix{}, &ExhaustedError{Node: node, ClusterCIDR: s.cluster, NodeMask: s.mask, Blocks: s.n}
	}
	s.setUsed(i, true)
	s.owners[i] = append(s.owners[i], node)
	s.next = (i + 1) % s.n
	p := s.block(i)
	a.nodes[node] = append(a.nodes[node], p)
	return p, nil
}

// Release frees every CIDR node holds and returns them.
func (a *Allocator) Release(node string) []netip.Prefix {
	held := a.CIDRs(node)
	for _, p := range held {
		a.release(node, p)
	}
	return held
}

func (a *Allocator) release(node string, p netip.Prefix) {
	s := a.setFor(p)
	if s != nil {
		if first, last, ok := s.span(p); ok {
			for i := first; i <= last; i++ {
				s.owners[i] = slices.DeleteFunc(s.owners[i], func(o string) bool { return o == node })
				if len(s.owners[i]) == 0 {
					delete(s.owners, i)
					if !s.isReserved(i) {
						s.setUsed(i, false)
					}
				}
			}
		}
	}
	a.nodes[node] = slices.DeleteFunc(a.nodes[node], func(q netip.Prefix) bool { return q == p })
	if len(a.nodes[node]) == 0 {
		delete(a.nodes, node)
	}
}

// CIDRs returns the CIDRs node holds, IPv4 first.
func (a *Allocator) CIDRs(node string) []netip.Prefix {
	out := slices.Clone(a.nodes[node])
	SortByFamily(out)
	return out
}

// Nodes returns the names of the nodes holding CIDRs, sorted.
func (a *Allocator) Nodes() []string {
	out := make([]string, 0, len(a.nodes))
	for n := range a.nodes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Usage is how full a cluster CIDR is.
type Usage struct {
	ClusterCIDR netip.Prefix
	NodeMask    int
	// Blocks is the number of node CIDRs; Used those held by nodes or
	// overlapping the service range.
	Blocks, Used int
}

// Usage returns how full each cluster CIDR is.
func (a *Allocator) Usage() []Usage {
	out := make([]Usage, 0, len(a.sets))
	for _, s := range a.sets {
		out = append(out, Usage{ClusterCIDR: s.cluster, NodeMask: s.mask, Blocks: s.n, Used: s.inUse})
	}
	return out
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
