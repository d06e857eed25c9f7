package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

func (a *shell) newRunCmd() *cobra.Command {
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
0 when every node is routed and every subnet is on the table, 3 when some
node is not (conflict, route limit, no pod CIDR: see the log) or a subnet is
left with a finding, 1 when the reconcile failed, 2 for bad input. diff and
doctor make the same observation and decision without writing.`,
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
			cfg, set, closeConn, err := a.sessionSet(cmd, &cf, connectOptions{applyTopology: true})
			if err != nil {
				return err
			}
			defer closeConn()
			// Every table at once: a failing mirror delays neither the
			// main table nor the other mirrors.
			all := set.Reconcile(ctx)
			res := all[0]
			a.logResult(res)
			a.logMirrors(all[1:])
			if res.Err != nil {
				return res.Err
			}
			if res.Table != nil {
				if err := a.printRoutes(res.Table, ownership(cfg)); err != nil {
					return err
				}
			}
			if err := mirrorErr(all[1:]); err != nil {
				return err
			}
			if res.Unrouted() > 0 || res.AssociationProblems() > 0 || mirrorFindings(all[1:]) {
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
func (a *shell) runDaemon(ctx context.Context, cfg *config.Config) error {
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
	ms, err := a.mirrors(ctx, cfg, conn.client, ccfg)
	if err != nil {
		return err
	}
	o := daemon.Options{
		Controller: ccfg,
		Mirrors:    ms,
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
	} else if o.Source, err = a.nodeSource(ctx, cfg, conn.client); err != nil {
		return err
	}
	a.log.Info("routekeeper running", "cluster", cfg.Cluster.Name, "routeTable", cfg.RouteTable.ID, "cloud", cfg.Cloud.Type,
		"source", cfg.Source.Type, "routes", cfg.Routes, "leaderElection", le.Enabled, "mirrors", len(ms))
	return daemon.Run(ctx, o)
}

// newController builds the controller of cfg on a cloud client.
func (a *shell) newController(ctx context.Context, cfg *config.Config, c *azure.Client, reporters ...controller.Reporter) (*controller.Controller, error) {
	ccfg, src, err := a.controllerParts(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	return controller.New(ccfg, c, src, a.log, reporters...), nil
}

// controllerParts are what a controller of cfg is made of: its
// configuration and its node source.
func (a *shell) controllerParts(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Config, controller.Source, error) {
	src, err := a.nodeSource(ctx, cfg, c)
	if err != nil {
		return controller.Config{}, nil, err
	}
	ccfg, err := a.controllerConfig(ctx, cfg, c)
	if err != nil {
		return controller.Config{}, nil, err
	}
	return ccfg, src, nil
}

// controllerConfig is the controller's part of cfg; the location of a
// table to create is looked up on the first subnet's network when unset.
func (a *shell) controllerConfig(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Config, error) {
	ccfg := baseControllerConfig(cfg)
	if ccfg.CreateTable && ccfg.Location == "" && len(cfg.Subnets) > 0 {
		// A created table goes where the node subnet's network is.
		vnetID, err := armid.VNetOfSubnet(cfg.Subnets[0])
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

// nodeSource builds the configured node source. The inventory's IPAM keeps
// pod CIDRs away from the routes of the table that are not ours (read
// through c before each allocation pass) and from the address spaces of the
// configured subnets' virtual networks (read once here).
func (a *shell) nodeSource(ctx context.Context, cfg *config.Config, c *azure.Client) (controller.Source, error) {
	switch cfg.Source.Type {
	case config.SourceInventory:
		opts := inventory.Options{
			File:            cfg.Source.Inventory.File,
			AllocationsFile: cfg.Source.Inventory.Allocations,
			ClusterCIDRs:    cfg.Cluster.ClusterCIDRs,
			ServiceCIDRs:    cfg.Cluster.ServiceCIDRs,
			NodeMaskV4:      cfg.Cluster.NodeCIDRMaskSize,
			NodeMaskV6:      cfg.Cluster.NodeCIDRMaskSizeIPv6,
			Logger:          a.log,
		}
		if c != nil && len(cfg.Cluster.ClusterCIDRs) > 0 {
			opts.Reserved = inventory.TableReservations(c, cfg.RouteTable.ID, ownership(cfg), a.vnetReservations(ctx, cfg, c))
		}
		return inventorySource{inventory.New(opts)}, nil
	case config.SourceKube:
		return a.kubeSource(cfg)
	default:
		return nil, usageErrorf("source.type %q: not supported", cfg.Source.Type)
	}
}

// vnetReservations are the address spaces of the configured subnets'
// virtual networks, for IPAM to avoid; a network that cannot be read is
// logged and skipped (the route table is still read on every pass).
func (a *shell) vnetReservations(ctx context.Context, cfg *config.Config, c *azure.Client) []ipam.Reservation {
	var out []ipam.Reservation
	seen := map[string]bool{}
	for _, sub := range cfg.Subnets {
		id, err := armid.VNetOfSubnet(sub)
		if err != nil || seen[armid.Key(id)] {
			continue
		}
		seen[armid.Key(id)] = true
		v, err := c.GetVirtualNetwork(ctx, id)
		if err == nil {
			var rs []ipam.Reservation
			if rs, err = inventory.AddressSpaces(v.Name, v.AddressPrefixes); err == nil {
				out = append(out, rs...)
				continue
			}
		}
		a.log.Warn("pod CIDR allocation cannot avoid the address space of a virtual network it could not read", "vnet", id, "err", err)
	}
	return out
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

// logResult logs a reconcile's node problems, one line per reason with
// the count and the first few names (the verdict's groups), and its
// summary line.
func (a *shell) logResult(res *controller.Result) {
	if res.Verdict != nil {
		for _, g := range res.Verdict.Groups(5) {
			a.log.Warn(g.String(), "table", res.TableID)
		}
	}
	if res.Err != nil {
		a.log.Error(res.Summary(), "err", res.Err)
		return
	}
	a.log.Info(res.Summary())
}

// baseControllerConfig is the controller's part of cfg as written, with
// nothing read from the cloud.
func baseControllerConfig(cfg *config.Config) controller.Config {
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
