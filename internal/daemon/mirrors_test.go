package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// TestRunWithMirror: the daemon keeps a mirror table beside the main one
// from an inventory file watched once for both (the shared source); an
// edit of the inventory reaches both tables, and /metrics shows the
// mirror's own series.
func TestRunWithMirror(t *testing.T) { synctest.Test(t, runWithMirror) }

func runWithMirror(t *testing.T) {
	const topo = kthw.AppGateway
	appgwTable := "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/appgw-routes"
	env := fabrictest.New(t, fabric.Options{}, topo)
	dir := t.TempDir()
	inv := filepath.Join(dir, "nodes.yaml")
	write := func(s string) {
		if err := os.WriteFile(inv, []byte("nodes:\n"+s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n")
	src := inventory.New(inventory.Options{File: inv, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, NodeMaskV4: 24, PollInterval: 20 * time.Millisecond})
	l := newPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := kthwController()
	cfg.BatchWindow = 20 * time.Millisecond
	go func() {
		done <- Run(ctx, Options{
			Controller: cfg,
			Mirrors:    []controller.Mirror{{RouteTableID: appgwTable, Subnets: []string{fabrictest.KTHWVNet + "/subnets/appgw-subnet"}, Policy: assoc.Enforce}},
			Cloud:      env.Client, Source: src, Listener: l, Metrics: metrics.New(),
		})
	}()
	names := func(id string) string {
		tb, err := env.Client.GetRouteTable(context.Background(), id)
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, r := range tb.Routes {
			out = append(out, r.Name)
		}
		return strings.Join(out, ",")
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		eventually(t, 10*time.Second, func() string {
			if ok() {
				return ""
			}
			return fmt.Sprintf("%s: main %q, mirror %q", what, names(fabrictest.KTHWTable), names(appgwTable))
		})
	}
	waitFor("worker-0 in both tables", func() bool {
		return names(fabrictest.KTHWTable) == "worker-0____102000024" && names(appgwTable) == "default-internet,worker-0____102000024"
	})
	write("  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n")
	waitFor("worker-1 added to both tables", func() bool {
		return strings.Contains(names(fabrictest.KTHWTable), "worker-1____102001024") && strings.Contains(names(appgwTable), "worker-1____102001024")
	})
	// The reporters run right after each write: poll until they did.
	var body string
	wants := []string{`routekeeper_mirror_routes{kind="present",table="appgw-routes"} 2`, `routekeeper_mirror_routes{kind="foreign",table="appgw-routes"} 1`, `routekeeper_routes{kind="present"} 2`}
	waitFor("the metrics of both tables", func() bool {
		_, body = l.get(t, "/metrics")
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}
