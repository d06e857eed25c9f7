package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Trace is routekeeper trace: where Azure sends a packet from src to dst
// (an IP address, a node name or node/pod-ip each) and why, from a dry run
// of the main table with its interconnect (peered networks, gateways); for
// a node at dst, the verdict run gives that node.
func (a *App) Trace(ctx context.Context, cfg *config.Config, src, dst string) (*TraceResult, error) {
	conn, err := a.Connect(ctx, cfg, ConnectOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctrl, err := a.NewController(ctx, cfg, conn.Client)
	if err != nil {
		return nil, err
	}
	pass := ctrl.DryRun(ctx, routingScope(cfg, false, false))
	if pass.Verdict == nil {
		return nil, pass.Err
	}
	nodes := pass.SourceNodes()
	from, to, err := resolveTraceArgs(nodes, src, dst)
	if err != nil {
		return nil, BadInput(err)
	}
	st, err := pass.Observation.RoutingState(nodes)
	if err != nil {
		return nil, err
	}
	res := &TraceResult{Result: routing.Trace(st, from, to)}
	if nv, ok := pass.Verdict.Nodes[res.DestinationNode]; ok {
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
