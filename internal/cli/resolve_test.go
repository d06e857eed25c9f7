package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

// TestResourceGroupAndNames checks that route tables and subnets given by
// name with -g resolve to the same resources as their ARM IDs: the output
// is the golden file of the ID form.
func TestResourceGroupAndNames(t *testing.T) {
	cfg := ranKTHW(t)
	newTableFor(t, cfg, &armnetwork.Route{Name: to.Ptr("to-onprem"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("192.168.0.0/16"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualNetworkGateway)}})

	// A config with names only, as an az user writes it.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	named := strings.NewReplacer(
		"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes", "kubernetes-routes",
		"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet", "kubernetes-vnet/kubernetes-subnet",
	).Replace(string(b))
	namedCfg := filepath.Join(filepath.Dir(cfg), "named.yaml")
	writeFile(t, namedCfg, "resourceGroup: kubernetes\n"+named)

	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"migrate --to name -g", []string{"migrate", "--to", "kubernetes-routes-v2", "-g", "kubernetes", "--delete-old", "--dry-run", "--config", cfg},
			ExitFindings, "migrate/dry-run.golden"},
		{"routes list -g -n", []string{"routes", "list", "-g", "kubernetes", "-n", "kubernetes-routes", "--config", cfg},
			ExitOK, "run/quickstart.golden"},
		{"config with names and resourceGroup", []string{"routes", "list", "--config", namedCfg},
			ExitOK, "run/quickstart.golden"},
		{"names from the environment", []string{"routes", "list", "--config", cfg},
			ExitOK, "run/quickstart.golden"},
	}
	env := map[string]string{"ROUTEKEEPER_RESOURCE_GROUP": "kubernetes", "ROUTEKEEPER_ROUTE_TABLE": "kubernetes-routes"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e map[string]string
			if strings.Contains(tc.name, "environment") {
				e = env
			}
			res := runCLI(t, e, "", tc.args...)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tc.code, res.stdout, res.stderr)
			}
			golden(t, filepath.Join("testdata", tc.golden), []byte(res.stdout))
		})
	}
}

func TestNameErrors(t *testing.T) {
	cfg := kthw(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--to name without -g", []string{"migrate", "--to", "kubernetes-routes-v2", "--config", cfg},
			`flag --to: "kubernetes-routes-v2": a route table name needs a resource group (--resource-group/-g or resourceGroup)`},
		{"--to group/name", []string{"migrate", "--to", "kubernetes/kubernetes-routes-v2", "-g", "kubernetes", "--config", cfg},
			`flag --to: "kubernetes/kubernetes-routes-v2": not a route table name or ARM ID`},
		{"-n without -g", []string{"routes", "list", "-n", "kubernetes-routes", "--config", cfg},
			`--route-table: routeTable.id: "kubernetes-routes": a route table name needs a resource group`},
		{"--subnet without the network", []string{"diff", "-g", "kubernetes", "--subnet", "kubernetes-subnet", "--config", cfg},
			`--subnet: subnets[0]: "kubernetes-subnet": not a subnet ARM ID or <vnet>/<subnet>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, nil, "", tc.args...)
			if res.code != ExitUsage || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", res.code, res.stderr, ExitUsage, tc.want)
			}
		})
	}
}
