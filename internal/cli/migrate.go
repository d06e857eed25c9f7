package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/migrate"
	"github.com/routekeeper/routekeeper/internal/output"
)

// migrateOutput is what `migrate -o json|yaml` prints.
type migrateOutput struct {
	DryRun   bool `json:"dryRun"`
	Complete bool `json:"complete"`
	*migrate.Plan
}

func (a *shell) newMigrateCmd() *cobra.Command {
	var (
		cf        configFlags
		to        string
		dryRun    bool
		deleteOld bool
	)
	cmd := &cobra.Command{
		Use:   "migrate --to <route table>",
		Short: "Move the pod routes and the subnets to another route table, safely",
		Long: `Move this cluster's route table (routeTable.id) to another table, with its
subnets: the safe form of swapping a route table on a node subnet (putting a
new, empty table on the subnet stops pod traffic until it holds the routes).

The steps: check (refuse on conflicts), copy the cluster's routes and the
custom routes into the new table (one PUT, keeping its own routes, tagging it
as this cluster's), verify by reading it back, associate the new table with
each subnet (one subnet PUT each, only after verify), mark the old table as
migrated (a running 'routekeeper run' then keeps the new table), and with
--delete-old delete the old table once no subnet uses it. At no moment does a
subnet point to a table that lacks a node route.

Each step's completion is read from the live state, so an interrupted
migration continues where it stopped when run again, and a finished one has
nothing left to do. Afterwards, set routeTable.id to the new table in the
configuration; until then 'routekeeper run' follows the migrated-to tag.

Exit status: 0 when the migration is complete (with --dry-run: nothing left
to do), 3 with --dry-run when there are steps to do, 1 on errors and when the
migration is refused (conflicts: a prefix of the old table held with another
next hop, a table claimed by another cluster, the route limit, another
region), 2 for bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			// On a terminal each step shows as a progress line; the log
			// keeps both ends of every step.
			var stepDone func(error)
			progress := func(s migrate.Step) {
				if s.Status == migrate.Applied {
					if stepDone != nil {
						stepDone(nil)
						stepDone = nil
					}
					a.log.Info("migrate: step done", "step", s.N, "action", s.Action, "resource", s.Resource)
					return
				}
				a.log.Info("migrate: step starting", "step", s.N, "action", s.Action, "resource", s.Resource, "detail", s.Detail)
				if stepDone != nil {
					stepDone(nil)
				}
				stepDone = a.progress(fmt.Sprintf("migrate step %d: %s %s", s.N, s.Action, armid.Short(s.Resource)))
			}
			p, err := a.app.Migrate(cmd.Context(), cfg, app.MigrateRequest{To: to, DryRun: dryRun, DeleteOld: deleteOld, Progress: progress})
			if stepDone != nil {
				stepDone(err)
			}
			if p != nil {
				out := migrateOutput{DryRun: dryRun, Complete: p.Complete(), Plan: p}
				if perr := a.print(out, func() output.Table { return migrateTable(p) }); perr != nil {
					return perr
				}
			}
			switch {
			case err != nil:
				return err
			case dryRun && !p.Complete():
				return findings()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "route table to migrate to (it must exist): its ARM ID, or its name with --resource-group/-g")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan from the live state and write nothing")
	cmd.Flags().BoolVar(&deleteOld, "delete-old", false, "delete the old route table once no subnet uses it")
	cf.register(cmd.Flags(), migrateSettings)
	return cmd
}

// migrateTable lays the plan out as STEP, ACTION, RESOURCE, STATUS, DETAIL,
// with the conflicts (if any) after the steps.
func migrateTable(p *migrate.Plan) output.Table {
	t := output.Table{Header: []string{"Step", "Action", "Resource", "Status", "Detail"}}
	for _, s := range p.Steps {
		t.Rows = append(t.Rows, []string{strconv.Itoa(s.N), s.Action, armid.Short(s.Resource), string(s.Status), s.Detail})
	}
	for _, c := range p.Conflicts {
		res := armid.Short(c.Resource)
		if c.Route != "" {
			res += "/" + c.Route
		}
		t.Rows = append(t.Rows, []string{"-", "conflict", res, "refused", c.Message})
	}
	return t
}
