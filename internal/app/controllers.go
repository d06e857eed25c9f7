package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Ownership is the cluster's route ownership rules.
func Ownership(cfg *config.Config) route.Ownership {
	return route.Ownership{Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs}
}

// BaseControllerConfig is the controller's part of cfg as written, with
// nothing read from the cloud.
func BaseControllerConfig(cfg *config.Config) controller.Config {
	return controller.Config{
		Cluster:      cfg.Cluster.Name,
		ClusterCIDRs: cfg.Cluster.ClusterCIDRs,
		RouteLimit:   cfg.RouteTable.RouteLimit,
		RouteTableID: cfg.RouteTable.ID,

		Adopt:            plan.AdoptPolicy(cfg.RouteTable.Adopt),
		ClaimTable:       cfg.RouteTable.Claim,
		MaxDeletes:       cfg.Controller.MaxDeletes,
		AllowEmptySource: cfg.Controller.AllowEmptySource,
		ConfirmStandDown: cfg.Controller.ConfirmStandDown,

		Location:      cfg.RouteTable.Location,
		CreateTable:   cfg.RouteTable.Create,
		Subnets:       cfg.Subnets,
		Mode:          verdict.Mode(cfg.Routes),
		BatchWindow:   cfg.Controller.BatchWindow,
		MaxBatchDelay: cfg.Controller.MaxBatchDelay,
		Resync:        cfg.Controller.Resync,

		Policy:        cfg.Association.Policy,
		Restore:       cfg.Association.Restore,
		GuardInterval: cfg.Association.Interval,
	}
}

// MirrorOf is a mirror of the configuration as written.
func MirrorOf(m config.Mirror) controller.Mirror {
	return controller.Mirror{
		RouteTableID: m.RouteTable, Subnets: m.Subnets,
		Policy: m.Association.Policy, Restore: m.Association.Restore,
		CreateTable: m.Create, Location: m.Location,
	}
}

// locationOf is the location of the network of a subnet, where a table
// created for it goes; field names the subnet's setting in errors.
func locationOf(ctx context.Context, c *azure.Client, field, subnet, forWhat string) (string, error) {
	vnetID, err := armid.VNetOfSubnet(subnet)
	if err != nil {
		return "", BadInputf("%s: %w", field, err)
	}
	vnet, err := c.GetVirtualNetwork(ctx, vnetID)
	if err != nil {
		return "", fmt.Errorf("finding the location for %s: %w", forWhat, err)
	}
	return vnet.Location, nil
}

// ControllerConfig is the controller's part of cfg; the location of a
// table to create is looked up on the first subnet's network when unset.
func ControllerConfig(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Config, error) {
	ccfg := BaseControllerConfig(cfg)
	if ccfg.CreateTable && ccfg.Location == "" && len(cfg.Subnets) > 0 {
		loc, err := locationOf(ctx, c, "subnets[0]", cfg.Subnets[0], "a new route table")
		if err != nil {
			return ccfg, err
		}
		ccfg.Location = loc
	}
	return ccfg, nil
}

// Mirrors returns the configured mirror tables (config `mirrors:`) for the
// controller; a mirror to create without a location goes where its first
// subnet's network is, unless the main table's location is known.
func Mirrors(ctx context.Context, cfg *config.Config, c *azure.Client, main controller.Config) ([]controller.Mirror, error) {
	out := make([]controller.Mirror, 0, len(cfg.Mirrors))
	for i, m := range cfg.Mirrors {
		cm := MirrorOf(m)
		if cm.CreateTable && cm.Location == "" && main.Location == "" && len(m.Subnets) > 0 {
			loc, err := locationOf(ctx, c, fmt.Sprintf("mirrors[%d].subnets[0]", i), m.Subnets[0], "mirror route table "+m.RouteTable)
			if err != nil {
				return nil, err
			}
			cm.Location = loc
		}
		out = append(out, cm)
	}
	return out, nil
}

// NewSet builds the controllers of cfg: the main table's and one per
// mirror, on one node source. reporters go to the main controller only
// (a node's status reflects the main table).
func (a *App) NewSet(ctx context.Context, cfg *config.Config, c *azure.Client, reporters ...controller.Reporter) (*controller.Set, error) {
	src, err := a.NodeSource(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	ccfg, err := ControllerConfig(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	ms, err := Mirrors(ctx, cfg, c, ccfg)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return &controller.Set{Main: controller.New(ccfg, c, src, a.Log, reporters...)}, nil
	}
	shared := controller.Share(src, a.Log)
	set := &controller.Set{Main: controller.New(ccfg, c, shared, a.Log, reporters...)}
	for _, m := range ms {
		set.Mirrors = append(set.Mirrors, controller.New(controller.MirrorConfig(ccfg, m), c, shared, a.Log.With("mirror", controller.TableName(m.RouteTableID))))
	}
	return set, nil
}

// Session is a connection to cfg's cloud with the controllers of cfg on
// it. The caller must Close it.
type Session struct {
	*Conn
	Set *controller.Set
}

// OpenSession connects to cfg's cloud and builds the controllers of cfg
// on it.
func (a *App) OpenSession(ctx context.Context, cfg *config.Config, o ConnectOptions) (*Session, error) {
	conn, err := a.Connect(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	set, err := a.NewSet(ctx, cfg, conn.Client)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Session{Conn: conn, Set: set}, nil
}

// NodeSource builds the configured node source. The inventory's IPAM keeps
// pod CIDRs away from the routes that are not ours in the tables the
// guarded subnets really use and from the node networks' address spaces,
// observed before each allocation pass (inventory.Reservations); c may be
// nil (no cloud: nothing to avoid).
func (a *App) NodeSource(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Source, error) {
	switch cfg.Source.Type {
	case config.SourceInventory:
		opts := inventory.Options{
			File:            cfg.Source.Inventory.File,
			AllocationsFile: cfg.Source.Inventory.Allocations,
			ClusterCIDRs:    cfg.Cluster.ClusterCIDRs,
			ServiceCIDRs:    cfg.Cluster.ServiceCIDRs,
			NodeMaskV4:      cfg.Cluster.NodeCIDRMaskSize,
			NodeMaskV6:      cfg.Cluster.NodeCIDRMaskSizeIPv6,
			Logger:          a.Log,
		}
		if c != nil && len(cfg.Cluster.ClusterCIDRs) > 0 {
			// Before each allocation pass, through the observer: the
			// tables the guarded subnets really use and the node networks.
			scope := observe.Scope{Table: cfg.RouteTable.ID, Subnets: cfg.Subnets, Networks: true}
			opts.Reserved = func(ctx context.Context) ([]ipam.Reservation, error) {
				rs, notes, err := inventory.Reservations(observe.Observe(ctx, c, scope), Ownership(cfg))
				for _, n := range notes {
					a.Log.Warn(n)
				}
				return rs, err
			}
		}
		return inventorySource{inventory.New(opts)}, nil
	case config.SourceKube:
		return a.kubeSource(cfg)
	default:
		return nil, BadInputf("source.type %q: not supported", cfg.Source.Type)
	}
}

// inventorySource makes a bad inventory file bad input (exit 2).
type inventorySource struct{ *inventory.Source }

func (s inventorySource) Nodes(ctx context.Context) ([]source.Node, error) {
	nodes, err := s.Source.Nodes(ctx)
	if errors.Is(err, inventory.ErrInvalid) {
		return nil, BadInput(err)
	}
	return nodes, err
}
