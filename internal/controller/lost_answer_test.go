package controller

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/lossy"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// lossyController is a controller of the KTHW network on a client behind a
// lossy path to an in-process fabric (quick test retries), after a first
// reconcile of nodes made without faults. Its loops do not run: the test
// calls Reconcile and Guard.
func lossyController(t *testing.T, fo fabric.Options, nodes []source.Node) (*Controller, *nodesource.Static, *lossy.Transport, *fabrictest.Env) {
	t.Helper()
	env := fabrictest.New(t, fo, fabrictest.KTHW)
	proxy := lossy.New(env.Server.Transporter(), 31)
	opts := env.Server.ClientOptions()
	opts.Transport = proxy
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: opts, PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	src := nodesource.New(nodes...)
	c := New(scenarioConfig(), client, src, nil)
	if r := c.Reconcile(context.Background()); r.Err != nil || r.Unrouted() > 0 || r.AssociationProblems() > 0 {
		t.Fatalf("set-up: %s: %v", r.Summary(), r.Err)
	}
	return c, src, proxy, env
}

// after returns the requests of log from index i on.
func after(log []lossy.Request, i int) []lossy.Request { return log[i:] }

// wantReadBeforeEachWrite fails t when log holds a conditional write sent
// again blind after its answer was lost, or a write sent after one with an
// unknown outcome without a read of the resource in between.
func wantReadBeforeEachWrite(t *testing.T, log []lossy.Request) {
	t.Helper()
	if b := lossy.Blind(log); len(b) > 0 {
		t.Errorf("conditional writes re-sent blind after a lost answer: %v", b)
	}
	if u := lossy.Unread(log); len(u) > 0 {
		t.Errorf("writes sent after an unknown outcome without reading the resource first: %v", u)
	}
}

// TestLostTableAnswerIsReadBack: the table PUT carrying a new node's route
// reaches ARM and its answer is lost (or a front answers 5xx for it). The
// pass reads the table back at once, plans from what is there and ends
// with what is true: the node routed once the table says so, the write
// sent again (after that read, with the etag it read) only when it did not
// land or its operation failed. A conditional PUT is never re-sent blind.
func TestLostTableAnswerIsReadBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault lossy.Fault
		// failOp: the lost write's operation ends Failed (the table goes
		// back to what it was).
		failOp bool
		// puts: table PUTs sent; again: the second one carries the same
		// If-Match (the first did not land).
		puts  int
		again bool
	}{
		{name: "answer lost, write landed", fault: lossy.Fault{Lose: true}, puts: 1},
		{name: "answer lost, operation then failed", fault: lossy.Fault{Lose: true}, failOp: true, puts: 2},
		{name: "502 from a front that forwarded it", fault: lossy.Fault{Status: 502, Forward: true}, puts: 1},
		{name: "500 from a front that did not forward it", fault: lossy.Fault{Status: 500}, puts: 2, again: true},
	} {
		t.Run(tc.name, bubble(func(t *testing.T) {
			nodes := workers(3)
			c, src, proxy, env := lossyController(t, fabric.Options{OperationDuration: 200 * time.Millisecond}, nodes[:2])
			before, err := env.Client.GetRouteTable(context.Background(), fabrictest.KTHWTable)
			if err != nil {
				t.Fatal(err)
			}
			src.Set(nodes)
			f := tc.fault
			f.Method, f.Path = http.MethodPut, "/routeTables/"
			proxy.Script(f)
			if tc.failOp {
				env.Server.SetFaults(fabric.Faults{FailNextOperations: 1})
			}
			i0 := len(proxy.Requests())
			res := c.Reconcile(context.Background())
			if res.Err != nil || res.Unrouted() != 0 {
				t.Fatalf("reconcile after the lost answer: %s: %v; want every node routed in this pass", res.Summary(), res.Err)
			}
			if n := res.LostAnswers[verdict.OpTableWrite]; n != 1 {
				t.Errorf("lost answers of the table write counted: %d, want 1", n)
			}
			log := after(proxy.Requests(), i0)
			wantReadBeforeEachWrite(t, log)
			if n := len(proxy.Sent(http.MethodPut, fabrictest.KTHWTable, before.Etag)); n != 1+boolN(tc.again) {
				t.Errorf("PUTs with If-Match %s (the etag planned from): %d, want %d", before.Etag, n, 1+boolN(tc.again))
			}
			if n := count(log, http.MethodPut, "/routeTables/"); n != tc.puts {
				t.Errorf("table PUTs: %d, want %d:\n%s", n, tc.puts, lines(log))
			}
			got, err := env.Client.GetRouteTable(context.Background(), fabrictest.KTHWTable)
			if err != nil {
				t.Fatal(err)
			}
			for _, nd := range nodes {
				if !tableCarries(got, nd) {
					t.Errorf("table lacks the route of %s", nd.Name)
				}
			}
		}))
	}
}

// count counts the requests of log with method whose path contains path.
func count(log []lossy.Request, method, path string) int {
	n := 0
	for _, r := range log {
		if r.Method == method && strings.Contains(strings.ToLower(r.Path), strings.ToLower(path)) {
			n++
		}
	}
	return n
}

