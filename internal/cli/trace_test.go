package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// sdkFactory returns the real SDK's clients on the example's state file.
func sdkFactory(t *testing.T, cfgPath string) (*armnetwork.ClientFactory, *fabric.Server) {
	t.Helper()
	store, err := fabric.Open(context.Background(), filepath.Join(filepath.Dir(cfgPath), "fabric.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := fabric.New(store, fabric.Options{})
	f, err := armnetwork.NewClientFactory(fabric.DefaultSubscription, fabric.Credential{}, srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	return f, srv
}

func putRoute(t *testing.T, f *armnetwork.ClientFactory, table, name, prefix string, hop armnetwork.RouteNextHopType, ip string) {
	t.Helper()
	props := &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr(prefix), NextHopType: to.Ptr(hop)}
	if ip != "" {
		props.NextHopIPAddress = to.Ptr(ip)
	}
	ctx := context.Background()
	p, err := f.NewRoutesClient().BeginCreateOrUpdate(ctx, "kubernetes", table, name, armnetwork.Route{Properties: props}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// swapTable replays seed 000: someone creates rt-new (empty) and points
// the subnet at it.
func swapTable(t *testing.T, f *armnetwork.ClientFactory) {
	t.Helper()
	ctx := context.Background()
	p, err := f.NewRouteTablesClient().BeginCreateOrUpdate(ctx, "kubernetes", "rt-new", armnetwork.RouteTable{Location: to.Ptr("eastus")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := p.PollUntilDone(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := f.NewSubnetsClient()
	s, err := sc.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Properties.RouteTable = &armnetwork.RouteTable{ID: rt.ID}
	sp, err := sc.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", s.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// dualStack is the KTHW example with IPv6: the VNet and subnet get an IPv6
// range, the nodes an IPv6 address and an IPv6 pod CIDR.
func dualStack(t *testing.T) string {
	t.Helper()
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	writeFile(t, filepath.Join(dir, "topology.yaml"), `location: eastus
resourceGroups:
  - name: kubernetes
    virtualNetworks:
      - name: kubernetes-vnet
        addressPrefixes: [10.240.0.0/16, "fd00:10:240::/48"]
        subnets:
          - name: kubernetes-subnet
            addressPrefixes: [10.240.0.0/24, "fd00:10:240::/64"]
`)
	writeFile(t, filepath.Join(dir, "nodes.yaml"), `nodes:
  - name: worker-0
    internalIPs: [10.240.0.20, "fd00:10:240::20"]
    podCIDRs: [10.200.0.0/24, "fd00:10:200::/64"]
  - name: worker-1
    internalIPs: [10.240.0.21, "fd00:10:240::21"]
    podCIDRs: [10.200.1.0/24, "fd00:10:200:1::/64"]
`)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, strings.Replace(string(b), "clusterCIDRs: [10.200.0.0/16]", `clusterCIDRs: [10.200.0.0/16, "fd00:10:200::/56"]`, 1))
	res := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitOK {
		t.Fatalf("run (dual stack): exit %d\n%s", res.code, res.stderr)
	}
	return cfg
}

func TestTrace(t *testing.T) {
	type step struct {
		name     string
		args     []string
		wantCode int
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the config path
		steps []step
	}{
		{
			name: "healthy KTHW cluster",
			setup: func(t *testing.T) string {
				cfg := kthw(t)
				if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
					t.Fatalf("run: exit %d: %s", res.code, res.stderr)
				}
				return cfg
			},
			steps: []step{
				{"healthy", []string{"worker-0", "worker-1/10.200.1.5"}, ExitOK},
				{"healthy-json", []string{"10.200.0.5", "10.200.1.5", "-o", "json"}, ExitOK},
				{"node-to-node", []string{"worker-0", "10.240.0.21"}, ExitOK},
				{"outside-pod-cidrs", []string{"worker-0", "10.200.9.5"}, ExitFindings},
			},
		},
		{
			name: "detached subnet (seed 001)",
			setup: func(t *testing.T) string {
				cfg := kthw(t)
				if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
					t.Fatalf("run: exit %d: %s", res.code, res.stderr)
				}
				_, srv := sdkFactory(t, cfg)
				fabrictest.RedeployKTHWVNet(t, srv.ClientOptions())
				return cfg
			},
			steps: []step{{"detached", []string{"worker-0", "worker-1"}, ExitFindings}},
		},
		{
			name: "swapped table (seed 000)",
			setup: func(t *testing.T) string {
				cfg := kthw(t)
				if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
					t.Fatalf("run: exit %d: %s", res.code, res.stderr)
				}
				f, _ := sdkFactory(t, cfg)
				swapTable(t, f)
				return cfg
			},
			steps: []step{{"swapped", []string{"worker-0", "10.200.1.5"}, ExitFindings}},
		},
		{
			name: "0.0.0.0/0 to a firewall",
			setup: func(t *testing.T) string {
				cfg := kthw(t)
				if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
					t.Fatalf("run: exit %d: %s", res.code, res.stderr)
				}
				f, _ := sdkFactory(t, cfg)
				putRoute(t, f, "kubernetes-routes", "to-firewall", "0.0.0.0/0", armnetwork.RouteNextHopTypeVirtualAppliance, "10.240.1.4")
				return cfg
			},
			steps: []step{
				{"firewall-internet", []string{"worker-0", "1.1.1.1"}, ExitFindings},
				{"firewall-pod", []string{"worker-0", "10.200.1.5"}, ExitOK},
				{"firewall-unknown-pod", []string{"worker-0", "10.200.9.5"}, ExitFindings},
			},
		},
		{
			name:  "IPv6 pod CIDR",
			setup: dualStack,
			steps: []step{
				{"ipv6", []string{"worker-0", "fd00:10:200:1::5"}, ExitOK},
				{"ipv6-node-name", []string{"fd00:10:200::7", "worker-1"}, ExitOK},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.setup(t)
			for _, s := range tt.steps {
				args := append([]string{"trace", "--config", cfg}, s.args...)
				res := runCLI(t, nil, "", args...)
				if res.code != s.wantCode {
					t.Errorf("%s: trace %v: exit %d, want %d\n%s%s", s.name, s.args, res.code, s.wantCode, res.stdout, res.stderr)
				}
				golden(t, filepath.Join("testdata", "trace", s.name+".golden"), []byte(res.stdout))
			}
		})
	}
}

func TestTraceBadInput(t *testing.T) {
	cfg := kthw(t)
	if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"worker-9", "worker-1"}, `SRC "worker-9" is neither an IP address, a node name nor node/pod-ip`},
		{[]string{"worker-0", "nobody/10.200.1.5"}, `DST "nobody/10.200.1.5": no node named "nobody"`},
		{[]string{"worker-0"}, "accepts 2 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.wantErr, func(t *testing.T) {
			res := runCLI(t, nil, "", append([]string{"trace", "--config", cfg}, tt.args...)...)
			if res.code != ExitUsage || !strings.Contains(res.stderr, tt.wantErr) {
				t.Errorf("trace %v: exit %d, stderr %q; want 2 and %q", tt.args, res.code, res.stderr, tt.wantErr)
			}
		})
	}
}
