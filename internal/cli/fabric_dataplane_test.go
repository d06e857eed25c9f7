package cli

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/flow"
	"github.com/routekeeper/routekeeper/internal/testutil/nstest"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

var (
	pod0 = netip.MustParseAddr("10.200.0.2") // worker-0's pod
	pod1 = netip.MustParseAddr("10.200.1.2") // worker-1's pod
)

// dataplaneLab is the Hard Way lab of examples/kthw with its data plane
// (fabric serve --dataplane) and routekeeper run, both on one state file.
type dataplaneLab struct {
	t      *testing.T
	prefix string
	store  *fabric.Store // the test's own view of the state file
	opts   *armnetwork.ClientFactory
	serve  syncbuf.Buffer // serve's stdout and stderr
	daemon syncbuf.Buffer
}

// startDataplaneLab builds the lab; everything it starts stops, and every
// namespace is removed, when the test ends, pass or fail.
func startDataplaneLab(t *testing.T, policy string) *dataplaneLab {
	t.Helper()
	if err := dataplane.CheckPrivileges(); err != nil {
		// CI (scripts/test.sh) sets ROUTEKEEPER_E2E=1: there it must run.
		if os.Getenv("ROUTEKEEPER_E2E") == "1" {
			t.Fatalf("the data plane test cannot run with ROUTEKEEPER_E2E=1: %v", err)
		}
		t.Skipf("skipping the data plane test: %v (run as root, as CI does)", err)
	}
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	db := filepath.Join(dir, "fabric.db")
	lab := &dataplaneLab{t: t, prefix: nstest.Prefix(t)}
	wantExit(t, ExitOK, "fabric", "apply", "-f", filepath.Join(dir, "topology.yaml"), "--state", db)

	serve := startCLI(&lab.serve, &lab.serve, nil, "fabric", "serve", "--state", db, "--listen", "127.0.0.1:0",
		"--dataplane", "--nodes", filepath.Join(dir, "nodes.yaml"), "--dataplane-prefix", lab.prefix, "--dataplane-poll", "5ms")
	daemon := startCLI(&lab.daemon, &lab.daemon, nil, "run", "--config", cfg, "--association-policy", policy, "--association-interval", "1s",
		"--resync", "1s", "--batch-window", "50ms")
	t.Cleanup(func() {
		// Both stop at once, as one cancellation stopped them before.
		serve.cancel()
		daemon.cancel()
		serve.stop(t, 30*time.Second, "fabric serve", &lab.serve)
		daemon.stop(t, 30*time.Second, "routekeeper run", &lab.daemon)
	})

	store, err := fabric.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	lab.store = store
	lab.opts, err = armnetwork.NewClientFactory(fabric.DefaultSubscription, identity.Credential{}, fabric.New(store, fabric.Options{}).ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	lab.waitFlowing("the lab's first routes")
	return lab
}

// podRouted reports whether the subnet's table holds worker-1's pod route.
func (l *dataplaneLab) podRouted() bool {
	st, err := network.Networks(context.Background(), l.store)
	if err != nil {
		l.t.Fatal(err)
	}
	table := ""
	for _, v := range st.VirtualNetworks {
		for _, s := range v.Subnets {
			if s.ID == fabrictest.KTHWSubnet {
				table = s.RouteTable
			}
		}
	}
	for _, rt := range st.RouteTables {
		if strings.EqualFold(rt.ID, table) {
			for _, r := range rt.Routes {
				if r.AddressPrefix == "10.200.1.0/24" && r.NextHopIPAddress == "10.240.0.21" {
					return true
				}
			}
		}
	}
	return false
}

// waitFlowing waits until pod 0's packets reach pod 1: it probes for 50 ms
// at a time, back to back, until one probe loses nothing.
func (l *dataplaneLab) waitFlowing(what string) {
	l.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := dataplane.Probe(context.Background(), l.prefix, pod0, pod1, dataplane.ProbeOptions{Rate: 200, Duration: 50 * time.Millisecond})
		if err == nil && res.Received == res.Sent {
			return
		}
	}
	l.t.Fatalf("pod %s never reached pod %s (%s)\nfabric serve:\n%s\nroutekeeper run:\n%s", pod0, pod1, what, l.serve.String(), l.daemon.String())
}

// waitRouted waits until the subnet's table holds worker-1's pod route
// again, checking the state each time routekeeper run logs (it logs every
// pass that repairs, and every reconcile), and fails after 30 s.
func (l *dataplaneLab) waitRouted(what string) {
	l.t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		_, logged := l.daemon.Next()
		if l.podRouted() {
			return
		}
		select {
		case <-logged:
		case <-timeout.C:
			l.t.Fatalf("%s: routekeeper did not repair within 30s\n%s", what, l.daemon.String())
		}
	}
}

