package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func TestDoctor(t *testing.T) {
	cfg := kthw(t)
	if res := runCLI(t, nil, "", "doctor", "--config", cfg); res.code != ExitError {
		t.Errorf("doctor before any run: exit %d, want 1 (no state to read)\n%s", res.code, res.stderr)
	}
	mustRun(t, cfg)
	res := wantExit(t, ExitOK, "doctor", "--config", cfg)
	golden(t, filepath.Join("testdata", "doctor", "healthy.golden"), []byte(res.stdout))

	// The IaC redeploy's VNet PUT drops the association, and someone types a
	// route over part of worker-1's pods.
	routes, _ := sdkRoutes(t, cfg)
	ctx := context.Background()
	p, err := routes.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", "inspect", armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.200.1.128/25"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.4")}}, nil)
	fabrictest.MustPoll(t, p, err)
	_, srv := sdkFactory(t, cfg)
	fabrictest.RedeployKTHWVNet(t, srv.ClientOptions())
	res = wantExit(t, ExitFindings, "doctor", "--config", cfg)
	golden(t, filepath.Join("testdata", "doctor", "detached.golden"), []byte(res.stdout))
	res = runCLI(t, nil, "", "doctor", "-o", "json", "--config", cfg)
	golden(t, filepath.Join("testdata", "doctor", "detached.json.golden"), []byte(res.stdout))
}
