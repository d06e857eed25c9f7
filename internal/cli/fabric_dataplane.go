package cli

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
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

// startDataplane builds the data plane of store and keeps it in step with
// the fabric's writes until the returned stop is called, which removes
// every namespace it made. state is the state file ("" in memory).
// info describes it for the server's banner.
func (a *shell) startDataplane(ctx context.Context, store *fabric.Store, state string, o *dataplaneOptions) (stop func(), info string, err error) {
	if !o.enabled {
		return func() {}, "", nil
	}
	if o.nodes == "" {
		return nil, "", usageErrorf("flag --nodes: --dataplane needs the nodes to place (an inventory file such as examples/kthw/nodes.yaml): the pod CIDRs are not in the fabric")
	}
	if o.propagationDelay < 0 {
		return nil, "", usageErrorf("flag --propagation-delay: %s must not be negative", o.propagationDelay)
	}
	if o.podsPerNode < 0 {
		return nil, "", usageErrorf("flag --pods-per-node: %d must not be negative", o.podsPerNode)
	}
	prefix, err := dataplanePrefix(o.prefix, state)
	if err != nil {
		return nil, "", usageError(err)
	}
	readNodes := func(context.Context) ([]source.Node, error) {
		b, err := os.ReadFile(o.nodes)
		if err != nil {
			return nil, fmt.Errorf("flag --nodes: %w", err)
		}
		return inventory.Parse(o.nodes, b, nil)
	}
	if _, err := readNodes(ctx); err != nil {
		return nil, "", usageError(err)
	}
	plane, err := dataplane.New(prefix, a.log)
	if err != nil {
		return nil, "", fmt.Errorf("flag --dataplane: %w", err)
	}
	d := &dataplane.Driver{
		Fabric: network.NetworkReader{Store: store}, Plane: plane, Nodes: readNodes, PodsPerNode: o.podsPerNode,
		PropagationDelay: o.propagationDelay, Poll: o.poll, Log: a.log,
	}
	cleanup := func() {
		// Not ctx: it is cancelled by now (SIGINT, SIGTERM).
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := plane.Close(c); err != nil {
			a.log.Error("removing the data plane", "prefix", prefix, "err", err,
				"fix", "routekeeper fabric dataplane cleanup --dataplane-prefix "+prefix)
		}
	}
	if err := d.Sync(ctx); err != nil {
		cleanup()
		return nil, "", fmt.Errorf("building the data plane: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(runCtx)
	}()
	info = fmt.Sprintf("  data plane:  namespaces %s-*; nodes from %s; propagation delay %s\n", prefix, o.nodes, o.propagationDelay) +
		fmt.Sprintf("               routekeeper fabric probe --dataplane-prefix %s SRC DST\n", prefix)
	return func() {
		cancel()
		<-done
		cleanup()
	}, info, nil
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
