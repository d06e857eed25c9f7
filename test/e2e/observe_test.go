package e2e

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// TestObserveMode is AKS: the platform writes the routes. routekeeper never
// writes the table and leaves node conditions to the platform; it reports
// a missing route on its node, routes of deleted nodes on its own Pod, and
// both in the metrics.
func TestObserveMode(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)

	// The platform's table: observe-0's route, a route of a node that is
	// gone, no route for observe-1, and the platform's own default route.
	va := func(name, prefix, hop string) route.Route {
		return route.Route{Name: name, AddressPrefix: prefix, Prefix: netip.MustParsePrefix(prefix), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(hop)}
	}
	_, err := f.Client.PutRouteTable(ctx, &route.Table{ID: tableID, Name: "kubernetes-routes", ResourceGroup: "kubernetes", Location: "eastus",
		Routes: []route.Route{
			va(routeName("observe-0", podCIDR(50)), podCIDR(50), nodeIP(50)),
			va(routeName("observe-gone", podCIDR(59)), podCIDR(59), nodeIP(59)),
			va("default-to-firewall", "0.0.0.0/0", "10.240.15.4"),
		}}, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.Client.GetSubnet(ctx, subnetID)
	if _, err := f.Client.SetSubnetRouteTable(ctx, subnetID, tableID, s.Etag); err != nil {
		t.Fatal(err)
	}
	before := f.table(t)

	createNode(ctx, t, client, node{name: "observe-0", podCIDRs: []string{podCIDR(50)}, ips: []string{nodeIP(50)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "observe-1", podCIDRs: []string{podCIDR(51)}, ips: []string{nodeIP(51)}, networkUnavailable: true})
	conds := map[string]corev1.NodeCondition{}
	for _, n := range []string{"observe-0", "observe-1"} {
		conds[n], _ = condition(ctx, t, client, n)
	}

	cfg := controllerConfig("observe")
	cfg.Mode = verdict.Observe
	cfg.CreateTable = false
	cfg.Resync = 300 * time.Millisecond // re-reads the table to see the platform's writes
	m := metrics.New()
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kube-system", Name: "routekeeper-observe", UID: "observe-pod"}
	// The platform gets half a second (in production two minutes) to
	// write a new node's route before the route is reported missing.
	cloud := &countingCloud{Cloud: f.client(t, m)}
	start(t, daemon.Options{Controller: cfg, Cloud: cloud, Kube: adminConfig(env), Metrics: m, Pod: pod, EventGrace: 500 * time.Millisecond})

	ev := waitEvent(ctx, t, client, "default", "Node", "observe-1", kubestatus.EventRouteMissing)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, podCIDR(51)) {
		t.Errorf("RouteMissing event %s %q", ev.Type, ev.Note)
	}
	ev = waitEvent(ctx, t, client, "kube-system", "Pod", pod.Name, kubestatus.EventStaleRoutes)
	if !strings.Contains(ev.Note, routeName("observe-gone", podCIDR(59))) {
		t.Errorf("StaleRoutes event does not name the stale route: %q", ev.Note)
	}
	if evs := events(ctx, t, client, "default", "Node", "observe-0"); len(evs) != 0 {
		t.Errorf("events on observe-0, whose route is there: %+v", evs)
	}
	eventually(t, 10*time.Second, func() string {
		var b strings.Builder
		for kind, want := range map[string]float64{"missing": 1, "stale": 1, "present": 1, "desired": 2, "foreign": 1, "owned": 2} {
			if got := gauge(t, m, "routekeeper_routes", "kind", kind); got != want {
				b.WriteString(kind + " ")
			}
		}
		if b.Len() > 0 {
			return "routekeeper_routes wrong for: " + b.String()
		}
		return ""
	})

	// Nothing written, nothing changed on the nodes, through a few more
	// reconciles (every 300 ms) and guard cycles.
	cloud.readMore(t, 4)
	if n := cloud.puts.Load(); n != 0 {
		t.Errorf("observe mode sent %d route table PUTs", n)
	}
	after := f.table(t)
	if after.Etag != before.Etag || len(after.Routes) != 3 {
		t.Errorf("observe mode changed the route table: etag %s -> %s, %d routes", before.Etag, after.Etag, len(after.Routes))
	}
	for n, c := range conds {
		got, _ := condition(ctx, t, client, n)
		if got != c {
			t.Errorf("observe mode changed %s's condition: %+v -> %+v", n, c, got)
		}
	}
}
