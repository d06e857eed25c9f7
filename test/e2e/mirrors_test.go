package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// mirrorTopology is the test network plus three subnets with route tables
// of their own: an Application Gateway subnet (0.0.0.0/0 -> Internet and
// a route to on-premises), a hub subnet and a VM subnet.
const mirrorTopology = topology + `          - name: appgw-subnet
            addressPrefix: 10.240.16.0/24
            routeTable: appgw-routes
          - name: hub-subnet
            addressPrefix: 10.240.17.0/24
            routeTable: hub-routes
          - name: vm-subnet
            addressPrefix: 10.240.18.0/24
            routeTable: vm-routes
    routeTables:
      - name: appgw-routes
        routes:
          - name: default-internet
            addressPrefix: 0.0.0.0/0
            nextHopType: Internet
          - name: to-onprem
            addressPrefix: 192.168.0.0/16
            nextHopType: VirtualAppliance
            nextHopIpAddress: 10.240.17.4
      - name: hub-routes
        routes:
          - name: to-spoke
            addressPrefix: 172.16.0.0/12
            nextHopType: VirtualAppliance
            nextHopIpAddress: 10.240.17.4
      - name: vm-routes
        routes:
          - name: blackhole
            addressPrefix: 198.51.100.0/24
            nextHopType: None
`

func mirrorTableID(name string) string {
	return "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/" + name
}

func mirrorOf(name string) controller.Mirror {
	sn := strings.TrimSuffix(name, "-routes") + "-subnet"
	return controller.Mirror{RouteTableID: mirrorTableID(name), Subnets: []string{fabrictest.KTHWVNet + "/subnets/" + sn}, Policy: assoc.Enforce}
}

// mirrorRoutes reads a mirror table's routes by name.
func mirrorRoutes(t *testing.T, f fab, name string) map[string]route.Route {
	t.Helper()
	out := map[string]route.Route{}
	tb, err := f.Client.GetRouteTable(context.Background(), mirrorTableID(name))
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	for _, r := range tb.Routes {
		out[r.Name] = r
	}
	return out
}

