package deployments_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armdeployments"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func templateOf(t *testing.T, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ARM's errors: a template ARM refuses is 400 InvalidTemplate (with the
// line and column where ARM gives them) at validate and at PUT; a resource
// the provider refuses makes the deployment Failed with DeploymentFailed
// and the provider's error among the details.
func TestErrors(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW)
	ctx := context.Background()
	const badRoute = `{"resources": [{"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01", "name": "bad", "location": "eastus",
	  "properties": {"routes": [{"name": "r", "properties": {"addressPrefix": "10.0.0.0/8", "nextHopType": "VirtualAppliance"}}]}}]}`
	for _, tc := range []struct {
		name, template string
		params         map[string]any
		code, says     string
	}{
		{"a missing parameter", `{"parameters": {"routeTableId": {"type": "string"}}, "resources": []}`, nil,
			"InvalidTemplate", "The value for the template parameter 'routeTableId' at line '1' and column"},
		{"a circular dependency", `{"resources": [
		  {"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01", "name": "a", "dependsOn": ["b"]},
		  {"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01", "name": "b", "dependsOn": ["a"]}]}`, nil,
			"InvalidTemplate", "Circular dependency detected on resource"},
		{"an unknown function", `{"resources": [], "outputs": {"x": {"type": "string", "value": "[nosuch()]"}}}`, nil,
			"InvalidTemplate", "nosuch"},
		{"a route without its next hop address", badRoute, nil, "DeploymentFailed", "At least one resource deployment operation failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.deploy(t, strings.ReplaceAll(tc.name, " ", "-"), templateOf(t, tc.template), tc.params, armdeployments.DeploymentModeIncremental)
			var re *azcore.ResponseError
			if !errors.As(err, &re) && !strings.Contains(fmtErr(err), tc.code) {
				t.Fatalf("deploy: %v, want %s", err, tc.code)
			}
			if !strings.Contains(fmtErr(err), tc.code) || !strings.Contains(fmtErr(err), tc.says) {
				t.Errorf("deploy: %v\nwant %s saying %q", err, tc.code, tc.says)
			}
		})
	}

	// The failed deployment keeps the provider's error, with its target,
	// and its operation says Failed.
	d, err := e.deployments.Get(ctx, "kubernetes", "a-route-without-its-next-hop-address", nil)
	if err != nil {
		t.Fatal(err)
	}
	pe := d.Properties.Error
	if *d.Properties.ProvisioningState != armdeployments.ProvisioningStateFailed || pe == nil || *pe.Code != "DeploymentFailed" ||
		len(pe.Details) != 1 || !strings.HasSuffix(*pe.Details[0].Target, "/routeTables/bad") {
		t.Errorf("the failed deployment: %s %s", *d.Properties.ProvisioningState, fmtJSON(pe))
	}

	// validate: 200 with the validated resources, 400 InvalidTemplate
	// with the line and column of the template as sent.
	v, err := e.deployments.BeginValidate(ctx, "kubernetes", "check", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: example(t, "vnet-inline-subnet.json"), Mode: to.Ptr(armdeployments.DeploymentModeIncremental)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := v.PollUntilDone(ctx, poll)
	if err != nil || len(vr.Properties.ValidatedResources) != 1 {
		t.Errorf("validate: %s, %v", fmtJSON(vr), err)
	}
	_, err = e.deployments.BeginValidate(ctx, "kubernetes", "check", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: templateOf(t, `{"resources": [{"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01"}]}`),
		Mode:     to.Ptr(armdeployments.DeploymentModeIncremental)}}, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 400 || re.ErrorCode != "InvalidTemplate" {
		t.Errorf("validate of a resource without a name: %v", err)
	}

	// A deployment that does not exist, in a group that does not.
	if _, err := e.deployments.Get(ctx, "kubernetes", "nosuch", nil); !errors.As(err, &re) || re.ErrorCode != "DeploymentNotFound" {
		t.Errorf("GET of a missing deployment: %v", err)
	}
	if _, err := e.deployments.Get(ctx, "nosuch", "x", nil); !errors.As(err, &re) || re.ErrorCode != "ResourceGroupNotFound" {
		t.Errorf("GET in a missing group: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A deployment runs as its caller: a principal that may deploy but not
// write route tables gets DeploymentFailed with AuthorizationFailed.
func TestDeploymentRunsAsItsCaller(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW+`authorization:
  principals:
    - {name: deployer, clientId: deployer-app, objectId: 22222222-2222-2222-2222-222222222222}
  roleDefinitions:
    - Name: Deployer
      Actions: ["Microsoft.Resources/deployments/*", "*/read"]
      AssignableScopes: ["/subscriptions/`+fabrictest.Sub+`"]
  roleAssignments:
    - {principal: deployer, role: Deployer}
`)
	client, err := armdeployments.NewDeploymentsClient(fabrictest.Sub, fabric.Credential{ClientID: "deployer-app"}, e.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := client.BeginCreateOrUpdate(ctx, "kubernetes", "routes", armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: example(t, "route-table-inline-routes.json"), Mode: to.Ptr(armdeployments.DeploymentModeIncremental)}}, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, poll)
	}
	if err == nil || !strings.Contains(err.Error(), "DeploymentFailed") || !strings.Contains(err.Error(), "AuthorizationFailed") {
		t.Errorf("a deployment without the right to write the table: %v", err)
	}
	if got := e.routeNames(t); got != "" {
		t.Errorf("the table was written anyway: %q", got)
	}
}

// A deployment's operations are read under Microsoft.Resources/
// deployments/operations/read on the older path the SDKs call
// (…/resourcegroups/{rg}/deployments/{name}/operations), as on the
// provider path: a principal that may read the network only is refused,
// one that may read deployments reads them.
func TestDeploymentOperationsNeedTheirAction(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW+`authorization:
  principals:
    - {name: netreader, clientId: netreader-app, objectId: 33333333-3333-3333-3333-333333333333}
    - {name: depreader, clientId: depreader-app, objectId: 44444444-4444-4444-4444-444444444444}
  roleDefinitions:
    - Name: Network Reader
      Actions: ["Microsoft.Network/*/read"]
      AssignableScopes: ["/subscriptions/`+fabrictest.Sub+`"]
    - Name: Deployment Reader
      Actions: ["Microsoft.Resources/deployments/*/read", "Microsoft.Resources/deployments/read"]
      AssignableScopes: ["/subscriptions/`+fabrictest.Sub+`"]
  roleAssignments:
    - {principal: netreader, role: Network Reader}
    - {principal: depreader, role: Deployment Reader}
`)
	if _, err := e.deploy(t, "routes", example(t, "route-table-inline-routes.json"), nil, armdeployments.DeploymentModeIncremental); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		client string
		denied bool
	}{{"netreader-app", true}, {"depreader-app", false}} {
		ops, err := armdeployments.NewDeploymentOperationsClient(fabrictest.Sub, fabric.Credential{ClientID: tc.client}, e.Server.ClientOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, listErr := ops.NewListPager("kubernetes", "routes", nil).NextPage(ctx)
		switch {
		case tc.denied && (listErr == nil || !strings.Contains(listErr.Error(), "AuthorizationFailed") || !strings.Contains(listErr.Error(), "Microsoft.Resources/deployments/operations/read")):
			t.Errorf("%s lists the operations on the SDK's path: %v", tc.client, listErr)
		case !tc.denied && listErr != nil:
			t.Errorf("%s: %v", tc.client, listErr)
		}
	}
}
