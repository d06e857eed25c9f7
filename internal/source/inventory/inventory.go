// Package inventory is the node source for clusters without a Kubernetes API
// to ask, such as one being bootstrapped by hand: a YAML file listing the
// nodes with their internal IPs and, optionally, their pod CIDRs.
//
//	nodes:
//	  - name: worker-0
//	    internalIP: 10.240.0.20      # or internalIPs: [10.240.0.20, fd00::20]
//	    podCIDR: 10.200.0.0/24       # optional; or podCIDRs: [...]
//
// Nodes without a pod CIDR get one from the cluster CIDRs through ipam, and
// keep it across runs: the allocations are recorded in a file beside the
// inventory. The file is validated strictly; every problem names the file,
// the field (nodes[i].field) and the value.
package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// ErrInvalid is matched (errors.Is) by every error about the inventory's
// content: the file is bad input, and nothing must be written from it.
var ErrInvalid = errors.New("invalid inventory")

// DefaultPollInterval is how often Watch looks at the file.
const DefaultPollInterval = time.Second

// Options configures a Source.
type Options struct {
	// File is the inventory file.
	File string
	// AllocationsFile is where IPAM records the pod CIDRs it hands out;
	// "" means DefaultAllocationsFile(File).
	AllocationsFile string
	// ClusterCIDRs are the ranges pod CIDRs are allocated from; with none,
	// nodes without a pod CIDR are returned without one.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs are never handed out, and no node may claim them.
	ServiceCIDRs []netip.Prefix
	// NodeMaskV4 and NodeMaskV6 are the sizes of allocated pod CIDRs; 0
	// means 24 and 64.
	NodeMaskV4, NodeMaskV6 int
	// Logger receives allocation events; nil discards them.
	Logger *slog.Logger
	// PollInterval is how often Watch looks at the file; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Reserved, when set, returns the ranges IPAM must keep pod CIDRs
	// away from: the routes of the route table that routekeeper does not
	// own, the virtual networks' address spaces (see TableReservations).
	// Nodes calls it before every allocation pass, that is when some node
	// lacks an explicit pod CIDR; an error fails Nodes and changes
	// nothing.
	Reserved func(context.Context) ([]ipam.Reservation, error)
}

// DefaultAllocationsFile returns the allocations file of an inventory: beside
// it, named <inventory name without extension>.allocations.json.
func DefaultAllocationsFile(inventory string) string {
	base := filepath.Base(inventory)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return filepath.Join(filepath.Dir(inventory), base+".allocations.json")
}

// Source reads nodes from an inventory file.
type Source struct {
	opts  Options
	log   *slog.Logger
	store *ipam.Store

	mu       sync.Mutex
	lastHash [sha256.Size]byte // of the content Nodes last read
	read     bool

	// valMu guards what the daemon keeps so as not to validate the same
	// nodes on every reconcile: the last content that validated (by hash)
	// with its nodes, and the valid nodes of the last content parsed.
	valMu     sync.Mutex
	validHash [sha256.Size]byte
	validOK   bool
	valid     []source.Node // explicit pod CIDRs only; copied out
	cache     nodeCache
}

