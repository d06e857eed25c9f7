package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/source"
)

// TestEmptyKubeSourceDeletesNothing: routekeeper pointed at a cluster with
// no nodes while the table holds three routes of the cluster deletes none
// of them (deletion guard, issue 11), says so in a metric, and deletes them
// only with AllowEmptySource.
func TestEmptyKubeSourceDeletesNothing(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	client := env.Clientset(t)
	f := newFabric(t)
	cfg := controllerConfig("emptysrc")

	// The table as a previous run left it: claimed, three node routes.
	var nodes []source.Node
	for i := range 3 {
		nodes = append(nodes, source.Node{Name: fmt.Sprintf("emptysrc-%d", i), InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(40 + i))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(40 + i))}})
	}
	if res := controller.New(cfg, f.client(t, nil), staticSource(nodes), nil).Reconcile(ctx); res.Err != nil || len(f.routes(t)) != 3 {
		t.Fatalf("seeding the table: %v, routes %v", res.Err, f.routes(t))
	}

	// The cluster must really be empty: the tests share one control plane.
	eventually(t, 30*time.Second, func() string {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, n := range l.Items {
			names = append(names, n.Name)
		}
		if len(names) > 0 {
			return "the cluster still has nodes of other tests: " + strings.Join(names, ", ")
		}
		return ""
	})

	r := start(t, daemon.Options{Controller: cfg, Cloud: f.client(t, nil), Kube: adminConfig(env)})
	eventually(t, 30*time.Second, func() string {
		if v := gauge(t, r.metrics, "routekeeper_deletes_held", "reason", string(plan.ReasonEmptySource)); v != 3 {
			return fmt.Sprintf("deletes_held{EmptySource} = %v, want 3", v)
		}
		return ""
	})
	if got := f.routes(t); len(got) != 3 {
		t.Fatalf("an empty cluster deleted routes: %d left, want 3", len(got))
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("stopping: %v", err)
	}

	cfg.AllowEmptySource = true
	start(t, daemon.Options{Controller: cfg, Cloud: f.client(t, nil), Kube: adminConfig(env)})
	eventually(t, 30*time.Second, func() string {
		if n := len(f.routes(t)); n != 0 {
			return fmt.Sprintf("%d routes left with AllowEmptySource, want 0", n)
		}
		return ""
	})
}
