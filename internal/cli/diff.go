package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/plan"
)

func (a *shell) newDiffCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Print the changes `run` would make, without making them",
		Long: `Observe and decide like 'routekeeper run --once' and print what it would do:
the route changes it would write to the table it keeps (following a migration
or, under association policy follow, a swap), the subnet associations it
would make, and the nodes and subnets it would leave with a finding. Nothing
is written.

Exit status: what 'run --once' would give: 0 when there is nothing to do,
3 when there are changes to make or findings, 1 on errors (the error run
would fail with, after printing what was decided), 2 for bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			out, runErr := a.app.Diff(cmd.Context(), cfg)
			if out == nil {
				return runErr
			}
			if a.humanOutput() && len(out.Findings) == 0 && runErr == nil && out.MirrorErr() == nil {
				_, err := fmt.Fprintf(a.stdout, "No changes: route table %s is up to date and every subnet is on it.\n", out.RouteTable)
				return err
			}
			if err := a.print(out, func() output.Table { return diffTable(*out) }); err != nil {
				return err
			}
			if a.humanOutput() {
				if err := a.printMirrorDiffs(out.Mirrors); err != nil {
					return err
				}
				a.printFindingsBelow(out.Findings)
			}
			if runErr != nil {
				return runErr
			}
			if err := out.MirrorErr(); err != nil {
				return err
			}
			if len(out.Findings) > 0 {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), diffSettings)
	return cmd
}

func diffTable(d app.DiffResult) output.Table {
	t := output.Table{Header: []string{"Action", "Name", "AddressPrefix", "NextHop", "Node", "Reason"}}
	if d.Create {
		t.Rows = append(t.Rows, []string{"create-table", d.RouteTable, "", "", "", "the route table does not exist"})
	} else if d.Claim {
		t.Rows = append(t.Rows, []string{"claim-table", d.RouteTable, "", "", "", "tag the table as this cluster's"})
	}
	adopted := map[string]bool{}
	for _, c := range d.Changes {
		if c.Adopts != "" {
			adopted[c.Adopts] = true
		}
	}
	hopOf := func(c plan.Change) string {
		if c.Route.NextHopIP.IsValid() {
			return c.Route.NextHopIP.String()
		}
		return string(c.Route.NextHopType)
	}
	for _, c := range d.Changes {
		switch {
		case c.Adopts != "":
			// An adoption is one rename: the old route goes in the same
			// write that adds the new one.
			t.Rows = append(t.Rows, []string{"rename", c.Adopts + " -> " + c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
		case c.Kind == plan.Delete && adopted[c.Route.Name]:
		default:
			t.Rows = append(t.Rows, []string{c.Kind.String(), c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
		}
	}
	for _, c := range d.HeldDeletes {
		t.Rows = append(t.Rows, []string{"held-delete", c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
	}
	for _, c := range d.Unclaimed {
		t.Rows = append(t.Rows, []string{"keep-unclaimed", c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
	}
	for _, s := range d.Associations {
		if s.State == assoc.Associated && s.Action == assoc.None {
			continue
		}
		action := string(s.Action)
		if s.Action == assoc.None {
			action = "finding"
		}
		reason := s.Message
		if s.Fix != "" {
			reason += ". Fix: " + s.Fix
		}
		t.Rows = append(t.Rows, []string{action, armid.Short(s.Subnet), "", "", "", string(s.State) + ": " + reason})
	}
	for _, c := range d.Conflicts {
		prefix := ""
		if c.Prefix.IsValid() {
			prefix = c.Prefix.String()
		}
		t.Rows = append(t.Rows, []string{"not-routed", "", prefix, "", c.Node, string(c.Reason) + ": " + c.Message})
	}
	for _, u := range d.Unrouted {
		t.Rows = append(t.Rows, []string{"not-routed", "", "", "", u.Node, u.Reason + ": " + u.Message})
	}
	for _, a := range d.Refused {
		_, why := a.Refused()
		t.Rows = append(t.Rows, []string{"refused", a.Action, "", "", "", fmt.Sprintf("cannot %s: %s. Fix: %s", a.For, why, a.Fix)})
	}
	return t
}
