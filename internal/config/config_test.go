package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/routekeeper/routekeeper/internal/testutil/problemtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	sub0    = "00000000-0000-0000-0000-000000000000"
	tableID = "/subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/routeTables/pods"
	subnet0 = "/subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// base is a valid configuration that cases add to.
const base = `
cluster:
  name: test
  clusterCIDRs: [10.244.0.0/16]
routeTable:
  id: ` + tableID + `
`

func TestLoadKTHWExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "kthw", "routekeeper.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the example does not validate:\n%v", err)
	}
	dir := filepath.Dir(path)
	want := Config{
		File: path,
		Cluster: Cluster{
			Name:                 "kthw",
			ClusterCIDRs:         []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
			ServiceCIDRs:         []netip.Prefix{netip.MustParsePrefix("10.32.0.0/24")},
			NodeCIDRMaskSize:     24,
			NodeCIDRMaskSizeIPv6: 64,
		},
		RouteTable: RouteTable{
			ID:         "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes",
			Create:     true,
			Location:   "eastus",
			RouteLimit: 0,
			Adopt:      AdoptNone,
		},
		Subnets:     []string{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"},
		Association: Association{Policy: PolicyEnforce, Interval: 5 * time.Second},
		Routes:      RoutesManage,
		Cloud: Cloud{
			Type:  CloudLocal,
			Local: LocalCloud{State: filepath.Join(dir, "fabric.db"), Topology: filepath.Join(dir, "topology.yaml")},
			Azure: AzureCloud{Cloud: AzurePublicCloud},
		},
		Source: Source{Type: SourceInventory, Inventory: InventorySource{
			File:        filepath.Join(dir, "nodes.yaml"),
			Allocations: filepath.Join(dir, "nodes.allocations.json"),
		}, Kube: KubeSource{QPS: 50, Burst: 1200}},
		Controller: Controller{
			BatchWindow: 200 * time.Millisecond, MaxBatchDelay: time.Second, Resync: time.Minute, MetricsAddress: DefaultMetricsAddress,
			LeaderElection: LeaderElection{Namespace: "kube-system", Name: "routekeeper",
				LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		},
	}
	if diff := cmp.Diff(want, *c, cmpopts.IgnoreUnexported(Config{}), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("loaded config (-want +got):\n%s", diff)
	}
	if got := c.Origin("cluster.name"); got != path+":11" {
		t.Errorf("Origin(cluster.name) = %q, want the file and line 11", got)
	}
	if got := c.Origin("routeTable.routeLimit"); got != "default" {
		t.Errorf("Origin(routeTable.routeLimit) = %q, want default", got)
	}
}

// TestOtherExamples loads every example configuration: they must stay valid.
func TestOtherExamples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "routekeeper.yaml"))
	if err != nil || len(paths) < 3 {
		t.Fatalf("want at least 3 examples, found %v (%v)", paths, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("%s does not validate:\n%v", p, err)
			}
		})
	}
}

func TestDefaultsGolden(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got := c.Dump()
	golden := filepath.Join("testdata", "defaults.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("dump of the defaulted config (-golden +got):\n%s", diff)
	}
}

