package deployments_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armdeployments"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// podRoutes are the Hard Way cluster's pod routes, as routekeeper names them.
var podRoutes = map[string][2]string{
	"worker-0____102000024": {"10.200.0.0/24", "10.240.0.20"},
	"worker-1____102001024": {"10.200.1.0/24", "10.240.0.21"},
}

// keepRoutes does routekeeper's part: the pod routes in kubernetes-routes
// and the table on the subnet.
func (e *env) keepRoutes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	routes, err := armnetwork.NewRoutesClient(fabrictest.Sub, fabric.Credential{}, e.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range podRoutes {
		p, err := routes.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", name, armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr(r[0]), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr(r[1])}}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, poll)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := e.subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(fabrictest.KTHWTable)}
	p, err := e.subnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", s.Subnet, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, poll)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// routeNames lists the routes of kubernetes-routes, "" when it is gone.
func (e *env) routeNames(t *testing.T) string {
	t.Helper()
	rt, err := e.tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		return ""
	}
	var names []string
	for _, r := range rt.Properties.Routes {
		names = append(names, *r.Name)
	}
	return strings.Join(names, ",")
}

// The post-mortems' ARM path, in process through the SDK: the hazards
// really detach the table and delete the pod routes; each fix keeps them;
// Complete mode deletes the table the template does not declare.
func TestTemplatesOfThePostMortems(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW)
	inc, complete := armdeployments.DeploymentModeIncremental, armdeployments.DeploymentModeComplete

	// The table under a template with its inline route, then routekeeper's
	// pod routes and association.
	res, err := e.deploy(t, "routes", example(t, "route-table-inline-routes.json"), nil, inc)
	if err != nil {
		t.Fatal(err)
	}
	if got := *res.Properties.ProvisioningState; got != armdeployments.ProvisioningStateSucceeded {
		t.Fatalf("provisioningState = %s", got)
	}
	if out := res.Properties.Outputs.(map[string]any)["routeTableId"].(map[string]any)["value"]; !strings.EqualFold(out.(string), fabrictest.KTHWTable) {
		t.Errorf("output routeTableId = %v", out)
	}
	e.keepRoutes(t)

	// Hazard 1: the VNet with its subnet inline and no routeTable.
	if _, err := e.deploy(t, "network", example(t, "vnet-inline-subnet.json"), nil, inc); err != nil {
		t.Fatal(err)
	}
	if rt := e.routeTableOf(t); rt != "" {
		t.Fatalf("after the inline-subnet redeploy the subnet keeps %s; want it detached", rt)
	}
	e.keepRoutes(t)

	// Fix 1: the table read first and passed in.
	if _, err := e.deploy(t, "network", example(t, "fix-route-table-parameter.json"), map[string]any{"routeTableId": fabrictest.KTHWTable}, inc); err != nil {
		t.Fatal(err)
	}
	if rt := e.routeTableOf(t); !strings.EqualFold(rt, fabrictest.KTHWTable) {
		t.Errorf("fix 1: the subnet's table is %q", rt)
	}

	// Fix 2: the nested template reads it with reference().
	if _, err := e.deploy(t, "network", example(t, "fix-nested-reference.json"), nil, inc); err != nil {
		t.Fatal(err)
	}
	if rt := e.routeTableOf(t); !strings.EqualFold(rt, fabrictest.KTHWTable) {
		t.Errorf("fix 2: the subnet's table is %q", rt)
	}
	nested, err := e.deployments.Get(context.Background(), "kubernetes", "current-subnet", nil)
	if err != nil || *nested.Properties.ProvisioningState != armdeployments.ProvisioningStateSucceeded {
		t.Errorf("the nested deployment current-subnet: %+v, %v", nested, err)
	}

	// Hazard 2: the table's inline routes replace the pod routes.
	if _, err := e.deploy(t, "routes", example(t, "route-table-inline-routes.json"), nil, inc); err != nil {
		t.Fatal(err)
	}
	if got := e.routeNames(t); got != "default-egress" {
		t.Errorf("after the inline-routes redeploy the table holds %q; want default-egress only", got)
	}
	e.keepRoutes(t)

	// Fix 3: the route as a child resource of its own.
	if _, err := e.deploy(t, "egress", example(t, "fix-route-child-resource.json"), nil, inc); err != nil {
		t.Fatal(err)
	}
	if got := e.routeNames(t); strings.Count(got, ",") != 2 {
		t.Errorf("fix 3: the table holds %q; want the egress route and both pod routes", got)
	}

	// Complete mode: the VNet PUT drops the association, then the table,
	// which the template does not declare, is deleted.
	if _, err := e.deploy(t, "network", example(t, "vnet-inline-subnet.json"), nil, complete); err != nil {
		t.Fatal(err)
	}
	if rt := e.routeTableOf(t); rt != "" {
		t.Errorf("Complete mode: the subnet keeps %s", rt)
	}
	if got := e.routeNames(t); got != "" {
		t.Errorf("Complete mode: the route table is still there with %q", got)
	}
	var kinds []string
	pager := e.operations.NewListPager("kubernetes", "network", nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Value {
			kinds = append(kinds, string(*o.Properties.ProvisioningOperation)+" "+*o.Properties.TargetResource.ResourceName+" "+*o.Properties.StatusCode)
		}
	}
	if got := strings.Join(kinds, "; "); got != "Create kubernetes-vnet OK; Delete kubernetes-routes Accepted" {
		t.Errorf("Complete mode's operations: %s", got)
	}
}

// With an operation duration the deployment runs in the background:
// Accepted, Running, then Succeeded, as the SDK's poller follows it.
func TestDeploymentRunsInTheBackground(t *testing.T) {
	e := newEnv(t, fabric.Options{OperationDuration: 30 * time.Millisecond}, fabrictest.KTHW)
	ctx := context.Background()
	p, err := e.deployments.BeginCreateOrUpdate(ctx, "kubernetes", "routes", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: example(t, "route-table-inline-routes.json"), Mode: to.Ptr(armdeployments.DeploymentModeIncremental)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.deployments.Get(ctx, "kubernetes", "routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := *d.Properties.ProvisioningState; s != armdeployments.ProvisioningStateAccepted && s != armdeployments.ProvisioningStateRunning {
		t.Errorf("right after the PUT: %s, want Accepted or Running", s)
	}
	if _, err := e.deployments.BeginCreateOrUpdate(ctx, "kubernetes", "routes", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: example(t, "route-table-inline-routes.json"), Mode: to.Ptr(armdeployments.DeploymentModeIncremental)}}, nil); err == nil || !strings.Contains(err.Error(), "DeploymentActive") {
		t.Errorf("a second PUT while it runs: %v, want DeploymentActive", err)
	}
	res, err := p.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatal(err)
	}
	if *res.Properties.ProvisioningState != armdeployments.ProvisioningStateSucceeded || *res.Properties.Duration == "PT0S" {
		t.Errorf("at the end: %s after %s", *res.Properties.ProvisioningState, *res.Properties.Duration)
	}
}
