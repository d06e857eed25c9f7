// Package tofu is the end-to-end suite of OpenTofu with the azurerm
// provider against the fabric: the real `tofu` and
// `terraform-provider-azurerm` binaries (built from source by
// scripts/tofu-testenv.sh) apply the Kubernetes-the-Hard-Way network of
// examples/kthw/terraform to `routekeeper fabric serve --tls`, while
// `routekeeper run` keeps the pod routes and the subnet's association. It
// replays the post-mortems' incident (a re-apply of a VNet with inline
// subnets detaches the route table; a table with inline routes loses the pod
// routes), measures routekeeper's repair (and, as root, the packets lost on
// the fabric's data plane), applies each documented fix for real, and
// records the plan JSON of every step for `routekeeper iac check`
// (internal/iac/testdata, with ROUTEKEEPER_RECORD_PLANS=1).
//
// It runs when ROUTEKEEPER_TOFU and ROUTEKEEPER_AZURERM name the binaries
// (eval "$(scripts/tofu-testenv.sh)"), and fails instead of skipping when
// ROUTEKEEPER_E2E_TF=1.
package tofu

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
	"github.com/routekeeper/routekeeper/internal/testutil/flow"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/labwatch"
	"github.com/routekeeper/routekeeper/internal/testutil/nstest"
)

var (
	listening = regexp.MustCompile(`routekeeper fabric listening on (https://\S+)`)
	caLine    = regexp.MustCompile(`TLS CA:\s+(\S+)`)
	pod0      = netip.MustParseAddr("10.200.0.2") // worker-0's pod
	pod1      = netip.MustParseAddr("10.200.1.2") // worker-1's pod
)

// binaries returns tofu and the provider, or skips (fails with
// ROUTEKEEPER_E2E_TF=1) when they are not there.
func binaries(t *testing.T) (tofu, provider string) {
	t.Helper()
	required := os.Getenv("ROUTEKEEPER_E2E_TF") == "1"
	tofu, provider = os.Getenv("ROUTEKEEPER_TOFU"), os.Getenv("ROUTEKEEPER_AZURERM")
	if tofu == "" || provider == "" {
		msg := `the OpenTofu suite needs ROUTEKEEPER_TOFU and ROUTEKEEPER_AZURERM: run eval "$(scripts/tofu-testenv.sh)" (builds both once, about 25 minutes)`
		if required {
			t.Fatal("ROUTEKEEPER_E2E_TF=1 but " + msg)
		}
		t.Skip(msg)
	}
	for _, b := range []string{tofu, provider} {
		if fi, err := os.Stat(b); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s is not an executable file (%v); run scripts/tofu-testenv.sh", b, err)
		}
	}
	if filepath.Base(provider) != "terraform-provider-azurerm" {
		t.Fatalf("ROUTEKEEPER_AZURERM=%s: dev_overrides needs the binary named terraform-provider-azurerm", provider)
	}
	return tofu, provider
}

// lab is the running fabric, routekeeper and tofu of the suite.
type lab struct {
	dir      string
	store    *fabric.Store
	fabric   *process
	daemon   *process
	tf       *tofuRunner
	watch    *labwatch.Watcher
	prefix   string // the data plane's namespace prefix; "" without one
	results  []string
	endpoint string

	bin       string   // the routekeeper binary
	daemonEnv []string // routekeeper run's environment (trusts the fabric's CA)
	config    string   // routekeeper run's configuration (startRoutekeeper)
}