// minWindow is how long the subnet must lack the route for the data plane
// to be sure to see it (a poll, an Apply, a packet every 10ms): a shorter
// break is repeated rather than judged, and a repair that is always that
// fast passes with nothing to measure — a test never fails for being fast.
const minWindow = 150 * time.Millisecond

// repairBound is how long a repair may take at most, from the break to
// the state holding the route again: the guard runs every second, and a
// loaded CI machine under -race may take a few more for the writes.
const repairBound = 15 * time.Second

// lossWindow sends pod 0 → pod 1 at 100 packets/s while disrupt breaks
// the route and routekeeper repairs it; it returns the probe's result and
// the ARM timing: from disrupt's return to the state holding the route
// again.
func (l *dataplaneLab) lossWindow(name string, disrupt func()) {
	l.t.Helper()
	for attempt := 1; ; attempt++ {
		l.waitFlowing("before " + name)
		ctx, stop := context.WithCancel(context.Background())
		probed := make(chan dataplane.ProbeResult, 1)
		packets := &flow.Counter{}
		go func() {
			res, err := dataplane.Probe(ctx, l.prefix, pod0, pod1, dataplane.ProbeOptions{Rate: 100, Duration: 60 * time.Second, Grace: 200 * time.Millisecond, OnReceive: packets.Received})
			if err != nil {
				l.t.Error(err)
			}
			probed <- res
		}()
		// Packets flow before the break: 20 of them (200 ms at 100/s).
		if !packets.AtLeast(20, 30*time.Second) {
			stop()
			l.t.Fatalf("%s: the probe's packets did not flow before the break: %v", name, <-probed)
		}
		start := time.Now()
		disrupt()
		broken := time.Now()
		if l.podRouted() {
			stop()
			<-probed
			l.t.Fatalf("%s: the route is still in the subnet's table", name)
		}
		l.waitRouted(name)
		arm := time.Since(broken)
		// Packets flow after the repair: 50 more of them arrive (as many
		// as 500 ms at 100/s; the repair reaches the data plane within a
		// few of its 5 ms polls).
		flowing := packets.AtLeast(packets.Count()+50, 30*time.Second)
		stop()
		res := <-probed
		if !flowing {
			l.t.Fatalf("%s: packets did not flow again within 30s of the repair: %v", name, res)
		}
		l.t.Logf("%s: ARM: %s write took %s, routekeeper's repair in the state %s after it; data plane: %v",
			name, name, broken.Sub(start).Round(time.Millisecond), arm.Round(time.Millisecond), res)
		if arm > repairBound {
			l.t.Errorf("%s: the repair took %s, more than %s", name, arm.Round(time.Millisecond), repairBound)
		}
		if arm < minWindow && res.LongestLossRun == 0 {
			if attempt >= 5 {
				l.t.Logf("%s: routekeeper repaired within %s five times, faster than the data plane can see a loss: nothing to measure", name, minWindow)
				return
			}
			l.t.Logf("%s: repaired within %s, before the data plane could be sure to drop: again", name, minWindow)
			continue
		}
		if res.LongestLossRun == 0 {
			l.t.Errorf("%s: no packet lost while the subnet lacked the route for %s: %v", name, arm, res)
		}
		if res.LossStart.Before(start.Add(-res.Interval)) {
			l.t.Errorf("%s: loss began %s before the break", name, start.Sub(res.LossStart))
		}
		if !res.ReceivedAtEnd {
			l.t.Errorf("%s: packets did not flow again after the repair: %v", name, res)
		}
		return
	}
}

// TestDataPlaneLossWindows runs the Hard Way lab on the data plane with
// routekeeper run (policy follow, guard every second) and breaks pod 0 →
// pod 1 three ways: an IaC redeploy (the VNet PUT drops the subnet's
// table), a route-table swap (a new empty table on the subnet) and a
// deleted route. Each time packets are dropped while the route is missing
// and flow again after routekeeper's repair; the loss window at 100
// packets/s is logged beside the ARM timing (docs/performance.md). Needs
// root.
func TestDataPlaneLossWindows(t *testing.T) {
	lab := startDataplaneLab(t, "follow")
	ctx := context.Background()

	lab.lossWindow("redeploy", func() {
		fabrictest.RedeployKTHWVNet(t, fabric.New(lab.store, fabric.Options{}).ClientOptions())
	})

	lab.lossWindow("swap", func() {
		tables, subnets := lab.opts.NewRouteTablesClient(), lab.opts.NewSubnetsClient()
		p, err := tables.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes-v2", armnetwork.RouteTable{Location: to.Ptr("eastus")}, nil)
		fabrictest.MustPoll(t, p, err)
		sn, err := subnets.Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(fabrictest.KTHWTable2)}
		ps, err := subnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", sn.Subnet, nil)
		fabrictest.MustPoll(t, ps, err)
	})

	lab.lossWindow("route delete", func() {
		sn, err := lab.opts.NewSubnetsClient().Get(ctx, "kubernetes", "kubernetes-vnet", "kubernetes-subnet", nil)
		if err != nil {
			t.Fatal(err)
		}
		table := *sn.Properties.RouteTable.ID
		p, err := lab.opts.NewRoutesClient().BeginDelete(ctx, "kubernetes", table[strings.LastIndex(table, "/")+1:], "worker-1____102001024", nil)
		fabrictest.MustPoll(t, p, err)
	})
}

