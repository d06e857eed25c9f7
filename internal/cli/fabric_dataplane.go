package cli

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
	"github.com/routekeeper/routekeeper/internal/output"
)

// dataplaneOptions are the data plane flags of `fabric serve`.
type dataplaneOptions struct {
	enabled          bool
	nodes            string
	podsPerNode      int
	propagationDelay time.Duration
	poll             time.Duration
	prefix           string
}

func (o *dataplaneOptions) register(f *pflag.FlagSet) {
	f.BoolVar(&o.enabled, "dataplane", false, "build a Linux data plane (network namespaces) that forwards packets by the fabric's routes; needs root")
	f.StringVar(&o.nodes, "nodes", "", "with --dataplane: inventory file of the nodes to place (name, internalIP, podCIDR), e.g. examples/kthw/nodes.yaml")
	f.IntVar(&o.podsPerNode, "pods-per-node", 1, "with --dataplane: pods per node, at .2, .3, ... of its pod CIDR")
	f.DurationVar(&o.propagationDelay, "propagation-delay", 0, "with --dataplane: time from a fabric write to the data plane forwarding by it")
	f.DurationVar(&o.poll, "dataplane-poll", 20*time.Millisecond, "with --dataplane: how often the state is checked for writes (of any process)")
	f.StringVar(&o.prefix, "dataplane-prefix", "", "with --dataplane: namespace prefix (default: derived from the state file)")
}

// dataplanePrefix is the namespace prefix of the fabric with state file
// state ("" in memory): the flag's value, or one derived from the path.
func dataplanePrefix(flag, state string) (string, error) {
	if flag != "" {
		return flag, dataplane.CheckPrefix(flag)
	}
	if state == "" {
		return dataplane.PrefixFor("", os.Getpid()), nil
	}
	abs, err := filepath.Abs(state)
	if err != nil {
		return "", fmt.Errorf("state file %s: %w", state, err)
	}
	return dataplane.PrefixFor(abs, 0), nil
}

// parse checks the data plane flags of a fabric on state (memory: in
// memory): nil when no data plane is asked for.
func (o *dataplaneOptions) parse(state string, memory bool) (*app.Dataplane, error) {
	if !o.enabled {
		return nil, nil
	}
	if o.nodes == "" {
		return nil, usageErrorf("flag --nodes: --dataplane needs the nodes to place (an inventory file such as examples/kthw/nodes.yaml): the pod CIDRs are not in the fabric")
	}
	if o.propagationDelay < 0 {
		return nil, usageErrorf("flag --propagation-delay: %s must not be negative", o.propagationDelay)
	}
	if o.podsPerNode < 0 {
		return nil, usageErrorf("flag --pods-per-node: %d must not be negative", o.podsPerNode)
	}
	if memory {
		state = ""
	}
	prefix, err := dataplanePrefix(o.prefix, state)
	if err != nil {
		return nil, usageError(err)
	}
	return &app.Dataplane{Nodes: o.nodes, Prefix: prefix, PodsPerNode: o.podsPerNode, PropagationDelay: o.propagationDelay, Poll: o.poll}, nil
}

// dataplaneTarget selects a data plane by its prefix or its state file.
type dataplaneTarget struct {
	prefix, state string
}

func (t *dataplaneTarget) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.prefix, "dataplane-prefix", "", "namespace prefix of the data plane (as fabric serve printed it)")
	cmd.Flags().StringVar(&t.state, "state", "", "state file of the fabric whose data plane it is (default: the fabric's default state file)")
}

func (t *dataplaneTarget) resolve(a *shell) (string, error) {
	if t.prefix != "" {
		return dataplanePrefix(t.prefix, "")
	}
	state := t.state
	if state == "" {
		state = fabric.StatePath(a.getenv)
	}
	return dataplanePrefix("", state)
}

func (a *shell) newFabricProbeCmd() *cobra.Command {
	var target dataplaneTarget
	var o dataplane.ProbeOptions
	cmd := &cobra.Command{
		Use:   "probe SRC DST",
		Short: "Send UDP packets between two node or pod addresses of the data plane and report the loss",
		Long: `probe sends UDP packets from SRC to DST (node or pod addresses of a running
data plane, fabric serve --dataplane) at a fixed rate for a duration, from
inside SRC's namespace to a receiver in DST's, and reports how many were
sent and received and the longest loss window (consecutive lost packets
times the interval). Exit 3 when packets were lost. Needs root.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var addrs [2]netip.Addr
			for i, s := range args {
				ad, err := netip.ParseAddr(s)
				if err != nil || !ad.Is4() {
					return usageErrorf("argument %s: %q is not an IPv4 address", []string{"SRC", "DST"}[i], s)
				}
				addrs[i] = ad
			}
			if o.Rate <= 0 || o.Rate > 100000 {
				return usageErrorf("flag --rate: %g must be in (0, 100000] packets per second", o.Rate)
			}
			if o.Duration <= 0 {
				return usageErrorf("flag --duration: %s must be positive", o.Duration)
			}
			prefix, err := target.resolve(a)
			if err != nil {
				return usageError(err)
			}
			if err := dataplane.CheckPrivileges(); err != nil {
				return err
			}
			res, err := dataplane.Probe(cmd.Context(), prefix, addrs[0], addrs[1], o)
			if err != nil {
				return err
			}
			if err := a.print(probeView(res), func() output.Table {
				return output.Table{Header: []string{"Source", "Destination", "Sent", "Received", "Lost", "LongestLossWindow"},
					Rows: [][]string{{res.Src.String(), res.Dst.String(), strconv.Itoa(res.Sent), strconv.Itoa(res.Received),
						strconv.Itoa(res.Sent - res.Received), res.LongestLoss.String()}}}
			}); err != nil {
				return err
			}
			if res.Received < res.Sent {
				return findings()
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&o.Rate, "rate", 100, "packets per second")
	cmd.Flags().DurationVar(&o.Duration, "duration", 5*time.Second, "how long to send")
	target.register(cmd)
	return cmd
}

// probeView is a probe's result as -o json/yaml print it.
type probeJSON struct {
	Source            string `json:"source"`
	Destination       string `json:"destination"`
	Sent              int    `json:"sent"`
	Received          int    `json:"received"`
	IntervalMS        int64  `json:"intervalMs"`
	LongestLossMS     int64  `json:"longestLossWindowMs"`
	LongestLossPacket int    `json:"longestLossPackets"`
}

func probeView(r dataplane.ProbeResult) probeJSON {
	return probeJSON{Source: r.Src.String(), Destination: r.Dst.String(), Sent: r.Sent, Received: r.Received,
		IntervalMS: r.Interval.Milliseconds(), LongestLossMS: r.LongestLoss.Milliseconds(), LongestLossPacket: r.LongestLossRun}
}

func (a *shell) newFabricDataplaneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataplane",
		Short: "Manage the fabric's Linux data plane",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var target dataplaneTarget
	cleanup := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove the network namespaces a data plane left behind (after a crash)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prefix, err := target.resolve(a)
			if err != nil {
				return usageError(err)
			}
			removed, err := dataplane.CleanupNamespaces(cmd.Context(), prefix)
			for _, n := range removed {
				fmt.Fprintf(a.stdout, "removed network namespace %s\n", n)
			}
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintf(a.stdout, "no network namespace %s-* to remove\n", prefix)
			}
			return nil
		},
	}
	target.register(cleanup)
	cmd.AddCommand(cleanup)
	return cmd
}