// TestDumpRoundTrip: reading a dump back gives the same configuration.
func TestDumpRoundTrip(t *testing.T) {
	dir := t.TempDir()
	// an explicit (empty) azure.json keeps the test from reading the
	// machine's /etc/kubernetes/azure.json
	writeFile(t, dir, "empty.json", "{}")
	src := writeFile(t, dir, "in.yaml", `
cluster:
  name: dual
  clusterCIDRs: [10.244.0.0/16, "fd00:10:244::/56"]
  serviceCIDRs: [10.96.0.0/12, "fd00:10:96::/112"]
  nodeCIDRMaskSize: 25
  nodeCIDRMaskSizeIPv6: 64
routeTable: {id: `+tableID+`, create: true, location: "eastus", routeLimit: 250}
subnets: [`+subnet0+`]
association: {policy: follow, restore: true, interval: 1m30s}
routes: observe
cloud:
  type: azure
  local: {state: /var/lib/routekeeper/fabric.db, operationDuration: 2s}
  azure: {configFile: empty.json, subscriptionID: `+sub0+`, tenantID: contoso.onmicrosoft.com, useManagedIdentity: true, userAssignedIdentityID: 44444444-4444-4444-4444-444444444444, cloud: azurechinacloud}
source: {type: kube, kube: {kubeconfig: /etc/kubernetes/admin.conf}}
controller: {batchWindow: 50ms, resync: 2h, leaderElection: {enabled: true, namespace: net, name: rk}, metricsAddress: "127.0.0.1:9100"}
`)
	c1, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Validate(); err != nil {
		t.Fatal(err)
	}
	dumped := writeFile(t, dir, "dump.yaml", c1.String())
	c2, err := Load(dumped)
	if err != nil {
		t.Fatalf("reading the dump back: %v\n%s", err, c1.String())
	}
	if diff := cmp.Diff(c1, c2, cmpopts.IgnoreUnexported(Config{}), cmpopts.IgnoreFields(Config{}, "File"), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("dump does not read back the same (-first +second):\n%s\ndump:\n%s", diff, c1.String())
	}
	// JSON output has the same layout and values.
	j, err := json.Marshal(c1)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(j, &tree); err != nil {
		t.Fatalf("MarshalJSON is not JSON: %v\n%s", err, j)
	}
	if got := tree["cluster"].(map[string]any)["nodeCIDRMaskSize"]; got != float64(25) {
		t.Errorf("json cluster.nodeCIDRMaskSize = %v, want 25", got)
	}
	if got := tree["association"].(map[string]any)["interval"]; got != "1m30s" {
		t.Errorf("json association.interval = %v, want 1m30s", got)
	}
}

