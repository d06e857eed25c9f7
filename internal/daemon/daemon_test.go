package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// TestRunWithoutKubernetes: an inventory-style source, the fabric, and the
// health and metrics endpoints.
func TestRunWithoutKubernetes(t *testing.T) { synctest.Test(t, runWithoutKubernetes) }

// kthwController is the controller of the KTHW network's cluster: it
// creates the table and keeps kubernetes-subnet on it.
func kthwController() controller.Config {
	return controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable, Location: "eastus", CreateTable: true, Subnets: []string{fabrictest.KTHWSubnet},
		Resync: time.Hour,
	}
}

func runWithoutKubernetes(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	l := newPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Controller: kthwController(),
			Cloud:      env.Client,
			Source: nodesource.New(source.Node{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")},
				PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}}),
			Listener: l,
			Metrics:  metrics.New(),
		})
	}()
	var body string
	eventually(t, 10*time.Second, func() string {
		if _, body = l.get(t, "/metrics"); !strings.Contains(body, `routekeeper_reconciles_total{result="success"} 1`) {
			return "no successful reconcile in the metrics:\n" + grep(body, "routekeeper_")
		}
		return ""
	})
	if !strings.Contains(body, `routekeeper_routes{kind="present"} 1`) {
		t.Errorf("metrics after the first reconcile lack routes{present} 1:\n%s", grep(body, "routekeeper_routes"))
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := l.get(t, p); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", p, code, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

func TestLeaderElectionNeedsKubernetes(t *testing.T) {
	err := Run(context.Background(), Options{Source: nodesource.New(), LeaderElection: LeaderElection{Enabled: true}})
	if err == nil || !strings.Contains(err.Error(), "Kubernetes") {
		t.Errorf("Run = %v, want an error about the Kubernetes source", err)
	}
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// failingNodes is a node source that cannot be read.
type failingNodes struct{}

func (failingNodes) Nodes(context.Context) ([]source.Node, error) {
	return nil, errors.New("connection refused")
}
func (failingNodes) Watch(ctx context.Context, _ func()) error { <-ctx.Done(); return nil }

// With the node source unavailable the guard goes on (a detached subnet is
// re-associated) and /readyz names the source's error in its details.
func TestNodeSourceUnavailable(t *testing.T) { synctest.Test(t, nodeSourceUnavailable) }

func nodeSourceUnavailable(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	cfg := controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable, Location: "eastus", CreateTable: true, Subnets: []string{fabrictest.KTHWSubnet},
		Resync: time.Hour, GuardInterval: 50 * time.Millisecond, RetryBackoff: time.Hour,
	}
	boot := controller.New(cfg, env.Client, nodesource.New(source.Node{Name: "worker-0", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}}), nil)
	if r := boot.Reconcile(context.Background()); r.Err != nil {
		t.Fatal(r.Err)
	}
	fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions())

	l := newPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Controller: cfg, Cloud: env.Client, Source: failingNodes{}, Listener: l, Metrics: metrics.New()})
	}()
	eventually(t, 10*time.Second, func() string {
		if s, err := env.Client.GetSubnet(context.Background(), fabrictest.KTHWSubnet); err != nil || !strings.EqualFold(s.RouteTableID, fabrictest.KTHWTable) {
			return "the detached subnet was not re-associated while the node source was unavailable"
		}
		return ""
	})
	if _, body := l.get(t, "/readyz"); !strings.Contains(body, "node source: reading nodes") && !strings.Contains(body, "connection refused") {
		t.Errorf("/readyz does not name the source's error: %q", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}
