package cli

import (
	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/controller"
)

func (a *shell) newRunCmd() *cobra.Command {
	var (
		cf   configFlags
		once bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Keep the pod routes in the route table (the controller)",
		Long: `Run the controller: make the route table hold exactly one correct route per
node pod CIDR, and nothing else of this cluster's, and keep it that way.

Each reconcile reads the nodes and the route table (one GET), plans the
changes and writes the whole table in at most one PUT with If-Match. Node
changes are batched for a short window; a periodic resync catches changes made
out of band. Each reconcile ends with one summary line on the log.

With the kube source (the default without an inventory file), the nodes come
from a Node informer, every node gets the NetworkUnavailable condition
(routes: manage) and problems become events. With --leader-elect several
replicas are safe: only the holder of the Lease writes. /metrics, /healthz and
/readyz are served on --metrics-address. See docs/kubernetes.md.

With --once, run reconciles once, prints the resulting route table and exits:
0 when every node is routed and every subnet is on the table, 3 when some
node is not (conflict, route limit, no pod CIDR: see the log) or a subnet is
left with a finding, 1 when the reconcile failed, 2 for bad input. diff and
doctor make the same observation and decision without writing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			if !once {
				return a.app.RunDaemon(ctx, cfg)
			}
			r, err := a.app.RunOnce(ctx, cfg)
			if err != nil {
				return err
			}
			a.logResult(r.Main)
			a.logMirrors(r.Mirrors)
			if err := r.Err(); err != nil {
				return err
			}
			if r.Main.Table != nil {
				if err := a.printRoutes(r.Main.Table, app.Ownership(cfg)); err != nil {
					return err
				}
			}
			if err := r.MirrorErr(); err != nil {
				return err
			}
			if len(r.Findings) > 0 {
				a.logFindings(r.Findings)
				return findings()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "reconcile once, print the route table and exit")
	cf.register(cmd.Flags(), runSettings)
	return cmd
}

// logResult logs a reconcile's node problems, one line per reason with
// the count and the first few names (the verdict's groups), and its
// summary line.
func (a *shell) logResult(res *controller.Result) {
	if res.Verdict != nil {
		for _, g := range res.Verdict.Groups(5) {
			a.log.Warn(g.String(), "table", res.TableID)
		}
	}
	if res.Err != nil {
		a.log.Error(res.Summary(), "err", res.Err)
		return
	}
	a.log.Info(res.Summary())
}
