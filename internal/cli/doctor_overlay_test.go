package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

const kthwTableID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"

// associate points subnet (of kubernetes-vnet) to route table id through
// the SDK, as an operator's az network vnet subnet update does.
func associate(t *testing.T, cfg, subnet, table string) {
	t.Helper()
	f, _ := sdkFactory(t, cfg)
	ctx := context.Background()
	sc := f.NewSubnetsClient()
	s, err := sc.Get(ctx, "kubernetes", "kubernetes-vnet", subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(table)}
	p, err := sc.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", subnet, s.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 1}); err != nil {
		t.Fatal(err)
	}
}

// withoutMirrors drops the mirrors block of an example's configuration:
// the gateway is then served by the node table itself (AGIC's way).
func withoutMirrors(t *testing.T, cfg string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start, end := strings.Index(s, "\nmirrors:"), strings.Index(s, "\ncloud:")
	if start < 0 || end < start {
		t.Fatalf("no mirrors block in %s", cfg)
	}
	writeFile(t, cfg, s[:start]+s[end:])
}

// ranOnce is a setup that makes a config with mk and runs it once.
func ranOnce(mk func(*testing.T) string) func(*testing.T) string {
	return func(t *testing.T) string {
		cfg := mk(t)
		mustRun(t, cfg)
		return cfg
	}
}

// TestDoctorOverlay is the pre-flight of the move to an overlay through the
// CLI, against the fabric through the real SDK: the examples, their
// interconnect, and the target pod CIDR.
func TestDoctorOverlay(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		args  []string
		code  int
		wants []string
	}{
		{
			// The gateway reaches the pods through its mirror table.
			name:  "appgw-mirror",
			setup: ranOnce(kthwAppGW),
			code:  ExitFindings,
			wants: []string{"overlay-reachability", "appgw-subnet", "route table appgw-routes", "overlay-mirror"},
		},
		{
			// The gateway subnet on the node table itself.
			name: "appgw-on-node-table",
			setup: func(t *testing.T) string {
				cfg := kthwAppGW(t)
				withoutMirrors(t, cfg)
				mustRun(t, cfg)
				associate(t, cfg, "appgw-subnet", kthwTableID)
				return cfg
			},
			code:  ExitFindings,
			wants: []string{"overlay-shared-table", "migration blocker: route table kubernetes-routes is associated with subnet appgw-subnet"},
		},
		{
			name:  "kthw-clear",
			setup: ranOnce(kthw),
			args:  []string{"--pod-cidr", "192.168.0.0/16"},
			code:  ExitOK,
			wants: []string{"Nothing blocks the move", "192.168.0.0/16"},
		},
		{
			name:  "kthw-overlap",
			setup: ranOnce(kthw),
			args:  []string{"--pod-cidr", "10.240.128.0/17"},
			code:  ExitFindings,
			wants: []string{"overlay-pod-cidr", "target pod CIDR 10.240.128.0/17 overlaps the node virtual network's address space 10.240.0.0/16"},
		},
		{
			// A hub peered with the cluster's network reaches the pods, and
			// so does the datacenter behind its VPN gateway; the target
			// runs into the hub and a range the gateway learned.
			name:  "hub-spoke",
			setup: hubSpoke,
			args:  []string{"--pod-cidr", "192.168.0.0/16"},
			code:  ExitFindings,
			wants: []string{"subnet shared (10.250.1.0/24, in hub-vnet) reaches 2 of 2", "on premises 10.9.0.0/16 reaches 2 of 2", "learned by gateway hub-vpn 192.168.50.0/24"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.setup(t)
			args := append([]string{"doctor", "--target", "overlay", "--config", cfg}, tt.args...)
			res := runCLI(t, nil, "", args...)
			if res.code != tt.code {
				t.Errorf("doctor --target overlay %v: exit %d, want %d\n%s%s", tt.args, res.code, tt.code, res.stdout, res.stderr)
			}
			for _, w := range tt.wants {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, res.stdout)
				}
			}
			golden(t, filepath.Join("testdata", "doctor", "overlay-"+tt.name+".golden"), []byte(res.stdout))
		})
	}
}

// The pre-flight's output formats: JSON with who reaches the pods and the
// fate of each route, and --query on it.
func TestDoctorOverlayOutput(t *testing.T) {
	cfg := kthwAppGW(t)
	mustRun(t, cfg)
	res := wantExit(t, ExitFindings, "doctor", "--target", "overlay", "--config", cfg, "-o", "json")
	var rep struct {
		Target      []string
		KeptPodCIDR bool
		Reachers    []struct{ Source, RouteTable string }
		Routes      []struct {
			Name string
			Ours bool
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(rep.Target) != 1 || rep.Target[0] != "10.200.0.0/16" || !rep.KeptPodCIDR || len(rep.Reachers) != 1 || rep.Reachers[0].Source != "appgw-subnet" ||
		!strings.HasSuffix(rep.Reachers[0].RouteTable, "/appgw-routes") || len(rep.Routes) != 2 || !rep.Routes[0].Ours {
		t.Errorf("report %+v", rep)
	}
	golden(t, filepath.Join("testdata", "doctor", "overlay-appgw-mirror.json.golden"), []byte(res.stdout))
	q := runCLI(t, nil, "", "doctor", "--target", "overlay", "--config", cfg, "--query", "reachers[].source", "-o", "tsv")
	if q.code != ExitFindings || strings.TrimSpace(q.stdout) != "appgw-subnet" {
		t.Errorf("--query reachers[].source -o tsv: exit %d %q %s", q.code, q.stdout, q.stderr)
	}
}

// Bad flags exit 2 naming the flag and the value, before anything is read.
func TestDoctorOverlayUsage(t *testing.T) {
	cfg := kthw(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "overlay", "--pod-cidr", "10.300.0.0/16"}, `--pod-cidr "10.300.0.0/16": not a CIDR`},
		{[]string{"--target", "overlay", "--pod-cidr", "192.168.1.0/16"}, `--pod-cidr "192.168.1.0/16": host bits set; did you mean 192.168.0.0/16?`},
		{[]string{"--target", "overlay", "--pod-cidr", "10.1.0.0/16,10.2.0.0/16"}, `--pod-cidr "10.2.0.0/16": a second IPv4 pod CIDR besides 10.1.0.0/16`},
		{[]string{"--target", "overlay", "--max-pods", "300"}, "--max-pods 300: Overlay allows 10 to 250"},
		{[]string{"--target", "underlay"}, `--target "underlay": the one target is overlay`},
		{[]string{"--pod-cidr", "192.168.0.0/16"}, "--pod-cidr and --max-pods go with --target overlay"},
	} {
		res := runCLI(t, nil, "", append([]string{"doctor", "--config", cfg}, tc.args...)...)
		if res.code != ExitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("doctor %v: exit %d, want 2 with %q\n%s", tc.args, res.code, tc.want, res.stderr)
		}
	}
	env := runCLI(t, map[string]string{"ROUTEKEEPER_TARGET": "overlay", "ROUTEKEEPER_POD_CIDR": "nonsense"}, "", "doctor", "--config", cfg)
	if env.code != ExitUsage || !strings.Contains(env.stderr, `--pod-cidr "nonsense"`) {
		t.Errorf("from the environment: exit %d\n%s", env.code, env.stderr)
	}
}