// New returns a source for the inventory in opts.File. It reads nothing
// until Nodes is called.
func New(opts Options) *Source {
	if opts.AllocationsFile == "" {
		opts.AllocationsFile = DefaultAllocationsFile(opts.File)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{opts: opts, log: log, store: ipam.NewStore(opts.AllocationsFile, log)}
}

// AllocationsFile returns the file IPAM records its allocations in.
func (s *Source) AllocationsFile() string { return s.opts.AllocationsFile }

// Nodes reads and validates the inventory, gives the nodes without a pod
// CIDR one (recorded in the allocations file), and returns the nodes sorted
// by name.
//
// A malformed inventory is an error matching ErrInvalid that lists every
// problem, and no node is returned. Explicit pod CIDRs outside the cluster
// CIDRs are passed through as they are: the planner reports them per node.
// When the cluster CIDRs are exhausted, the nodes that got no pod CIDR are
// returned without one and with a source.Problem (ReasonPodCIDRExhausted)
// that says which cluster CIDR is full: the planner reports only those
// nodes, every other node is served. Any other allocation error is
// returned, with the nodes.
func (s *Source) Nodes(ctx context.Context) ([]source.Node, error) {
	data, err := os.ReadFile(s.opts.File)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: inventory file %s does not exist", ErrInvalid, s.opts.File)
		}
		return nil, fmt.Errorf("reading inventory: %w", err)
	}
	hash := sha256.Sum256(data)
	s.mu.Lock()
	s.lastHash, s.read = hash, true
	s.mu.Unlock()

	nodes, err := s.validate(data, hash)
	if err != nil {
		return nil, err
	}
	if len(s.opts.ClusterCIDRs) == 0 {
		return nodes, nil
	}
	reqs := make([]ipam.Request, len(nodes))
	for i, n := range nodes {
		reqs[i] = ipam.Request{Name: n.Name, PodCIDRs: n.PodCIDRs, InternalIPs: n.InternalIPs}
	}
	cfg := ipam.Config{ClusterCIDRs: s.opts.ClusterCIDRs, ServiceCIDRs: s.opts.ServiceCIDRs, NodeMaskV4: s.opts.NodeMaskV4, NodeMaskV6: s.opts.NodeMaskV6}
	if s.opts.Reserved != nil && s.needsIPAM(nodes) {
		if cfg.Reserved, err = s.opts.Reserved(ctx); err != nil {
			return nil, fmt.Errorf("reading the ranges pod CIDRs must avoid (for the inventory %s): %w", s.opts.File, err)
		}
	}
	got, allocErr := s.store.Assign(ctx, cfg, reqs)
	if got == nil { // the allocations could not be read or written
		return nil, fmt.Errorf("allocating pod CIDRs for the inventory %s: %w", s.opts.File, allocErr)
	}
	for i := range nodes {
		nodes[i].PodCIDRs = append(nodes[i].PodCIDRs, got[nodes[i].Name]...)
		ipam.SortByFamily(nodes[i].PodCIDRs)
	}
	exhausted, rest := splitExhausted(allocErr)
	for i := range nodes {
		if e, ok := exhausted[nodes[i].Name]; ok {
			nodes[i].Problem = &source.Problem{Reason: ReasonPodCIDRExhausted, Message: e.Error()}
		}
	}
	if rest != nil {
		return nodes, fmt.Errorf("allocating pod CIDRs for the inventory %s: %w", s.opts.File, rest)
	}
	return nodes, nil
}

// validate parses and validates the inventory's content, or returns the
// nodes of the last content that validated when data is the same (the
// daemon re-reads an unchanged file on every reconcile). Otherwise only the
// nodes written differently from the last content are checked on their own
// (see parse); the checks between nodes run over all of them.
func (s *Source) validate(data []byte, hash [sha256.Size]byte) ([]source.Node, error) {
	s.valMu.Lock()
	defer s.valMu.Unlock()
	if !s.validOK || s.validHash != hash {
		nodes, err := parse(s.opts.File, data, s.opts.ServiceCIDRs, &s.cache)
		if err != nil {
			s.validOK = false
			return nil, err
		}
		s.validHash, s.validOK, s.valid = hash, true, nodes
	}
	out := make([]source.Node, len(s.valid))
	for i, n := range s.valid {
		out[i] = source.Node{Name: n.Name, InternalIPs: slices.Clone(n.InternalIPs), PodCIDRs: slices.Clone(n.PodCIDRs), Labels: maps.Clone(n.Labels)}
	}
	return out, nil
}

