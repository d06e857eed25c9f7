package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// TestEmptyKubeSourceDeletesNothing: routekeeper pointed at a cluster with
// no nodes while the table holds three routes of the cluster deletes none
// of them (the deletion guard), says so in a metric, and deletes them only
// with AllowEmptySource.
func TestEmptyKubeSourceDeletesNothing(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	cfg := controllerConfig("emptysrc")

	// The table as a previous run left it: claimed, three node routes.
	var nodes []source.Node
	for i := range 3 {
		nodes = append(nodes, source.Node{Name: fmt.Sprintf("emptysrc-%d", i), InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(40 + i))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(40 + i))}})
	}
	if res := controller.New(cfg, f.client(t, nil), nodesource.New(nodes...), nil).Reconcile(ctx); res.Err != nil || len(f.routes(t)) != 3 {
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
		if v := gauge(t, r.metrics, "routekeeper_deletes_held", "reason", string(reason.EmptySource)); v != 3 {
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

// TestHandMadeRouteThenAdoption: a Kubernetes the Hard Way route already
// sends the node's pod CIDR to it. Without adoption the node is routed and
// its condition says by what (False, RouteNotManaged); with adopt matching
// the route is renamed in one PUT and the condition becomes RouteCreated.
func TestHandMadeRouteThenAdoption(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	lab := "kubernetes-route-10-200-60-0-24"
	_, err := f.Client.PutRouteTable(ctx, &route.Table{ID: tableID, Name: "kubernetes-routes", ResourceGroup: "kubernetes", Location: "eastus",
		Routes: []route.Route{{Name: lab, AddressPrefix: podCIDR(60), Prefix: netip.MustParsePrefix(podCIDR(60)), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(nodeIP(60))}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.Client.GetSubnet(ctx, subnetID)
	if _, err := f.Client.SetSubnetRouteTable(ctx, subnetID, tableID, s.Etag); err != nil {
		t.Fatal(err)
	}
	createNode(ctx, t, client, node{name: "handmade-0", podCIDRs: []string{podCIDR(60)}, ips: []string{nodeIP(60)}, networkUnavailable: true})

	cfg := controllerConfig("handmade")
	cloud := &countingCloud{Cloud: f.client(t, nil)}
	r := start(t, daemon.Options{Controller: cfg, Cloud: cloud, Kube: adminConfig(env)})
	c := waitCondition(ctx, t, client, "handmade-0", corev1.ConditionFalse, reason.RouteNotManaged)
	for _, want := range []string{lab, "traffic flows", "--adopt matching"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition message %q lacks %q", c.Message, want)
		}
	}
	if n := cloud.puts.Load(); n != 0 {
		t.Errorf("%d route table PUTs without adoption, want none", n)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	cfg.Adopt = plan.AdoptMatching
	cloud = &countingCloud{Cloud: f.client(t, nil)}
	start(t, daemon.Options{Controller: cfg, Cloud: cloud, Kube: adminConfig(env)})
	waitCondition(ctx, t, client, "handmade-0", corev1.ConditionFalse, reason.RouteCreated)
	got := f.routes(t)
	if _, ok := got[lab]; ok || len(got) != 1 {
		t.Errorf("routes after the adoption: %v, want only the node's", got)
	}
	if r, ok := got[routeName("handmade-0", podCIDR(60))]; !ok || r.NextHopIP != netip.MustParseAddr(nodeIP(60)) {
		t.Errorf("node route %+v (present %v)", r, ok)
	}
	if n := cloud.puts.Load(); n != 1 {
		t.Errorf("%d route table PUTs for the adoption, want 1", n)
	}
}