func TestTofuKubernetesTheHardWay(t *testing.T) {
	tofuBin, provider := binaries(t)
	ctx := context.Background()
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	l := startLab(ctx, t, repo, tofuBin, provider)

	// 1. The network as the post-mortems' users write it (docs/iac.md): a VNet
	// with its subnet inline, no route table in the code. routekeeper then
	// creates its table, writes the pod routes and associates it.
	l.tf.use(t, "inline-subnets")
	plan, js, changes := l.tf.plan(ctx, t, "create")
	if !changes {
		t.Fatal("create: the first plan changes nothing")
	}
	l.tf.fixture(t, "create", js)
	l.tf.run(ctx, t, "create", []int{0}, "apply", "-input=false", "-no-color", plan)
	l.startRoutekeeper(t, repo)
	l.waitFlowing(t, "after routekeeper's first reconcile")

	// 2. Hazard 1: the same code applied again. The subnet's route_table_id
	// is not in it, so the plan "fixes" it: the VNet PUT detaches the table.
	// After the repair the state says "no route table" and the subnet has
	// one again: the diff is perpetual, every apply detaches again.
	l.applyHazard(ctx, t, "detach-inline-subnets", "re-apply of the VNet with inline subnets (hazard 1)", "vnet-inline-subnet-detaches", checkDetachPlan)

	// 3. Fix 1: lifecycle { ignore_changes = [subnet] } on the VNet.
	l.tf.use(t, "fix-ignore-changes")
	l.applyFix(ctx, t, "fix-ignore-changes")

	// 4. Fix 2: azurerm_subnet + azurerm_subnet_route_table_association (with
	// the table, routes left out), imported from what exists.
	l.tf.use(t, "fix-association-resource")
	l.applyFix(ctx, t, "fix-association-resource")

	// 5. Hazard 2: the table's routes inline. The apply PUTs the table with
	// the inline route only: the pod routes are deleted.
	l.tf.use(t, "inline-routes")
	l.applyHazard(ctx, t, "inline-routes", "apply of a route table with inline routes (hazard 2)", "inline-routes-delete-pod-routes", checkInlineRoutesPlan)

	// 6. Fix 3: the routes left out of the code-managed table; the egress
	// route an azurerm_route of its own.
	l.tf.use(t, "fix-routes-left-out")
	l.applyFix(ctx, t, "fix-routes-left-out")

	t.Logf("tofu commands:\n%s", l.tf.summary())
	t.Logf("measured:\n  %s", strings.Join(l.results, "\n  "))
	if probs := problemLines(l.fabric.out.String()); len(probs) > 0 {
		t.Errorf("the fabric met requests it does not know (or failed):\n%s", strings.Join(probs, "\n"))
	}
}

// applyHazard plans and applies a hazard: the plan changes something
// (checkPlan says what it must change), iac check flags it with rule, the
// apply breaks routing and routekeeper repairs it (measured as what), and
// the plan right after changes something again: a perpetual diff.
func (l *lab) applyHazard(ctx context.Context, t *testing.T, step, what, rule string, checkPlan func(*testing.T, planJSON)) {
	t.Helper()
	plan, js, changes := l.tf.plan(ctx, t, step)
	if !changes {
		t.Fatalf("%s: the plan changes nothing: the hazard did not show", step)
	}
	checkPlan(t, parsePlan(t, js))
	l.tf.fixture(t, step, js)
	l.iacCheck(ctx, t, step, js, rule)
	l.measure(ctx, t, what, true, func() {
		l.tf.run(ctx, t, step, []int{0}, "apply", "-input=false", "-no-color", plan)
	})
	if _, _, changes := l.tf.plan(ctx, t, step+"-perpetual-diff"); !changes {
		t.Errorf("%s: after routekeeper's repair the same code plans nothing; expected the perpetual diff", step)
	}
}

// applyFix plans and applies a fix: the plan may change things (imports,
// new resources) but must never break pod routing, during the apply or
// after; the plan right after is empty.
func (l *lab) applyFix(ctx context.Context, t *testing.T, step string) {
	t.Helper()
	plan, js, _ := l.tf.plan(ctx, t, step)
	l.tf.fixture(t, step, js)
	l.iacCheck(ctx, t, step, js, "")
	// A fix imports what exists and changes nothing that is there: an update
	// of the VNet or the table (even of its tags) PUTs it whole.
	for _, a := range parsePlan(t, js).actions() {
		if strings.Contains(a, "update") || strings.Contains(a, "delete") {
			t.Errorf("%s: the fix's plan changes what exists: %s", step, a)
		}
	}
	l.measure(ctx, t, step, false, func() {
		l.tf.run(ctx, t, step, []int{0}, "apply", "-input=false", "-no-color", plan)
	})
	if code, out := l.tf.run(ctx, t, step+"-replan", []int{0, 2}, "plan", "-input=false", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("%s: the plan right after the apply is not empty (perpetual diff while routekeeper's routes are in the table):\n%s", step, tail(out, 60))
	}
	if r := l.watch.Now(); !r.OK() {
		t.Errorf("%s: after the apply: %v", step, r)
	}
}

