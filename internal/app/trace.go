package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Trace is routekeeper trace: where Azure sends a packet from src to dst
// (an IP address, a node name or node/pod-ip each) and why, from a dry run
// of the main table with its interconnect (peered networks, gateways); for
// a node at dst, the verdict run gives that node.
func (a *App) Trace(ctx context.Context, cfg *config.Config, src, dst string) (*TraceResult, error) {
	all, closeConn, err := a.dryRun(ctx, cfg, judgeScope(cfg, true))
	if err != nil {
		return nil, err
	}
	defer closeConn()
	v := all[0].Verdict
	from, to, err := resolveTraceArgs(v.SourceNodes(), src, dst)
	if err != nil {
		return nil, BadInput(err)
	}
	r, ok := v.Trace(from, to)
	if !ok {
		return nil, fmt.Errorf("the network could not be read, so the packet cannot be traced: %s", v.ReachUnknown)
	}
	res := &TraceResult{Result: r, Findings: Findings(cfg, all)}
	if nv, ok := v.Nodes[res.DestinationNode]; ok {
		res.NodeVerdict = &nv
	}
	return res, nil
}

// TraceResult is what trace prints: the packet's path and, when DST is a
// node's, the verdict run gives that node (the same reason as in its
// condition, doctor and diff).
type TraceResult struct {
	*routing.Result
	NodeVerdict *verdict.Node `json:"nodeVerdict,omitempty"`
	// Findings are what the verdicts leave to do: trace exits 3 when there
	// is one, whatever the packet does, as every command does on the state.
	Findings []finding.Finding `json:"findings,omitempty"`
}

// resolveTraceArgs turns SRC and DST into endpoints, choosing for a node
// name the address family of the other end.
func resolveTraceArgs(nodes []source.Node, srcArg, dstArg string) (routing.Endpoint, routing.Endpoint, error) {
	fam := func(arg string) int {
		if _, ip, ok := strings.Cut(arg, "/"); ok {
			arg = ip
		}
		if a, err := netip.ParseAddr(arg); err == nil {
			if a.Unmap().Is4() {
				return 4
			}
			return 6
		}
		return 0
	}
	f := fam(dstArg)
	if f == 0 {
		f = fam(srcArg)
	}
	dst, err := routing.Resolve(nodes, dstArg, true, f)
	if err != nil && f != 0 {
		dst, err = routing.Resolve(nodes, dstArg, true, 0)
	}
	if err != nil {
		return routing.Endpoint{}, routing.Endpoint{}, fmt.Errorf("DST %w", err)
	}
	f = 4
	if dst.Addr.Is6() {
		f = 6
	}
	src, err := routing.Resolve(nodes, srcArg, false, f)
	if err != nil {
		src, err = routing.Resolve(nodes, srcArg, false, 0)
	}
	if err != nil {
		return routing.Endpoint{}, routing.Endpoint{}, fmt.Errorf("SRC %w", err)
	}
	return src, dst, nil
}
