package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// runConfigCmd runs the real root command (env binding, exit codes) with a
// test-only command that embeds configFlags, and returns what it loaded.
func runConfigCmd(t *testing.T, env map[string]string, args ...string) (int, string, *config.Config) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	a := &shell{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: getenv}
	root := a.newRootCmd()
	var got *config.Config
	var cf configFlags
	cf.getenv = getenv
	cmd := &cobra.Command{
		Use:  "configtest",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.load(cmd.Flags())
			if err != nil {
				return err
			}
			got = c
			return nil
		},
	}
	cf.register(cmd.Flags(), config.UseAll)
	root.AddCommand(cmd)
	root.SetArgs(append([]string{"configtest"}, args...))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	code, msg := exitCode(root.ExecuteContext(context.Background()))
	return code, msg + stderr.String(), got
}

const testTable = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/routeTables/pods"

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routekeeper.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `
cluster: {name: fromfile, clusterCIDRs: [10.244.0.0/16]}
routeTable: {id: `+testTable+`, routeLimit: 100}
controller: {resync: 5m}
`)
	cases := []struct {
		name  string
		env   map[string]string
		args  []string
		limit int
		check func(t *testing.T, c *config.Config)
	}{
		{"file", nil, []string{"--config", file}, 100, nil},
		{"environment beats file", map[string]string{"ROUTEKEEPER_ROUTE_LIMIT": "200"}, []string{"--config", file}, 200, nil},
		{"flag beats environment", map[string]string{"ROUTEKEEPER_ROUTE_LIMIT": "200"}, []string{"--config", file, "--route-limit", "300"}, 300, nil},
		{"config file from the environment", map[string]string{"ROUTEKEEPER_CONFIG": file}, nil, 100, nil},
		{"lists, booleans and durations from the environment", map[string]string{
			"ROUTEKEEPER_CLUSTER_CIDR": "10.1.0.0/16,fd00:1::/56", "ROUTEKEEPER_CREATE_ROUTE_TABLE": "true",
			"ROUTEKEEPER_SUBNET": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s",
			"ROUTEKEEPER_RESYNC": "90s",
		}, []string{"--config", file}, 100, func(t *testing.T, c *config.Config) {
			if len(c.Cluster.ClusterCIDRs) != 2 || c.Cluster.ClusterCIDRs[1].String() != "fd00:1::/56" {
				t.Errorf("cluster CIDRs = %v", c.Cluster.ClusterCIDRs)
			}
			if !c.RouteTable.Create || len(c.Subnets) != 1 || c.Controller.Resync.String() != "1m30s" {
				t.Errorf("create %v, subnets %v, resync %v", c.RouteTable.Create, c.Subnets, c.Controller.Resync)
			}
		}},
		{"flags only, no file", nil, []string{"--cluster-name", "flags", "--cluster-cidr", "10.9.0.0/16", "--route-table", testTable, "--inventory", "nodes.yaml"}, 0, func(t *testing.T, c *config.Config) {
			if c.Cluster.Name != "flags" || c.Source.Type != config.SourceInventory || c.Source.Inventory.Allocations != "nodes.allocations.json" {
				t.Errorf("config = %+v", c)
			}
		}},
		{"repeated list flag", nil, []string{"--config", file, "--cluster-cidr", "10.5.0.0/16", "--cluster-cidr", "fd00:5::/56"}, 100, func(t *testing.T, c *config.Config) {
			if len(c.Cluster.ClusterCIDRs) != 2 || c.Cluster.ClusterCIDRs[0].String() != "10.5.0.0/16" {
				t.Errorf("cluster CIDRs = %v: a flag replaces the file's list", c.Cluster.ClusterCIDRs)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, c := runConfigCmd(t, tc.env, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, out)
			}
			if c.RouteTable.RouteLimit != tc.limit {
				t.Errorf("route limit = %d, want %d", c.RouteTable.RouteLimit, tc.limit)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestConfigErrorsExitUsage(t *testing.T) {
	good := writeConfig(t, "cluster: {name: c, clusterCIDRs: [10.244.0.0/16]}\nrouteTable: {id: "+testTable+"}\n")
	bad := writeConfig(t, "cluster:\n  name: c\n  clusterCIDRs: [10.200.0.0/33]\nrouteTable: {id: "+testTable+"}\n")
	many := writeConfig(t, "cluster:\n  name: C\n  clusterCIDRs: [10.200.0.1/16]\nrouteTable: {id: x}\nsurplus: 1\n")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"bad value in the file", nil, []string{"--config", bad},
			[]string{bad + `:3: cluster.clusterCIDRs[0]: "10.200.0.0/33": not a valid CIDR`}},
		{"unknown key", nil, []string{"--config", many},
			[]string{many + `:5: surplus: unknown field`}},
		{"several problems", nil, []string{"--config", writeConfig(t, "cluster:\n  name: C\n  clusterCIDRs: [10.200.0.1/16]\nrouteTable: {id: x}\n")},
			[]string{"3 problems in the configuration:", `:2: cluster.name: "C"`, `:3: cluster.clusterCIDRs[0]: "10.200.0.1/16": has host bits set; did you mean "10.200.0.0/16"?`, `:4: routeTable.id: "x"`}},
		{"missing file", nil, []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, []string{"none.yaml does not exist"}},
		{"bad flag value", nil, []string{"--config", good, "--cluster-cidr", "10.0.0.0/40"},
			[]string{`--cluster-cidr: cluster.clusterCIDRs[0]: "10.0.0.0/40": not a valid CIDR`}},
		{"bad environment value", map[string]string{"ROUTEKEEPER_ROUTE_LIMIT": "lots"}, []string{"--config", good},
			[]string{`--route-limit or ROUTEKEEPER_ROUTE_LIMIT: routeTable.routeLimit: "lots": not an integer`}},
		{"flag value fails validation", nil, []string{"--config", good, "--route-limit", "-1"},
			[]string{`--route-limit: routeTable.routeLimit: -1: must be 0 (Azure's limit, read from the usages API of the table's region) or a positive number that lowers it`}},
		{"bad boolean in the environment", map[string]string{"ROUTEKEEPER_CREATE_ROUTE_TABLE": "sometimes"}, []string{"--config", good},
			[]string{"ROUTEKEEPER_CREATE_ROUTE_TABLE=sometimes: use true or false"}},
		{"nothing configured", nil, nil, []string{"cluster.name", "cluster.clusterCIDRs", "routeTable.id"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runConfigCmd(t, tc.env, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestConfigErrorKeepsProblems: the usage error still carries the problems.
func TestConfigErrorKeepsProblems(t *testing.T) {
	var fs pflag.FlagSet
	var cf configFlags
	cf.register(&fs, config.UseAll)
	if err := fs.Parse([]string{"--route-limit", "-1", "--cluster-name", "BAD"}); err != nil {
		t.Fatal(err)
	}
	_, err := cf.load(&fs)
	var ps config.Problems
	if !errors.As(err, &ps) || len(ps) < 2 {
		t.Fatalf("err = %v, want config.Problems inside", err)
	}
	if code, msg := exitCode(err); code != ExitUsage || strings.Count(msg, "routeTable.routeLimit") != 1 {
		t.Errorf("exit %d, message %q: each problem once", code, msg)
	}
}

// TestConfigDocsCoverEverySetting: docs/configuration.md names every
// setting's YAML key, flag and environment variable.
func TestConfigDocsCoverEverySetting(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	var fs pflag.FlagSet
	var cf configFlags
	cf.register(&fs, config.UseAll)
	for _, s := range config.Settings() {
		env := envPrefix + strings.ToUpper(strings.ReplaceAll(s.Flag, "-", "_"))
		for _, w := range []string{"`" + s.Path + "`", "`--" + s.Flag + "`", "`" + env + "`"} {
			if !bytes.Contains(doc, []byte(w)) {
				t.Errorf("docs/configuration.md does not mention %s", w)
			}
		}
		if fs.Lookup(s.Flag) == nil {
			t.Errorf("no flag --%s", s.Flag)
		}
	}
}

// TestKTHWExampleThroughTheCLI: the example loads through the flags path.
func TestKTHWExampleThroughTheCLI(t *testing.T) {
	code, out, c := runConfigCmd(t, nil, "--config", filepath.Join("..", "..", "examples", "kthw", "routekeeper.yaml"))
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	if c.Cluster.Name != "kthw" || !strings.HasSuffix(c.Source.Inventory.File, filepath.Join("kthw", "nodes.yaml")) {
		t.Errorf("config = %+v", c)
	}
}

// TestExamplesMatchTheirTopology: each local-fabric example's topology file
// parses, and declares the resource group of its route table and every
// subnet its config names, so `routekeeper run` works from an empty state.
func TestExamplesMatchTheirTopology(t *testing.T) {
	for _, name := range []string{"kthw", "inventory-ipam"} {
		t.Run(name, func(t *testing.T) {
			code, out, c := runConfigCmd(t, nil, "--config", filepath.Join("..", "..", "examples", name, "routekeeper.yaml"))
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, out)
			}
			if c.Cloud.Type != config.CloudLocal || c.Cloud.Local.Topology == "" {
				t.Fatalf("not a local-fabric example with a topology: %+v", c.Cloud)
			}
			top, err := topology.LoadTopology(c.Cloud.Local.Topology)
			if err != nil {
				t.Fatal(err)
			}
			sub := top.Subscription
			if sub == "" {
				sub = fabric.DefaultSubscription
			}
			declared := map[string]bool{}
			for _, rg := range top.ResourceGroups {
				declared[strings.ToLower(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", sub, rg.Name))] = true
				for _, vn := range rg.VirtualNetworks {
					for _, sn := range vn.Subnets {
						declared[strings.ToLower(config.SubnetID(sub, rg.Name, vn.Name, sn.Name))] = true
					}
				}
			}
			for _, s := range c.Subnets {
				if !declared[strings.ToLower(s)] {
					t.Errorf("subnet %s is not in %s", s, c.Cloud.Local.Topology)
				}
			}
			rg := c.RouteTable.ID[:strings.Index(strings.ToLower(c.RouteTable.ID), "/providers/")]
			if !declared[strings.ToLower(rg)] {
				t.Errorf("the route table's resource group %s is not in %s", rg, c.Cloud.Local.Topology)
			}
		})
	}
}
