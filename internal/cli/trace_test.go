package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	kthwnet "github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// openFabric opens the fabric state file at path and serves it in process,
// for a test's set-up or checks; the caller must call closeStore.
func openFabric(t *testing.T, path string) (srv *fabric.Server, closeStore func()) {
	t.Helper()
	store, err := fabric.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return fabric.New(store, fabric.Options{}), func() { store.Close() }
}

// sdkFactory returns the real SDK's clients on the example's state file.
func sdkFactory(t *testing.T, cfgPath string) (*armnetwork.ClientFactory, *fabric.Server) {
	t.Helper()
	srv, closeStore := openFabric(t, filepath.Join(filepath.Dir(cfgPath), "fabric.db"))
	t.Cleanup(closeStore)
	f, err := armnetwork.NewClientFactory(fabric.DefaultSubscription, identity.Credential{}, srv.ClientOptions())
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
	fabrictest.MustPoll(t, p, err)
}

// swapTable replays the route-table swap: someone creates rt-new (empty)
// and points the subnet at it.
func swapTable(t *testing.T, f *armnetwork.ClientFactory) {
	t.Helper()
	associateNewTable(t, f, "rt-new")
}

// associateNewTable creates the route table name with routes in the KTHW
// resource group and makes kubernetes-subnet use it, through the SDK.
func associateNewTable(t *testing.T, f *armnetwork.ClientFactory, name string, routes ...*armnetwork.Route) {
	t.Helper()
	ctx := context.Background()
	table := armnetwork.RouteTable{Location: to.Ptr("eastus")}
	if len(routes) > 0 {
		table.Properties = &armnetwork.RouteTablePropertiesFormat{Routes: routes}
	}
	p, err := f.NewRouteTablesClient().BeginCreateOrUpdate(ctx, "kubernetes", name, table, nil)
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
	fabrictest.MustPoll(t, sp, err)
}

// traceStep is one `routekeeper trace` of a scenario and its golden file.
type traceStep struct {
	name     string // of the golden file, testdata/trace/<name>.golden
	args     []string
	wantCode int
}

