package scenario

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
)

// doTrace is the trace step: where Azure sends a packet from SRC to DST
// (an address, a node, node/pod-ip) on the network the main table's last
// verdict judged (judge routing), and the exit code trace gives: the
// state's, whatever the packet does.
func (w *World) doTrace(args []string) (string, error) {
	if len(args) != 2 {
		return "", fmt.Errorf("trace: want trace SRC DST")
	}
	v := w.tables[0].last
	if v == nil {
		return "", fmt.Errorf("trace before judge")
	}
	nodes := v.SourceNodes()
	dst, err := routing.Resolve(nodes, args[1], true, 0)
	if err != nil {
		return "", fmt.Errorf("trace DST: %w", err)
	}
	fam := 4
	if dst.Addr.Is6() {
		fam = 6
	}
	src, err := routing.Resolve(nodes, args[0], false, fam)
	if err != nil {
		return "", fmt.Errorf("trace SRC: %w", err)
	}
	r, ok := v.Trace(src, dst)
	if !ok {
		return "", fmt.Errorf("trace: the last verdict did not read the network (judge routing)")
	}
	var b strings.Builder
	what := string(r.Verdict)
	if r.Node != "" {
		what += " to node " + r.Node
	}
	fmt.Fprintf(&b, "trace %s -> %s: %s\n", r.Source.Addr, r.Destination.Addr, what)
	for i, s := range r.Reasons {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, Short(s))
	}
	fmt.Fprintf(&b, "exit %d", w.Exit())
	return b.String(), nil
}

// doReservations is the reservations step: what the inventory source's
// IPAM keeps pod CIDRs away from, read through the observer as it reads
// it before an allocation pass (inventory.Reservations: the routes that
// are not this cluster's in the table routekeeper keeps and in the tables
// the guarded subnets really use, the node networks' address spaces), and
// the pod CIDRs IPAM then gives the nodes that have none (a fresh
// allocations file), which they keep from now on.
func (w *World) doReservations() (string, error) {
	d := w.cfg.Desired
	ctx := context.Background()
	o := observe.Observe(ctx, w.cloud, observe.Scope{Table: d.Configured, Subnets: w.cfg.Subnets, Networks: true})
	rs, notes, err := inventory.Reservations(o, route.Ownership{Cluster: d.Cluster, ClusterCIDRs: d.ClusterCIDRs})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "reserved %s: %s\n", r.Prefix, Short(r.String()))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "note: %s\n", Short(n))
	}
	dir, err := os.MkdirTemp("", "scenario-ipam-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	var reqs []ipam.Request
	for _, n := range w.nodes {
		if n.Problem == nil {
			reqs = append(reqs, ipam.Request{Name: n.Name, PodCIDRs: n.PodCIDRs, InternalIPs: n.InternalIPs})
		}
	}
	got, err := ipam.NewStore(filepath.Join(dir, "allocations.json"), nil).Assign(ctx, ipam.Config{ClusterCIDRs: d.ClusterCIDRs, Reserved: rs}, reqs)
	if err != nil {
		return "", fmt.Errorf("reservations: IPAM: %w", err)
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		if cidrs, ok := got[n.Name]; ok {
			n.PodCIDRs = append(slices.Clone(n.PodCIDRs), cidrs...)
			w.allocated[n.Name] = true
			fmt.Fprintf(&b, "allocated %s: %s\n", n.Name, joinPrefixes(cidrs))
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return cmp.Or(strings.Join(s, ","), "(none)")
}
