package app

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/metrics"
)

// RunDaemon runs the controller until ctx ends: with the kube source, the
// Node informer, node conditions, events and leader election; always the
// metrics and health endpoints.
func (a *App) RunDaemon(ctx context.Context, cfg *config.Config) error {
	m := metrics.New()
	conn, err := a.Connect(ctx, cfg, ConnectOptions{ApplyTopology: true, Observer: m})
	if err != nil {
		return err
	}
	defer conn.Close()
	ccfg, err := ControllerConfig(ctx, cfg, conn.Client)
	if err != nil {
		return err
	}
	le := cfg.Controller.LeaderElection
	ms, err := Mirrors(ctx, cfg, conn.Client, ccfg)
	if err != nil {
		return err
	}
	o := daemon.Options{
		Controller: ccfg,
		Mirrors:    ms,
		Cloud:      conn.Client,
		Address:    cfg.Controller.MetricsAddress,
		Metrics:    m,
		Logger:     a.Log,
		LeaderElection: daemon.LeaderElection{
			Enabled: le.Enabled, Namespace: le.Namespace, Name: le.Name,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		},
	}
	if cfg.Source.Type == config.SourceKube {
		if o.Kube, err = a.KubeRESTConfig(cfg); err != nil {
			return err
		}
		o.Pod = a.podRef()
	} else if o.Source, err = a.NodeSource(ctx, cfg, conn.Client); err != nil {
		return err
	}
	a.Log.Info("routekeeper running", "cluster", cfg.Cluster.Name, "routeTable", cfg.RouteTable.ID, "cloud", cfg.Cloud.Type,
		"source", cfg.Source.Type, "routes", cfg.Routes, "leaderElection", le.Enabled, "mirrors", len(ms))
	return daemon.Run(ctx, o)
}