// iacCheck runs `routekeeper iac check` on a step's plan, against the
// served fabric as it stands (the live check, as a pipeline with Azure
// credentials runs it): a hazard exits 3 naming rule, a fix (rule "")
// exits 0.
func (l *lab) iacCheck(ctx context.Context, t *testing.T, step string, planJSON []byte, rule string) {
	t.Helper()
	file := filepath.Join(l.dir, step+".plan.json")
	if err := os.WriteFile(file, planJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, l.bin, "iac", "check", file, "--config", l.config, "--endpoint", l.endpoint)
	cmd.Env = l.daemonEnv
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: iac check: %v", step, err)
	}
	want := 0
	if rule != "" {
		want = 3
	}
	if code != want || (rule != "" && !strings.Contains(string(out), rule)) || strings.Contains(string(out), "could not be read") {
		t.Errorf("%s: iac check on the live fabric exited %d, want %d naming %q (and the cloud read):\n%s", step, code, want, rule, tail(string(out), 30))
		return
	}
	l.results = append(l.results, fmt.Sprintf("%s: iac check exit %d (live)", step, code))
}

// measure runs an apply while the data plane is probed (as root) and the
// state watched: with breaks it expects routing to break and routekeeper to
// repair it; without, it expects no break at all.
func (l *lab) measure(ctx context.Context, t *testing.T, what string, breaks bool, apply func()) {
	t.Helper()
	l.waitFlowing(t, "before "+what)
	var probed chan dataplane.ProbeResult
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	packets := &flow.Counter{}
	if l.prefix != "" {
		probed = make(chan dataplane.ProbeResult, 1)
		go func() {
			res, err := dataplane.Probe(pctx, l.prefix, pod0, pod1, dataplane.ProbeOptions{Rate: 100, Duration: 10 * time.Minute, Grace: 200 * time.Millisecond, OnReceive: packets.Received})
			if err != nil {
				t.Errorf("probe: %v", err)
			}
			probed <- res
		}()
		// Packets flow before the apply: 30 of them (300 ms at 100/s).
		if !packets.AtLeast(30, 30*time.Second) {
			stop()
			t.Fatalf("%s: the probe's packets did not flow before the apply: %v", what, <-probed)
		}
	}
	start := time.Now()
	apply()
	applied := time.Now()
	l.watch.WaitOK(t, 30*time.Second, what)
	if l.prefix != "" {
		// Packets flow after the repair: 50 more of them arrive (500 ms
		// at 100/s; the data plane polls the state every 5 ms).
		if !packets.AtLeast(packets.Count()+50, 30*time.Second) {
			t.Errorf("%s: packets did not flow again within 30s of the repair", what)
		}
		stop()
	}
	outages := l.watch.OutagesSince(start)
	var loss string
	if probed != nil {
		res := <-probed
		loss = fmt.Sprintf("; data plane (100 packets/s pod %s → pod %s): %d of %d lost, longest loss %s", pod0, pod1, res.Sent-res.Received, res.Sent, res.LongestLoss)
		if breaks && res.LongestLossRun == 0 && outages[0].Duration() > 150*time.Millisecond {
			t.Errorf("%s: routing was broken for %s but no packet was lost: %v", what, outages[0].Duration(), res)
		}
		if !breaks && res.Received != res.Sent {
			t.Errorf("%s: packets lost during a fix's apply: %v", what, res)
		}
		if !res.ReceivedAtEnd {
			t.Errorf("%s: packets did not flow again after the repair: %v", what, res)
		}
	}
	switch {
	case breaks && len(outages) == 0:
		t.Fatalf("%s: the apply did not break pod routing", what)
	case breaks:
		o := outages[0]
		l.results = append(l.results, fmt.Sprintf("%s: apply took %s; broken (%v) %s after the apply started, repaired by routekeeper %s after the break (%d break(s))%s",
			what, applied.Sub(start).Round(10*time.Millisecond), o.What, o.Broken.Sub(start).Round(time.Millisecond), o.Duration().Round(time.Millisecond), len(outages), loss))
	case len(outages) > 0:
		t.Errorf("%s: the fix's apply broke pod routing: %v for %s", what, outages[0].What, outages[0].Duration())
	default:
		l.results = append(l.results, fmt.Sprintf("%s: apply took %s, routing never broken%s",
			what, applied.Sub(start).Round(10*time.Millisecond), loss))
	}
	for _, o := range outages {
		if o.Repaired.IsZero() {
			t.Fatalf("%s: routing broken at %s and not repaired", what, o.Broken.Format(time.StampMilli))
		}
	}
}

