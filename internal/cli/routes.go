package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/cloud"
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

func routesTable(rows []routeRow) table {
	t := table{header: []string{"AddressPrefix", "Name", "NextHopIpAddress", "NextHopType", "ProvisioningState", "ResourceGroup", "Owner"}}
	for _, r := range rows {
		t.rows = append(t.rows, []string{r.AddressPrefix, r.Name, r.NextHopIPAddress, r.NextHopType, r.ProvisioningState, r.ResourceGroup, r.Owner})
	}
	return t
}

// printRoutes prints a route table the way `routes list` does.
func (a *app) printRoutes(t *route.Table, own route.Ownership) error {
	rows := routeRows(t, own)
	return a.print(rows, func() table { return routesTable(rows) })
}

func (a *app) newRoutesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Inspect the routes of the cluster's route table",
	}
	var cf configFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the route table's routes, with who owns each",
		Long: `List the routes of the configured route table as
'az network route-table route list -o table' shows them, with an Owner column:
"this cluster" (routekeeper manages it), "other cluster" (in the cluster
route naming scheme but not this cluster's) or "custom" (anything else, which
routekeeper never changes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, conn, err := a.session(cmd, &cf, connectOptions{readOnly: true})
			if err != nil {
				return err
			}
			defer conn.close()
			t, err := conn.client.GetRouteTable(cmd.Context(), cfg.RouteTable.ID)
			if errors.Is(err, cloud.ErrNotFound) {
				return fmt.Errorf("route table %s does not exist", cfg.RouteTable.ID)
			}
			if err != nil {
				return err
			}
			return a.printRoutes(t, ownership(cfg))
		},
	}
	cf.register(list.Flags(), routesSettings)
	cmd.AddCommand(list)
	return cmd
}
