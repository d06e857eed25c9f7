package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/doctor"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/source"
)

func (a *app) newTraceCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "trace SRC DST",
		Short: "Where does a packet from SRC to DST go in Azure, and why",
		Long: `Follow a packet from SRC to DST the way Azure routes it, read-only: the
subnet SRC leaves from, the route table that subnet really uses, the
effective route that matches DST (system routes + the table's routes,
longest prefix; user before BGP before system), the routes it shadows, and
the verdict: delivered to a node (whose pod CIDR holds DST), dropped (next
hop None), sent to the Internet, or to an appliance that is not a node.

SRC and DST are an IP address, a node name or node/pod-ip. A node name is
the node's internal IP as SRC, and the first address of its pod CIDR as DST.

Exit status: 0 when the packet is delivered, 3 when it is not, 1 when the
cloud cannot be read, 2 for bad input.`,
		Example: `  routekeeper trace worker-0 worker-1
  routekeeper trace 10.200.0.5 10.200.1.5
  routekeeper trace worker-0/10.200.0.5 worker-1/10.200.1.7 -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, conn, err := a.session(cmd, &cf, connectOptions{readOnly: true})
			if err != nil {
				return err
			}
			defer conn.close()
			ctx := cmd.Context()
			src, err := a.nodeSource(ctx, cfg, conn.client)
			if err != nil {
				return err
			}
			nodes, err := src.Nodes(ctx)
			if err != nil {
				return err
			}
			from, to, err := resolveTraceArgs(nodes, args[0], args[1])
			if err != nil {
				return usageError(err)
			}
			st, err := readRoutingState(ctx, conn.client, cfg, nodes)
			if err != nil {
				return err
			}
			res := routing.Trace(st, from, to)
			if !a.humanOutput() {
				if err := a.print(res, nil); err != nil {
					return err
				}
			} else {
				if res.Verdict != routing.NoSubnet { // no subnet, no next hop
					if err := writeTable(a.stdout, nextHopTable(res)); err != nil {
						return err
					}
				}
				writeTraceDetails(a, res)
			}
			if !res.OK() {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), traceSettings)
	return cmd
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

// routingReader is what a trace reads of the cloud.
type routingReader interface {
	GetVirtualNetwork(ctx context.Context, id string) (*azure.VirtualNetwork, error)
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
}

// readRoutingState reads what Azure's route selection depends on: every
// subnet of the configured subnets' virtual networks (with the VNet's
// address space) and the route tables they really use, plus the
// configured one. A table that does not exist is left out (its subnet
// then has only system routes, as in Azure). Then the network around:
// peerings, peered networks and gateways (readNetworkAround).
func readRoutingState(ctx context.Context, c routingReader, cfg *config.Config, nodes []source.Node) (routing.State, error) {
	st := routing.State{Nodes: nodes, ConfiguredTableID: cfg.RouteTable.ID}
	// The node subnets' virtual networks and the mirrors' (an App Gateway
	// subnet may sit in another VNet): a trace can start in any of them.
	type guarded struct{ field, id string }
	var subnets []guarded
	for _, sid := range cfg.Subnets {
		subnets = append(subnets, guarded{"subnets", sid})
	}
	for i, m := range cfg.Mirrors {
		for _, sid := range m.Subnets {
			subnets = append(subnets, guarded{fmt.Sprintf("mirrors[%d].subnets", i), sid})
		}
	}
	seenVNet := map[string]bool{}
	for _, g := range subnets {
		sid := g.id
		vid, err := azure.VNetOfSubnet(sid)
		if err != nil {
			return st, usageErrorf("config %s: %s: %w", cfg.File, g.field, err)
		}
		if seenVNet[strings.ToLower(vid)] {
			continue
		}
		seenVNet[strings.ToLower(vid)] = true
		v, err := c.GetVirtualNetwork(ctx, vid)
		if errors.Is(err, cloud.ErrNotFound) {
			continue // its subnets are in no subnet: trace says so, doctor's association check reports it
		}
		if err != nil {
			return st, fmt.Errorf("reading virtual network %s of subnet %s: %w", vid, sid, err)
		}
		st.Subnets = append(st.Subnets, routingSubnets(v)...)
	}
	tableIDs := []string{cfg.RouteTable.ID}
	for _, s := range st.Subnets {
		tableIDs = append(tableIDs, s.RouteTableID)
	}
	seen := map[string]bool{}
	for _, id := range tableIDs {
		if id == "" || seen[strings.ToLower(id)] {
			continue
		}
		seen[strings.ToLower(id)] = true
		t, err := c.GetRouteTable(ctx, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			continue
		case err != nil:
			return st, err // it names the operation and the table
		}
		st.Tables = append(st.Tables, t)
	}
	if err := readNetworkAround(ctx, c, &st); err != nil { // trace_around.go
		return st, err
	}
	return st, nil
}

// routingSubnets are a VNet's subnets for routing; prefixes that do not
// parse are left out (ARM validated them).
func routingSubnets(v *azure.VirtualNetwork) []routing.Subnet {
	var n routing.Network
	for _, p := range v.AddressPrefixes {
		if pf, err := netip.ParsePrefix(p); err == nil {
			n.AddressSpace = append(n.AddressSpace, pf.Masked())
		}
	}
	out := make([]routing.Subnet, 0, len(v.Subnets))
	for _, s := range v.Subnets {
		rs := routing.Subnet{ID: s.ID, Name: s.Name, VNetName: v.Name, VNet: n, RouteTableID: s.RouteTableID}
		for _, p := range s.AddressPrefixes {
			if pf, err := netip.ParsePrefix(p); err == nil {
				rs.Prefixes = append(rs.Prefixes, pf.Masked())
			}
		}
		out = append(out, rs)
	}
	return out
}

// nextHopTable is the answer laid out like `az network watcher
// show-next-hop -o table`.
func nextHopTable(r *routing.Result) table {
	ip := ""
	if r.NextHopIP.IsValid() {
		ip = r.NextHopIP.String()
	}
	return table{
		header: []string{"NextHopIpAddress", "NextHopType", "RouteTableId"},
		rows:   [][]string{{ip, string(r.NextHopType), shortID(r.NextHopRouteTable)}},
	}
}