// TestFabricProbeAndCleanupCommands drives the data plane's commands: a
// probe between the lab's pods and from a pod to a node (exit 0: nothing
// lost), a probe to an address nobody holds (an error), and cleanup of
// namespaces a crashed data plane left.
func TestFabricProbeAndCleanupCommands(t *testing.T) {
	lab := startDataplaneLab(t, "enforce")
	res := runCLI(t, nil, "", "fabric", "probe", "--dataplane-prefix", lab.prefix, "--rate", "200", "--duration", "100ms", pod0.String(), pod1.String())
	if res.code != ExitOK || !strings.Contains(res.stdout, "LongestLossWindow") || !strings.Contains(res.stdout, " 20 ") {
		t.Errorf("probe pod to pod: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// Pod 1 to worker-0's node, printed as JSON.
	res = runCLI(t, nil, "", "-o", "json", "fabric", "probe", "--dataplane-prefix", lab.prefix, "--rate", "200", "--duration", "100ms", pod1.String(), "10.240.0.20")
	if res.code != ExitOK || !strings.Contains(res.stdout, `"received": 20`) {
		t.Errorf("probe pod to node: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, nil, "", "fabric", "probe", "--dataplane-prefix", lab.prefix, pod0.String(), "10.240.0.99")
	if res.code != ExitError || !strings.Contains(res.stderr, "10.240.0.99 is no node's or pod's address") {
		t.Errorf("probe to nobody: exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
	}

	crashed := nstest.Prefix(t) // fabric dataplane cleanup below must remove them
	for _, ns := range []string{crashed + "-vnet-v", crashed + "-node-n"} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v %s", ns, err, out)
		}
	}
	res = runCLI(t, nil, "", "fabric", "dataplane", "cleanup", "--dataplane-prefix", crashed)
	if res.code != ExitOK || strings.Count(res.stdout, "removed network namespace "+crashed) != 2 {
		t.Errorf("cleanup: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if left, _ := filepath.Glob("/run/netns/" + crashed + "-*"); len(left) > 0 {
		t.Errorf("left after cleanup: %v", left)
	}
	if res := runCLI(t, nil, "", "fabric", "dataplane", "cleanup", "--dataplane-prefix", lab.prefix+"x"); res.code != ExitOK || !strings.Contains(res.stdout, "no network namespace") {
		t.Errorf("cleanup of nothing: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestFabricDataplaneUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fabric", "serve", "--memory", "--dataplane"}, "flag --nodes: --dataplane needs the nodes"},
		{[]string{"fabric", "serve", "--memory", "--dataplane", "--nodes", filepath.Join(dir, "nope.yaml")}, "flag --nodes"},
		{[]string{"fabric", "serve", "--memory", "--dataplane", "--nodes", "x", "--propagation-delay", "-1s"}, "flag --propagation-delay: -1s must not be negative"},
		{[]string{"fabric", "serve", "--memory", "--dataplane", "--nodes", "x", "--dataplane-prefix", "Bad-1"}, `data plane prefix "Bad-1"`},
		{[]string{"fabric", "probe", "10.0.0.1"}, "accepts 2 arg(s)"},
		{[]string{"fabric", "probe", "10.0.0.1", "pod-1"}, `argument DST: "pod-1" is not an IPv4 address`},
		{[]string{"fabric", "probe", "--rate", "0", "10.0.0.1", "10.0.0.2"}, "flag --rate: 0 must be in (0, 100000]"},
		{[]string{"fabric", "probe", "--duration", "0s", "10.0.0.1", "10.0.0.2"}, "flag --duration: 0s must be positive"},
		{[]string{"fabric", "dataplane", "cleanup", "--dataplane-prefix", "x"}, `data plane prefix "x"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			res := runCLI(t, nil, "", tt.args...)
			if res.code != ExitUsage || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", res.code, ExitUsage, tt.want, res.stderr)
			}
		})
	}
}
