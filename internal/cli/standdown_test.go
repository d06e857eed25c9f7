package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

var reconcileSummary = regexp.MustCompile(`reconcile ok: routes created=(\d+) updated=(\d+) deleted=(\d+) conflicts=\d+ unrouted=(\d+) .* writes=\d+`)

// TestStandDown: after the move to an overlay, routes: standDown on the
// App Gateway example, through the real SDK against the fabric. Without
// the confirmation nothing is removed and no node is unrouted; with it
// one write per table removes every route of the cluster from the node
// table and the mirror, and keeps the foreign routes, the claim and the
// associations; doctor then says what is left and exits 0. Before the
// confirmation every command exits 3: the held removal is a finding.
func TestStandDown(t *testing.T) {
	cfg := kthwAppGW(t)
	mustRun(t, cfg)
	f, _ := sdkFactory(t, cfg)
	putRoute(t, f, "kubernetes-routes", "default-to-firewall", "0.0.0.0/0", armnetwork.RouteNextHopTypeVirtualAppliance, "10.240.0.4")

	// Unconfirmed, the stand-down holds every deletion: a finding.
	held := wantExit(t, ExitFindings, "run", "--once", "--config", cfg, "--routes", "standDown")
	for _, m := range reconcileSummary.FindAllStringSubmatch(held.stderr, -1) {
		if m[3] != "0" || m[4] != "0" {
			t.Errorf("unconfirmed stand-down: %s; want nothing deleted, no node unrouted", m[0])
		}
	}
	if l := linesWith(held.stderr, "--confirm-stand-down"); len(l) != 2 || !strings.Contains(l[0], "level=WARN") {
		t.Errorf("the log does not say, per table, what would be removed and how to confirm:\n%s", held.stderr)
	}
	if got := routeNames(t, cfg, "kubernetes-routes"); got != "default-to-firewall worker-0____102000024 worker-1____102001024" {
		t.Errorf("node table after the unconfirmed stand-down: %s", got)
	}
	doc := runCLI(t, nil, "", "doctor", "--routes", "standDown", "--config", cfg)
	if doc.code != ExitFindings || !strings.Contains(doc.stdout, "StandDownUnconfirmed") && !strings.Contains(doc.stdout, "until the stand-down is confirmed") {
		t.Errorf("doctor before the confirmation: exit %d\n%s%s", doc.code, doc.stdout, doc.stderr)
	}
	golden(t, filepath.Join("testdata", "doctor", "stand-down-held.golden"), []byte(doc.stdout))

	done := mustRun(t, cfg, "--routes", "standDown", "--confirm-stand-down")
	sums := reconcileSummary.FindAllStringSubmatch(done.stderr, -1)
	if len(sums) != 2 {
		t.Fatalf("want a summary per table:\n%s", done.stderr)
	}
	for _, m := range sums {
		if m[1] != "0" || m[2] != "0" || m[3] != "2" || m[4] != "0" {
			t.Errorf("confirmed stand-down: %s; want 2 deleted, nothing else, no node unrouted", m[0])
		}
	}
	if got := routeNames(t, cfg, "kubernetes-routes"); got != "default-to-firewall" {
		t.Errorf("node table after the stand-down: %s, want the foreign route alone", got)
	}
	if got := routeNames(t, cfg, "appgw-routes"); got != "default-internet to-onprem" {
		t.Errorf("mirror after the stand-down: %s, want its own routes alone", got)
	}
	rt, err := f.NewRouteTablesClient().Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Tags["routekeeper-cluster"] == nil || *rt.Tags["routekeeper-cluster"] != "kthw" || len(rt.Properties.Subnets) != 1 {
		t.Errorf("the claim and the association must stay: tags %v, subnets %d", rt.Tags, len(rt.Properties.Subnets))
	}
	doc = runCLI(t, nil, "", "doctor", "--routes", "standDown", "--config", cfg)
	if doc.code != ExitOK || !strings.Contains(doc.stdout, "still associated with kubernetes-subnet") || !strings.Contains(doc.stdout, "remove mirrors[0]") {
		t.Errorf("doctor after the stand-down: exit %d\n%s%s", doc.code, doc.stdout, doc.stderr)
	}
	golden(t, filepath.Join("testdata", "doctor", "stand-down-done.golden"), []byte(doc.stdout))

	// Nothing more to do, and a node's verdict says it needs no route.
	again := mustRun(t, cfg, "--routes", "standDown", "--confirm-stand-down")
	if !strings.Contains(again.stderr, "writes=0") {
		t.Errorf("a second confirmed pass wrote:\n%s", again.stderr)
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, string(b)+"\nroutes: standDown\n") // trace takes no --routes
	tr := runCLI(t, nil, "", "trace", "--config", cfg, "worker-0", "worker-1")
	if !strings.Contains(tr.stdout, "Node worker-1: routed (HostRoutesNotNeeded)") {
		t.Errorf("trace's node verdict:\n%s", tr.stdout)
	}
}

// routeNames lists a table's route names, sorted, through the SDK.
func routeNames(t *testing.T, cfg, table string) string {
	t.Helper()
	f, _ := sdkFactory(t, cfg)
	rt, err := f.NewRouteTablesClient().Get(context.Background(), "kubernetes", table, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rt.Properties.Routes {
		names = append(names, *r.Name)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}