func boolN(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lines(log []lossy.Request) string {
	var b strings.Builder
	for _, r := range log {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

// TestLostAssociationAnswerIsReadBack: the guard re-associates a subnet an
// IaC redeploy detached, and the answer to its subnet PUT is lost. It does
// not send it again: it reports the repair as not known to be made and
// asks for a reconcile, which reads the subnet, finds it on the table (the
// write landed) and writes nothing.
func TestLostAssociationAnswerIsReadBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, proxy, env := lossyController(t, fabric.Options{OperationDuration: 20 * time.Millisecond}, workers(2))
		fabrictest.RedeployKTHWVNet(t, env.Server.ClientOptions())
		proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/subnets/", Lose: true})
		i0 := len(proxy.Requests())
		g := c.Guard(context.Background())
		if n := g.LostAnswers[verdict.OpSubnetWrite]; n != 1 {
			t.Errorf("lost answers of the association counted: %d, want 1", n)
		}
		a, ok := findAssoc(g, fabrictest.KTHWSubnet)
		if !ok || !a.RepairFailed || !errors.Is(a.Err, armerr.ErrOutcomeUnknown) || !strings.Contains(a.Message, "answer to the association was lost") {
			t.Errorf("guard's subnet verdict: %+v; want a repair not known to be made", a)
		}
		if !g.NeedsReconcile() {
			t.Error("the guard does not ask for a reconcile after a lost answer")
		}
		r := c.Reconcile(context.Background())
		if r.Err != nil || r.AssociationProblems() > 0 || r.Unrouted() > 0 {
			t.Fatalf("reconcile after the lost answer: %s: %v", r.Summary(), r.Err)
		}
		log := after(proxy.Requests(), i0)
		wantReadBeforeEachWrite(t, log)
		if n := count(log, http.MethodPut, "/subnets/"); n != 1 {
			t.Errorf("subnet PUTs: %d, want 1 (it landed):\n%s", n, lines(log))
		}
		now, err := env.Client.GetSubnet(context.Background(), fabrictest.KTHWSubnet)
		if err != nil || !armid.Same(now.RouteTableID, fabrictest.KTHWTable) {
			t.Errorf("subnet: %+v, %v; want it on the table", now, err)
		}
	})
}

// TestLostAnswersBackOffInSeconds: a front answers every write 500 for a
// while (nothing lands, every outcome is unknown). Each pass reads the
// table before each PUT, gives up after MaxAttempts, and the daemon tries
// again after its backoff capped at lostAnswerMaxWait (seconds, not the
// minutes the doubling would reach), never in a hot loop; once the writes
// go through again the table converges within that wait and one pass.
func TestLostAnswersBackOffInSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No resync during the outage: it would start a reconcile
		// whatever the backoff, which is not what this test measures.
		d := newLossyDaemon(t, lossyOptions{Seed: 7, OperationDuration: 5 * time.Millisecond, Config: func(c *Config) { c.Resync = time.Hour }}, workers(2))
		const outage = 70 * time.Second
		d.proxy.SetRates(lossy.Rates{FailWrites: 1})
		i0 := len(d.proxy.Requests())
		start := time.Now()
		nodes := nextRound(d.nodes, 0)
		d.set(nodes)
		time.Sleep(outage)
		d.proxy.SetRates(lossy.Rates{})
		healed := time.Now()
		res := d.rec.wait(t, healed, time.Minute, "every node routed after the writes went through again", everyNodeRouted(nodes))
		if took := res.Start.Add(res.Duration).Sub(healed); took > lostAnswerMaxWait+5*time.Second {
			t.Errorf("converged %s after the writes went through again, want within %s and one pass", took, lostAnswerMaxWait)
		}
		var failed []*Result
		for _, r := range d.rec.all() {
			if !r.GuardOnly && !r.Start.Before(start) && r.Start.Before(healed) {
				failed = append(failed, r)
			}
		}
		if len(failed) < 2 {
			t.Fatalf("%d reconciles during the outage, want several", len(failed))
		}
		for i, r := range failed[:len(failed)-1] {
			if !errors.Is(r.Err, armerr.ErrOutcomeUnknown) {
				t.Errorf("reconcile %d during the outage: err = %v, want an unknown outcome", i, r.Err)
			}
			gap := failed[i+1].Start.Sub(r.Start.Add(r.Duration))
			if gap > lostAnswerMaxWait+time.Second {
				t.Errorf("reconcile %d waited %s before the next, want at most %s", i, gap, lostAnswerMaxWait)
			}
			if gap < time.Second/2 {
				t.Errorf("reconcile %d was followed %s later: a hot loop", i, gap)
			}
		}
		if puts, limit := count(after(d.proxy.Requests(), i0), http.MethodPut, "/routeTables/"), int(outage/time.Second); puts > limit {
			t.Errorf("%d table PUTs in %s, want at most %d (one a second)", puts, outage, limit)
		}
		wantReadBeforeEachWrite(t, after(d.proxy.Requests(), i0))
	})
}

