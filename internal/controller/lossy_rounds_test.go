package controller

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/lossy"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// The faults of a lossy path to ARM, as a new user met them on a lossy path to ARM:
// half of the writes reach ARM and lose their answer to a connection
// reset, 10 % of the requests are throttled (429, Retry-After 1 s) by the
// front, ARM answers 10 % of the requests 5xx before they take effect, and
// 10 % of its long-running operations end Failed.
var lossyRates = lossy.Rates{LoseWrites: 0.5, Throttle: 0.1, RetryAfter: time.Second}

var lossyFaults = fabric.Faults{ErrorRate: 0.1, FailOperations: 0.1}

// watchedSource is a node source whose changes are notified, as the
// Kubernetes informer's are.
type watchedSource struct {
	*nodesource.Static
	mu      sync.Mutex
	changed func()
}

func (s *watchedSource) Watch(ctx context.Context, changed func()) error {
	s.mu.Lock()
	s.changed = changed
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

// set serves nodes and tells the watcher.
func (s *watchedSource) set(nodes []source.Node) {
	s.Set(nodes)
	s.mu.Lock()
	f := s.changed
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// lossyRound is what one round of node changes cost under the faults.
type lossyRound struct {
	Round int `json:"round"`
	// Seconds is the time from the change to the end of the first pass
	// (reconcile or guard cycle) that found every node routed, on the
	// clock of the synctest bubble: the waits routekeeper and the SDK
	// chose, not the machine's speed.
	Seconds float64 `json:"seconds"`
	lossy.Summary
	// Unread: writes sent after an unknown outcome without a read of the
	// resource first.
	Unread int `json:"unread"`
}

// lossyOptions configure a lossyDaemon.
type lossyOptions struct {
	Seed uint64
	// SDKDefaults: the client runs with routekeeper's own SDK retries (6,
	// 0.8 s doubling, at most 60 s apart) and polls every second, as the
	// daemon does; else with the fabric's quick test retries (4, 50 ms
	// doubling, at most 5 s apart) and polls every 10 ms.
	SDKDefaults bool
	// OperationDuration is the fabric's (fabric serve's default: 500 ms).
	OperationDuration time.Duration
	// Config, if set, changes the controller's configuration (routekeeper's
	// defaults but for the KTHW network: guard every 5 s, batch window
	// 200 ms, retry backoff 1 s doubling to 2 min).
	Config func(*Config)
}

// lossyDaemon is the daemon's loops (Run) on a client behind a lossy path
// to an in-process fabric, the node source notifying its changes as the
// Kubernetes informer does.
type lossyDaemon struct {
	*scenario
	proxy  *lossy.Transport
	src    *watchedSource
	logger *slog.Logger
}

// newLossyDaemon sets the KTHW network up, starts the daemon with nodes
// and waits for its first clean reconcile; no fault is on yet. It must run
// in a synctest bubble.
func newLossyDaemon(t *testing.T, o lossyOptions, nodes []source.Node) *lossyDaemon {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{OperationDuration: o.OperationDuration, Seed: o.Seed}, fabrictest.KTHW)
	proxy := lossy.New(env.Server.Transporter(), o.Seed)
	opts := env.Server.ClientOptions()
	opts.Transport = proxy
	poll := 10 * time.Millisecond
	if o.SDKDefaults {
		opts.Retry = policy.RetryOptions{} // routekeeper's defaults, as the daemon runs
		poll = time.Second
	}
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: opts, PollFrequency: poll})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Cluster:      "kthw",
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabrictest.KTHWTable,
		Location:     "eastus",
		CreateTable:  true,
		Subnets:      []string{fabrictest.KTHWSubnet},
	}
	if o.Config != nil {
		o.Config(&cfg)
	}
	d := &lossyDaemon{proxy: proxy, src: &watchedSource{Static: nodesource.New(nodes...)}}
	if os.Getenv("ROUTEKEEPER_LOSSY_DEBUG") != "" {
		d.logger = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rec := &recorder{}
	d.scenario = &scenario{t: t, env: env, ctrl: New(cfg, client, d.src, d.logger, rec), rec: rec, nodes: nodes}
	d.start()
	rec.wait(t, time.Time{}, time.Minute, "a first clean reconcile", func(r *Result) bool {
		return !r.GuardOnly && r.Err == nil && r.Unrouted() == 0
	})
	return d
}