// waitFlowing waits (with the data plane) until pod 0's packets reach pod 1,
// probing for 50 ms at a time, back to back; else until the state says
// they can.
func (l *lab) waitFlowing(t *testing.T, what string) {
	t.Helper()
	l.watch.WaitOK(t, 60*time.Second, what)
	if l.prefix == "" {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := dataplane.Probe(context.Background(), l.prefix, pod0, pod1, dataplane.ProbeOptions{Rate: 200, Duration: 50 * time.Millisecond})
		if err == nil && res.Received == res.Sent {
			return
		}
	}
	t.Fatalf("pod %s never reached pod %s (%s)\nfabric:\n%s", pod0, pod1, what, tail(l.fabric.out.String(), 40))
}

// checkDetachPlan: the plan updates the VNet in place and its subnet goes
// from routekeeper's table to none.
func checkDetachPlan(t *testing.T, p planJSON) {
	t.Helper()
	rc := p.change("azurerm_virtual_network.kubernetes")
	if rc == nil || !slices.Equal(rc.Change.Actions, []string{"update"}) {
		t.Fatalf("detach: the plan does not update the VNet: %v", p.actions())
	}
	if !strings.Contains(strings.ToLower(string(rc.Change.Before)), strings.ToLower(kthw.TableID)) ||
		strings.Contains(strings.ToLower(string(rc.Change.After)), strings.ToLower(kthw.TableID)) {
		t.Errorf("detach: the VNet's subnet does not lose the route table in the plan:\nbefore %s\nafter %s", rc.Change.Before, rc.Change.After)
	}
}

// checkInlineRoutesPlan: the table is updated and the pod routes are gone
// from it after.
func checkInlineRoutesPlan(t *testing.T, p planJSON) {
	t.Helper()
	rc := p.change("azurerm_route_table.kubernetes")
	if rc == nil || !slices.Equal(rc.Change.Actions, []string{"update"}) {
		t.Fatalf("inline-routes: the plan does not update the route table: %v", p.actions())
	}
	for name := range labwatch.PodRoutes {
		if !strings.Contains(string(rc.Change.Before), name) || strings.Contains(string(rc.Change.After), name) {
			t.Errorf("inline-routes: route %s is not removed by the plan", name)
		}
	}
}