// TestGuardStaysTruthfulWhileAWriteWaits: the table PUT carrying a new
// node's route waits in the SDK's backoff (429, Retry-After 4 s). The
// guard's loop is not held up: it reads the table every cycle meanwhile,
// and says what is true (the old nodes routed, the new one not yet); once
// the write went through the new node is routed; and the next write is
// planned from a read made after that one, not from anything older.
func TestGuardStaysTruthfulWhileAWriteWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newLossyDaemon(t, lossyOptions{Seed: 3, OperationDuration: 5 * time.Millisecond, Config: func(c *Config) { c.GuardInterval = time.Second }}, workers(2))
		const wait = 4 * time.Second
		d.proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/routeTables/", Status: http.StatusTooManyRequests, RetryAfter: wait})
		nodes := append(workers(2), node("worker-2", "10.240.0.22", "10.200.2.0/24"))
		t0 := time.Now()
		d.set(nodes)
		wrote := d.rec.wait(t, t0, time.Minute, "the new node routed by the reconcile", func(r *Result) bool {
			return !r.GuardOnly && r.Wrote && everyNodeRouted(nodes)(r)
		})
		if took := wrote.Start.Add(wrote.Duration).Sub(t0); took < wait {
			t.Fatalf("the write went through %s after the change: it did not wait for Retry-After %s", took, wait)
		}
		var during []*Result
		for _, r := range d.rec.all() {
			if r.GuardOnly && r.Start.After(wrote.Start) && r.Start.Add(r.Duration).Before(wrote.Start.Add(wrote.Duration)) {
				during = append(during, r)
			}
		}
		if len(during) < 3 {
			t.Fatalf("%d guard cycles while the write waited %s, want one a second", len(during), wait)
		}
		for _, g := range during {
			if g.Reads == 0 {
				t.Errorf("a guard cycle during the wait read nothing: %s", g.Summary())
			}
			for _, n := range workers(2) {
				if !g.Nodes[n.Name].Routed {
					t.Errorf("guard during the wait: %s not routed (%s), want it still routed", n.Name, g.Nodes[n.Name].Reason)
				}
			}
			if nv, ok := g.Nodes["worker-2"]; ok && (nv.Routed || nv.Reason != reason.NoRouteCreated) {
				t.Errorf("guard during the wait: worker-2 %+v, want NOT routed, NoRouteCreated", nv)
			}
		}
		// The next change: its PUT follows a read of the table made after
		// the last write, and carries that read's etag.
		log0 := len(d.proxy.Requests())
		moved := nextRound(nodes, 1)[:len(nodes)]
		t1 := time.Now()
		d.set(moved)
		d.rec.wait(t, t1, time.Minute, "the moved node routed", everyNodeRouted(moved))
		log := after(d.proxy.Requests(), log0)
		read := ""
		for _, r := range log {
			switch {
			case r.Method == http.MethodGet && strings.EqualFold(r.Path, fabrictest.KTHWTable) && r.Status == http.StatusOK:
				read = "read"
			case r.Method == http.MethodPut && strings.EqualFold(r.Path, fabrictest.KTHWTable):
				if read == "" {
					t.Errorf("the next write %s was not preceded by a read of the table", r)
				}
				if r.IfMatch != wrote.Table.Etag {
					t.Errorf("the next write carries If-Match %s, want the etag read after the last write, %s", r.IfMatch, wrote.Table.Etag)
				}
				return
			}
		}
		t.Error("no table write after the next change")
	})
}

// TestConvergesOnALossyPath: rounds of node changes with the daemon's
// loops running, under the faults of a lossy path (half of the writes lose their
// answer, 10 % 429, 10 % 5xx, 10 % failed operations). Every round
// converges within the bound docs/run.md states for routekeeper's own
// waits (the SDK's read backoff kept quick here, as in every fabric test;
// BenchmarkLossyRounds measures it with routekeeper's defaults), no
// conditional write is re-sent blind and every write after an unknown
// outcome follows a read. The first round's table write is lost for
// certain.
func TestConvergesOnALossyPath(t *testing.T) {
	const rounds, bound = 5, 20 * time.Second
	synctest.Test(t, func(t *testing.T) {
		d := newLossyDaemon(t, lossyOptions{Seed: 31, OperationDuration: 500 * time.Millisecond}, workers(3))
		d.proxy.Script(lossy.Fault{Method: http.MethodPut, Path: "/routeTables/", Lose: true})
		i0 := len(d.proxy.Requests())
		for _, r := range d.rounds(rounds, 2*time.Minute) {
			t.Logf("round %d: %.1f s, %d requests (%d writes, %d answers lost, %d throttled)", r.Round, r.Seconds, r.Requests, r.Writes, r.Lost, r.Throttled)
			if r.Seconds > bound.Seconds() {
				t.Errorf("round %d converged in %.1f s, want within %s", r.Round, r.Seconds, bound)
			}
		}
		if len(d.proxy.Pending()) > 0 {
			t.Error("the first round's table write was not sent")
		}
		wantReadBeforeEachWrite(t, after(d.proxy.Requests(), i0))
	})
}
