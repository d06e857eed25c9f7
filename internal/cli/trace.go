package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/routing"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

func (a *shell) newTraceCmd() *cobra.Command {
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
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			res, err := a.app.Trace(cmd.Context(), cfg, args[0], args[1])
			if err != nil {
				return err
			}
			if !a.humanOutput() {
				if err := a.print(res, nil); err != nil {
					return err
				}
			} else {
				if res.Verdict != routing.NoSubnet { // no subnet, no next hop
					if err := output.WriteTable(a.stdout, nextHopTable(res.Result)); err != nil {
						return err
					}
				}
				writeTraceDetails(a, res.Result)
				if v := res.NodeVerdict; v != nil {
					fmt.Fprintf(a.stdout, "Node %s: %s\n", res.DestinationNode, nodeVerdictLine(*v))
				}
			}
			if a.humanOutput() {
				a.printFindingsBelow(res.Findings)
			}
			if len(res.Findings) > 0 {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), traceSettings)
	return cmd
}

// nextHopTable is the answer laid out like `az network watcher
// show-next-hop -o table`.
func nextHopTable(r *routing.Result) output.Table {
	ip := ""
	if r.NextHopIP.IsValid() {
		ip = r.NextHopIP.String()
	}
	return output.Table{
		Header: []string{"NextHopIpAddress", "NextHopType", "RouteTableId"},
		Rows:   [][]string{{ip, string(r.NextHopType), armid.Short(r.NextHopRouteTable)}},
	}
}

// writeTraceDetails prints, after the next hop, the routes that match DST
// (the chosen one first), the chain of reasoning and the verdict.
func writeTraceDetails(a *shell, r *routing.Result) {
	w := a.stdout
	if r.Route != nil {
		fmt.Fprintf(w, "\nEffective routes of %s that contain %s (the chosen one first):\n", r.Subnet, r.Destination.Addr)
		t := output.Table{Header: []string{"Source", "State", "AddressPrefix", "NextHopType", "NextHopIpAddress", "Name", "Note"}}
		row := func(rt routing.Route, mark string) {
			ip := ""
			if rt.NextHopIP.IsValid() {
				ip = rt.NextHopIP.String()
			}
			t.Rows = append(t.Rows, []string{rt.Source, rt.State, rt.Prefix.String(), string(rt.NextHopType), ip, rt.Name, mark})
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
		_ = output.WriteTable(w, t)
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

// nodeVerdictLine is a node's verdict in one line.
func nodeVerdictLine(v verdict.Node) string {
	if v.Routed {
		return fmt.Sprintf("routed (%s)", v.Reason)
	}
	return fmt.Sprintf("not routed: %s: %s", v.Reason, v.Message)
}