// writeTraceDetails prints, after the next hop, the routes that match DST
// (the chosen one first), the chain of reasoning and the verdict.
func writeTraceDetails(a *app, r *routing.Result) {
	w := a.stdout
	if r.Route != nil {
		fmt.Fprintf(w, "\nEffective routes of %s that contain %s (the chosen one first):\n", r.Subnet, r.Destination.Addr)
		t := table{header: []string{"Source", "State", "AddressPrefix", "NextHopType", "NextHopIpAddress", "Name", "Note"}}
		row := func(rt routing.Route, mark string) {
			ip := ""
			if rt.NextHopIP.IsValid() {
				ip = rt.NextHopIP.String()
			}
			t.rows = append(t.rows, []string{rt.Source, rt.State, rt.Prefix.String(), string(rt.NextHopType), ip, rt.Name, mark})
		}
		row(*r.Route, "chosen")
		for _, s := range r.Shadowed {
			mark := "shadowed (shorter prefix)"
			switch {
			case s.State == routing.StateInvalid:
				mark = "invalid (replaced)"
			case s.Prefix == r.Route.Prefix:
				mark = "shadowed (same prefix, lower preference)"
			}
			row(s, mark)
		}
		_ = writeTable(w, t)
	}
	if r.Verdict != routing.NoSubnet { // after the next hop table
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Why:")
	for i, s := range r.Reasons {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	fmt.Fprintf(w, "\nVerdict: %s\n", verdictLine(r))
}

func verdictLine(r *routing.Result) string {
	switch r.Verdict {
	case routing.Delivered:
		return fmt.Sprintf("delivered to node %s", r.Node)
	case routing.WrongNode:
		return fmt.Sprintf("NOT delivered: sent to node %s, which does not hold %s", r.Node, r.Destination.Addr)
	case routing.Dropped:
		return "NOT delivered: dropped by Azure (next hop None)"
	case routing.ToInternet:
		return "NOT delivered: sent to the Internet"
	case routing.ToAppliance:
		return fmt.Sprintf("NOT delivered to a node: sent to the appliance %s", r.NextHopIP)
	case routing.ToGateway:
		return "NOT delivered to a node: sent to the virtual network gateway"
	case routing.Unreachable:
		return fmt.Sprintf("NOT delivered: no NIC in the virtual network has %s", r.Destination.Addr)
	case routing.NoSubnet:
		return fmt.Sprintf("unknown: %s is in none of the configured subnets' virtual networks", r.Source.Addr)
	case routing.NotForwarded:
		return "NOT delivered: dropped at the peering (forwarded traffic not allowed)"
	case routing.NoReturn:
		return fmt.Sprintf("NOT delivered: reaches node %s, but the replies are lost", r.Node)
	}
	return string(r.Verdict)
}

// nicLister is what doctor's IP forwarding check reads, when it may.
type nicLister interface {
	ListNetworkInterfaces(ctx context.Context, subscription string) ([]azure.NetworkInterface, error)
}

// readRoutingInput is doctor's input for the routing checks: the network
// as trace reads it, and the NICs of the subscription when they can be
// read (the permission is optional: a failure to list them is reported,
// not fatal).
func readRoutingInput(ctx context.Context, c interface {
	routingReader
	nicLister
}, cfg *config.Config, nodes []source.Node) (doctor.RoutingInput, error) {
	st, err := readRoutingState(ctx, c, cfg, nodes)
	if err != nil {
		return doctor.RoutingInput{}, err
	}
	in := doctor.RoutingInput{State: st, Subnets: cfg.Subnets}
	sub := ""
	if r, err := arm.ParseResourceID(cfg.RouteTable.ID); err == nil {
		sub = r.SubscriptionID
	}
	nics, err := c.ListNetworkInterfaces(ctx, sub)
	if err != nil {
		in.NICsError = err.Error()
		return in, nil
	}
	in.NICsRead = true
	for _, n := range nics {
		in.NICs = append(in.NICs, doctor.NIC{ID: n.ID, Name: n.Name, IPs: n.IPs, IPForwarding: n.IPForwarding})
	}
	return in, nil
}
