package cli

import (
	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/route"
)

// routeRow is one row of `routes list`: the columns of `az network
// route-table route list -o table`, plus who owns the route. JSON and YAML
// use the field names of az's JSON output.
type routeRow struct {
	AddressPrefix     string `json:"addressPrefix"`
	Name              string `json:"name"`
	NextHopIPAddress  string `json:"nextHopIpAddress,omitempty"`
	NextHopType       string `json:"nextHopType"`
	ProvisioningState string `json:"provisioningState"`
	ResourceGroup     string `json:"resourceGroup"`
	Owner             string `json:"owner"`
}

func routeRows(t *route.Table, own route.Ownership) []routeRow {
	rows := make([]routeRow, 0, len(t.Routes))
	cls := own.ClassifyTable(t)
	for i, r := range t.Routes {
		row := routeRow{
			AddressPrefix:     r.AddressPrefix,
			Name:              r.Name,
			NextHopType:       string(r.NextHopType),
			ProvisioningState: r.ProvisioningState,
			ResourceGroup:     t.ResourceGroup,
			Owner:             cls[i].Owner.String(),
		}
		if r.NextHopIP.IsValid() {
			row.NextHopIPAddress = r.NextHopIP.String()
		}
		rows = append(rows, row)
	}
	return rows
}

func routesTable(rows []routeRow) output.Table {
	t := output.Table{Header: []string{"AddressPrefix", "Name", "NextHopIpAddress", "NextHopType", "ProvisioningState", "ResourceGroup", "Owner"}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.AddressPrefix, r.Name, r.NextHopIPAddress, r.NextHopType, r.ProvisioningState, r.ResourceGroup, r.Owner})
	}
	return t
}

// printRoutes prints a route table the way `routes list` does.
func (a *shell) printRoutes(t *route.Table, own route.Ownership) error {
	rows := routeRows(t, own)
	return a.print(rows, func() output.Table { return routesTable(rows) })
}

func (a *shell) newRoutesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Inspect the routes of the cluster's route table",
	}
	var (
		cf        configFlags
		tableFlag string
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the route table's routes, with who owns each",
		Long: `List the routes of the route table routekeeper keeps (the configured one,
or the table it was migrated to, or the one a followed swap moved to) as
'az network route-table route list -o table' shows them, with an Owner column:
"this cluster" (routekeeper manages it), "other cluster" (in the cluster
route naming scheme but not this cluster's) or "custom" (anything else, which
routekeeper never changes).

With --table, list one of the configuration's mirror tables (config
mirrors:), by name or ARM ID, the same way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			t, err := a.app.KeptTable(cmd.Context(), cfg, tableFlag)
			if err != nil {
				return err
			}
			return a.printRoutes(t, app.Ownership(cfg))
		},
	}
	list.Flags().StringVar(&tableFlag, "table", "", "list this table of the configuration: the main one (default) or a mirror, by name or ARM ID")
	cf.register(list.Flags(), routesSettings)
	cmd.AddCommand(list)
	return cmd
}
