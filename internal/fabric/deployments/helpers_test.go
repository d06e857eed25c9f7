package deployments_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armdeployments"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// env is an in-memory fabric with the SDK's deployments and network
// clients on it.
type env struct {
	*fabrictest.Env
	deployments *armdeployments.DeploymentsClient
	operations  *armdeployments.DeploymentOperationsClient
	subnets     *armnetwork.SubnetsClient
	tables      *armnetwork.RouteTablesClient
}

func newEnv(t *testing.T, opts fabric.Options, topology string) *env {
	t.Helper()
	e := &env{Env: fabrictest.New(t, opts, topology)}
	co := e.Server.ClientOptions()
	var err error
	if e.deployments, err = armdeployments.NewDeploymentsClient(fabrictest.Sub, fabric.Credential{}, co); err != nil {
		t.Fatal(err)
	}
	if e.operations, err = armdeployments.NewDeploymentOperationsClient(fabrictest.Sub, fabric.Credential{}, co); err != nil {
		t.Fatal(err)
	}
	if e.subnets, err = armnetwork.NewSubnetsClient(fabrictest.Sub, fabric.Credential{}, co); err != nil {
		t.Fatal(err)
	}
	if e.tables, err = armnetwork.NewRouteTablesClient(fabrictest.Sub, fabric.Credential{}, co); err != nil {
		t.Fatal(err)
	}
	return e
}

var poll = &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}

// example reads a template of examples/kthw/arm.
func example(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "kthw", "arm", name))
	if err != nil {
		t.Fatal(err)
	}
	return jsonc(t, b)
}

// jsonc decodes a template that may hold // comments (the examples do).
func jsonc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var out []byte
	for _, line := range splitLines(b) {
		trimmed := trimSpace(line)
		if len(trimmed) >= 2 && trimmed[0] == '/' && trimmed[1] == '/' {
			continue
		}
		out = append(out, line...)
		out = append(out, '\n')
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("template: %v", err)
	}
	return m
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// deploy runs a deployment to its end with the SDK's poller.
func (e *env) deploy(t *testing.T, name string, template map[string]any, params map[string]any, mode armdeployments.DeploymentMode) (armdeployments.DeploymentsClientCreateOrUpdateResponse, error) {
	t.Helper()
	ctx := context.Background()
	p, err := e.deployments.BeginCreateOrUpdate(ctx, "kubernetes", name, armdeployments.Deployment{Properties: &armdeployments.DeploymentProperties{
		Template: template, Parameters: values(params), Mode: to.Ptr(mode)}}, nil)
	if err != nil {
		return armdeployments.DeploymentsClientCreateOrUpdateResponse{}, err
	}
	return p.PollUntilDone(ctx, poll)
}

func values(plain map[string]any) map[string]*armdeployments.DeploymentParameter {
	out := map[string]*armdeployments.DeploymentParameter{}
	for k, v := range plain {
		out[k] = &armdeployments.DeploymentParameter{Value: v}
	}
	return out
}

// routeTableOf is the ID of the route table the KTHW subnet uses, "" for none.
func (e *env) routeTableOf(t *testing.T) string {
	t.Helper()
	s, err := e.subnets.Get(context.Background(), "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Properties.RouteTable == nil {
		return ""
	}
	return *s.Properties.RouteTable.ID
}