// needsIPAM reports whether some node lacks an explicit pod CIDR in an IP
// family that has a cluster CIDR: only then does IPAM allocate or keep
// allocations.
func (s *Source) needsIPAM(nodes []source.Node) bool {
	for _, n := range nodes {
		for _, c := range s.opts.ClusterCIDRs {
			if !slices.ContainsFunc(n.PodCIDRs, func(p netip.Prefix) bool { return p.Addr().Is4() == c.Addr().Is4() }) {
				return true
			}
		}
	}
	return false
}

// ReasonPodCIDRExhausted is the source.Problem reason of a node IPAM found
// no free pod CIDR for.
const ReasonPodCIDRExhausted = reason.PodCIDRExhausted

// splitExhausted takes the per-node ipam.ExhaustedErrors out of err (a
// joined error), by node (the first one of a node), and returns the rest.
func splitExhausted(err error) (map[string]*ipam.ExhaustedError, error) {
	if err == nil {
		return nil, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	by := map[string]*ipam.ExhaustedError{}
	var rest []error
	for _, e := range errs {
		var ex *ipam.ExhaustedError
		if errors.As(e, &ex) {
			if _, dup := by[ex.Node]; !dup {
				by[ex.Node] = ex
			}
			continue
		}
		rest = append(rest, e)
	}
	return by, errors.Join(rest...)
}

// Watch blocks until ctx is done, calling changed whenever the inventory's
// content changes (including when it appears or disappears). It polls the
// file's size and modification time every PollInterval and compares a hash
// of the content when they move, so a touch without a change is ignored.
// Changes made after the last Nodes call and before Watch started are
// reported too.
func (s *Source) Watch(ctx context.Context, changed func()) error {
	type stamp struct {
		exists bool
		size   int64
		mtime  time.Time
	}
	statNow := func() stamp {
		fi, err := os.Stat(s.opts.File)
		if err != nil {
			return stamp{}
		}
		return stamp{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	}
	hashNow := func() (bool, [sha256.Size]byte) {
		data, err := os.ReadFile(s.opts.File)
		if err != nil {
			return false, [sha256.Size]byte{}
		}
		return true, sha256.Sum256(data)
	}
	lastStat := statNow()
	exists, hash := hashNow()
	s.mu.Lock()
	movedSinceRead := s.read && (!exists || hash != s.lastHash)
	s.mu.Unlock()
	if movedSinceRead {
		changed()
	}

	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		st := statNow()
		if st == lastStat {
			continue
		}
		lastStat = st
		e, h := hashNow()
		if e == exists && h == hash {
			continue
		}
		exists, hash = e, h
		changed()
	}
}

// rawNode is one entry of the file, as decoded.
type rawNode struct {
	name        string
	nameLine    int
	internalIPs []netip.Addr
	ips         []entry // where each internal IP was written
	podCIDRs    []netip.Prefix
	cidrs       []entry // where each pod CIDR was written
	labels      map[string]string
	// item and index are the entry (nodes[index]) it was decoded from. A
	// node taken from the cache has no ips and cidrs: where its values
	// are written is found again from item when a problem names them.
	item  *yamlfile.Value
	index int
}

// nodeCache holds the nodes of the last content parsed that passed their
// own checks, by fingerprint of how they are written.
type nodeCache struct {
	valid map[string]rawNode
	// checked counts the nodes checked on their own (not from the cache).
	checked int
}

// fingerprint appends an encoding of v that two values share exactly when
// they are written alike (kinds, keys in order, scalar text): a node whose
// fingerprint is in the cache passes its own checks as it did before.
func fingerprint(b []byte, v *yamlfile.Value) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = append(b, byte(v.Kind)+1)
	switch v.Kind {
	case yamlfile.List:
		b = binary.AppendUvarint(b, uint64(len(v.Items)))
		for _, it := range v.Items {
			b = fingerprint(b, it)
		}
	case yamlfile.Map:
		b = binary.AppendUvarint(b, uint64(len(v.Fields)))
		for _, f := range v.Fields {
			b = binary.AppendUvarint(b, uint64(len(f.Key)))
			b = append(b, f.Key...)
			b = fingerprint(b, f.Value)
		}
	default:
		b = binary.AppendUvarint(b, uint64(len(v.Text)))
		b = append(b, v.Text...)
	}
	return b
}

