package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

// kthw copies examples/kthw into a temporary directory and returns the
// config path there; its state file, allocations and inventory live beside it.
func kthw(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"routekeeper.yaml", "nodes.yaml", "topology.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "kthw", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "routekeeper.yaml")
}

// ranKTHW is the KTHW example after a successful `run --once`: the path
// of its configuration.
func ranKTHW(t *testing.T) string {
	t.Helper()
	cfg := kthw(t)
	mustRun(t, cfg)
	return cfg
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var armWrites = regexp.MustCompile(`reconcile ok: .* arm reads=\d+ writes=(\d+)`)

// reconcileWrites returns the ARM writes of the reconcile summary in stderr.
func reconcileWrites(t *testing.T, stderr string) int {
	t.Helper()
	m := armWrites.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no successful reconcile summary line in:\n%s", stderr)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// sdkRoutes opens the example's state file and returns the real SDK's
// routes and route tables clients on it, as another tool would use them.
func sdkRoutes(t *testing.T, cfgPath string) (*armnetwork.RoutesClient, *armnetwork.RouteTablesClient) {
	t.Helper()
	f, _ := sdkFactory(t, cfgPath)
	return f.NewRoutesClient(), f.NewRouteTablesClient()
}

func TestRunOnceQuickStart(t *testing.T) {
	cfg := kthw(t)
	res := mustRun(t, cfg)
	golden(t, filepath.Join("testdata", "run", "quickstart.golden"), []byte(res.stdout))
	if w := reconcileWrites(t, res.stderr); w != 2 {
		t.Errorf("first run wrote %d times, want 2 (create the filled table, then associate it)", w)
	}

	// The table is on the subnet, and a second run changes nothing.
	res = runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitOK || reconcileWrites(t, res.stderr) != 0 {
		t.Fatalf("second run: exit %d, want 0 and no writes\nstderr: %s", res.code, res.stderr)
	}
	res = runCLI(t, nil, "", "diff", "--config", cfg)
	if res.code != ExitOK || !strings.Contains(res.stdout, "No changes") {
		t.Fatalf("diff after run: exit %d, stdout %q; want 0 and no changes", res.code, res.stdout)
	}
	res = wantExit(t, ExitOK, "routes", "list", "-o", "json", "--config", cfg)
	golden(t, filepath.Join("testdata", "run", "routes-list.json.golden"), []byte(res.stdout))
}

func TestInventoryEditsConvergeWithOnePutPerRun(t *testing.T) {
	cfg := kthw(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	mustRun(t, cfg)
	steps := []struct {
		name      string
		inventory string
		diff      string // a line diff must show before the run
		want      string // golden of the table after the run
	}{
		{"add a node without a pod CIDR", `nodes:
  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}
  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}
  - {name: worker-2, internalIP: 10.240.0.22}
`, "create  worker-2____102002024", "add.golden"},
		{"change an internal IP", `nodes:
  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}
  - {name: worker-1, internalIP: 10.240.0.31, podCIDR: 10.200.1.0/24}
  - {name: worker-2, internalIP: 10.240.0.22}
`, "update  worker-1____102001024", "change-ip.golden"},
		{"remove a node", `nodes:
  - {name: worker-1, internalIP: 10.240.0.31, podCIDR: 10.200.1.0/24}
  - {name: worker-2, internalIP: 10.240.0.22}
`, "delete  worker-0____102000024", "remove.golden"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			writeFile(t, nodes, st.inventory)
			res := runCLI(t, nil, "", "diff", "--config", cfg)
			if res.code != ExitFindings || !strings.Contains(res.stdout, st.diff) {
				t.Fatalf("diff: exit %d, want 3 with %q:\n%s%s", res.code, st.diff, res.stdout, res.stderr)
			}
			res = mustRun(t, cfg)
			if w := reconcileWrites(t, res.stderr); w != 1 {
				t.Errorf("run made %d ARM writes, want exactly 1 route-table PUT", w)
			}
			golden(t, filepath.Join("testdata", "run", st.want), []byte(res.stdout))
			if res := runCLI(t, nil, "", "diff", "--config", cfg); res.code != ExitOK {
				t.Errorf("diff after the run: exit %d, want 0:\n%s", res.code, res.stdout)
			}
		})
	}
	// worker-2 keeps the pod CIDR IPAM gave it, across runs and edits.
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "nodes.allocations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Allocations map[string][]string `json:"allocations"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.Allocations["worker-2"]; len(got) != 1 || got[0] != "10.200.2.0/24" {
		t.Errorf("worker-2's recorded allocation = %v, want [10.200.2.0/24]", got)
	}
}

func TestOutOfBandRoutesAreNeverTouched(t *testing.T) {
	cfg := kthw(t)
	nodes := filepath.Join(filepath.Dir(cfg), "nodes.yaml")
	mustRun(t, cfg)
	routes, _ := sdkRoutes(t, cfg)
	ctx := context.Background()
	foreign := map[string]armnetwork.RoutePropertiesFormat{
		// A default route to a firewall, as the custom tables of the
		// route-table swap article have.
		"default-to-firewall": {AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.4")},
		// A route named for another cluster's node, outside our cluster CIDR.
		"other-worker-0____102500024": {AddressPrefix: to.Ptr("10.250.0.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.50")},
	}
	// In a fixed order: the table keeps routes in the order they came.
	for _, name := range []string{"default-to-firewall", "other-worker-0____102500024"} {
		p := foreign[name]
		poller, err := routes.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", name, armnetwork.Route{Properties: &p}, nil)
		if err != nil {
			t.Fatalf("adding %s out of band: %v", name, err)
		}
		if _, err := poller.PollUntilDone(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	inventories := []string{
		"nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n",
		"nodes:\n  - {name: worker-0, internalIP: 10.240.0.40, podCIDR: 10.200.0.0/24}\n  - {name: worker-5, internalIP: 10.240.0.25}\n",
		"nodes:\n  - {name: worker-5, internalIP: 10.240.0.25}\n",
		"nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n",
	}
	for i := 0; i < 8; i++ {
		writeFile(t, nodes, inventories[i%len(inventories)])
		mustRun(t, cfg)
		for name, want := range foreign {
			got, err := routes.Get(ctx, "kubernetes", "kubernetes-routes", name, nil)
			if err != nil {
				t.Fatalf("run %d: route %s is gone: %v", i, name, err)
			}
			if *got.Properties.AddressPrefix != *want.AddressPrefix || *got.Properties.NextHopType != *want.NextHopType || *got.Properties.NextHopIPAddress != *want.NextHopIPAddress {
				t.Fatalf("run %d: route %s changed: %+v", i, name, *got.Properties)
			}
		}
	}
	res := runCLI(t, nil, "", "routes", "list", "--config", cfg)
	golden(t, filepath.Join("testdata", "run", "foreign-routes.golden"), []byte(res.stdout))
}

func TestBadInputExits2AndLeavesTheTable(t *testing.T) {
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	mustRun(t, cfg)
	_, tables := sdkRoutes(t, cfg)
	before, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	goodConfig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		inventory string
		config    string
		want      []string // all must appear in stderr
	}{
		{name: "bad internal IP", inventory: "nodes:\n  - {name: worker-0, internalIP: 10.240.0.300, podCIDR: 10.200.0.0/24}\n",
			want: []string{"nodes.yaml", "nodes[0].internalIP", "10.240.0.300"}},
		{name: "bad pod CIDR", inventory: "nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/33}\n",
			want: []string{"nodes.yaml", "nodes[0].podCIDR", "10.200.0.0/33"}},
		{name: "not YAML", inventory: "nodes: [\n",
			want: []string{"nodes.yaml"}},
		{name: "bad cluster CIDR in the config", config: strings.Replace(string(goodConfig), "[10.200.0.0/16]", "[10.200.0.0/99]", 1),
			want: []string{"routekeeper.yaml", "cluster.clusterCIDRs[0]", "10.200.0.0/99"}},
		{name: "unknown key in the config", config: string(goodConfig) + "\nroutLimit: 3\n",
			want: []string{"routekeeper.yaml", "routLimit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := "nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n"
			if tt.inventory != "" {
				inv = tt.inventory
			}
			writeFile(t, filepath.Join(dir, "nodes.yaml"), inv)
			c := string(goodConfig)
			if tt.config != "" {
				c = tt.config
			}
			writeFile(t, cfg, c)
			for _, cmd := range [][]string{{"run", "--once"}, {"diff"}} {
				res := runCLI(t, nil, "", append(cmd, "--config", cfg)...)
				if res.code != ExitUsage {
					t.Errorf("%s: exit %d, want 2\nstderr: %s", cmd[0], res.code, res.stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(res.stderr, w) {
						t.Errorf("%s: stderr does not name %q:\n%s", cmd[0], w, res.stderr)
					}
				}
			}
			after, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
			if err != nil {
				t.Fatal(err)
			}
			if *after.Etag != *before.Etag || len(after.Properties.Routes) != 2 {
				t.Errorf("the table changed after bad input: etag %s -> %s, %d routes", *before.Etag, *after.Etag, len(after.Properties.Routes))
			}
		})
	}
}

// TestQuickStartCommand runs the README's first command exactly as written,
// in a copy of the repository's example so the checkout stays clean.
func TestQuickStartCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cfg := kthw(t)
	bin := filepath.Join(t.TempDir(), "routekeeper")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/routekeeper")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "--once", "--config", cfg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("routekeeper run --once: %v", err)
	}
	for _, want := range []string{"10.200.0.0/24  worker-0____102000024  10.240.0.20       VirtualAppliance", "10.200.1.0/24  worker-1____102001024  10.240.0.21       VirtualAppliance"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The rehearsal a newcomer does next, with the built binary: the Azure
	// SDK checks some things only outside `go test` (a polling frequency
	// under a second is refused), so this is the only place they show.
	steps := []struct {
		args []string
		code int
	}{
		{[]string{"fabric", "incident", "redeploy", "kubernetes-vnet"}, ExitOK},
		{[]string{"doctor"}, ExitFindings},
		{[]string{"diff"}, ExitFindings},
		{[]string{"run", "--once"}, ExitOK},
		{[]string{"doctor"}, ExitOK},
		{[]string{"trace", "worker-0", "worker-1"}, ExitOK},
	}
	for _, st := range steps {
		cmd := exec.Command(bin, append(st.args, "--config", cfg)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("routekeeper %s: %v", strings.Join(st.args, " "), err)
		}
		if code != st.code {
			t.Errorf("routekeeper %s: exit %d, want %d\n%s", strings.Join(st.args, " "), code, st.code, out)
		}
	}
}
