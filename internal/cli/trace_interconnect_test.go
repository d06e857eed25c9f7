package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// hubSpoke is the KTHW example, routed by `run --once`, interconnected as
// in the fabric's hub-spoke topology: a hub peered with the cluster's
// network, whose VPN gateway reaches the datacenter (10.9/16, and
// 192.168.50.0/24 by BGP) and whose subnets route the pod CIDRs.
func hubSpoke(t *testing.T) string {
	t.Helper()
	cfg := ranKTHW(t)
	_, srv := sdkFactory(t, cfg)
	top, err := topology.LoadTopology(filepath.Join("..", "fabric", "testdata", "topology", "hub-spoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topology.Apply(context.Background(), top, srv.ClientOptions(), identity.Credential{}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTraceInterconnect(t *testing.T) {
	type step = traceStep
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		steps []step
	}{
		{
			name:  "hub and spoke",
			setup: hubSpoke,
			steps: []step{
				{"hub-to-pod", []string{"10.250.1.10", "worker-1"}, ExitOK},
				{"onprem-to-pod", []string{"10.9.1.1", "10.200.1.5"}, ExitOK},
				{"onprem-bgp-to-pod-json", []string{"192.168.50.7", "worker-0", "-o", "json"}, ExitOK},
				{"pod-to-onprem", []string{"10.200.0.5", "10.9.1.1"}, ExitOK}, // the packet is not delivered; the state has no finding
			},
		},
		{
			name: "the hub refuses forwarded traffic",
			setup: func(t *testing.T) string {
				cfg := hubSpoke(t)
				f, _ := sdkFactory(t, cfg)
				ctx := context.Background()
				pc := f.NewVirtualNetworkPeeringsClient()
				p, err := pc.Get(ctx, "hub", "hub-vnet", "to-kubernetes", nil)
				if err != nil {
					t.Fatal(err)
				}
				p.Properties.AllowForwardedTraffic = to.Ptr(false)
				poller, err := pc.BeginCreateOrUpdate(ctx, "hub", "hub-vnet", "to-kubernetes", p.VirtualNetworkPeering, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 1}); err != nil {
					t.Fatal(err)
				}
				return cfg
			},
			steps: []step{{"hub-no-forwarded", []string{"10.250.1.10", "worker-1"}, ExitOK}}, // from outside the guarded subnets: the packet's verdict, not the state's
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTraceSteps(t, tt.setup(t), tt.steps) })
	}
}

// The JSON result says where an on-premises source entered and which
// peering the packet crossed, for the pre-flight to read.
func TestTraceInterconnectJSON(t *testing.T) {
	cfg := hubSpoke(t)
	res := runCLI(t, nil, "", "trace", "--config", cfg, "10.9.1.1", "10.200.1.5", "-o", "json")
	var r struct {
		Verdict, Gateway, Peering, Subnet string
		ReturnRoute                       struct{ NextHopType string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, res.stdout)
	}
	if r.Verdict != "delivered" || r.Gateway != "hub-vpn" || r.Peering != "hub-vnet/to-kubernetes" || r.Subnet != "GatewaySubnet" ||
		r.ReturnRoute.NextHopType != "VirtualNetworkGateway" {
		t.Errorf("result: %+v", r)
	}
	if strings.Contains(res.stderr, "level=WARN") {
		t.Errorf("warnings: %s", res.stderr)
	}
}
