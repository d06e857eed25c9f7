package ipam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RecordVersion is the version of the allocations file format.
const RecordVersion = 1

// Record is the allocations file: the pod CIDRs IPAM handed out, by node,
// and the layout they were cut from. Explicit pod CIDRs (given in the
// inventory) are not recorded: the inventory is their record.
type Record struct {
	Version      int            `json:"version"`
	ClusterCIDRs []netip.Prefix `json:"clusterCIDRs"`
	NodeMask     NodeMask       `json:"nodeMask"`
	// Next is, per cluster CIDR, the block the next round-robin scan
	// starts at.
	Next        map[string]int            `json:"next,omitempty"`
	Allocations map[string][]netip.Prefix `json:"allocations"`
}

// NodeMask holds the node mask size per IP family (0 when the family has no
// cluster CIDR).
type NodeMask struct {
	IPv4 int `json:"ipv4,omitempty"`
	IPv6 int `json:"ipv6,omitempty"`
}

// Request is a node that needs pod CIDRs.
type Request struct {
	Name string
	// PodCIDRs are the node's explicit pod CIDRs, if any: they are kept as
	// they are (even outside the cluster CIDRs) and the node gets no
	// allocation in their IP family.
	PodCIDRs []netip.Prefix
	// InternalIPs are the node's addresses: a recorded allocation that a
	// reserved route already sends to one of them is kept (see
	// Reservation.NextHop).
	InternalIPs []netip.Addr
}

// Store keeps IPAM allocations in a JSON file so that a node keeps its pod
// CIDR across runs. Assign holds an exclusive lock (flock on <file>.lock)
// from reading the file to writing it, so processes sharing the file never
// hand out the same CIDR; the file is replaced atomically (temporary file,
// fsync, rename).
type Store struct {
	path string
	log  *slog.Logger
}

// NewStore returns a store for the allocations file at path. log may be nil.
func NewStore(path string, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{path: path, log: log}
}

// Path returns the allocations file.
func (s *Store) Path() string { return s.path }

// Load reads the allocations file without locking it, for display. A
// missing file is an empty record.
func (s *Store) Load() (*Record, error) {
	rec, _, err := s.read()
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &Record{Version: RecordVersion, Allocations: map[string][]netip.Prefix{}}
	}
	return rec, nil
}

// Assign gives every node in nodes its pod CIDRs for the families it has no
// explicit CIDR in, and returns them by node (IPv4 first); nodes that need
// none are absent. It works under the file lock:
//
//  1. the nodes' explicit CIDRs are occupied (they always win);
//  2. each recorded allocation of a node still in nodes is kept when it is
//     still valid: inside the cluster CIDR of its family, of the node mask
//     size, not in the service range, not blocked by a reservation (it
//     became unroutable: a route that is not ours now holds it, see
//     Allocator.Blocked), not overlapping a CIDR another node claims
//     explicitly; otherwise it is released with a log line, and the node
//     gets a new one in step 4;
//  3. recorded allocations of nodes no longer in nodes are released;
//  4. the nodes still missing a CIDR get one, in name order, round-robin
//     after the last one handed out.
//
// The file is rewritten only when something changed; when it does not exist
// and no node needs a CIDR, nothing is written. A node for which no CIDR is
// left gets none (all or nothing for dual stack) and the error, which then
// wraps an ExhaustedError per such node (errors.Is ErrCIDRExhausted), comes
// with the result for the others.
func (s *Store) Assign(ctx context.Context, cfg Config, nodes []Request) (map[string][]netip.Prefix, error) {
	a, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if !a.needsAllocation(nodes) {
		if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
			return map[string][]netip.Prefix{}, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return nil, fmt.Errorf("making the directory of the allocations file: %w", err)
	}
	unlock, err := lockFile(ctx, s.path+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()

	rec, raw, err := s.read()
	if err != nil {
		return nil, err
	}
	out, newRec, allocErr := s.assign(a, cfg, rec, nodes)
	data, err := json.MarshalIndent(newRec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding allocations: %w", err)
	}
	data = append(data, '\n')
	if !bytes.Equal(data, raw) {
		if err := writeAtomic(s.path, data); err != nil {
			return nil, fmt.Errorf("recording pod CIDR allocations: %w", err)
		}
	}
	return out, allocErr
}

// needsAllocation reports whether some node lacks a CIDR in a family that
// has a cluster CIDR.
func (a *Allocator) needsAllocation(nodes []Request) bool {
	for _, n := range nodes {
		for _, set := range a.sets {
			if !hasFamily(n.PodCIDRs, set.cluster.Addr().Is4()) {
				return true
			}
		}
	}
	return false
}

func hasFamily(ps []netip.Prefix, ipv4 bool) bool {
	for _, p := range ps {
		if p.Addr().Is4() == ipv4 {
			return true
		}
	}
	return false
}

// assign runs the steps of Assign on the allocator a, from the record
// read: the allocations by node, the record to write and the errors of
// the nodes that got nothing.
func (s *Store) assign(a *Allocator, cfg Config, rec *Record, nodes []Request) (map[string][]netip.Prefix, *Record, error) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(x, y Request) int { return strings.Compare(x.Name, y.Name) })
	errs := occupyExplicit(a, nodes)
	out := map[string][]netip.Prefix{}
	if rec != nil {
		s.restoreRecorded(a, cfg, rec, nodes, out)
	}
	errs = append(errs, s.allocateMissing(a, nodes, out)...)
	return out, newRecord(a, cfg, out), errors.Join(errs...)
}

