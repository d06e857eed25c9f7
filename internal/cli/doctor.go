package cli

// doctor.go is the doctor command: flags and output. The findings are
// internal/doctor's (and internal/overlay's for --target overlay), made
// from the observation and the verdict of a dry run of run: this file
// reads nothing from the cloud and decides nothing.

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
)

func (a *shell) newDoctorCmd() *cobra.Command {
	var cf configFlags
	var of overlayFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the route table, its subnets and the node routes, read-only",
		Long: `Observe the route table, its subnets, the networks around them and the nodes
as 'routekeeper run' does, judge them with run's verdict (a dry run: nothing
is written), and report every problem: a missing or foreign-claimed table, a
subnet without the table (the IaC redeploy of an association), a node without
a correct route and why (conflict, route limit, no pod CIDR...), stale
routes, routes that shadow part of a pod CIDR, a table close to its route
limit, and every action routekeeper needs that the identity may not do (the
permissions API), or that a management lock or a deny policy would refuse.

Doctor has no rules of its own: it never disagrees with run, it follows a
migration or a followed swap like run, and every finding that has a fix
names the command.

With --target overlay it checks a move instead: the pre-flight of the
move from host routes to an overlay CNI (AKS's kubenet to Azure CNI
Overlay, or a self-managed cluster to Cilium or Calico VXLAN): what would
make the move fail or break traffic, each with its evidence and what to do
(docs/aks-overlay.md). With routes: standDown it says what is left.

Exit status: 0 when there is no error finding, 3 when there is one, 1 when
the cloud cannot be read, 2 for bad input.`,
		Example: `  routekeeper doctor
  routekeeper doctor --target overlay
  routekeeper doctor --target overlay --pod-cidr 192.168.0.0/16 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, err := of.parse()
			if err != nil {
				return err
			}
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			if target != nil {
				rep, err := a.app.OverlayPreflight(cmd.Context(), cfg, *target)
				if err != nil {
					return err
				}
				return a.printOverlayPreflight(rep)
			}
			rep, readErr := a.app.Doctor(cmd.Context(), cfg)
			if rep == nil {
				return readErr
			}
			if a.humanOutput() && len(rep.Findings) == 0 {
				fmt.Fprintln(a.stdout, "No problems found.")
			} else if err := a.printFindings(findingsOutput{v: rep.Report, findings: rep.Findings, tool: doctorTool}); err != nil {
				return err
			}
			switch {
			case a.humanOutput() && rep.StandDown:
				fmt.Fprintf(a.stdout, "\nroutekeeper stands down from host routes: none of the %d nodes needs a route in %s; %d errors, %d findings in all.\n",
					rep.Nodes, armid.Short(rep.Table), rep.Errors(), len(rep.Findings))
			case a.humanOutput():
				fmt.Fprintf(a.stdout, "\n%d of %d nodes have their route in the table their subnet uses (routekeeper keeps %s); %d errors, %d findings in all.\n",
					rep.Routed, rep.Nodes, armid.Short(rep.Table), rep.Errors(), len(rep.Findings))
			}
			if readErr != nil {
				// A table could not be read: the cloud could not be
				// judged (1), as diff, trace and run --once say.
				return readErr
			}
			if rep.Problems() > 0 {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), doctorSettings)
	of.register(cmd.Flags())
	return cmd
}

// doctorTool names doctor in its SARIF log.
var doctorTool = finding.Tool{Name: "routekeeper doctor", InformationURI: docsURL("doctor.md")}