// TestBadConfigs: every problem names the file, the field and the value.
func TestBadConfigs(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string // the whole file
		want  []string
		lines []string // "line: field" expected after the file name
	}{
		{"unknown top-level key", base + "clusters: {}\n",
			[]string{`clusters: unknown field (did you mean cluster?)`}, nil},
		{"unknown key in a section, wrong case", base + "source:\n  inventory:\n    File: x.yaml\n",
			[]string{`source.inventory.File: unknown field (did you mean file?)`}, nil},
		{"unknown key, typo", strings.Replace(base, "clusterCIDRs", "clusterCIRDs", 1),
			[]string{`cluster.clusterCIRDs: unknown field (did you mean clusterCIDRs?)`}, nil},
		{"CIDR with a bad length", strings.Replace(base, "10.244.0.0/16", "10.200.0.0/33", 1),
			[]string{`cluster.clusterCIDRs[0]: "10.200.0.0/33": not a valid CIDR`}, nil},
		{"CIDR with host bits", strings.Replace(base, "10.244.0.0/16", "10.200.0.1/16", 1),
			[]string{`cluster.clusterCIDRs[0]: "10.200.0.1/16": has host bits set; did you mean "10.200.0.0/16"?`}, nil},
		{"two IPv4 cluster CIDRs", strings.Replace(base, "[10.244.0.0/16]", "[10.244.0.0/16, 10.245.0.0/16]", 1),
			[]string{`cluster.clusterCIDRs[1]: "10.245.0.0/16": a second IPv4 cluster CIDR`}, nil},
		{"no cluster CIDR", strings.Replace(base, "  clusterCIDRs: [10.244.0.0/16]\n", "", 1),
			[]string{`cluster.clusterCIDRs: []: required`}, nil},
		{"cluster CIDR is a mapping", strings.Replace(base, "[10.244.0.0/16]", "{a: b}", 1),
			[]string{`cluster.clusterCIDRs[0]: {a: "b"}: must be a list, not a mapping`}, nil},
		{"setting in the wrong section", base + "  nodeCIDRMaskSize: 8\n",
			[]string{`routeTable.nodeCIDRMaskSize: unknown field (valid here: id, create, location, routeLimit, adopt, claim)`}, nil},
		{"node mask shorter than the cluster CIDR, in cluster", strings.Replace(base, "routeTable:", "  nodeCIDRMaskSize: 8\nrouteTable:", 1),
			[]string{`cluster.nodeCIDRMaskSize: 8: must be at least the prefix length of cluster.clusterCIDRs[0] 10.244.0.0/16 (16)`}, nil},
		{"node mask too long", strings.Replace(base, "routeTable:", "  nodeCIDRMaskSize: 33\nrouteTable:", 1),
			[]string{`cluster.nodeCIDRMaskSize: 33: must be between 1 and 32`}, nil},
		{"node mask too far from the cluster CIDR", strings.Replace(strings.Replace(base, "10.244.0.0/16", "10.0.0.0/8", 1), "routeTable:", "  nodeCIDRMaskSize: 28\nrouteTable:", 1),
			[]string{`cluster.nodeCIDRMaskSize: 28: must be at most 16 bits longer`}, nil},
		{"default node mask does not fit", strings.Replace(base, "10.244.0.0/16", "10.244.0.0/25", 1),
			[]string{`cluster.nodeCIDRMaskSize: 24 (default): must be at least the prefix length`}, nil},
		{"node mask not a number", strings.Replace(base, "routeTable:", "  nodeCIDRMaskSize: twenty\nrouteTable:", 1),
			[]string{`cluster.nodeCIDRMaskSize: "twenty": not an integer`}, nil},
		{"service range holds the cluster CIDR", strings.Replace(base, "routeTable:", "  serviceCIDRs: [10.0.0.0/8]\nrouteTable:", 1),
			[]string{`cluster.serviceCIDRs[0]: "10.0.0.0/8": contains the whole cluster CIDR 10.244.0.0/16`}, nil},
		{"no cluster name", strings.Replace(base, "  name: test\n", "", 1),
			[]string{`cluster.name: "": required`}, nil},
		{"cluster name not a DNS label", strings.Replace(base, "name: test", "name: Test_1", 1),
			[]string{`cluster.name: "Test_1": must be a DNS label`}, nil},
		{"cluster name is a boolean", strings.Replace(base, "name: test", "name: true", 1),
			[]string{`cluster.name: true: must be text, not true/false (put it in quotes)`}, nil},
		{"YAML 1.1 booleans are text", strings.Replace(base, "name: test", "name: no", 1) + "cloud:\n  type: on\n",
			[]string{`cloud.type: "on": must be one of local, azure`}, nil},
		{"route table ID of a subnet", strings.Replace(base, tableID, subnet0, 1),
			[]string{`routeTable.id: "` + subnet0 + `": an ARM ID of a Microsoft.Network/routeTables, not of a Microsoft.Network/virtualNetworks/subnets`}, nil},
		{"route table ID is a name", strings.Replace(base, tableID, "kubernetes-routes", 1),
			[]string{`routeTable.id: "kubernetes-routes": a route table name needs a resource group (--resource-group/-g or resourceGroup); or give the ARM ID /subscriptions/<subscription>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<name>`}, nil},
		{"route table given as group/name", strings.Replace(base, tableID, "rg/kubernetes-routes", 1),
			[]string{`routeTable.id: "rg/kubernetes-routes": not a route table name or ARM ID; want a name (with -g) or /subscriptions/`}, nil},
		{"route table ID with a bad subscription", strings.Replace(base, sub0, "my-sub", 1),
			[]string{`routeTable.id: "/subscriptions/my-sub/`, `subscription "my-sub" is not a GUID`}, nil},
		{"route table name invalid", strings.Replace(base, "routeTables/pods", "routeTables/pods-", 1),
			[]string{`routeTable.id: "`, `routeTables name "pods-" is not valid`}, nil},
		{"no route table", strings.Replace(base, "  id: "+tableID+"\n", "", 1),
			[]string{`routeTable.id: "": required`}, nil},
		{"route limit negative", base + "  routeLimit: -1\n",
			[]string{`routeTable.routeLimit: -1: must be 0 (Azure's limit, read from the usages API of the table's region) or a positive number that lowers it`}, nil},
		{"adopt policy unknown", base + "  adopt: all\n",
			[]string{`routeTable.adopt: "all": must be one of none, matching`}, nil},
		{"max deletes below -1", base + "controller: {maxDeletes: -2}\n",
			[]string{`controller.maxDeletes: -2: must be -1 (no limit), 0 (the larger of 10 and 10% of the cluster's routes) or a positive number`}, nil},
		{"create without subnets", base + "  create: true\n",
			[]string{`routeTable.create: true: needs at least one subnet`}, nil},
		{"create is not a boolean", base + "  create: maybe\n",
			[]string{`routeTable.create: "maybe": not true or false`}, nil},
		{"subnet ID of a VNet", base + "subnets:\n  - /subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet\n",
			[]string{`subnets[0]: "/subscriptions/` + sub0 + `/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet": an ARM ID of a Microsoft.Network/virtualNetworks/subnets`}, nil},
		{"subnet in another subscription", base + "subnets:\n  - " + strings.Replace(subnet0, sub0, "99999999-0000-0000-0000-000000000000", 1) + "\n",
			[]string{`subnets[0]: "/subscriptions/99999999-`, `Azure associates a route table only with subnets of its own subscription`}, nil},
		{"duplicate subnet, other case", base + "subnets:\n  - " + subnet0 + "\n  - " + strings.ToUpper(subnet0) + "\n",
			[]string{`subnets[1]: "` + strings.ToUpper(subnet0) + `": the same subnet as subnets[0]`}, nil},
		{"association policy", base + "association:\n  policy: enforced\n",
			[]string{`association.policy: "enforced": must be one of enforce, follow, report`}, nil},
		{"interval without a unit", base + "association:\n  interval: 5\n",
			[]string{`association.interval: "5": a duration needs a unit (for example 5s)`}, nil},
		{"interval zero", base + "association:\n  interval: 0s\n",
			[]string{`association.interval: 0s: must be positive`}, nil},
		{"routes mode", base + "routes: manage-all\n",
			[]string{`routes: "manage-all": must be one of manage, observe`}, nil},
		{"cloud type", base + "cloud:\n  type: aws\n",
			[]string{`cloud.type: "aws": must be one of local, azure`}, nil},
		{"azure cloud name", base + "cloud:\n  azure:\n    cloud: AzureStackCloud\n",
			[]string{`cloud.azure.cloud: "AzureStackCloud": must be one of AzurePublicCloud, AzureChinaCloud, AzureUSGovernmentCloud`}, nil},
		{"client secret without client ID, never printed", base + "cloud:\n  azure:\n    tenantID: contoso.onmicrosoft.com\n    clientSecret: hunter2\n",
			[]string{`cloud.azure.clientSecret: "<redacted>": needs cloud.azure.clientID`}, nil},
		{"subscription not a GUID", base + "cloud:\n  azure:\n    subscriptionID: prod\n",
			[]string{`cloud.azure.subscriptionID: "prod": not a GUID`}, nil},
		{"endpoint not a URL", base + "cloud:\n  local:\n    endpoint: 127.0.0.1:8400\n",
			[]string{`cloud.local.endpoint: "127.0.0.1:8400": not an http:// or https:// URL`}, nil},
		{"endpoint with cloud azure", base + "cloud:\n  type: azure\n  local:\n    endpoint: https://127.0.0.1:8400\n",
			[]string{`cloud.local.endpoint: "https://127.0.0.1:8400": a served fabric is cloud type local, but cloud.type is azure`}, nil},
		{"source type", base + "source:\n  type: file\n",
			[]string{`source.type: "file": must be one of inventory, kube`}, nil},
		{"inventory source without a file", base + "source:\n  type: inventory\n",
			[]string{`source.inventory.file: "": required with source.type inventory`}, nil},
		{"resync negative", base + "controller:\n  resync: -1s\n",
			[]string{`controller.resync: -1s: must be positive`}, nil},
		{"leader election with the inventory", base + "source:\n  inventory:\n    file: n.yaml\ncontroller:\n  leaderElection:\n    enabled: true\n",
			[]string{`controller.leaderElection.enabled: true: needs source.type kube`}, nil},
		{"lease no longer than the renew deadline", base + "controller:\n  leaderElection:\n    enabled: true\n    leaseDuration: 10s\n",
			[]string{`controller.leaderElection.leaseDuration: 10s: must be longer than renewDeadline (10s)`}, nil},
		{"renew deadline too close to the retry period", base + "controller:\n  leaderElection:\n    enabled: true\n    renewDeadline: 2s\n",
			[]string{`controller.leaderElection.renewDeadline: 2s: must be more than 1.2 × retryPeriod (2s)`}, nil},
		{"kube burst below qps", base + "source:\n  kube:\n    qps: 100\n    burst: 10\n",
			[]string{`source.kube.burst: 10: must be at least source.kube.qps (100)`}, nil},
		{"metrics address without a colon", base + "controller:\n  metricsAddress: \"9090\"\n",
			[]string{`controller.metricsAddress: "9090": not a listen address`}, nil},
		{"section is a scalar", base + "association: enforce\n",
			[]string{`association: "enforce": must be a mapping with the keys policy, restore, interval`}, nil},
		{"YAML syntax", base + "cluster: [\n",
			[]string{`not valid YAML`, `line`}, nil},
		{"duplicate key", base + "routes: manage\nroutes: observe\n",
			[]string{`not valid YAML`, `routes`}, nil},
		{"every problem at once", strings.Replace(strings.Replace(base, "10.244.0.0/16", "10.244.0.1/16", 1), "name: test", "name: Test", 1) + "  routeLimit: -5\nroutes: all\n",
			[]string{`cluster.name: "Test"`, `cluster.clusterCIDRs[0]: "10.244.0.1/16"`, `routeTable.routeLimit: -5`, `routes: "all"`},
			[]string{"3: cluster.name", "4: cluster.clusterCIDRs[0]", "7: routeTable.routeLimit", "8: routes"}},
		{"list item lines", base + "subnets:\n  - " + subnet0 + "\n  - not-an-id\n",
			[]string{`subnets[1]: "not-an-id": not a subnet ARM ID or <vnet>/<subnet>`},
			[]string{"9: subnets[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "routekeeper.yaml", tc.yaml)
			c, err := Load(path)
			if err == nil {
				err = c.Validate()
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.yaml)
			}
			msg := err.Error()
			problemtest.Check(t, msg, path, tc.want...)
			for _, w := range tc.lines {
				if !strings.Contains(msg, path+":"+w) {
					t.Errorf("error does not point at %s:%s:\n%s", path, w, msg)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("the secret is in the message: %s", msg)
			}
			var probs Problems
			if !errors.As(err, &probs) || len(probs) == 0 {
				t.Errorf("error is %T, want Problems", err)
			}
		})
	}
}