// occupyExplicit is step 1: explicit CIDRs win. Those outside the cluster
// CIDRs are the planner's business; overlaps were rejected by the
// inventory, but an allocator error here must not be ignored either.
func occupyExplicit(a *Allocator, nodes []Request) []error {
	var errs []error
	for _, n := range nodes {
		for _, p := range n.PodCIDRs {
			if err := a.Occupy(n.Name, p); err != nil && !errors.Is(err, ErrOutsideClusterCIDR) {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// restoreRecorded is steps 2 and 3: the recorded allocations of the nodes
// still there are kept in out unless they no longer fit, and the
// round-robin goes on where it stopped when the layout is the same.
func (s *Store) restoreRecorded(a *Allocator, cfg Config, rec *Record, nodes []Request, out map[string][]netip.Prefix) {
	same := sameLayout(rec, a)
	if !same {
		s.log.Warn("cluster CIDRs or node mask changed since the pod CIDR allocations were recorded; records that no longer fit are dropped",
			"file", s.path, "recordedClusterCIDRs", joinPrefixes(rec.ClusterCIDRs), "clusterCIDRs", joinPrefixes(cfg.ClusterCIDRs))
	}
	byName := make(map[string]*Request, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for _, name := range slices.Sorted(maps.Keys(rec.Allocations)) {
		n, present := byName[name]
		if !present {
			s.log.Info("released pod CIDR of a node that left the inventory", "node", name, "podCIDRs", joinPrefixes(rec.Allocations[name]))
			continue
		}
		seen := map[bool]bool{}
		for _, p := range rec.Allocations[name] {
			why := s.recordedWhy(a, cfg, n, p, seen[p.Addr().Is4()])
			switch why {
			case "":
				seen[p.Addr().Is4()] = true
				out[name] = append(out[name], p)
			case keepNoRecord, releasedUnroutable:
			default:
				s.log.Warn("dropped recorded pod CIDR; the node gets a new one", "node", name, "podCIDR", p, "reason", why, "file", s.path)
			}
		}
	}
	if same {
		for _, set := range a.sets {
			if n, ok := rec.Next[set.cluster.String()]; ok && n >= 0 && n < set.n {
				set.next = n
			}
		}
	}
}

// What recordedWhy says of a recorded CIDR that is not kept but needs no
// warning.
const (
	keepNoRecord       = "-" // the same CIDR is now explicit: no record needed
	releasedUnroutable = "unroutable"
)

// recordedWhy says why node n's recorded CIDR p cannot be kept ("" when it
// is, and then occupies it); another says n already kept one of p's family.
func (s *Store) recordedWhy(a *Allocator, cfg Config, n *Request, p netip.Prefix, another bool) string {
	ipv4 := p.Addr().Is4()
	switch set := a.setFor(p); {
	case hasFamily(n.PodCIDRs, ipv4):
		if !slices.Contains(n.PodCIDRs, p) {
			return "the inventory now gives the node its own pod CIDR"
		}
		return keepNoRecord
	case another:
		return "a second recorded CIDR of the same IP family"
	case !p.IsValid() || p != p.Masked():
		return "not a network address"
	case set == nil || !set.cluster.Contains(p.Addr()) || p.Bits() < set.cluster.Bits():
		return "outside the cluster CIDRs " + joinPrefixes(cfg.ClusterCIDRs)
	case p.Bits() != set.mask:
		return fmt.Sprintf("not a /%d (the node CIDR mask size)", set.mask)
	}
	if r, blocked := a.Blocked(p, n.InternalIPs); blocked {
		s.log.Warn("released pod CIDR that became unroutable; the node gets a new one",
			"node", n.Name, "podCIDR", p, "reservedBy", r.String(), "reservedPrefix", r.Prefix, "file", s.path)
		return releasedUnroutable
	}
	if err := a.Occupy(n.Name, p); err != nil {
		return err.Error()
	}
	return ""
}

// allocateMissing is step 4: the nodes still missing a CIDR of a family
// get one, all or nothing per node; the errors are those of the nodes
// left without.
func (s *Store) allocateMissing(a *Allocator, nodes []Request, out map[string][]netip.Prefix) []error {
	var errs []error
	for _, n := range nodes {
		var got []netip.Prefix
		for _, set := range a.sets {
			ipv4 := set.cluster.Addr().Is4()
			if hasFamily(n.PodCIDRs, ipv4) || hasFamily(out[n.Name], ipv4) {
				continue
			}
			p, err := a.allocateIn(set, n.Name)
			if err != nil {
				for _, g := range got {
					a.release(n.Name, g)
				}
				got = nil
				errs = append(errs, err)
				break
			}
			got = append(got, p)
		}
		for _, p := range got {
			s.log.Info("allocated pod CIDR", "node", n.Name, "podCIDR", p, "file", s.path)
		}
		out[n.Name] = append(out[n.Name], got...)
		if len(out[n.Name]) == 0 {
			delete(out, n.Name)
		}
	}
	return errs
}

// newRecord is what the allocations file records after an Assign.
func newRecord(a *Allocator, cfg Config, out map[string][]netip.Prefix) *Record {
	rec := &Record{
		Version:      RecordVersion,
		ClusterCIDRs: slices.Clone(cfg.ClusterCIDRs),
		Next:         map[string]int{},
		Allocations:  map[string][]netip.Prefix{},
	}
	for _, set := range a.sets {
		if set.cluster.Addr().Is4() {
			rec.NodeMask.IPv4 = set.mask
		} else {
			rec.NodeMask.IPv6 = set.mask
		}
		rec.Next[set.cluster.String()] = set.next
	}
	for name, ps := range out {
		SortByFamily(ps)
		rec.Allocations[name] = ps
	}
	return rec
}

// sameLayout reports whether rec was cut from the allocator's cluster CIDRs
// and node masks.
func sameLayout(rec *Record, a *Allocator) bool {
	if len(rec.ClusterCIDRs) != len(a.sets) {
		return false
	}
	for _, set := range a.sets {
		if !slices.Contains(rec.ClusterCIDRs, set.cluster) {
			return false
		}
		mask := rec.NodeMask.IPv6
		if set.cluster.Addr().Is4() {
			mask = rec.NodeMask.IPv4
		}
		if mask != set.mask {
			return false
		}
	}
	return true
}

// SortByFamily sorts prefixes IPv4 first, then by address.
func SortByFamily(ps []netip.Prefix) {
	slices.SortFunc(ps, func(x, y netip.Prefix) int {
		if x.Addr().Is4() != y.Addr().Is4() {
			if x.Addr().Is4() {
				return -1
			}
			return 1
		}
		return x.Addr().Compare(y.Addr())
	})
}

// read returns the record and the file's bytes; a missing file is a nil
// record. A file that cannot be decoded is an error: handing every node a
// new CIDR would move all their routes, so it is better to stop and say so.
func (s *Store) read() (*Record, []byte, error) {
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the pod CIDR allocations: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, nil, fmt.Errorf("allocations file %s is damaged (%v): repair it, or delete it to hand out new pod CIDRs to the nodes without one in the inventory", s.path, err)
	}
	if rec.Version > RecordVersion {
		return nil, nil, fmt.Errorf("allocations file %s has version %d, newer than this routekeeper understands (%d)", s.path, rec.Version, RecordVersion)
	}
	return &rec, raw, nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory is written and synced, then renamed over path, and the
// directory is synced so that the rename survives a crash.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: some file systems cannot sync a directory
		d.Close()
	}
	return nil
}