// TestMirrorObserveMode is AKS kubenet with an Application Gateway subnet:
// the platform writes the main table, routekeeper only observes it, and
// writes the gateway's own table from the nodes: a node's route appears
// there when the node registers and goes when it is deleted, the table's
// own routes stay as they are, the main table and the node conditions are
// never touched, and the mirror has its own metrics. A second mirror,
// claimed by another cluster, is refused (never written) and reported as
// an event on routekeeper's Pod, while the first one works.
func TestMirrorObserveMode(t *testing.T) {
	env, ctx, client := kubeCluster(t)
	f := fab{fabrictest.New(t, fabric.Options{}, mirrorTopology)}

	// The platform's table: mirror-0's route only, on the node subnet.
	va := func(name, prefix, hop string) route.Route {
		return route.Route{Name: name, AddressPrefix: prefix, Prefix: netip.MustParsePrefix(prefix), NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(hop)}
	}
	if _, err := f.Client.PutRouteTable(ctx, &route.Table{ID: tableID, Name: "kubernetes-routes", ResourceGroup: "kubernetes", Location: "eastus",
		Routes: []route.Route{va(routeName("mirror-0", podCIDR(80)), podCIDR(80), nodeIP(80))}}, ""); err != nil {
		t.Fatal(err)
	}
	s, _ := f.Client.GetSubnet(ctx, subnetID)
	if _, err := f.Client.SetSubnetRouteTable(ctx, subnetID, tableID, s.Etag); err != nil {
		t.Fatal(err)
	}
	// The hub's table belongs to another cluster: refused, reported.
	hub, err := f.Client.GetRouteTable(ctx, mirrorTableID("hub-routes"))
	if err != nil {
		t.Fatal(err)
	}
	hub.Tags = map[string]string{route.ClaimTag: "prod"}
	if hub, err = f.Client.PutRouteTable(ctx, hub, hub.Etag); err != nil {
		t.Fatal(err)
	}
	before := f.table(t)
	createNode(ctx, t, client, node{name: "mirror-0", podCIDRs: []string{podCIDR(80)}, ips: []string{nodeIP(80)}, networkUnavailable: true})
	cond0, _ := condition(ctx, t, client, "mirror-0")

	cfg := controllerConfig("mirror-observe")
	cfg.Mode = verdict.Observe
	cfg.CreateTable = false
	cfg.BatchWindow = 50 * time.Millisecond
	m := metrics.New()
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kube-system", Name: "routekeeper-mirror", UID: "mirror-pod"}
	start(t, daemon.Options{Controller: cfg, Mirrors: []controller.Mirror{mirrorOf("appgw-routes"), mirrorOf("hub-routes")}, Cloud: f.client(t, m), Kube: adminConfig(env), Metrics: m, Pod: pod})

	want := func(nodes ...int) func() string {
		return func() string {
			got := mirrorRoutes(t, f, "appgw-routes")
			for _, own := range []string{"default-internet", "to-onprem"} {
				if _, ok := got[own]; !ok {
					return "the gateway's own route " + own + " is gone"
				}
			}
			for i := 80; i < 83; i++ {
				name := routeName(fmt.Sprintf("mirror-%d", i-80), podCIDR(i))
				r, ok := got[name]
				wanted := false
				for _, n := range nodes {
					wanted = wanted || n == i-80
				}
				switch {
				case wanted && (!ok || r.NextHopIP != netip.MustParseAddr(nodeIP(i))):
					return "no correct route " + name + " in the mirror"
				case !wanted && ok:
					return "route " + name + " still in the mirror"
				}
			}
			return ""
		}
	}
	eventually(t, 20*time.Second, want(0))
	createNode(ctx, t, client, node{name: "mirror-1", podCIDRs: []string{podCIDR(81)}, ips: []string{nodeIP(81)}, networkUnavailable: true})
	createNode(ctx, t, client, node{name: "mirror-2", podCIDRs: []string{podCIDR(82)}, ips: []string{nodeIP(82)}, networkUnavailable: true})
	eventually(t, 20*time.Second, want(0, 1, 2))
	if err := client.CoreV1().Nodes().Delete(ctx, "mirror-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, want(0, 2))

	got := mirrorRoutes(t, f, "appgw-routes")
	if r := got["default-internet"]; r.AddressPrefix != "0.0.0.0/0" || r.NextHopType != route.Internet {
		t.Errorf("the gateway's default route changed: %+v", r)
	}
	if r := got["to-onprem"]; r.AddressPrefix != "192.168.0.0/16" || r.NextHopIP != netip.MustParseAddr("10.240.17.4") {
		t.Errorf("the gateway's on-premises route changed: %+v", r)
	}
	eventually(t, 10*time.Second, func() string {
		if v := gauge(t, m, "routekeeper_mirror_routes", "table", "appgw-routes"); v < 0 {
			return "no routekeeper_mirror_routes{table=appgw-routes}"
		}
		return ""
	})
	ev := waitEvent(ctx, t, client, "kube-system", "Pod", pod.Name, kubestatus.EventMirrorFailed)
	if !strings.Contains(ev.Note, "hub-routes") || !strings.Contains(ev.Note, `claimed by cluster "prod"`) {
		t.Errorf("MirrorRouteTableFailed event %q, want it to name hub-routes and the other cluster", ev.Note)
	}
	if after, _ := f.Client.GetRouteTable(ctx, mirrorTableID("hub-routes")); after.Etag != hub.Etag {
		t.Errorf("the table claimed by another cluster was written: etag %s -> %s", hub.Etag, after.Etag)
	}
	// Observe mode: the platform's table and the conditions are its own.
	after := f.table(t)
	if after.Etag != before.Etag {
		t.Errorf("observe mode wrote the main table: etag %s -> %s", before.Etag, after.Etag)
	}
	if got, _ := condition(ctx, t, client, "mirror-0"); got != cond0 {
		t.Errorf("observe mode changed mirror-0's condition: %+v -> %+v", cond0, got)
	}
	sn, err := f.Client.GetSubnet(ctx, mirrorOf("appgw-routes").Subnets[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(sn.RouteTableID, mirrorTableID("appgw-routes")) {
		t.Errorf("App Gateway subnet on %q, want its own table", sn.RouteTableID)
	}
}

// tableCounter counts route table PUTs and reads per table.
type tableCounter struct {
	cloud.Cloud
	mu    sync.Mutex
	puts  map[string]int
	reads map[string]int
}

func (c *tableCounter) PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error) {
	c.mu.Lock()
	c.puts[controller.TableName(t.ID)]++
	c.mu.Unlock()
	return c.Cloud.PutRouteTable(ctx, t, etag)
}

func (c *tableCounter) GetRouteTable(ctx context.Context, id string) (*route.Table, error) {
	c.mu.Lock()
	c.reads[controller.TableName(id)]++
	c.mu.Unlock()
	return c.Cloud.GetRouteTable(ctx, id)
}

// readMore waits until routekeeper has read each of the tables n more
// times: each table's guard cycles and reconciles read it, so this is the
// progress of every one of its controllers (see countingCloud.readMore).
func (c *tableCounter) readMore(t testing.TB, n int, tables ...string) {
	t.Helper()
	c.mu.Lock()
	from := map[string]int{}
	for _, name := range tables {
		from[name] = c.reads[name]
	}
	c.mu.Unlock()
	eventually(t, 60*time.Second, func() string {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, name := range tables {
			if got := c.reads[name] - from[name]; got < n {
				return fmt.Sprintf("routekeeper read %s %d times, waiting for %d", name, got, n)
			}
		}
		return ""
	})
}

func (c *tableCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.puts {
		out[k] = v
	}
	return out
}

// TestMirrorBurstOf400Nodes: 400 nodes registering at once, with three
// mirror tables, are written with exactly one PUT per table. The batch
// window (1 s) is longer than any gap between two node registrations and
// maxBatchDelay longer than the whole burst, so the one PUT per table is
// the design, not luck; the time until every table holds every route is
// logged (docs/performance.md).
func TestMirrorBurstOf400Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("400 nodes: skipped with -short")
	}
	const n = 400
	env, ctx, client := kubeCluster(t)
	f := fab{fabrictest.New(t, fabric.Options{RouteLimit: 1000}, mirrorTopology)}
	m := metrics.New()
	cloud := &tableCounter{Cloud: f.client(t, m), puts: map[string]int{}, reads: map[string]int{}}
	cfg := controllerConfig("mirror-burst")
	cfg.ClusterCIDRs = []netip.Prefix{burstCIDR}
	cfg.RouteLimit = 1000 // 400 node routes beside the mirrors' own routes
	cfg.BatchWindow, cfg.MaxBatchDelay = time.Second, time.Minute
	names := []string{"appgw-routes", "hub-routes", "vm-routes"}
	var mirrors []controller.Mirror
	for _, name := range names {
		mirrors = append(mirrors, mirrorOf(name))
	}
	start(t, daemon.Options{Controller: cfg, Mirrors: mirrors, Cloud: cloud, Kube: adminConfig(env), Metrics: m})
	eventually(t, 30*time.Second, func() string {
		if f.table(t) == nil {
			return "main table not created"
		}
		for _, name := range names {
			tb, err := f.Client.GetRouteTable(ctx, mirrorTableID(name))
			if err != nil || tb.Claim() != "mirror-burst" {
				return name + " not claimed yet"
			}
		}
		return ""
	})
	// Every first reconcile has ended.
	atLeast(t, m, "routekeeper_reconciles_total", "result", "success", 1)
	for _, name := range names {
		atLeast(t, m, "routekeeper_mirror_last_successful_reconcile_timestamp_seconds", "table", name, 1)
	}
	before := cloud.snapshot()

	nodes := burstNodes("mburst", n)
	begin := time.Now()
	createNodes(ctx, t, client, nodes, 32)
	last := time.Now()
	done := map[string]time.Duration{}
	eventually(t, 60*time.Second, func() string {
		tables := append([]string{"kubernetes-routes"}, names...)
		for _, name := range tables {
			if _, ok := done[name]; ok {
				continue
			}
			var got map[string]route.Route
			if name == "kubernetes-routes" {
				got = f.routes(t)
			} else {
				got = mirrorRoutes(t, f, name)
			}
			have := 0
			for i, nd := range nodes {
				if r, ok := got[routeName(nd.name, burstPodCIDR(i))]; ok && r.NextHopIP == netip.MustParseAddr(nodeIP(i)) {
					have++
				}
			}
			if have < n {
				return fmt.Sprintf("%s: %d of %d routes", name, have, n)
			}
			done[name] = time.Since(last)
		}
		return ""
	})
	// Any late second write would show once every table has been read
	// three more times (guard cycles of 500 ms, each of which would ask for
	// the reconcile of a table missing a route).
	cloud.readMore(t, 3, append([]string{"kubernetes-routes"}, names...)...)
	after := cloud.snapshot()
	var report []string
	for _, name := range append([]string{"kubernetes-routes"}, names...) {
		puts := after[name] - before[name]
		report = append(report, fmt.Sprintf("%s: %d PUT, all routes %s after the last node", name, puts, done[name].Round(time.Millisecond)))
		if puts != 1 {
			t.Errorf("%s: %d PUTs for the burst, want exactly 1", name, puts)
		}
	}
	t.Logf("%d nodes created in %s; %s", n, last.Sub(begin).Round(time.Millisecond), strings.Join(report, "; "))
	for _, name := range names {
		got := mirrorRoutes(t, f, name)
		if len(got) <= n {
			t.Errorf("%s has %d routes: its own routes are gone", name, len(got))
		}
	}
}