func TestEmptyFileIsAllDefaults(t *testing.T) {
	path := writeFile(t, t.TempDir(), "empty.yaml", "# nothing yet\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("an empty config validated: cluster name, CIDRs and route table are required")
	}
	for _, w := range []string{"cluster.name", "cluster.clusterCIDRs", "routeTable.id"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %s in:\n%v", w, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml does not exist") {
		t.Fatalf("err = %v", err)
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(dir, "conf"), "rk.yaml", base+`
cloud:
  local:
    state: ../state/fabric.db
    topology: /abs/topology.yaml
source:
  inventory:
    file: inventory/nodes.yml
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"state":       {c.Cloud.Local.State, filepath.Join(dir, "state", "fabric.db")},
		"topology":    {c.Cloud.Local.Topology, "/abs/topology.yaml"},
		"inventory":   {c.Source.Inventory.File, filepath.Join(dir, "conf", "inventory", "nodes.yml")},
		"allocations": {c.Source.Inventory.Allocations, filepath.Join(dir, "conf", "inventory", "nodes.allocations.json")},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", name, v[0], v[1])
		}
	}
	if c.Source.Type != SourceInventory {
		t.Errorf("source.type = %q, want inventory (inferred from the inventory file)", c.Source.Type)
	}
	// A path given by a flag stays relative to the working directory.
	c2, _ := Read(path)
	if err := c2.Set("source.inventory.file", []string{"here.yaml"}, "--inventory"); err != nil {
		t.Fatal(err)
	}
	if c2.Source.Inventory.File != "here.yaml" {
		t.Errorf("flag path = %q, want here.yaml", c2.Source.Inventory.File)
	}
}

func TestSetOverridesFile(t *testing.T) {
	path := writeFile(t, t.TempDir(), "rk.yaml", base+"  routeLimit: 100\nsubnets: ["+subnet0+"]\n")
	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("routeTable.routeLimit", []string{"200"}, "--route-limit"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("subnets", nil, "--subnet"); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	if c.RouteTable.RouteLimit != 200 || c.Origin("routeTable.routeLimit") != "--route-limit" {
		t.Errorf("routeLimit = %d from %s, want 200 from --route-limit", c.RouteTable.RouteLimit, c.Origin("routeTable.routeLimit"))
	}
	if len(c.Subnets) != 0 {
		t.Errorf("subnets = %v: a list flag must replace the file's list", c.Subnets)
	}
	// A bad flag value names the flag, the field and the value.
	err = c.Set("cluster.clusterCIDRs", []string{"10.0.0.0/8", "nonsense"}, "--cluster-cidr")
	if err == nil || !strings.Contains(err.Error(), `--cluster-cidr: cluster.clusterCIDRs[1]: "nonsense": not a valid CIDR`) {
		t.Errorf("err = %v", err)
	}
	// Validation blames the flag for a value it set.
	if err := c.Set("routeTable.routeLimit", []string{"-1"}, "--route-limit"); err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), `--route-limit: routeTable.routeLimit: -1: must be 0 (Azure's limit`) {
		t.Errorf("err = %v", err)
	}
}

func TestAzureJSONMerge(t *testing.T) {
	aj, err := filepath.Abs(filepath.Join("testdata", "azure.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "rk.yaml", `
cluster:
  name: selfmanaged
  clusterCIDRs: [10.244.0.0/16]
cloud:
  azure:
    configFile: `+aj+`
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	const sub = "22222222-2222-2222-2222-222222222222"
	if c.Cloud.Type != CloudAzure {
		t.Errorf("cloud.type = %q, want azure (an azure.json was given)", c.Cloud.Type)
	}
	if want := "/subscriptions/" + sub + "/resourceGroups/k8s-nodes/providers/Microsoft.Network/routeTables/k8s-routes"; c.RouteTable.ID != want {
		t.Errorf("route table = %q, want %q (resourceGroup, since routeTableResourceGroup is empty)", c.RouteTable.ID, want)
	}
	if want := []string{"/subscriptions/" + sub + "/resourceGroups/k8s-network/providers/Microsoft.Network/virtualNetworks/k8s-vnet/subnets/nodes"}; !cmp.Equal(c.Subnets, want) {
		t.Errorf("subnets = %q, want %q (vnetResourceGroup)", c.Subnets, want)
	}
	az := c.Cloud.Azure
	if az.SubscriptionID != sub || az.TenantID != "11111111-1111-1111-1111-111111111111" || az.ClientID != "33333333-3333-3333-3333-333333333333" || az.ClientSecret.Reveal() != "s3cr3t-never-printed" || az.Cloud != AzurePublicCloud {
		t.Errorf("azure credentials not merged: %+v", az)
	}
	if c.RouteTable.Location != "westeurope" {
		t.Errorf("location = %q, want westeurope", c.RouteTable.Location)
	}
	if got := c.Origin("routeTable.id"); got != aj+" (subscriptionId, resourceGroup, routeTableName)" {
		t.Errorf("Origin(routeTable.id) = %q", got)
	}

	// The secret never shows.
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "azure", az, "secret", az.ClientSecret, "json", c.AzureJSON, "config", c)
	if !strings.Contains(logBuf.String(), "config.cluster=selfmanaged") {
		t.Errorf("the config does not log as a summary: %s", logBuf.String())
	}
	js, _ := json.Marshal(c)
	ajs, _ := json.Marshal(c.AzureJSON)
	for name, s := range map[string]string{
		"dump": c.String(), "%v": fmt.Sprintf("%v", *c), "%+v": fmt.Sprintf("%+v", az), "%#v": fmt.Sprintf("%#v", az),
		"json": string(js), "azure.json json": string(ajs), "azure.json %v": fmt.Sprintf("%v %+v", c.AzureJSON, *c.AzureJSON), "slog": logBuf.String(),
	} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("%s shows the secret: %s", name, s)
		}
	}
	if !strings.Contains(c.String(), "clientSecret: <redacted>") && !strings.Contains(c.String(), `clientSecret: "<redacted>"`) {
		t.Errorf("dump does not show the secret as redacted:\n%s", c.String())
	}
}

