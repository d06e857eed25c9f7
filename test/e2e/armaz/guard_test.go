package armaz

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armdeployments"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// TestHazardRepairedInOneGuardCycle runs everywhere (no az): in process,
// through the SDK, the hazard's redeploy detaches the table and the very
// next guard cycle of routekeeper puts it back; a Complete mode deployment
// deletes the table and one guard cycle and the reconcile it asks for make
// it again, with the pod routes, on the subnet. The az suite above measures
// the same repairs against the served fabric.
func TestHazardRepairedInOneGuardCycle(t *testing.T) {
	ctx := context.Background()
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	node := func(name, ip, cidr string) source.Node {
		return source.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(cidr)}}
	}
	c := controller.New(controller.Config{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: kthw.TableID, Location: "eastus", CreateTable: true, Subnets: []string{kthw.SubnetID}, GuardInterval: time.Second, Resync: time.Hour},
		env.Client, nodesource.New(node("worker-0", "10.240.0.20", "10.200.0.0/24"), node("worker-1", "10.240.0.21", "10.200.1.0/24")), nil)
	if res := c.Reconcile(ctx); res.Err != nil {
		t.Fatal(res.Err)
	}
	deployments, err := armdeployments.NewDeploymentsClient(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := armnetwork.NewSubnetsClient(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	table := func() string {
		s, err := subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Properties.RouteTable == nil {
			return ""
		}
		return *s.Properties.RouteTable.ID
	}
	deploy := func(mode armdeployments.DeploymentMode) {
		t.Helper()
		p, err := deployments.BeginCreateOrUpdate(ctx, "kubernetes", "network", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
			Template: template(t, "vnet-inline-subnet.json"), Mode: to.Ptr(mode)}}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond})
		}
		if err != nil {
			t.Fatal(err)
		}
		if rt := table(); rt != "" {
			t.Fatalf("after the %s deployment the subnet keeps %s", mode, rt)
		}
	}

	deploy(armdeployments.DeploymentModeIncremental)
	if res := c.Guard(ctx); res.Err != nil || !strings.EqualFold(table(), kthw.TableID) {
		t.Fatalf("one guard cycle after the redeploy: %v, the subnet's table %q", res.Err, table())
	}

	deploy(armdeployments.DeploymentModeComplete)
	res := c.Guard(ctx)
	if !res.NeedsReconcile() {
		t.Fatalf("the guard cycle after Complete mode deleted the table does not ask for a reconcile: %+v", res)
	}
	if res := c.Reconcile(ctx); res.Err != nil || !strings.EqualFold(table(), kthw.TableID) {
		t.Fatalf("the reconcile the guard asked for: %v, the subnet's table %q", res.Err, table())
	}
}

// template reads a template of examples/kthw/arm, its // comments left out.
func template(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "kthw", "arm", name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//") {
			lines = append(lines, l)
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.Join(lines, "\n")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
