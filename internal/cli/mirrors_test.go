package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// kthwAppGW copies examples/kthw-appgw into a temporary directory.
func kthwAppGW(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"routekeeper.yaml", "nodes.yaml", "topology.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "kthw-appgw", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	return filepath.Join(dir, "routekeeper.yaml")
}

const appGWTableID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/appgw-routes"

// TestMirrorExample: the App Gateway example's run --once fills both
// tables; routes list --table shows the mirror with its own routes as
// custom; diff sees a new node in both tables and nothing after the next
// run; migrate --to the mirror and an unknown --table are refused.
func TestMirrorExample(t *testing.T) {
	cfg := kthwAppGW(t)
	res := mustRun(t, cfg)
	if !strings.Contains(res.stderr, "mirror=appgw-routes") {
		t.Errorf("no summary line of the mirror in:\n%s", res.stderr)
	}
	res = wantExit(t, ExitOK, "routes", "list", "--table", "appgw-routes", "-o", "json", "--config", cfg)
	var rows []routeRow
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = r.AddressPrefix + " " + r.NextHopType + " " + r.NextHopIPAddress + " " + r.Owner
	}
	want := map[string]string{
		"default-internet":      "0.0.0.0/0 Internet  custom",
		"to-onprem":             "192.168.0.0/16 VirtualAppliance 10.240.0.4 custom",
		"worker-0____102000024": "10.200.0.0/24 VirtualAppliance 10.240.0.20 this cluster",
		"worker-1____102001024": "10.200.1.0/24 VirtualAppliance 10.240.0.21 this cluster",
	}
	if len(got) != len(want) {
		t.Errorf("mirror routes = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mirror route %s = %q, want %q", k, got[k], v)
		}
	}

	// A new node: diff shows it for both tables, in JSON under mirrors.
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	b, _ := os.ReadFile(nodes)
	writeFile(t, nodes, string(b)+"  - name: worker-2\n    internalIP: 10.240.0.22\n    podCIDR: 10.200.2.0/24\n")
	res = wantExit(t, ExitFindings, "diff", "-o", "json", "--config", cfg)
	type changes struct {
		Changes []struct{ Route struct{ Name string } }
	}
	var d struct {
		changes
		Mirrors []changes
	}
	if err := json.Unmarshal([]byte(res.stdout), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || len(d.Mirrors) != 1 || len(d.Mirrors[0].Changes) != 1 || d.Mirrors[0].Changes[0].Route.Name != "worker-2____102002024" {
		t.Errorf("diff = %+v, want one create in the main table and one in the mirror", d)
	}
	mustRun(t, cfg)
	res = runCLI(t, nil, "", "diff", "--config", cfg)
	if res.code != ExitOK || !strings.Contains(res.stdout, "No changes") {
		t.Errorf("diff after the run: exit %d\n%s", res.code, res.stdout)
	}
	res = runCLI(t, nil, "", "doctor", "--config", cfg)
	if res.code != ExitOK {
		t.Errorf("doctor after the run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	// Someone removes a pod route from the mirror: doctor names the mirror.
	routes, _ := sdkRoutes(t, cfg)
	p, err := routes.BeginDelete(context.Background(), "kubernetes", "appgw-routes", "worker-0____102000024", nil)
	fabrictest.MustPoll(t, p, err)
	res = runCLI(t, nil, "", "doctor", "--config", cfg)
	if res.code != ExitFindings || !strings.Contains(res.stdout, "mirror route table appgw-routes") {
		t.Errorf("doctor with a route missing from the mirror: exit %d, want %d and a finding naming the mirror\n%s", res.code, ExitFindings, res.stdout)
	}

	res = runCLI(t, nil, "", "routes", "list", "--table", "nope", "--config", cfg)
	if res.code != ExitUsage || !strings.Contains(res.stderr, "appgw-routes") {
		t.Errorf("routes list --table nope: exit %d, want %d naming the known tables\n%s", res.code, ExitUsage, res.stderr)
	}
	res = runCLI(t, nil, "", "migrate", "--to", appGWTableID, "--config", cfg)
	if res.code != ExitUsage || !strings.Contains(res.stderr, "mirrors[0].routeTable") {
		t.Errorf("migrate --to the mirror: exit %d, want %d naming mirrors[0]\n%s", res.code, ExitUsage, res.stderr)
	}
}

// TestMirrorClaimedByAnotherClusterIsRefused: run --once writes the main
// table, refuses the mirror claimed by another cluster (exit 1, naming it)
// and leaves that table as it was.
func TestMirrorClaimedByAnotherClusterIsRefused(t *testing.T) {
	cfg := kthwAppGW(t)
	mustRun(t, cfg)
	// Another cluster takes the App Gateway table over.
	_, tables := sdkRoutes(t, cfg)
	ctx := context.Background()
	p, err := tables.BeginCreateOrUpdate(ctx, "kubernetes", "appgw-routes", armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Tags: map[string]*string{"routekeeper-cluster": to.Ptr("prod")},
		Properties: &armnetwork.RouteTablePropertiesFormat{Routes: []*armnetwork.Route{{Name: to.Ptr("default-internet"),
			Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeInternet)}}}},
	}, nil)
	fabrictest.MustPoll(t, p, err)
	// The refusal is a finding (table-claim), as doctor and diff say: exit 3.
	res := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitFindings || !strings.Contains(res.stderr, `claimed by cluster \"prod\"`) || !strings.Contains(res.stderr, "table-claim=1") ||
		!strings.Contains(res.stdout, "worker-0____102000024") {
		t.Fatalf("run --once with the mirror claimed by prod: exit %d, want %d, the main table printed and the refusal\nstdout: %s\nstderr: %s", res.code, ExitFindings, res.stdout, res.stderr)
	}
	for _, cmd := range []string{"diff", "doctor"} {
		if other := runCLI(t, nil, "", cmd, "--config", cfg); other.code != res.code {
			t.Errorf("%s: exit %d, run --once %d", cmd, other.code, res.code)
		}
	}
	got, err := tables.Get(ctx, "kubernetes", "appgw-routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	// (The example's topology, applied by every run, adds its to-onprem
	// route back; routekeeper adds nothing.)
	for _, r := range got.Properties.Routes {
		if strings.Contains(*r.Name, "____") {
			t.Errorf("routekeeper wrote %s into the table claimed by another cluster", *r.Name)
		}
	}
	if tag := got.Tags["routekeeper-cluster"]; tag == nil || *tag != "prod" {
		t.Errorf("claim tag of the other cluster's table = %v, want prod", tag)
	}
}