// located returns n with ips and cidrs filled in: a node from the cache
// has them found again in its item (all its values were valid, so they
// line up with internalIPs and podCIDRs).
func (p *parser) located(n *rawNode) *rawNode {
	if n.item != nil && n.ips == nil && n.cidrs == nil {
		q := &parser{file: p.file}
		at := fmt.Sprintf("nodes[%d]", n.index)
		n.ips = q.oneOrMany(n.item, at, "internalIP", "internalIPs")
		n.cidrs = q.oneOrMany(n.item, at, "podCIDR", "podCIDRs")
	}
	return n
}

var (
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	nodeKeys     = []string{"name", "internalIP", "internalIPs", "podCIDR", "podCIDRs", "labels"}
)

// Parse decodes and validates an inventory file's content (file names it in
// messages) and returns its nodes sorted by name, with only their explicit
// pod CIDRs. No pod CIDR may overlap serviceCIDRs. Every problem is
// reported; the error matches ErrInvalid.
func Parse(file string, data []byte, serviceCIDRs []netip.Prefix) ([]source.Node, error) {
	return parse(file, data, serviceCIDRs, nil)
}

// parse is Parse; with a cache, nodes written exactly as in the content
// the cache last saw (and valid then) skip their own checks, and the cache
// is left holding this content's valid nodes. The checks between nodes
// always run over all of them.
func parse(file string, data []byte, serviceCIDRs []netip.Prefix, cache *nodeCache) ([]source.Node, error) {
	p := &parser{file: file}
	doc, err := yamlfile.Parse(data)
	if err != nil {
		p.bad(0, "", "", "not valid YAML: "+err.Error())
		return nil, p.err()
	}
	switch doc.Kind {
	case yamlfile.Map:
	case yamlfile.Null:
		p.bad(0, "", "", "the file is empty; write `nodes: []` for an inventory without nodes")
		return nil, p.err()
	default:
		p.bad(doc.Line, "", "", "the file must be a mapping with a nodes: list, not a "+doc.TypeName())
		return nil, p.err()
	}
	var list *yamlfile.Value
	line := 0
	for _, f := range doc.Fields {
		if f.Key == "nodes" {
			list, line = f.Value, f.Line
			continue
		}
		p.bad(f.Line, f.Key, "", "unknown field"+yamlfile.Suggest(f.Key, []string{"nodes"}))
	}
	var items []*yamlfile.Value
	switch {
	case list == nil:
		p.bad(0, "nodes", "", "missing; write `nodes: []` for an inventory without nodes")
	case list.Kind == yamlfile.List:
		items = list.Items
	case list.Kind == yamlfile.Null:
		p.bad(line, "nodes", "", "is empty; write `nodes: []` for an inventory without nodes")
	default:
		p.bad(line, "nodes", list.Render(), "must be a list of nodes, not a "+list.TypeName())
	}

	nodes := make([]rawNode, len(items))
	if cache == nil {
		for i, it := range items {
			nodes[i] = p.node(i, it)
		}
	} else {
		next := make(map[string]rawNode, len(items))
		var fp []byte
		for i, it := range items {
			fp = fingerprint(fp[:0], it)
			if n, ok := cache.valid[string(fp)]; ok {
				// Valid as written: only where it is written has moved.
				n.item, n.index, n.ips, n.cidrs = it, i, nil, nil
				if v := it.Get("name"); v != nil {
					n.nameLine = v.Line
				}
				nodes[i] = n
				next[string(fp)] = n
				continue
			}
			before := len(p.probs)
			nodes[i] = p.node(i, it)
			cache.checked++
			if len(p.probs) == before {
				next[string(fp)] = nodes[i]
			}
		}
		cache.valid = next
	}
	p.crossCheck(nodes, serviceCIDRs)
	if err := p.err(); err != nil {
		return nil, err
	}

	out := make([]source.Node, len(nodes))
	for i, n := range nodes {
		// Copies: the cache keeps n, and callers append to pod CIDRs.
		out[i] = source.Node{Name: n.name, InternalIPs: slices.Clone(n.internalIPs), PodCIDRs: slices.Clone(n.podCIDRs), Labels: maps.Clone(n.labels)}
		ipam.SortByFamily(out[i].PodCIDRs)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// Problem is one thing wrong with an inventory.
type Problem struct {
	File string
	// Line is the line in the file, 0 when the problem has none.
	Line                 int
	Field, Value, Reason string
}

func (p Problem) String() string {
	return yamlfile.Problem(p.File, p.Line, p.Field, p.Value, p.Reason)
}

// Error lists every problem of an inventory; it matches ErrInvalid.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

type parser struct {
	file  string
	probs []Problem
}

func (p *parser) bad(line int, field, value, reason string) {
	p.probs = append(p.probs, Problem{File: p.file, Line: line, Field: field, Value: value, Reason: reason})
}

func (p *parser) err() error {
	if len(p.probs) == 0 {
		return nil
	}
	return &Error{Problems: p.probs}
}

func (p *parser) node(i int, it *yamlfile.Value) rawNode {
	n := rawNode{item: it, index: i}
	at := fmt.Sprintf("nodes[%d]", i)
	if it.Kind != yamlfile.Map {
		p.bad(it.Line, at, it.Render(), "must be a mapping with name, internalIP and optionally podCIDR, not a "+it.TypeName())
		return n
	}
	lineOf := map[string]int{}
	for _, f := range it.Fields {
		lineOf[f.Key] = f.Line
		if !slices.Contains(nodeKeys, f.Key) {
			p.bad(f.Line, at+"."+f.Key, "", "unknown field"+yamlfile.Suggest(f.Key, nodeKeys))
		}
	}

	switch v := it.Get("name"); {
	case v.IsNull():
		p.bad(it.Line, at+".name", "", "required: the node's name, as Kubernetes knows it")
	case v.Kind == yamlfile.String:
		n.name, n.nameLine = v.Text, v.Line
		if len(v.Text) > 253 || !dnsSubdomain.MatchString(v.Text) {
			p.bad(v.Line, at+".name", strconv.Quote(v.Text), "not a valid Kubernetes node name (a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)")
		}
	default:
		p.bad(v.Line, at+".name", v.Render(), "must be a string, not a "+v.TypeName())
	}

	ips := p.oneOrMany(it, at, "internalIP", "internalIPs")
	if it.Get("internalIP").IsNull() && it.Get("internalIPs").IsNull() {
		p.bad(it.Line, at+".internalIP", "", "required: the node's internal IP address, the next hop of its pod routes")
	}
	for _, e := range ips {
		s := e.text
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		switch {
		case err != nil:
			p.bad(e.line, e.field, strconv.Quote(s), "not a valid IP address")
			continue
		case a.Zone() != "":
			p.bad(e.line, e.field, strconv.Quote(s), "an IP address with a zone cannot be a route's next hop")
			continue
		case a.Is4In6():
			p.bad(e.line, e.field, strconv.Quote(s), fmt.Sprintf("an IPv4-mapped IPv6 address; write %s", a.Unmap()))
			continue
		case a.IsUnspecified() || a.IsMulticast() || a.IsLoopback():
			p.bad(e.line, e.field, strconv.Quote(s), "not a unicast address a node can have")
			continue
		case slices.Contains(n.internalIPs, a):
			p.bad(e.line, e.field, strconv.Quote(s), "listed twice")
			continue
		}
		n.internalIPs = append(n.internalIPs, a)
		n.ips = append(n.ips, e)
	}

	cidrs := p.oneOrMany(it, at, "podCIDR", "podCIDRs")
	var seen4, seen6 bool
	for _, e := range cidrs {
		s := e.text
		pf, err := netip.ParsePrefix(strings.TrimSpace(s))
		switch {
		case err != nil:
			p.bad(e.line, e.field, strconv.Quote(s), "not a valid CIDR")
			continue
		case pf.Addr().Is4In6():
			p.bad(e.line, e.field, strconv.Quote(s), "IPv4-mapped IPv6 CIDRs are not supported; write the IPv4 CIDR")
			continue
		case pf != pf.Masked():
			p.bad(e.line, e.field, strconv.Quote(s), fmt.Sprintf("has host bits set; did you mean %q?", pf.Masked().String()))
			continue
		}
		if pf.Addr().Is4() && seen4 || pf.Addr().Is6() && seen6 {
			p.bad(e.line, e.field, strconv.Quote(s), "a second pod CIDR of the same IP family: a node has at most one IPv4 and one IPv6 pod CIDR")
			continue
		}
		seen4 = seen4 || pf.Addr().Is4()
		seen6 = seen6 || pf.Addr().Is6()
		hop := false
		for _, a := range n.internalIPs {
			hop = hop || a.Is4() == pf.Addr().Is4()
		}
		if !hop && len(n.internalIPs) > 0 {
			fam := "IPv6"
			if pf.Addr().Is4() {
				fam = "IPv4"
			}
			p.bad(e.line, e.field, strconv.Quote(s), "the node has no "+fam+" internal IP to route it to")
		}
		n.podCIDRs = append(n.podCIDRs, pf)
		n.cidrs = append(n.cidrs, e)
	}

	switch v := it.Get("labels"); {
	case v.IsNull():
	case v.Kind == yamlfile.Map:
		n.labels = map[string]string{}
		for _, f := range v.Fields {
			if f.Value.Kind != yamlfile.String {
				p.bad(f.Line, at+".labels."+f.Key, f.Value.Render(), "a label value must be a string (put it in quotes)")
				continue
			}
			n.labels[f.Key] = f.Value.Text
		}
	default:
		p.bad(v.Line, at+".labels", v.Render(), "must be a mapping of label names to values")
	}
	return n
}

// entry is one text value of a node with where it was written.
type entry struct {
	text, field string
	line        int
}

// oneOrMany reads a field that may be given as one value (key) or a list
// (keys), not both.
func (p *parser) oneOrMany(it *yamlfile.Value, at, key, keys string) []entry {
	one, many := it.Get(key), it.Get(keys)
	if !one.IsNull() && !many.IsNull() {
		p.bad(one.Line, at+"."+key, "", "give "+key+" or "+keys+", not both")
		return nil
	}
	if !one.IsNull() {
		if one.Kind != yamlfile.String {
			p.bad(one.Line, at+"."+key, one.Render(), "must be a string, not a "+one.TypeName())
			return nil
		}
		return []entry{{text: one.Text, field: at + "." + key, line: one.Line}}
	}
	if many.IsNull() {
		return nil
	}
	switch many.Kind {
	case yamlfile.String:
		return []entry{{text: many.Text, field: at + "." + keys + "[0]", line: many.Line}}
	case yamlfile.List:
	default:
		p.bad(many.Line, at+"."+keys, many.Render(), "must be a list, not a "+many.TypeName())
		return nil
	}
	var out []entry
	for j, e := range many.Items {
		field := fmt.Sprintf("%s.%s[%d]", at, keys, j)
		if e.Kind != yamlfile.String {
			p.bad(e.Line, field, e.Render(), "must be a string, not a "+e.TypeName())
			continue
		}
		out = append(out, entry{text: e.Text, field: field, line: e.Line})
	}
	return out
}

// crossCheck finds what is wrong between nodes: duplicate names, shared
// internal IPs, overlapping pod CIDRs, pod CIDRs in the service range. It
// takes O(n log n) for n pod CIDRs (overlaps are found by one sorted sweep,
// as the planner finds them), plus one line per overlapping pair reported.
// Problems come in file order: per node, its name, its IPs, then each pod
// CIDR's service range and overlaps with earlier nodes.
func (p *parser) crossCheck(nodes []rawNode, serviceCIDRs []netip.Prefix) {
	overlaps := overlapping(nodes)
	names := make(map[string]int, len(nodes))
	ips := make(map[netip.Addr]int, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		if n.name != "" {
			if j, dup := names[n.name]; dup {
				p.bad(n.nameLine, fmt.Sprintf("nodes[%d].name", i), strconv.Quote(n.name), fmt.Sprintf("the same name as nodes[%d]", j))
			} else {
				names[n.name] = i
			}
		}
		for k, a := range n.internalIPs {
			if j, dup := ips[a]; dup {
				e := p.located(n).ips[k]
				p.bad(e.line, e.field, strconv.Quote(a.String()), fmt.Sprintf("also the internal IP of nodes[%d] (%s)", j, nodes[j].name))
			} else {
				ips[a] = i
			}
		}
		for k, c := range n.podCIDRs {
			for _, svc := range serviceCIDRs {
				if svc.Overlaps(c) {
					e := p.located(n).cidrs[k]
					p.bad(e.line, e.field, strconv.Quote(c.String()), fmt.Sprintf("overlaps the service range %s", svc.Masked()))
				}
			}
			for _, o := range overlaps[claimRef{int32(i), int32(k)}] {
				oc := nodes[o.node].podCIDRs[o.cidr]
				e := p.located(n).cidrs[k]
				p.bad(e.line, e.field, strconv.Quote(c.String()), fmt.Sprintf("overlaps %s of nodes[%d] (%s)", oc, o.node, nodes[o.node].name))
			}
		}
	}
}

// claimRef is pod CIDR cidr of nodes[node].
type claimRef struct{ node, cidr int32 }

func (c claimRef) before(d claimRef) bool {
	return c.node < d.node || c.node == d.node && c.cidr < d.cidr
}

// overlapping finds every pair of overlapping pod CIDRs in O(n log n) plus
// the pairs: sorted by address, then prefix length, then file order, each
// CIDR overlaps exactly the CIDRs still open on a stack of enclosing ones
// (two CIDRs overlap only when one contains the other). It returns, for
// each CIDR, the earlier ones (in file order) it overlaps, in file order.
func overlapping(nodes []rawNode) map[claimRef][]claimRef {
	type key struct {
		p   netip.Prefix
		ref claimRef
	}
	var keys []key
	for i, n := range nodes {
		for k, c := range n.podCIDRs {
			keys = append(keys, key{c.Masked(), claimRef{int32(i), int32(k)}})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := a.p.Addr().Compare(b.p.Addr()); c != 0 {
			return c
		}
		if a.p.Bits() != b.p.Bits() {
			return a.p.Bits() - b.p.Bits()
		}
		if a.ref.before(b.ref) {
			return -1
		}
		return 1
	})
	var out map[claimRef][]claimRef
	var stack []key
	for _, k := range keys {
		for len(stack) > 0 && !stack[len(stack)-1].p.Contains(k.p.Addr()) {
			stack = stack[:len(stack)-1]
		}
		for _, o := range stack {
			if out == nil {
				out = map[claimRef][]claimRef{}
			}
			later, earlier := k.ref, o.ref
			if later.before(earlier) {
				later, earlier = earlier, later
			}
			out[later] = append(out[later], earlier)
		}
		stack = append(stack, k)
	}
	for _, os := range out {
		slices.SortFunc(os, func(a, b claimRef) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
	}
	return out
}