// runTraceSteps runs each step's trace on cfg and compares the output with
// its golden file.
func runTraceSteps(t *testing.T, cfg string, steps []traceStep) {
	t.Helper()
	for _, s := range steps {
		args := append([]string{"trace", "--config", cfg}, s.args...)
		res := runCLI(t, nil, "", args...)
		if res.code != s.wantCode {
			t.Errorf("%s: trace %v: exit %d, want %d\n%s%s", s.name, s.args, res.code, s.wantCode, res.stdout, res.stderr)
		}
		golden(t, filepath.Join("testdata", "trace", s.name+".golden"), []byte(res.stdout))
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
	mustRun(t, cfg)
	return cfg
}

func TestTrace(t *testing.T) {
	type step = traceStep
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the config path
		steps []step
	}{
		{
			name: "healthy KTHW cluster",
			setup: func(t *testing.T) string {
				cfg := ranKTHW(t)
				return cfg
			},
			steps: []step{
				{"healthy", []string{"worker-0", "worker-1/10.200.1.5"}, ExitOK},
				{"healthy-json", []string{"10.200.0.5", "10.200.1.5", "-o", "json"}, ExitOK},
				{"node-to-node", []string{"worker-0", "10.240.0.21"}, ExitOK},
				// Not delivered, on a healthy cluster: the packet's verdict
				// is printed; the exit status is the state's (no finding).
				{"outside-pod-cidrs", []string{"worker-0", "10.200.9.5"}, ExitOK},
				{"no-subnet", []string{"192.0.2.1", "worker-1"}, ExitOK},
				{"healthy-yaml", []string{"worker-0", "worker-1", "-o", "yaml"}, ExitOK},
			},
		},
		{
			name: "detached subnet (IaC redeploy)",
			setup: func(t *testing.T) string {
				cfg := ranKTHW(t)
				_, srv := sdkFactory(t, cfg)
				fabrictest.RedeployKTHWVNet(t, srv.ClientOptions())
				return cfg
			},
			steps: []step{{"detached", []string{"worker-0", "worker-1"}, ExitFindings}},
		},
		{
			name: "swapped table",
			setup: func(t *testing.T) string {
				cfg := ranKTHW(t)
				f, _ := sdkFactory(t, cfg)
				swapTable(t, f)
				return cfg
			},
			steps: []step{{"swapped", []string{"worker-0", "10.200.1.5"}, ExitFindings}},
		},
		{
			name: "0.0.0.0/0 to a firewall",
			setup: func(t *testing.T) string {
				cfg := ranKTHW(t)
				f, _ := sdkFactory(t, cfg)
				putRoute(t, f, "kubernetes-routes", "to-firewall", "0.0.0.0/0", armnetwork.RouteNextHopTypeVirtualAppliance, "10.240.1.4")
				return cfg
			},
			steps: []step{
				{"firewall-internet", []string{"worker-0", "1.1.1.1"}, ExitOK},
				{"firewall-pod", []string{"worker-0", "10.200.1.5"}, ExitOK},
				{"firewall-unknown-pod", []string{"worker-0", "10.200.9.5"}, ExitOK},
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
		t.Run(tt.name, func(t *testing.T) { runTraceSteps(t, tt.setup(t), tt.steps) })
	}
}

func TestTraceBadInput(t *testing.T) {
	cfg := ranKTHW(t)
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

// withNICs adds the workers' NICs (IP forwarding on) to the example's
// topology, so the fabric can answer Azure's own routing questions.
func withNICs(t *testing.T, cfg string) {
	t.Helper()
	path := filepath.Join(filepath.Dir(cfg), "topology.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The workers' NICs, with IP forwarding on worker-1-nic too.
	writeFile(t, path, string(b)+kthwnet.NICs+"        enableIPForwarding: true\n")
}

// TestTraceMatchesAzureNextHop: for every incident, the real SDK's
// Network Watcher next hop and the NIC's effective routes, answered by the
// fabric, say what `routekeeper trace -o json` says.
func TestTraceMatchesAzureNextHop(t *testing.T) {
	ctx := context.Background()
	scenarios := []struct {
		name  string
		dual  bool
		setup func(t *testing.T, f *armnetwork.ClientFactory, srv *fabric.Server)
	}{
		{"healthy", false, func(*testing.T, *armnetwork.ClientFactory, *fabric.Server) {}},
		{"detached", false, func(t *testing.T, _ *armnetwork.ClientFactory, srv *fabric.Server) {
			fabrictest.RedeployKTHWVNet(t, srv.ClientOptions())
		}},
		{"swapped", false, func(t *testing.T, f *armnetwork.ClientFactory, _ *fabric.Server) { swapTable(t, f) }},
		{"firewall", false, func(t *testing.T, f *armnetwork.ClientFactory, _ *fabric.Server) {
			putRoute(t, f, "kubernetes-routes", "to-firewall", "0.0.0.0/0", armnetwork.RouteNextHopTypeVirtualAppliance, "10.240.1.4")
		}},
		{"dual-stack", true, func(*testing.T, *armnetwork.ClientFactory, *fabric.Server) {}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var cfg string
			if sc.dual {
				cfg = dualStack(t)
				withNICs(t, cfg)
				// The state exists already (run applies the topology only
				// to a new one): add the NICs with fabric apply.
				topo := filepath.Join(filepath.Dir(cfg), "topology.yaml")
				wantExit(t, ExitOK, "fabric", "apply", "-f", topo, "--config", cfg)
				mustRun(t, cfg)
			} else {
				cfg = kthw(t)
				withNICs(t, cfg)
				mustRun(t, cfg)
			}
			f, srv := sdkFactory(t, cfg)
			sc.setup(t, f, srv)
			if _, err := f.NewWatchersClient().CreateOrUpdate(ctx, "kubernetes", "NetworkWatcher_eastus", armnetwork.Watcher{Location: to.Ptr("eastus")}, nil); err != nil {
				t.Fatal(err)
			}
			nic, err := f.NewInterfacesClient().Get(ctx, "kubernetes", "worker-0-nic", nil)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := f.NewInterfacesClient().BeginGetEffectiveRouteTable(ctx, "kubernetes", "worker-0-nic", nil)
			if err != nil {
				t.Fatal(err)
			}
			eff, err := ep.PollUntilDone(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			effective := map[string]bool{}
			for _, r := range eff.Value {
				ip := ""
				if len(r.NextHopIPAddress) > 0 {
					ip = *r.NextHopIPAddress[0]
				}
				effective[fmt.Sprintf("%s %s %s %s %s", *r.Source, *r.State, *r.AddressPrefix[0], *r.NextHopType, ip)] = true
			}
			dsts := []string{"10.200.1.5", "10.200.0.9", "10.200.9.5", "10.240.0.21", "1.1.1.1"}
			if sc.dual {
				dsts = append(dsts, "fd00:10:200:1::5", "fd00:10:200:9::5", "fd00:10:240::21", "2001:db8::1")
			}
			for _, dst := range dsts {
				res := runCLI(t, nil, "", "trace", "--config", cfg, "-o", "json", "worker-0", dst)
				var tr struct {
					NextHopType      string `json:"nextHopType"`
					NextHopIPAddress string `json:"nextHopIpAddress"`
					NextHopRouteTbl  string `json:"nextHopRouteTableId"`
					Route            *struct {
						Source, State, AddressPrefix, NextHopType, NextHopIPAddress string
					} `json:"route"`
					Shadowed []struct {
						Source, State, AddressPrefix, NextHopType, NextHopIPAddress string
					} `json:"shadowed"`
				}
				if err := json.Unmarshal([]byte(res.stdout), &tr); err != nil {
					t.Fatalf("trace %s: %v\n%s%s", dst, err, res.stdout, res.stderr)
				}
				np, err := f.NewWatchersClient().BeginGetNextHop(ctx, "kubernetes", "NetworkWatcher_eastus", armnetwork.NextHopParameters{
					TargetResourceID: nic.ID, SourceIPAddress: to.Ptr("10.240.0.20"), DestinationIPAddress: to.Ptr(dst)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				nh, err := np.PollUntilDone(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("%s %s %s", *nh.NextHopType, deref(nh.NextHopIPAddress), deref(nh.RouteTableID))
				want := fmt.Sprintf("%s %s %s", tr.NextHopType, tr.NextHopIPAddress, tr.NextHopRouteTbl)
				if !strings.EqualFold(got, want) {
					t.Errorf("%s: Network Watcher says %q, trace says %q", dst, got, want)
				}
				if tr.Route == nil {
					continue
				}
				for _, r := range append(tr.Shadowed, *tr.Route) {
					k := fmt.Sprintf("%s %s %s %s %s", r.Source, r.State, r.AddressPrefix, r.NextHopType, r.NextHopIPAddress)
					if !effective[k] {
						t.Errorf("%s: trace shows route %q, which is not among the NIC's effective routes %v", dst, k, effective)
					}
				}
			}
		})
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestDoctorIPForwarding: a node NIC without IP forwarding is an error
// finding of doctor, read through the same client as every command, and
// run --once, which observes what doctor observes, gives the same answer.
func TestDoctorIPForwarding(t *testing.T) {
	cfg := kthw(t)
	withNICs(t, cfg)
	path := filepath.Join(filepath.Dir(cfg), "topology.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// worker-1's NIC is the last one declared: turn its forwarding off.
	s := string(b)
	i := strings.LastIndex(s, "        enableIPForwarding: true\n")
	writeFile(t, path, s[:i]+s[i+len("        enableIPForwarding: true\n"):])
	wantExit(t, ExitFindings, "run", "--once", "--config", cfg)
	res := wantExit(t, ExitFindings, "doctor", "--config", cfg)
	golden(t, filepath.Join("testdata", "doctor", "ip-forwarding.golden"), []byte(res.stdout))
}

// TestTraceFromAMirrorSubnet: from the App Gateway subnet of the mirror
// example, a pod is reached through the mirror table's pod route, and
// before routekeeper wrote it the gateway's own default route sends the
// packet to the Internet.
func TestTraceFromAMirrorSubnet(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"routekeeper.yaml", "nodes.yaml", "topology.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "kthw-appgw", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	cfg := filepath.Join(dir, "routekeeper.yaml")
	// The state and the main table first (the gateway's table has no pod
	// route yet), then the mirror.
	wantExit(t, ExitOK, "fabric", "apply", "-f", filepath.Join(dir, "topology.yaml"), "--config", cfg)
	before := runCLI(t, nil, "", "trace", "10.240.2.10", "10.200.1.5", "--config", cfg, "-o", "json")
	if before.code != ExitFindings || !strings.Contains(before.stdout, `"verdict": "internet"`) {
		t.Errorf("before run: exit %d, want 3 and the gateway's default route to the Internet:\n%s%s", before.code, before.stdout, before.stderr)
	}
	mustRun(t, cfg)
	after := runCLI(t, nil, "", "trace", "10.240.2.10", "10.200.1.5", "--config", cfg, "-o", "json")
	if after.code != ExitOK || !strings.Contains(after.stdout, `"verdict": "delivered"`) || !strings.Contains(after.stdout, "appgw-routes") {
		t.Errorf("after run: exit %d, want 0, delivered through appgw-routes:\n%s%s", after.code, after.stdout, after.stderr)
	}
}
