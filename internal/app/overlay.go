package app

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/overlay"
)

// OverlayPreflight is doctor --target overlay: the pre-flight of a move
// from host routes to an overlay CNI, from the same dry run as doctor.
func (a *App) OverlayPreflight(ctx context.Context, cfg *config.Config, target overlay.Target) (*overlay.Report, error) {
	all, closeConn, err := a.dryRun(ctx, cfg, judgeScope(cfg, false))
	if err != nil {
		return nil, err
	}
	defer closeConn()
	in, err := a.overlayInput(ctx, cfg, all, target)
	if err != nil {
		return nil, err
	}
	return overlay.Check(in)
}

// overlayInput is the pre-flight's input from a dry run: the main table's
// verdict and observation, the mirrors' verdicts, the configuration and
// what the cluster says of ip-masq-agent.
func (a *App) overlayInput(ctx context.Context, cfg *config.Config, all []*controller.Result, target overlay.Target) (overlay.Input, error) {
	v := all[0].Verdict
	st, ok := v.Network()
	if !ok {
		return overlay.Input{}, fmt.Errorf("the network could not be read: %s", v.ReachUnknown)
	}
	in := overlay.Input{
		Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs, ServiceCIDRs: cfg.Cluster.ServiceCIDRs,
		Platform: cfg.Routes == config.RoutesObserve, Subnets: cfg.Subnets,
		TableID: v.Table, Table: v.Current, Routing: st, Deliver: v.Deliver, Target: target,
	}
	for i, m := range cfg.Mirrors {
		om := overlay.Mirror{TableID: m.RouteTable, Subnets: m.Subnets}
		if i+1 < len(all) && all[i+1].Verdict != nil {
			om.Table = all[i+1].Verdict.Current
		}
		in.Mirrors = append(in.Mirrors, om)
	}
	in.Masq, in.MasqNote = a.readMasq(ctx, cfg)
	return in, nil
}

// readMasq reads the cluster's ip-masq-agent configuration for the
// pre-flight, in Kubernetes mode only; note says why it was not read.
func (a *App) readMasq(ctx context.Context, cfg *config.Config) (m *overlay.Masq, note string) {
	if cfg.Source.Type != config.SourceKube {
		return nil, "the nodes come from an inventory, so the cluster's ip-masq-agent configuration was not read; check its nonMasqueradeCIDRs by hand (kubectl -n kube-system get configmaps)"
	}
	client, err := a.kubeClient(cfg)
	if err != nil {
		return nil, err.Error()
	}
	return masqFrom(ctx, client)
}

// masqFrom reads the ip-masq-agent ConfigMaps through client. A ConfigMap
// that does not exist is skipped; one the identity may not read, or that
// does not parse, is named in note.
func masqFrom(ctx context.Context, client kubernetes.Interface) (*overlay.Masq, string) {
	m := &overlay.Masq{}
	var notes []string
	for _, c := range overlay.MasqConfigMaps {
		cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, c.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			notes = append(notes, fmt.Sprintf("reading ConfigMap kube-system/%s: %v", c.Name, err))
			continue
		}
		mc, more, err := overlay.ParseMasq(c, cm.Data[c.Key])
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		notes = append(notes, more...)
		m.ConfigMaps = append(m.ConfigMaps, mc)
	}
	if len(notes) > 0 && len(m.ConfigMaps) == 0 {
		return nil, strings.Join(notes, "; ")
	}
	return m, strings.Join(notes, "; ")
}
