package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
)

func (a *app) newRunCmd() *cobra.Command {
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
0 when every node is routed, 3 when some node is not (conflict, route limit,
no pod CIDR: see the log), 1 when the reconcile failed, 2 for bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if !once {
				cfg, err := a.loadConfig(cmd, &cf)
				if err != nil {
					return err
				}
				return a.runDaemon(ctx, cfg)
			}
			cfg, conn, err := a.session(cmd, &cf, connectOptions{applyTopology: true})
			if err != nil {
				return err
			}
			defer conn.close()
			ctrl, err := a.newController(ctx, cfg, conn.client)
			if err != nil {
				return err
			}
			res := ctrl.Reconcile(ctx)
			a.logResult(res)
			if res.Err != nil {
				return res.Err
			}
			if res.Table != nil {
				if err := a.printRoutes(res.Table, ownership(cfg)); err != nil {
					return err
				}
			}
			if res.Unrouted() > 0 {
				return findings()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "reconcile once, print the route table and exit")
	cf.register(cmd.Flags(), runSettings)
	return cmd
}

// ownership is the cluster's route ownership rules.
func ownership(cfg *config.Config) route.Ownership {
	return route.Ownership{Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs}
}

// runDaemon runs the controller until ctx ends: with the kube source, the
// Node informer, node conditions, events and leader election; always the
// metrics and health endpoints.
func (a *app) runDaemon(ctx context.Context, cfg *config.Config) error {
	m := metrics.New()
	conn, err := a.connect(ctx, cfg, connectOptions{applyTopology: true, observer: m})
	if err != nil {
		return err
	}
	defer conn.close()
	ccfg, err := a.controllerConfig(ctx, cfg, conn.client)
	if err != nil {
		return err
	}
	le := cfg.Controller.LeaderElection
	o := daemon.Options{
		Controller: ccfg,
		Cloud:      conn.client,
		Address:    cfg.Controller.MetricsAddress,
		Metrics:    m,
		Logger:     a.log,
		LeaderElection: daemon.LeaderElection{
			Enabled: le.Enabled, Namespace: le.Namespace, Name: le.Name,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		},
	}
	if cfg.Source.Type == config.SourceKube {
		if o.Kube, err = a.kubeRESTConfig(cfg); err != nil {
			return err
		}
		o.Pod = a.podRef()
	} else if o.Source, err = a.nodeSource(cfg); err != nil {
		return err
	}
	a.log.Info("routekeeper running", "cluster", cfg.Cluster.Name, "routeTable", cfg.RouteTable.ID, "cloud", cfg.Cloud.Type,
		"source", cfg.Source.Type, "routes", cfg.Routes, "leaderElection", le.Enabled)
	return daemon.Run(ctx, o)
}

// newController builds the controller of cfg on a cloud client.
func (a *app) newController(ctx context.Context, cfg *config.Config, c *azure.Client, reporters ...controller.Reporter) (*controller.Controller, error) {
	src, err := a.nodeSource(cfg)
	if err != nil {
		return nil, err
	}
	ccfg, err := a.controllerConfig(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	return controller.New(ccfg, c, src, a.log, reporters...), nil
}

// controllerConfig is the controller's part of cfg; the location of a
// table to create is looked up on the first subnet's network when unset.
func (a *app) controllerConfig(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Config, error) {
	ccfg := controller.Config{
		Cluster:       cfg.Cluster.Name,
		ClusterCIDRs:  cfg.Cluster.ClusterCIDRs,
		RouteLimit:    cfg.RouteTable.RouteLimit,
		RouteTableID:  cfg.RouteTable.ID,
		Location:      cfg.RouteTable.Location,
		CreateTable:   cfg.RouteTable.Create,
		Subnets:       cfg.Subnets,
		Mode:          controller.Mode(cfg.Routes),
		BatchWindow:   cfg.Controller.BatchWindow,
		MaxBatchDelay: cfg.Controller.MaxBatchDelay,
		Resync:        cfg.Controller.Resync,

		Policy:        controller.Policy(cfg.Association.Policy),
		Restore:       cfg.Association.Restore,
		GuardInterval: cfg.Association.Interval,
	}
	if ccfg.CreateTable && ccfg.Location == "" && len(cfg.Subnets) > 0 {
		// A created table goes where the node subnet's network is.
		vnetID, err := azure.VNetOfSubnet(cfg.Subnets[0])
		if err != nil {
			return ccfg, usageErrorf("subnets[0]: %w", err)
		}
		vnet, err := c.GetVirtualNetwork(ctx, vnetID)
		if err != nil {
			return ccfg, fmt.Errorf("finding the location for a new route table: %w", err)
		}
		ccfg.Location = vnet.Location
	}
	return ccfg, nil
}

// nodeSource builds the configured node source.
func (a *app) nodeSource(cfg *config.Config) (controller.Source, error) {
	switch cfg.Source.Type {
	case config.SourceInventory:
		return inventorySource{inventory.New(inventory.Options{
			File:            cfg.Source.Inventory.File,
			AllocationsFile: cfg.Source.Inventory.Allocations,
			ClusterCIDRs:    cfg.Cluster.ClusterCIDRs,
			ServiceCIDRs:    cfg.Cluster.ServiceCIDRs,
			NodeMaskV4:      cfg.Cluster.NodeCIDRMaskSize,
			NodeMaskV6:      cfg.Cluster.NodeCIDRMaskSizeIPv6,
			Logger:          a.log,
		})}, nil
	case config.SourceKube:
		return a.kubeSource(cfg)
	default:
		return nil, usageErrorf("source.type %q: not supported", cfg.Source.Type)
	}
}

// inventorySource makes a bad inventory file a usage error (exit 2).
type inventorySource struct{ *inventory.Source }

func (s inventorySource) Nodes(ctx context.Context) ([]source.Node, error) {
	nodes, err := s.Source.Nodes(ctx)
	if errors.Is(err, inventory.ErrInvalid) {
		return nil, usageError(err)
	}
	return nodes, err
}

// logResult logs a reconcile's per-node problems and its summary line.
func (a *app) logResult(res *controller.Result) {
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		if nr := res.Nodes[name]; !nr.Routed {
			a.log.Warn("node not routed", "node", name, "reason", nr.Reason, "message", nr.Message)
		}
	}
	if res.Err != nil {
		a.log.Error(res.Summary(), "err", res.Err)
		return
	}
	a.log.Info(res.Summary())
}
