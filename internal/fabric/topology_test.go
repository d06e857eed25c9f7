package fabric

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

func TestLoadTopology(t *testing.T) {
	top, err := topology.LoadTopology("testdata/topology/kthw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(top.ResourceGroups) != 1 || len(top.ResourceGroups[0].RouteTables[0].Routes) != 2 ||
		top.ResourceGroups[0].VirtualNetworks[0].Subnets[0].RouteTable != "kubernetes-routes" {
		t.Errorf("topology = %+v", top)
	}
	if _, err := topology.LoadTopology(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadTopologyErrors(t *testing.T) {
	const base = kthw.Topology + `            routeTable: kubernetes-routes
    routeTables:
      - name: kubernetes-routes
        routes:
          - {name: r0, addressPrefix: 10.200.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.20}
`
	for _, tc := range []struct {
		name, old, new string
		want           []string // parts of the error besides the file name
	}{
		{"unknown field", "    routeTables:", "    routeTabels:", []string{"unknown field", "routeTabels"}},
		{"bad yaml", "resourceGroups:", "resourceGroups: [", []string{"not a valid topology"}},
		{"no location", "location: eastus\n", "", []string{"resourceGroups[0].location", "missing"}},
		{"host bits", "addressPrefix: 10.240.0.0/24", "addressPrefix: 10.240.0.5/24", []string{"resourceGroups[0].virtualNetworks[0].subnets[0].addressPrefix", `"10.240.0.5/24"`, "10.240.0.0/24"}},
		{"subnet outside", "addressPrefix: 10.240.0.0/24", "addressPrefix: 10.9.0.0/24", []string{"subnets[0].addressPrefix", `"10.9.0.0/24"`, "outside"}},
		{"vnet prefix", "[10.240.0.0/16]", "[10.240.0.0/33]", []string{"virtualNetworks[0].addressPrefixes[0]", `"10.240.0.0/33"`}},
		{"unknown table", "routeTable: kubernetes-routes", "routeTable: other", []string{"subnets[0].routeTable", `"other"`}},
		{"bad table id", "routeTable: kubernetes-routes", "routeTable: /subscriptions/x/foo", []string{"subnets[0].routeTable", "/subscriptions/x/foo"}},
		{"bad name", "name: kubernetes-vnet", "name: kubernetes vnet", []string{"virtualNetworks[0].name", `"kubernetes vnet"`}},
		{"bad rg name", "name: kubernetes\n", "name: kubernetes.\n", []string{"resourceGroups[0].name", `"kubernetes."`}},
		{"next hop type", "nextHopType: VirtualAppliance", "nextHopType: Firewall", []string{"routes[0].nextHopType", `"Firewall"`}},
		{"next hop ip missing", ", nextHopIpAddress: 10.240.0.20}", "}", []string{"routes[0].nextHopIpAddress", "missing"}},
		{"next hop ip not allowed", "nextHopType: VirtualAppliance", "nextHopType: Internet", []string{"routes[0].nextHopIpAddress", `"10.240.0.20"`}},
		{"route prefix", "addressPrefix: 10.200.0.0/24", "addressPrefix: 10.200.0.1/24", []string{"routes[0].addressPrefix", `"10.200.0.1/24"`, "10.200.0.0/24"}},
		{"duplicate route prefix", "nextHopIpAddress: 10.240.0.20}\n", "nextHopIpAddress: 10.240.0.20}\n          - {name: r1, addressPrefix: 10.200.0.0/24, nextHopType: None}\n", []string{"routes[1].addressPrefix", "RouteConflict"}},
		{"table elsewhere", "      - name: kubernetes-routes\n", "      - name: kubernetes-routes\n        location: westus\n", []string{"subnets[0].routeTable", "westus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(base, tc.old, tc.new, 1)
			if doc == base {
				t.Fatal("the test case changes nothing")
			}
			path := filepath.Join(t.TempDir(), "topology.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := topology.LoadTopology(path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append([]string{path + ": "}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func applyFile(t *testing.T, e *env, path string) topology.ApplyResult {
	t.Helper()
	top, err := topology.LoadTopology(path)
	if err != nil {
		t.Fatal(err)
	}
	top.Subscription = testSub // the subscription of the test's clients
	res, err := topology.Apply(context.Background(), top, e.opts, identity.Credential{})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

func TestApply(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, mode, Options{OperationDuration: 20 * time.Millisecond})
			res := applyFile(t, e, "testdata/topology/kthw.yaml")
			if got := res.Count(topology.ActionCreate); got != 6 || res.Writes != 3 {
				t.Errorf("first apply: %d creates, %d writes: %+v", got, res.Writes, res.Changes)
			}
			// What Kubernetes the Hard Way on Azure builds with az, with the association.
			tbl, err := e.tables.Get(ctx, "kubernetes", "kubernetes-routes", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tbl.Properties.Routes) != 2 || len(tbl.Properties.Subnets) != 1 || api.Str(tbl.Tags["env"]) != "test" {
				t.Errorf("table = %v, subnets %d", routeNames(tbl.RouteTable), len(tbl.Properties.Subnets))
			}

			// Applying again writes nothing.
			res = applyFile(t, e, "testdata/topology/kthw.yaml")
			if res.Writes != 0 || res.Count(topology.ActionUnchanged) != 6 {
				t.Errorf("second apply: %d writes: %+v", res.Writes, res.Changes)
			}

			// Someone (routekeeper) adds a pod route and a claim tag; the
			// topology does not declare them: apply keeps them.
			tbl.Properties.Routes = append(tbl.Properties.Routes, vaRoute("worker-2____102002024", "10.200.2.0/24", "10.240.0.22"))
			tbl.Tags["routekeeper-cluster"] = api.Ptr("kthw")
			if _, err := e.putTable(withHeader(ctx, "If-Match", api.Str(tbl.Etag)), "kubernetes", "kubernetes-routes", tbl.RouteTable); err != nil {
				t.Fatal(err)
			}
			res = applyFile(t, e, "testdata/topology/kthw.yaml")
			if res.Writes != 0 {
				t.Errorf("apply over undeclared additions wrote %d times: %+v", res.Writes, res.Changes)
			}
			after := e.getTable(ctx, "kubernetes", "kubernetes-routes")
			if len(after.Properties.Routes) != 3 || api.Str(after.Tags["routekeeper-cluster"]) != "kthw" {
				t.Errorf("undeclared route or tag lost: %v %v", routeNames(after), after.Tags)
			}

			// A declared property that differs is updated, and only that.
			changed := strings.Replace(mustRead(t, "testdata/topology/kthw.yaml"), "nextHopIpAddress: 10.240.0.21", "nextHopIpAddress: 10.240.0.31", 1)
			path := filepath.Join(t.TempDir(), "changed.yaml")
			os.WriteFile(path, []byte(changed), 0o644)
			res = applyFile(t, e, path)
			if res.Writes != 1 || res.Count(topology.ActionUpdate) != 1 {
				t.Errorf("changed apply: %d writes %+v", res.Writes, res.Changes)
			}
			after = e.getTable(ctx, "kubernetes", "kubernetes-routes")
			if r := sdkRoute(after, "kubernetes-route-10-200-1-0-24"); api.Str(r.Properties.NextHopIPAddress) != "10.240.0.31" || len(after.Properties.Routes) != 3 {
				t.Errorf("after update: %v", routeNames(after))
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplyNeverDropsAnAssociation: the topology's subnet names no route
// table, and routekeeper associated one; re-applying (unlike an ARM
// redeploy that drops the route table assignment) keeps the association.
func TestApplyNeverDropsAnAssociation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "inprocess", Options{})
	doc := strings.Replace(mustRead(t, "testdata/topology/kthw.yaml"), "            routeTable: kubernetes-routes\n", "", 1)
	path := filepath.Join(t.TempDir(), "noassoc.yaml")
	os.WriteFile(path, []byte(doc), 0o644)
	applyFile(t, e, path)
	if len(e.getTable(ctx, "kubernetes", "kubernetes-routes").Properties.Subnets) != 0 {
		t.Fatal("associated without being asked")
	}
	tbl := e.getTable(ctx, "kubernetes", "kubernetes-routes")
	if _, err := e.putSubnet(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: tbl.ID}}}); err != nil {
		t.Fatal(err)
	}
	// Also widen the address space in the file: the VNet PUT must carry the
	// association along.
	doc = strings.Replace(doc, "[10.240.0.0/16]", "[10.240.0.0/16, 10.241.0.0/16]", 1)
	os.WriteFile(path, []byte(doc), 0o644)
	res := applyFile(t, e, path)
	if res.Writes != 1 {
		t.Errorf("writes = %d: %+v", res.Writes, res.Changes)
	}
	if ids := subnetIDs(e.getTable(ctx, "kubernetes", "kubernetes-routes")); len(ids) != 1 {
		t.Errorf("apply dropped the association: %v", ids)
	}
	v, err := e.vnets.Get(ctx, "kubernetes", "kubernetes-vnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.Properties.AddressSpace.AddressPrefixes); n != 2 {
		t.Errorf("address prefixes = %d", n)
	}
}

func TestApplyRetriesAConcurrentWrite(t *testing.T) {
	e := newEnv(t, "inprocess", Options{})
	applyFile(t, e, "testdata/topology/kthw.yaml")
	changed := strings.Replace(mustRead(t, "testdata/topology/kthw.yaml"), "10.240.0.21}", "10.240.0.41}", 1)
	path := filepath.Join(t.TempDir(), "changed.yaml")
	os.WriteFile(path, []byte(changed), 0o644)
	e.srv.SetFaults(Faults{IntruderNextGets: 1})
	res := applyFile(t, e, path)
	if res.Count(topology.ActionUpdate) != 1 || res.Writes != 1 {
		t.Errorf("apply after an intruder: %+v (%d writes)", res.Changes, res.Writes)
	}
	got := e.getTable(context.Background(), "kubernetes", "kubernetes-routes")
	if !slices.ContainsFunc(got.Properties.Routes, func(r *armnetwork.Route) bool { return strings.HasPrefix(api.Str(r.Name), "intruder-") }) {
		t.Error("the intruder's route was lost: apply overwrote a concurrent write")
	}
}

func TestSnapshot(t *testing.T) {
	e := newEnv(t, "loopback", Options{PageSize: 1})
	applyFile(t, e, "testdata/topology/kthw.yaml")
	e.createRG("empty")
	st, err := topology.Snapshot(context.Background(), e.opts, identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ResourceGroups) != 2 || len(st.VirtualNetworks) != 1 || len(st.RouteTables) != 1 {
		t.Fatalf("state = %+v", st)
	}
	rt := st.RouteTables[0]
	if rt.Name != "kubernetes-routes" || len(rt.Routes) != 2 || len(rt.Subnets) != 1 || rt.ResourceGroup != "kubernetes" {
		t.Errorf("table = %+v", rt)
	}
	if sn := st.VirtualNetworks[0].Subnets[0]; sn.RouteTable != rt.ID || sn.AddressPrefixes[0] != "10.240.0.0/24" {
		t.Errorf("subnet = %+v", sn)
	}
}
