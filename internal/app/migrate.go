package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/migrate"
)

// MigrateRequest is a migration of cfg's table to another.
type MigrateRequest struct {
	// To is the table to migrate to: its ARM ID, or its name in the
	// configuration's resource group.
	To        string
	DryRun    bool
	DeleteOld bool
	// Progress is told of each step as it starts and when it is applied.
	Progress func(migrate.Step)
}

// Migrate moves cfg's route table and its subnets to another table
// (internal/migrate), or with DryRun plans it from the live state. The
// plan is returned with the error when there is one (a refusal lists its
// conflicts).
func (a *App) Migrate(ctx context.Context, cfg *config.Config, r MigrateRequest) (*migrate.Plan, error) {
	if r.To == "" {
		return nil, BadInputf("flag --to: the route table to migrate to is required (its ARM ID, or its name with --resource-group/-g)")
	}
	to, err := cfg.Scope().RouteTableID(r.To)
	if err != nil {
		return nil, BadInputf("flag --to: %q: %w", r.To, err)
	}
	o := migrate.Options{
		Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs,
		From: cfg.RouteTable.ID, To: to, Subnets: cfg.Subnets,
		Limit: cfg.RouteTable.RouteLimit, DeleteOld: r.DeleteOld,
	}
	if err := o.Validate(); err != nil {
		return nil, BadInputf("migrate: %w", err)
	}
	if err := refuseMirrorTarget(cfg, to); err != nil {
		return nil, err
	}
	conn, err := a.Connect(ctx, cfg, ConnectOptions{ReadOnly: r.DryRun})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	progress := func(s migrate.Step) error {
		if r.Progress != nil {
			r.Progress(s)
		}
		return nil
	}
	p, err := migrate.Run(ctx, conn.Client, o, migrate.RunOptions{DryRun: r.DryRun, Progress: progress})
	switch {
	case errors.Is(err, migrate.ErrConflicts):
		return p, fmt.Errorf("%w: %d conflict(s) with route table %s (listed above); nothing was written", err, len(p.Conflicts), to)
	case err != nil && p != nil:
		return p, fmt.Errorf("%w (run the same command again to continue)", err)
	case err != nil:
		return nil, err
	case !r.DryRun:
		a.Log.Info("migration complete: set routeTable.id to the new table in the configuration (until then routekeeper run follows the migrated-to tag)",
			"routeTable", to, "writes", p.Writes)
	}
	return p, nil
}

// refuseMirrorTarget refuses `migrate --to` a mirror table: the node
// subnets would get the mirror's own routes (an App Gateway table's
// 0.0.0.0/0 -> Internet), and the mirror's controller would keep writing
// it as a mirror.
func refuseMirrorTarget(cfg *config.Config, to string) error {
	for i, m := range cfg.Mirrors {
		if armid.Matches(m.RouteTable, to) && strings.HasPrefix(to, "/") {
			return BadInputf("migrate --to %s: that table is mirrors[%d].routeTable, a mirror kept for subnets %s with routes of its own; the node subnets must not move onto it. Migrate to a new table, or remove the mirror from the configuration first",
				to, i, strings.Join(m.Subnets, ", "))
		}
	}
	return nil
}
