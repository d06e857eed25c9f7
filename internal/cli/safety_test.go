package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// kthwLab is the examples/kthw configuration on the network as the lab
// leaves it: the route table made by hand (no claim tag), associated with
// the subnet, holding the lab's kubernetes-route-10-200-N-0-24 routes. It
// returns the config path and the state file.
func kthwLab(t *testing.T) (cfg, state string) {
	t.Helper()
	cfg = kthw(t)
	state = filepath.Join(filepath.Dir(cfg), "fabric.db")
	srv, closeStore := openFabric(t, state)
	defer closeStore()
	applyTopology(t, cfg, srv)
	f, err := armnetwork.NewClientFactory(fabric.DefaultSubscription, identity.Credential{}, srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	va := to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance)
	associateNewTable(t, f, "kubernetes-routes",
		&armnetwork.Route{Name: to.Ptr("kubernetes-route-10-200-0-0-24"), Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr("10.200.0.0/24"), NextHopType: va, NextHopIPAddress: to.Ptr("10.240.0.20")}},
		&armnetwork.Route{Name: to.Ptr("kubernetes-route-10-200-1-0-24"), Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr("10.200.1.0/24"), NextHopType: va, NextHopIPAddress: to.Ptr("10.240.0.21")}},
	)
	return cfg, state
}

// applyTopology applies the example's topology.yaml to srv, as `run` does
// at start.
func applyTopology(t *testing.T, cfg string, srv *fabric.Server) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.ParseTopology(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topology.Apply(context.Background(), topo, srv.ClientOptions(), identity.Credential{}); err != nil {
		t.Fatal(err)
	}
}

// tableRoutes reads the KTHW table through the real SDK: name -> prefix.
func tableRoutes(t *testing.T, cfg string) map[string]string {
	t.Helper()
	_, tables := sdkRoutes(t, cfg)
	rt, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rt.Properties.Routes {
		out[*r.Name] = *r.Properties.AddressPrefix
	}
	return out
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

func TestAdoptKTHWTableInOneWrite(t *testing.T) {
	cfg, state := kthwLab(t)
	res := wantExit(t, ExitFindings, "diff", "--adopt", "matching", "--config", cfg)
	for _, want := range []string{"rename  kubernetes-route-10-200-0-0-24 -> worker-0____102000024", "rename  kubernetes-route-10-200-1-0-24 -> worker-1____102001024"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("diff does not show %q:\n%s", want, res.stdout)
		}
	}
	if strings.Contains(res.stdout, "delete") {
		t.Errorf("diff shows an adoption as a delete:\n%s", res.stdout)
	}

	fabrictest.RecordHistory(t, state)
	res = wantExit(t, ExitOK, "run", "--once", "--adopt", "matching", "--config", cfg)
	if w := reconcileWrites(t, res.stderr); w != 1 {
		t.Errorf("ARM writes = %d, want exactly 1 (the table PUT)", w)
	}
	if l := linesWith(res.stderr, "adopting route"); len(l) != 2 || !strings.Contains(l[0], "from=kubernetes-route-10-200-0-0-24 to=worker-0____102000024") {
		t.Errorf("want one log line per adopted route (old name -> new name), got %q", l)
	}
	versions := fabrictest.History(t, state, fabrictest.KTHWTable)
	if len(versions) == 0 {
		t.Fatal("the fabric stored no version of the table")
	}
	etags := map[string]bool{}
	for _, v := range versions {
		etags[v.Etag] = true
		for _, want := range []string{"10.200.0.0/24 VirtualAppliance 10.240.0.20", "10.200.1.0/24 VirtualAppliance 10.240.0.21"} {
			found := false
			for _, r := range v.Routes {
				found = found || r == want
			}
			if !found {
				t.Errorf("stored table version %d (etag %s) lacks %s: %v", v.Seq, v.Etag, want, v.Routes)
			}
		}
	}
	last := versions[len(versions)-1].Routes
	want := map[string]string{"worker-0____102000024": "10.200.0.0/24 VirtualAppliance 10.240.0.20", "worker-1____102001024": "10.200.1.0/24 VirtualAppliance 10.240.0.21"}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("table after the takeover = %v, want %v", last, want)
	}
	t.Logf("%d stored versions of the table, %d etags, over 1 PUT", len(versions), len(etags))
	res = runCLI(t, nil, "", "run", "--once", "--adopt", "matching", "--config", cfg)
	if res.code != ExitOK || reconcileWrites(t, res.stderr) != 0 {
		t.Errorf("second run: exit %d, want 0 and no writes\n%s", res.code, res.stderr)
	}
}