func TestAzureJSONExplicitWins(t *testing.T) {
	dir := t.TempDir()
	aj := writeFile(t, dir, "azure.json", `{
  "TENANTID": "11111111-1111-1111-1111-111111111111",
  "subscriptionid": "22222222-2222-2222-2222-222222222222",
  "resourceGroup": "nodes-rg",
  "routeTableName": "rt",
  "routeTableResourceGroup": "rt-rg",
  "vnetName": "vnet", "subnetName": "snet",
  "useManagedIdentityExtension": true,
  "userAssignedIdentityID": "55555555-5555-5555-5555-555555555555",
  "location": "eastus2",
  "cloud": "AZURECHINACLOUD"
}`)
	path := writeFile(t, dir, "rk.yaml", `
cluster: {name: c, clusterCIDRs: [10.244.0.0/16]}
routeTable: {location: northeurope}
subnets: [/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/x/providers/Microsoft.Network/virtualNetworks/v/subnets/s]
cloud:
  type: azure
  azure: {configFile: azure.json, useManagedIdentity: false}
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Cloud.Azure.ConfigFile != aj {
		t.Errorf("configFile = %q, want %q (relative to the config file)", c.Cloud.Azure.ConfigFile, aj)
	}
	if want := "/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/rt-rg/providers/Microsoft.Network/routeTables/rt"; c.RouteTable.ID != want {
		t.Errorf("route table = %q, want %q (routeTableResourceGroup wins over resourceGroup)", c.RouteTable.ID, want)
	}
	if c.RouteTable.Location != "northeurope" {
		t.Errorf("location = %q: the file's value must win over azure.json", c.RouteTable.Location)
	}
	if len(c.Subnets) != 1 || !strings.Contains(c.Subnets[0], "/resourceGroups/x/") {
		t.Errorf("subnets = %q: the file's list must win over azure.json", c.Subnets)
	}
	if c.Cloud.Azure.UseManagedIdentity {
		t.Error("useManagedIdentity: an explicit false must win over azure.json's true")
	}
	if c.Cloud.Azure.TenantID != "11111111-1111-1111-1111-111111111111" {
		t.Errorf("tenant = %q: azure.json keys are matched case-insensitively", c.Cloud.Azure.TenantID)
	}
	if c.Cloud.Azure.Cloud != AzureChinaCloud {
		t.Errorf("cloud = %q, want %s", c.Cloud.Azure.Cloud, AzureChinaCloud)
	}
}

func TestAzureJSONDerivedValueBlamesAzureJSON(t *testing.T) {
	dir := t.TempDir()
	aj := writeFile(t, dir, "azure.json", `{"subscriptionId": "prod", "resourceGroup": "rg", "routeTableName": "rt"}`)
	path := writeFile(t, dir, "rk.yaml", "cluster: {name: c, clusterCIDRs: [10.244.0.0/16]}\ncloud: {azure: {configFile: azure.json}}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	want := aj + `: routeTable.id (from subscriptionId, resourceGroup, routeTableName): "/subscriptions/prod/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt": subscription "prod" is not a GUID`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err =\n%v\nwant a line\n%s", err, want)
	}
}

func TestAzureJSONDefaultPath(t *testing.T) {
	dir := t.TempDir()
	def := writeFile(t, dir, "azure.json", `{"subscriptionId": "22222222-2222-2222-2222-222222222222", "resourceGroup": "rg", "routeTableName": "rt"}`)
	path := writeFile(t, dir, "rk.yaml", "cluster: {name: c, clusterCIDRs: [10.244.0.0/16]}\ncloud: {type: azure}\n")

	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.complete(def); err != nil {
		t.Fatal(err)
	}
	if c.Cloud.Azure.ConfigFile != def || !strings.HasSuffix(c.RouteTable.ID, "/routeTables/rt") {
		t.Errorf("the default azure.json was not read: configFile %q, route table %q", c.Cloud.Azure.ConfigFile, c.RouteTable.ID)
	}

	// With the local cloud, the default azure.json is not read.
	c, _ = Read(writeFile(t, dir, "local.yaml", "cluster: {name: c}\n"))
	if err := c.complete(def); err != nil {
		t.Fatal(err)
	}
	if c.Cloud.Azure.ConfigFile != "" || c.RouteTable.ID != "" || c.Cloud.Type != CloudLocal {
		t.Errorf("local cloud read the default azure.json: %q, %q, %q", c.Cloud.Azure.ConfigFile, c.RouteTable.ID, c.Cloud.Type)
	}

	// A missing default is not an error; a missing explicit file is.
	c, _ = Read(path)
	if err := c.complete(filepath.Join(dir, "none.json")); err != nil {
		t.Errorf("missing default azure.json: %v", err)
	}
	c, _ = Read(writeFile(t, dir, "explicit.yaml", "cloud: {azure: {configFile: none.json}}\n"))
	if err := c.Complete(); err == nil || !strings.Contains(err.Error(), "none.json does not exist") {
		t.Errorf("missing explicit azure.json: err = %v", err)
	}
}

func TestLoadAzureJSONErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty.json":  "  \n",
		"broken.json": `{"tenantId": "x",`,
		"types.json":  `{"useManagedIdentityExtension": "sometimes"}`,
	} {
		p := writeFile(t, dir, name, content)
		_, err := LoadAzureJSON(p)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
	// YAML and a byte order mark are accepted, as by cloud-provider-azure.
	p := writeFile(t, dir, "azure.yaml", "\xef\xbb\xbftenantId: t\nsubscriptionId: s\n")
	a, err := LoadAzureJSON(p)
	if err != nil || a.TenantID != "t" || a.SubscriptionID != "s" {
		t.Errorf("YAML azure.json: %+v, %v", a, err)
	}
}

func TestClientSecretFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret", "from-file\n")
	path := writeFile(t, dir, "rk.yaml", base+"cloud:\n  azure:\n    tenantID: contoso.onmicrosoft.com\n    clientID: 33333333-3333-3333-3333-333333333333\n    clientSecretFile: secret\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Cloud.Azure.ClientSecret.Reveal() != "from-file" {
		t.Errorf("secret = %q, want the file's content without the newline", c.Cloud.Azure.ClientSecret.Reveal())
	}
	// Both a secret and a secret file: a problem.
	c, _ = Read(path)
	if err := c.Set("cloud.azure.clientSecret", []string{"x"}, "--client-secret"); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cloud.azure.clientSecretFile") {
		t.Errorf("err = %v", err)
	}
}

func TestSettingsTable(t *testing.T) {
	flags := map[string]bool{}
	for _, s := range Settings() {
		if flags[s.Flag] {
			t.Errorf("flag --%s used twice", s.Flag)
		}
		flags[s.Flag] = true
		// every setting can be set from text and reads back
		c := New()
		var v []string
		switch s.Kind {
		case KindCIDRs:
			v = []string{"10.1.0.0/16"}
		case KindInt:
			v = []string{"7"}
		case KindBool:
			v = []string{"true"}
		case KindDuration:
			v = []string{"7s"}
		case KindEnum:
			v = []string{s.Values[0]}
		default:
			v = []string{"x"}
		}
		if err := c.Set(s.Path, v, "--"+s.Flag); err != nil {
			t.Errorf("%s: %v", s.Path, err)
		}
		if c.Origin(s.Path) != "--"+s.Flag {
			t.Errorf("%s: origin %q", s.Path, c.Origin(s.Path))
		}
		if !strings.Contains(string(c.Dump()), strings.TrimPrefix(v[0], "")) && s.Kind != KindSecret {
			t.Errorf("%s: value %q not in the dump", s.Path, v[0])
		}
	}
}

// routes: standDown is spelled as documented whatever case it was written
// in (enums are case-insensitive), from the file and from a flag, and
// controller.confirmStandDown is its confirmation.
func TestStandDownSettings(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		flag       []string
		want       RoutesMode
		confirm    bool
		problem    string
	}{
		{name: "file, documented spelling", file: "routes: standDown\ncontroller:\n  confirmStandDown: true\n", want: RoutesStandDown, confirm: true},
		{name: "file, lower case", file: "routes: standdown\n", want: RoutesStandDown},
		{name: "flag, upper case", flag: []string{"STANDDOWN"}, want: RoutesStandDown},
		{name: "manage still lower case", file: "routes: Manage\n", want: RoutesManage},
		{name: "a misspelling names the values", file: "routes: stand-down\n", problem: `routes: "stand-down": must be one of manage, observe, standDown`},
		{name: "confirmation not a boolean", file: "controller:\n  confirmStandDown: please\n", problem: `controller.confirmStandDown: "please": not true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "rk.yaml", base+"subnets: ["+subnet0+"]\n"+tc.file)
			c, err := Read(path)
			if err == nil && tc.flag != nil {
				err = c.Set("routes", tc.flag, "--routes")
			}
			if err == nil {
				err = c.Complete()
			}
			if err == nil {
				err = c.Validate()
			}
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Errorf("err = %v, want %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Routes != tc.want || c.Controller.ConfirmStandDown != tc.confirm {
				t.Errorf("routes %q confirm %v, want %q %v", c.Routes, c.Controller.ConfirmStandDown, tc.want, tc.confirm)
			}
		})
	}
}