func startLab(ctx context.Context, t *testing.T, repo, tofuBin, provider string) *lab {
	t.Helper()
	dir := t.TempDir()
	l := &lab{dir: dir}
	bin := buildRoutekeeper(ctx, t, dir)
	db := filepath.Join(dir, "fabric.db")
	env := append(environ(), "XDG_STATE_HOME="+filepath.Join(dir, "xdg"))
	args := []string{"--log-level", "debug", "fabric", "serve", "--tls", "--state", db, "--listen", "127.0.0.1:0"}
	if err := dataplane.CheckPrivileges(); err == nil {
		// fabric serve removes its namespaces when it stops (its own
		// cleanup, registered later, runs first); whatever is left is
		// removed by nstest's, and reported.
		l.prefix = nstest.Prefix(t)
		args = append(args, "--dataplane", "--nodes", filepath.Join(repo, "examples", "kthw", "nodes.yaml"),
			"--dataplane-prefix", l.prefix, "--dataplane-poll", "5ms")
	} else if os.Getenv("ROUTEKEEPER_E2E") == "1" {
		t.Fatalf("the data plane cannot run with ROUTEKEEPER_E2E=1: %v", err)
	} else {
		t.Logf("no data plane (%v): repair times from the state only, no packet loss", err)
	}
	l.fabric = startProcess(t, dir, "fabric-serve", env, bin, args...)
	l.endpoint = l.fabric.waitFor(t, listening, 30*time.Second)
	ca := l.fabric.waitFor(t, caLine, 5*time.Second)
	t.Logf("fabric at %s (CA %s, data plane prefix %q)", l.endpoint, ca, l.prefix)

	store, err := fabric.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l.store = store
	l.watch = labwatch.Watch(t, store)

	host := strings.TrimPrefix(l.endpoint, "https://")
	tfDir := filepath.Join(dir, "tf")
	home := filepath.Join(dir, "home")
	for _, d := range []string{tfDir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cliConfig := filepath.Join(dir, "tofu.tfrc")
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		"registry.opentofu.org/hashicorp/azurerm", filepath.Dir(provider))
	if err := os.WriteFile(cliConfig, []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	l.tf = &tofuRunner{bin: tofuBin, dir: tfDir, repo: repo, env: append(environ(),
		"HOME="+home, "TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_LOG=", "TF_LOG_PATH=", "SSL_CERT_FILE="+ca,
		"ARM_METADATA_HOSTNAME="+host, "ARM_TENANT_ID="+fabric.DefaultTenant, "ARM_SUBSCRIPTION_ID="+fabric.DefaultSubscription,
		"ARM_CLIENT_ID=routekeeper-e2e-tofu", "ARM_CLIENT_SECRET=not-a-secret",
		"ARM_USE_CLI=false", "ARM_USE_MSI=false", "ARM_USE_OIDC=false",
	)}
	l.daemonEnv = append(env, "SSL_CERT_FILE="+ca)
	l.bin = bin
	return l
}

// routekeeperConfig is examples/kthw/routekeeper.yaml without its local
// state and topology: the served fabric (--endpoint) holds what tofu built.
const routekeeperConfig = `cluster:
  name: kthw
  clusterCIDRs: [10.200.0.0/16]
  serviceCIDRs: [10.32.0.0/24]
  nodeCIDRMaskSize: 24
routeTable:
  id: %s
  create: true
  location: eastus
subnets:
  - %s
association:
  policy: enforce
cloud:
  type: local
source:
  type: inventory
  inventory:
    file: ./nodes.yaml
controller:
  metricsAddress: ""
`

// startRoutekeeper starts `routekeeper run` as a daemon against the served
// fabric, with a guard cycle of 1 s: the association checked and the table
// re-read every second.
func (l *lab) startRoutekeeper(t *testing.T, repo string) {
	t.Helper()
	dir := filepath.Join(l.dir, "rk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodes, err := os.ReadFile(filepath.Join(repo, "examples", "kthw", "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "routekeeper.yaml")
	l.config = cfg
	for name, b := range map[string][]byte{
		"nodes.yaml":       nodes,
		"routekeeper.yaml": []byte(fmt.Sprintf(routekeeperConfig, kthw.TableID, kthw.SubnetID)),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l.daemon = startProcess(t, l.dir, "routekeeper-run", l.daemonEnv, l.bin, "run", "--config", cfg,
		"--endpoint", l.endpoint, "--association-interval", "1s", "--resync", "1s", "--batch-window", "50ms")
}

// environ is the test's environment without the ROUTEKEEPER_* variables
// (the suite's own, and any that would change routekeeper's settings: the
// children get exactly the flags the suite gives them).
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ROUTEKEEPER_") {
			out = append(out, kv)
		}
	}
	return out
}