// set makes the source serve nodes, and tells the daemon.
func (d *lossyDaemon) set(nodes []source.Node) {
	d.nodes = nodes
	d.src.set(nodes)
}

// nextRound is the change of round i (from 0): a node added, another's
// next hop moved.
func nextRound(nodes []source.Node, i int) []source.Node {
	next := slices.Clone(nodes)
	moved := i % len(next)
	next[moved] = node(next[moved].Name, fmt.Sprintf("10.240.0.%d", 100+i), next[moved].PodCIDRs[0].String())
	return append(next, node(fmt.Sprintf("worker-%d", len(next)), fmt.Sprintf("10.240.0.%d", 20+len(next)), fmt.Sprintf("10.200.%d.0/24", len(next))))
}

// rounds turns the lossy path's faults on and makes n rounds of node changes
// (nextRound). Each waits, at most timeout, for a pass that finds every
// node routed; at the end the faults go off and the table in the fabric
// must hold every node's route.
func (d *lossyDaemon) rounds(n int, timeout time.Duration) []lossyRound {
	t := d.t
	t.Helper()
	d.proxy.SetRates(lossyRates)
	d.env.Server.SetFaults(lossyFaults)
	var out []lossyRound
	for i := range n {
		nodes := nextRound(d.nodes, i)
		log0 := len(d.proxy.Requests())
		t0 := time.Now()
		if d.logger != nil {
			fmt.Printf("ROUND %d at %s\n", i+1, t0.Format("15:04:05.000"))
		}
		d.set(nodes)
		res := d.rec.wait(t, t0, timeout, fmt.Sprintf("round %d: every node routed", i+1), everyNodeRouted(nodes))
		took := res.Start.Add(res.Duration).Sub(t0)
		log := d.proxy.Requests()[log0:]
		if d.logger != nil && took > 10*time.Second {
			for _, r := range log {
				fmt.Printf("  %s +%6.2fs %s\n", r.At.Format("15:04:05.000"), r.At.Sub(t0).Seconds(), r)
			}
		}
		out = append(out, lossyRound{Round: i + 1, Seconds: took.Seconds(), Summary: lossy.Summarize(log), Unread: len(lossy.Unread(log))})
	}
	// The table as the fabric holds it, read without faults.
	d.proxy.SetRates(lossy.Rates{})
	d.env.Server.SetFaults(fabric.Faults{})
	got, err := d.env.Client.GetRouteTable(context.Background(), fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range d.nodes {
		if !tableCarries(got, nd) {
			t.Errorf("after %d rounds the table lacks the route of %s to %s", n, nd.Name, nd.InternalIPs[0])
		}
	}
	return out
}

// tableCarries reports whether t holds nd's route, by name, to its IP.
func tableCarries(t *route.Table, nd source.Node) bool {
	for _, cidr := range nd.PodCIDRs {
		hop, _ := nd.NextHop(cidr)
		ok := false
		for _, r := range t.Routes {
			p, valid := r.CIDR()
			ok = ok || strings.EqualFold(r.Name, route.Name(nd.Name, cidr)) && valid && p == cidr && r.NextHopIP == hop
		}
		if !ok {
			return false
		}
	}
	return true
}

// everyNodeRouted matches a pass that judged exactly nodes (the guard
// judges the nodes of the last reconcile) and found each routed.
func everyNodeRouted(nodes []source.Node) func(*Result) bool {
	return func(r *Result) bool {
		judged := r.SourceNodes()
		if len(judged) != len(nodes) || len(r.Nodes) != len(nodes) {
			return false
		}
		for i, nd := range nodes {
			j := judged[i]
			if j.Name != nd.Name || !slices.Equal(j.InternalIPs, nd.InternalIPs) || !r.Nodes[nd.Name].Routed {
				return false
			}
		}
		return true
	}
}

// TestLossyRoundsProgram is BenchmarkLossyRounds' program: it runs only
// when ROUTEKEEPER_LOSSY_ROUNDS says how many rounds, and prints one
// "LOSSY {json}" line per round. ROUTEKEEPER_LOSSY_QUICK=1 runs the client
// with the fabric's quick test retries instead of routekeeper's (what
// TestConvergesOnALossyPath does): the rounds then show
// routekeeper's own waits, without the SDK's backoff on reads.
func TestLossyRoundsProgram(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ROUTEKEEPER_LOSSY_ROUNDS"))
	if n <= 0 {
		t.Skip("run by BenchmarkLossyRounds (ROUTEKEEPER_LOSSY_ROUNDS=<rounds>)")
	}
	seed, _ := strconv.ParseUint(os.Getenv("ROUTEKEEPER_LOSSY_SEED"), 10, 64)
	synctest.Test(t, func(t *testing.T) {
		quick := os.Getenv("ROUTEKEEPER_LOSSY_QUICK") != ""
		d := newLossyDaemon(t, lossyOptions{Seed: seed + 31, SDKDefaults: !quick, OperationDuration: 500 * time.Millisecond}, workers(3))
		for _, r := range d.rounds(n, 30*time.Minute) {
			b, _ := json.Marshal(r)
			fmt.Printf("LOSSY %s\n", b)
		}
	})
}

// BenchmarkLossyRounds measures convergence on a lossy path: 20 rounds of node changes (a
// node added, another's next hop moved) with the daemon's loops running,
// under lost answers for half of the writes, 10 % 429, 10 % 5xx and 10 %
// failed operations (lossyDaemon.rounds, with routekeeper's own SDK
// retries and poll frequency, and the fabric's operations taking 500 ms as
// fabric serve's do). The rounds run in a synctest bubble in
// a child process (this test binary, TestLossyRoundsProgram): the times
// are the bubble's clock, the waits routekeeper and the SDK chose, which
// is what a user waits; minutes of them take a second of the machine.
// Each op is one run of 20 rounds, seeded by its index.
//
//	go test ./internal/controller -run '^$' -bench LossyRounds -benchtime 10x
//	ROUTEKEEPER_LOSSY_QUICK=1 go test ./internal/controller -run '^$' -bench LossyRounds -benchtime 50x
func BenchmarkLossyRounds(b *testing.B) {
	const rounds = 20
	var all []lossyRound
	seed := 0
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLossyRoundsProgram$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("ROUTEKEEPER_LOSSY_ROUNDS=%d", rounds), fmt.Sprintf("ROUTEKEEPER_LOSSY_SEED=%d", seed))
		seed++
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			b.Fatalf("the rounds program failed: %v\n%s\n%s", err, stdout, stderr.Bytes())
		}
		got := 0
		sc := bufio.NewScanner(bytes.NewReader(stdout))
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "LOSSY ")
			if !ok {
				continue
			}
			var r lossyRound
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				b.Fatalf("rounds program line %q: %v", line, err)
			}
			all = append(all, r)
			got++
		}
		if got != rounds {
			b.Fatalf("the rounds program reported %d rounds, want %d:\n%s", got, rounds, stdout)
		}
	}
	var total, worst float64
	var sum lossy.Summary
	unread := 0
	secs := make([]float64, 0, len(all))
	for _, r := range all {
		total += r.Seconds
		worst = max(worst, r.Seconds)
		secs = append(secs, r.Seconds)
		sum.Requests += r.Requests
		sum.Reads += r.Reads
		sum.Writes += r.Writes
		sum.Lost += r.Lost
		sum.Throttled += r.Throttled
		sum.Blind += r.Blind
		unread += r.Unread
	}
	slices.Sort(secs)
	per := float64(len(all))
	b.ReportMetric(total/per, "s-to-converge/round")
	b.ReportMetric(secs[len(secs)/2], "median-s/round")
	b.ReportMetric(secs[len(secs)*95/100], "p95-s/round")
	b.ReportMetric(worst, "max-s/round")
	b.ReportMetric(float64(sum.Requests)/per, "requests/round")
	b.ReportMetric(float64(sum.Writes)/per, "writes/round")
	b.ReportMetric(float64(sum.Lost)/per, "lost/round")
	b.ReportMetric(float64(sum.Blind)/per, "blind-resends/round")
	b.ReportMetric(float64(unread)/per, "unread-writes/round")
	b.ReportMetric(0, "ns/op")
}
