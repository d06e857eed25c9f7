package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/output"
)

// incidentOptions are the flags every incident verb shares.
type incidentOptions struct {
	target fabricTarget
	rg     string
	sub    string
}

func (a *shell) newFabricIncidentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "incident",
		Short: "Break pod routing on purpose, as people and tools do in Azure: redeploy, detach, swap, delete-table, revoke-role, lock, deny-policy",
		Long: `incident replays the writes that break pod routing in Azure, through the ARM
API of the fabric (a state file, or a served fabric with --endpoint), and prints
what it changed. routekeeper run meets them as it would meet them in Azure.

  redeploy VNET                    a VNet PUT without the subnets' route tables (an ARM/Terraform redeploy)
  detach VNET/SUBNET               the subnet loses its route table (someone in the portal)
  swap VNET/SUBNET --to TABLE      the subnet points at another table (a table swap); --delete-old deletes the old one
  delete-table TABLE               the table is detached from its subnets and deleted
  revoke-role PRINCIPAL            the principal's role assignments are removed (--role, --scope: only those)
  lock [SCOPE] --level LEVEL       a CanNotDelete or ReadOnly management lock on the scope (default: the group -g)
  deny-policy [SCOPE] --next-hop T a deny policy on routes of next hop type T (or --rule FILE) at the scope

Names are in the resource group -g (default kubernetes); full resource IDs work too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var toTable string
	var deleteOld bool
	verbs := []incidentVerb{
		{"redeploy VNET", "PUT a virtual network with its subnets inline and no route tables, as an ARM/Terraform redeploy does", cobra.ExactArgs(1), nil,
			onResource("virtualNetworks", func(ctx context.Context, in *topology.Incidents, id string, _ *incidentOptions) ([]topology.Change, error) {
				return in.Redeploy(ctx, id)
			})},
		{"detach VNET/SUBNET", "Remove a subnet's route table association", cobra.ExactArgs(1), nil,
			onResource("subnets", func(ctx context.Context, in *topology.Incidents, id string, _ *incidentOptions) ([]topology.Change, error) {
				return in.Detach(ctx, id)
			})},
		{"swap VNET/SUBNET --to TABLE", "Point a subnet at another route table (--delete-old: then delete the old table)", cobra.ExactArgs(1),
			func(c *cobra.Command) {
				c.Flags().StringVar(&toTable, "to", "", "route table to associate (name in -g, or ID)")
				c.Flags().BoolVar(&deleteOld, "delete-old", false, "delete the table the subnet had")
			},
			onResource("subnets", func(ctx context.Context, in *topology.Incidents, id string, o *incidentOptions) ([]topology.Change, error) {
				if toTable == "" {
					return nil, usageErrorf("flag --to: the route table to swap in is required")
				}
				table, err := in.ResolveID("routeTables", o.rg, toTable)
				if err != nil {
					return nil, usageErrorf("flag --to: %w", err)
				}
				return in.Swap(ctx, id, table, deleteOld)
			})},
		{"delete-table TABLE", "Detach a route table from its subnets and delete it", cobra.ExactArgs(1), nil,
			onResource("routeTables", func(ctx context.Context, in *topology.Incidents, id string, _ *incidentOptions) ([]topology.Change, error) {
				return in.DeleteTable(ctx, id)
			})},
	}
	for _, v := range verbs {
		cmd.AddCommand(a.incidentCmd(v))
	}
	a.addAuthzIncidentCmds(cmd) // fabric_incident_authz.go
	return cmd
}

// incidentVerb is one `fabric incident` subcommand: run makes the change
// from the arguments.
type incidentVerb struct {
	use, short string
	args       cobra.PositionalArgs
	flags      func(*cobra.Command) // the verb's own flags; nil: none
	run        func(ctx context.Context, in *topology.Incidents, args []string, o *incidentOptions) ([]topology.Change, error)
}

// onResource is a verb's run on the resource its argument names (of type
// typ: a name in the group -g, or an ID).
func onResource(typ string, run func(ctx context.Context, in *topology.Incidents, id string, o *incidentOptions) ([]topology.Change, error)) func(context.Context, *topology.Incidents, []string, *incidentOptions) ([]topology.Change, error) {
	return func(ctx context.Context, in *topology.Incidents, args []string, o *incidentOptions) ([]topology.Change, error) {
		id, err := in.ResolveID(typ, o.rg, args[0])
		if err != nil {
			return nil, usageError(err)
		}
		return run(ctx, in, id, o)
	}
}

// incidentCmd is the command of verb v: it opens the fabric, runs v and
// prints what it changed.
func (a *shell) incidentCmd(v incidentVerb) *cobra.Command {
	var o incidentOptions
	c := &cobra.Command{
		Use:   v.use,
		Short: v.short,
		Args:  v.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, release, err := o.target.open(cmd.Context(), a, cmd, true)
			if err != nil {
				return err
			}
			defer release()
			in, err := topology.NewIncidents(o.sub, opts, identity.Credential{})
			if err != nil {
				return err
			}
			changes, err := v.run(cmd.Context(), in, args, &o)
			// What was done before a failure is printed; a failure
			// that changed nothing prints no empty table.
			if err == nil || len(changes) > 0 {
				if perr := a.printChanges(changes); perr != nil {
					return perr
				}
			}
			if err != nil {
				return fmt.Errorf("fabric incident %s: %w", cmd.Name(), err)
			}
			return nil
		},
	}
	o.target.register(c)
	c.Flags().StringVarP(&o.rg, "resource-group", "g", "kubernetes", "resource group of the names given")
	c.Flags().StringVar(&o.sub, "subscription", fabric.DefaultSubscription, "subscription of the names given")
	if v.flags != nil {
		v.flags(c)
	}
	return c
}

// printChanges prints what an incident changed, one row per resource.
func (a *shell) printChanges(changes []topology.Change) error {
	if changes == nil {
		changes = []topology.Change{}
	}
	return a.print(changes, func() output.Table {
		t := output.Table{Header: []string{"Action", "Kind", "ResourceGroup", "Name", "Detail"}}
		for _, c := range changes {
			rg, name := splitID(c.ID)
			t.Rows = append(t.Rows, []string{c.Action, c.Kind, rg, name, c.Detail})
		}
		return t
	})
}
