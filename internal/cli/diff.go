package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/plan"
)

// diffOutput is what `diff -o json|yaml` prints.
type diffOutput struct {
	RouteTable string          `json:"routeTable"`
	Create     bool            `json:"createTable,omitempty"`
	Claim      bool            `json:"claimTable,omitempty"`
	Changes    []plan.Change   `json:"changes"`
	Conflicts  []plan.Conflict `json:"conflicts"`
}

func (a *app) newDiffCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Print the changes `run` would make to the route table, without making them",
		Long: `Read the nodes and the route table, plan like 'routekeeper run' and print the
route changes it would write, and the nodes it would not route (conflicts,
route limit) with why. Nothing is written.

Exit status: 0 when the table is already right, 3 when there are changes to
make, 1 on errors, 2 for bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, conn, err := a.session(cmd, &cf, connectOptions{readOnly: true})
			if err != nil {
				return err
			}
			defer conn.close()
			ctx := cmd.Context()
			ctrl, err := a.newController(ctx, cfg, conn.client)
			if err != nil {
				return err
			}
			res := ctrl.DryRun(ctx)
			if res.Err != nil {
				return res.Err
			}
			p := res.Plan
			out := diffOutput{RouteTable: cfg.RouteTable.ID, Create: p.Create, Claim: p.Claim, Changes: p.Changes, Conflicts: p.Conflicts}
			if a.humanOutput() && len(out.Changes) == 0 && len(out.Conflicts) == 0 && !out.Create && !out.Claim {
				_, err := fmt.Fprintf(a.stdout, "No changes: route table %s is up to date.\n", cfg.RouteTable.ID)
				return err
			}
			if err := a.print(out, func() table { return diffTable(out) }); err != nil {
				return err
			}
			if p.NeedsWrite() {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), diffSettings)
	return cmd
}

func diffTable(d diffOutput) table {
	t := table{header: []string{"Action", "Name", "AddressPrefix", "NextHop", "Node", "Reason"}}
	if d.Create {
		t.rows = append(t.rows, []string{"create-table", d.RouteTable, "", "", "", "the route table does not exist"})
	} else if d.Claim {
		t.rows = append(t.rows, []string{"claim-table", d.RouteTable, "", "", "", "tag the table as this cluster's"})
	}
	for _, c := range d.Changes {
		hop := string(c.Route.NextHopType)
		if c.Route.NextHopIP.IsValid() {
			hop = c.Route.NextHopIP.String()
		}
		t.rows = append(t.rows, []string{c.Kind.String(), c.Route.Name, c.Route.AddressPrefix, hop, c.Node, c.Reason})
	}
	for _, c := range d.Conflicts {
		prefix := ""
		if c.Prefix.IsValid() {
			prefix = c.Prefix.String()
		}
		t.rows = append(t.rows, []string{"not-routed", "", prefix, "", c.Node, string(c.Reason) + ": " + c.Message})
	}
	return t
}