func TestWithoutAdoptTrafficFlowsAndNodesAreRouted(t *testing.T) {
	cfg, _ := kthwLab(t)
	res := mustRun(t, cfg)
	if w := reconcileWrites(t, res.stderr); w != 0 {
		t.Errorf("ARM writes = %d, want none: nothing of ours to write, no claim asked for", w)
	}
	if l := linesWith(res.stderr, "RouteNotManaged: 2 nodes routed by a route routekeeper does not manage"); len(l) != 1 {
		t.Errorf("want one summary line for the unmanaged routes, got %q\n%s", l, res.stderr)
	}
	if got := tableRoutes(t, cfg); len(got) != 2 || got["kubernetes-route-10-200-0-0-24"] != "10.200.0.0/24" {
		t.Errorf("the lab's routes changed: %v", got)
	}
	res = runCLI(t, nil, "", "doctor", "--config", cfg)
	if res.code != ExitOK {
		t.Errorf("doctor: exit %d, want 0 (warnings only)\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{"unmanaged-route", "traffic flows, route not managed", "--adopt matching` takes it over with no outage", "2 of 2"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("doctor does not say %q:\n%s", want, res.stdout)
		}
	}
}

func TestEmptyInventoryDeletesNothing(t *testing.T) {
	cfg := ranKTHW(t)
	writeFile(t, filepath.Join(filepath.Dir(cfg), "nodes.yaml"), "nodes: []\n")
	res := runCLI(t, nil, "", "diff", "--config", cfg)
	if !strings.Contains(res.stdout, "held-delete") || strings.Contains(res.stdout, "\ndelete") {
		t.Errorf("diff with an empty inventory:\n%s", res.stdout)
	}
	// The held deletions are a finding: run, diff and doctor all exit 3.
	if diff := runCLI(t, nil, "", "diff", "--config", cfg); diff.code != ExitFindings {
		t.Errorf("diff with deletions held: exit %d, want 3", diff.code)
	}
	res = runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitFindings || reconcileWrites(t, res.stderr) != 0 {
		t.Fatalf("run with an empty inventory: exit %d, want 3 (deletions held) and no write\n%s", res.code, res.stderr)
	}
	if l := linesWith(res.stderr, "--allow-empty-source"); len(l) != 1 {
		t.Errorf("want one warning naming --allow-empty-source, got %q", l)
	}
	if got := tableRoutes(t, cfg); len(got) != 2 {
		t.Fatalf("routes after an empty source: %v, want both kept", got)
	}
	res = runCLI(t, nil, "", "doctor", "--config", cfg)
	if !strings.Contains(res.stdout, "delete-guard") || res.code != ExitFindings {
		t.Errorf("doctor does not report the guard with exit 3 (exit %d):\n%s", res.code, res.stdout)
	}
	res = wantExit(t, ExitOK, "run", "--once", "--allow-empty-source", "--config", cfg)
	if got := tableRoutes(t, cfg); len(got) != 0 {
		t.Errorf("routes after --allow-empty-source: %v, want none", got)
	}
}

// writeInventory writes nodes worker-<i> with pod CIDR 10.200.<i>.0/24 from
// first on, plus extra lines.
func writeInventory(t *testing.T, cfg string, from, to int, extra string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "  - {name: worker-%d, internalIP: 10.240.0.%d, podCIDR: 10.200.%d.0/24}\n", i, 20+i, i)
	}
	b.WriteString(extra)
	writeFile(t, filepath.Join(filepath.Dir(cfg), "nodes.yaml"), b.String())
}

func TestMoreDeletionsThanAllowedDeleteNothingCreatesGo(t *testing.T) {
	cfg := kthw(t)
	writeInventory(t, cfg, 0, 12, "")
	mustRun(t, cfg)
	// 11 nodes go (the default allows 10), one comes.
	writeInventory(t, cfg, 11, 12, "  - {name: new, internalIP: 10.240.0.99, podCIDR: 10.200.99.0/24}\n")
	res := wantExit(t, ExitFindings, "run", "--once", "--config", cfg) // the held deletions are a finding
	got := tableRoutes(t, cfg)
	if len(got) != 13 || got["new____1020099024"] != "10.200.99.0/24" {
		t.Errorf("table = %v, want the 12 routes kept and the new node's added", got)
	}
	if l := linesWith(res.stderr, "would delete 11 routes"); len(l) != 1 || !strings.Contains(l[0], "--max-deletes 11") {
		t.Errorf("want one warning with the number and the override, got %q\n%s", l, res.stderr)
	}
	res = runCLI(t, nil, "", "doctor", "--config", cfg)
	if !strings.Contains(res.stdout, "delete-guard") || !strings.Contains(res.stdout, "--max-deletes 11") {
		t.Errorf("doctor does not report the guard:\n%s", res.stdout)
	}
	res = wantExit(t, ExitOK, "run", "--once", "--max-deletes", "11", "--config", cfg)
	if got := tableRoutes(t, cfg); len(got) != 2 {
		t.Errorf("table after --max-deletes 11 = %v, want worker-11's and new's", got)
	}
}

func setConfig(t *testing.T, cfg string, pairs ...string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("config has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	writeFile(t, cfg, s)
}

func TestIPAMExhaustionRoutesTheOthers(t *testing.T) {
	cfg := kthw(t)
	setConfig(t, cfg, "clusterCIDRs: [10.200.0.0/16]", "clusterCIDRs: [10.200.0.0/22]")
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := range 5 {
		fmt.Fprintf(&b, "  - {name: worker-%d, internalIP: 10.240.0.%d}\n", i, 20+i)
	}
	writeFile(t, filepath.Join(filepath.Dir(cfg), "nodes.yaml"), b.String())
	srv, closeStore := openFabric(t, filepath.Join(filepath.Dir(cfg), "fabric.db"))
	applyTopology(t, cfg, srv)
	closeStore()
	for _, cmd := range [][]string{{"diff"}, {"run", "--once"}, {"doctor"}} {
		res := runCLI(t, nil, "", append(cmd, "--config", cfg)...)
		if res.code != ExitFindings {
			t.Errorf("%s: exit %d, want 3\n%s%s", cmd[0], res.code, res.stdout, res.stderr)
		}
		if cmd[0] == "run" {
			if l := linesWith(res.stderr, "PodCIDRExhausted"); len(l) != 1 || !strings.Contains(l[0], "1 node not routed (worker-4)") || !strings.Contains(l[0], "10.200.0.0/22") {
				t.Errorf("want one summary line for worker-4, got %q", l)
			}
		}
	}
	if got := tableRoutes(t, cfg); len(got) != 4 {
		t.Errorf("table = %v, want 4 routes", got)
	}
}

var routeLimitLine = regexp.MustCompile(`RouteTableFull: 50 nodes not routed \(worker-400, worker-401, worker-402, worker-403, worker-404 and 45 more\)`)

func TestRouteLimitReportsTheRestInOneLine(t *testing.T) {
	cfg := kthw(t)
	setConfig(t, cfg, "nodeCIDRMaskSize: 24", "nodeCIDRMaskSize: 25")
	// 450 nodes need a node subnet larger than the lab's /24: a node whose
	// IP lies in no subnet is NextHopOutsideVNet, not over the limit.
	topo := filepath.Join(filepath.Dir(cfg), "topology.yaml")
	b0, err := os.ReadFile(topo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, topo, strings.Replace(string(b0), "addressPrefix: 10.240.0.0/24", "addressPrefix: 10.240.0.0/22", 1))
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := range 450 {
		fmt.Fprintf(&b, "  - {name: worker-%03d, internalIP: 10.240.%d.%d}\n", i, 1+i/200, 10+i%200)
	}
	writeFile(t, filepath.Join(filepath.Dir(cfg), "nodes.yaml"), b.String())
	// Azure allows 1,000 (the usages API says so); routeTable.routeLimit
	// lowers it to 400.
	res := wantExit(t, ExitFindings, "run", "--once", "--config", cfg, "--route-limit", "400")
	if got := tableRoutes(t, cfg); len(got) != 400 {
		t.Errorf("table holds %d routes, want 400", len(got))
	}
	lines := linesWith(res.stderr, "RouteTableFull:")
	if len(lines) != 1 || !routeLimitLine.MatchString(lines[0]) || !strings.Contains(lines[0], "it may hold 400 routes (routeTable.routeLimit, below Azure's limit in eastus of 1,000 routes per route table, read from the usages API)") {
		t.Errorf("want one summary line for the 50 nodes over the limit, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
