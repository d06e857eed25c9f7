package config

import (
	"strings"
	"testing"
)

// TestResolveNames loads configurations that name the route table and the
// subnets without ARM IDs and checks the IDs they resolve to, or the error.
func TestResolveNames(t *testing.T) {
	const azSub = "11111111-2222-3333-4444-555555555555"
	cases := []struct {
		name      string
		yaml      string
		azureJSON string
		wantTable string
		wantNets  []string
		wantErr   string
	}{
		{name: "names with resourceGroup, local cloud",
			yaml:      "resourceGroup: kubernetes\nrouteTable:\n  id: kubernetes-routes\nsubnets: [kubernetes-vnet/kubernetes-subnet]\n",
			wantTable: RouteTableID(LocalSubscription, "kubernetes", "kubernetes-routes"),
			wantNets:  []string{SubnetID(LocalSubscription, "kubernetes", "kubernetes-vnet", "kubernetes-subnet")}},
		{name: "IDs stay as they are",
			yaml:      "resourceGroup: other\nrouteTable:\n  id: " + RouteTableID(LocalSubscription, "kubernetes", "rt") + "\nsubnets: [" + SubnetID(LocalSubscription, "kubernetes", "v", "s") + "]\n",
			wantTable: RouteTableID(LocalSubscription, "kubernetes", "rt"),
			wantNets:  []string{SubnetID(LocalSubscription, "kubernetes", "v", "s")}},
		{name: "azure: subscription from the config",
			yaml:      "resourceGroup: prod\nrouteTable:\n  id: rt\nsubnets: [v/s]\ncloud:\n  type: azure\n  azure:\n    subscriptionID: " + azSub + "\n    useManagedIdentity: true\n",
			wantTable: RouteTableID(azSub, "prod", "rt"),
			wantNets:  []string{SubnetID(azSub, "prod", "v", "s")}},
		{name: "azure: group and subscription from azure.json",
			yaml:      "routeTable:\n  id: rt\nsubnets: [v/s]\ncloud:\n  azure:\n    configFile: azure.json\n",
			azureJSON: `{"subscriptionId": "` + azSub + `", "resourceGroup": "from-json", "useManagedIdentityExtension": true}`,
			wantTable: RouteTableID(azSub, "from-json", "rt"),
			wantNets:  []string{SubnetID(azSub, "from-json", "v", "s")}},
		{name: "azure without a subscription",
			yaml:    "resourceGroup: prod\nrouteTable:\n  id: rt\nsubnets: [v/s]\ncloud:\n  type: azure\n  azure:\n    useManagedIdentity: true\n",
			wantErr: `routeTable.id: "rt": a route table name needs a subscription (--subscription or cloud.azure.subscriptionID)`},
		{name: "subnet without its network",
			yaml:    "resourceGroup: kubernetes\nrouteTable:\n  id: rt\nsubnets: [kubernetes-subnet]\n",
			wantErr: `subnets[0]: "kubernetes-subnet": not a subnet ARM ID or <vnet>/<subnet>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := "cluster:\n  name: test\n  clusterCIDRs: [10.244.0.0/16]\nsource:\n  type: inventory\n  inventory:\n    file: nodes.yaml\n"
			path := writeFile(t, dir, "routekeeper.yaml", base+tc.yaml)
			if tc.azureJSON != "" {
				writeFile(t, dir, "azure.json", tc.azureJSON)
			}
			c, err := Load(path)
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RouteTable.ID != tc.wantTable {
				t.Errorf("routeTable.id = %s, want %s", c.RouteTable.ID, tc.wantTable)
			}
			if strings.Join(c.Subnets, ",") != strings.Join(tc.wantNets, ",") {
				t.Errorf("subnets = %v, want %v", c.Subnets, tc.wantNets)
			}
		})
	}
}

// TestMetricsAddressDefault: loopback outside a cluster, every interface
// of the pod in one; an explicit value (even "", off) always wins.
func TestMetricsAddressDefault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inCluster bool
		set       []string
		want      string
	}{
		{"laptop", false, nil, "127.0.0.1:10271"},
		{"pod", true, nil, ":10271"},
		{"off", true, []string{""}, ""},
		{"explicit", false, []string{":9100"}, ":9100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SetInCluster(tc.inCluster)
			if tc.set != nil {
				if err := c.Set("controller.metricsAddress", tc.set, "--metrics-address"); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Complete(); err != nil {
				t.Fatal(err)
			}
			if c.Controller.MetricsAddress != tc.want {
				t.Errorf("metricsAddress = %q, want %q", c.Controller.MetricsAddress, tc.want)
			}
		})
	}
}
