package migrate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/lossy"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/watchlist"
)

const (
	fabOld  = fabrictest.KTHWTable
	fabNew  = fabrictest.KTHWTable2
	fabSub1 = fabrictest.KTHWSubnet
	fabSub2 = fabrictest.KTHWPool2
)

func nodes(n int) []source.Node {
	out := make([]source.Node, n)
	for i := range out {
		out[i] = source.Node{Name: fmt.Sprintf("worker-%d", i),
			InternalIPs: []netip.Addr{netip.MustParseAddr(fmt.Sprintf("10.240.%d.%d", i/200, 10+i%200))},
			PodCIDRs:    []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.200.%d.0/24", i))}}
	}
	return out
}

// world is a fabric with a cluster's table made, filled and associated by
// the controller, a firewall route in it, and an empty new table made by
// "Terraform" with a route of its own.
type world struct {
	t      *testing.T
	env    *fabrictest.Env
	mig    *azure.Client // migrate's own client, so its writes are counted apart
	nodes  []source.Node
	cfg    controller.Config
	tables *armnetwork.RouteTablesClient
	routes *armnetwork.RoutesClient
	subs   *armnetwork.SubnetsClient
}

func newWorld(t *testing.T, n int) *world {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{OperationDuration: 5 * time.Millisecond}, fabrictest.KTHWTwoSubnets)
	mig, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: env.Server.ClientOptions(), PollFrequency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, env: env, mig: mig, nodes: nodes(n), tables: f.NewRouteTablesClient(), routes: f.NewRoutesClient(), subs: f.NewSubnetsClient()}
	w.cfg = controller.Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: fabOld, Location: "eastus", CreateTable: true, Subnets: []string{fabSub1, fabSub2},
	}
	res := controller.New(w.cfg, env.Client, nodesource.New(w.nodes...), nil).Reconcile(context.Background())
	if res.Err != nil || res.AssociationProblems() > 0 {
		t.Fatalf("setting up: %s: %v", res.Summary(), res.Err)
	}
	w.putRoute("kubernetes-routes", "to-firewall", "0.0.0.0/0", "10.240.0.4")
	p, err := w.tables.BeginCreateOrUpdate(context.Background(), "kubernetes", "kubernetes-routes-v2", armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Tags: map[string]*string{"owner": to.Ptr("terraform")},
		Properties: &armnetwork.RouteTablePropertiesFormat{Routes: []*armnetwork.Route{{Name: to.Ptr("to-onprem"), Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr("192.168.0.0/16"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualNetworkGateway)}}}},
	}, nil)
	fabrictest.MustPoll(t, p, err)
	return w
}

func (w *world) putRoute(table, name, prefix, hop string) {
	w.t.Helper()
	p, err := w.routes.BeginCreateOrUpdate(context.Background(), "kubernetes", table, name, armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr(prefix), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr(hop)}}, nil)
	fabrictest.MustPoll(w.t, p, err)
}

func (w *world) opts(deleteOld bool) Options {
	return Options{Cluster: w.cfg.Cluster, ClusterCIDRs: w.cfg.ClusterCIDRs, From: fabOld, To: fabNew, Subnets: w.cfg.Subnets, DeleteOld: deleteOld}
}

func (w *world) writes() int64 { _, n := w.mig.Calls(); return n }

// checkMigrated checks the end state: both subnets on the new table, which
// holds every node route, the firewall route and its own route, claimed;
// the old table marked (or deleted).
func (w *world) checkMigrated(deleted bool) {
	w.t.Helper()
	ctx := context.Background()
	nt, err := w.mig.GetRouteTable(ctx, fabNew)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := holdsNodes(nt, w.nodes); err != nil {
		w.t.Error(err)
	}
	if len(nt.Routes) != len(w.nodes)+2 {
		w.t.Errorf("new table has %d routes, want %d nodes + firewall + its own", len(nt.Routes), len(w.nodes))
	}
	if nt.Claim() != "kthw" || nt.Tag("owner") != "terraform" || !armid.Same(nt.Tag(route.MigratedFromTag), fabOld) {
		w.t.Errorf("new table tags %v", nt.Tags)
	}
	for _, id := range []string{fabSub1, fabSub2} {
		s, err := w.mig.GetSubnet(ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if !armid.Same(s.RouteTableID, fabNew) {
			w.t.Errorf("subnet %s on %s", id, s.RouteTableID)
		}
	}
	old, err := w.mig.GetRouteTable(ctx, fabOld)
	switch {
	case deleted && err == nil:
		w.t.Error("the old table still exists")
	case !deleted && err != nil:
		w.t.Fatal(err)
	case !deleted:
		if !armid.Same(old.Tag(route.MigratedToTag), fabNew) || old.Claim() != "" || len(old.Routes) != len(w.nodes)+1 {
			w.t.Errorf("old table: tags %v, %d routes", old.Tags, len(old.Routes))
		}
	}
}

func holdsNodes(t *route.Table, ns []source.Node) error {
	have := map[string]route.Route{}
	for _, r := range t.Routes {
		have[strings.ToLower(r.Name)] = r
	}
	var missing []string
	for _, n := range ns {
		for _, c := range n.PodCIDRs {
			r, ok := have[strings.ToLower(route.Name(n.Name, c))]
			if !ok || r.AddressPrefix != c.String() || r.NextHopIP != n.InternalIPs[0] {
				missing = append(missing, n.Name)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("route table %s lacks the routes of %d node(s): %v", t.Name, len(missing), missing)
	}
	return nil
}

func TestRunMigrates(t *testing.T) {
	for _, deleteOld := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete-old=%v", deleteOld), func(t *testing.T) {
			w := newWorld(t, 5)
			p, err := Run(context.Background(), w.mig, w.opts(deleteOld), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(4) // copy, associate x2, mark
			if deleteOld {
				want++
			}
			if p.Writes != want || w.writes() != want {
				t.Errorf("writes = %d (plan says %d), want %d", w.writes(), p.Writes, want)
			}
			if !p.Complete() {
				t.Errorf("plan not complete: %v", statuses(p))
			}
			for _, s := range p.Steps {
				if s.Status != Applied && !(s.Action == ActionCheck && s.Status == Done) && !(s.Action == ActionDelete && !deleteOld && s.Status == Skipped) {
					t.Errorf("step %d %s: %s", s.N, s.Action, s.Status)
				}
			}
			w.checkMigrated(deleteOld)

			// Run again: nothing to do, nothing written.
			p, err = Run(context.Background(), w.mig, w.opts(deleteOld), RunOptions{})
			if err != nil || !p.Complete() || p.Writes != 0 {
				t.Fatalf("second run: %v, writes %d, steps %v", err, p.Writes, statuses(p))
			}
		})
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	w := newWorld(t, 5)
	p, err := Run(context.Background(), w.mig, w.opts(true), RunOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if w.writes() != 0 || p.Writes != 0 {
		t.Errorf("dry run wrote %d times", w.writes())
	}
	want := []string{"check:done", "copy-routes:pending", "verify:pending", "associate:pending", "associate:pending", "mark-old:pending", "delete-old:pending"}
	if got := statuses(p); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("steps %v, want %v", got, want)
	}
	if got := len(p.Steps[1].Routes); got != 6 {
		t.Errorf("copy would add %d routes, want 5 node routes and the firewall route", got)
	}
}

func TestRunRefusesConflicts(t *testing.T) {
	w := newWorld(t, 3)
	// The new table sends worker-1's pod CIDR elsewhere.
	w.putRoute("kubernetes-routes-v2", "legacy", "10.200.1.0/24", "10.240.0.99")
	p, err := Run(context.Background(), w.mig, w.opts(true), RunOptions{})
	if !errors.Is(err, ErrConflicts) {
		t.Fatalf("err = %v, want ErrConflicts", err)
	}
	if w.writes() != 0 {
		t.Errorf("%d writes", w.writes())
	}
	if len(p.Conflicts) != 1 || p.Conflicts[0].Route != route.Name("worker-1", netip.MustParsePrefix("10.200.1.0/24")) || !strings.Contains(p.Conflicts[0].Message, "10.240.0.99") {
		t.Errorf("conflicts %+v", p.Conflicts)
	}
}

// errInterrupted stands for ^C, a crash or a lost connection.
var errInterrupted = errors.New("interrupted")

// crashingCloud sends the n-th write and then fails as if the process had
// died before it heard the answer: the write landed, the caller does not
// know.
type crashingCloud struct {
	Cloud
	n, count int
}

func (c *crashingCloud) crash() error {
	c.count++
	if c.count == c.n {
		return errInterrupted
	}
	return nil
}

func (c *crashingCloud) PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error) {
	r, err := c.Cloud.PutRouteTable(ctx, t, etag)
	if err == nil {
		err = c.crash()
	}
	return r, err
}

func (c *crashingCloud) SetSubnetRouteTable(ctx context.Context, s, t, etag string) (*observe.Subnet, error) {
	r, err := c.Cloud.SetSubnetRouteTable(ctx, s, t, etag)
	if err == nil {
		err = c.crash()
	}
	return r, err
}

func (c *crashingCloud) DeleteRouteTable(ctx context.Context, id, etag string) error {
	err := c.Cloud.DeleteRouteTable(ctx, id, etag)
	if err == nil {
		err = c.crash()
	}
	return err
}

// A migration interrupted after any step, or in the middle of any write,
// completes when run again, without writing anything twice.
func TestInterruptedMigrationResumes(t *testing.T) {
	const steps = 5 // copy, associate x2, mark, delete: the steps that write
	for k := 1; k <= steps; k++ {
		t.Run(fmt.Sprintf("stopped after step %d", k), func(t *testing.T) {
			w := newWorld(t, 5)
			applied := 0
			_, err := Run(context.Background(), w.mig, w.opts(true), RunOptions{Progress: func(s Step) error {
				if s.Status == Applied {
					if applied++; applied == k {
						return errInterrupted
					}
				}
				return nil
			}})
			if !errors.Is(err, errInterrupted) {
				t.Fatalf("first run: %v", err)
			}
			p, err := Run(context.Background(), w.mig, w.opts(true), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if w.writes() != steps {
				t.Errorf("writes over both runs = %d, want %d", w.writes(), steps)
			}
			if p.Writes != int64(steps-k) {
				t.Errorf("second run wrote %d, want %d", p.Writes, steps-k)
			}
			w.checkMigrated(true)
		})
		t.Run(fmt.Sprintf("crashed during write %d", k), func(t *testing.T) {
			w := newWorld(t, 5)
			_, err := Run(context.Background(), &crashingCloud{Cloud: w.mig, n: k}, w.opts(true), RunOptions{})
			if !errors.Is(err, errInterrupted) {
				t.Fatalf("first run: %v", err)
			}
			if _, err := Run(context.Background(), w.mig, w.opts(true), RunOptions{}); err != nil {
				t.Fatal(err)
			}
			if w.writes() != steps {
				t.Errorf("writes over both runs = %d, want %d", w.writes(), steps)
			}
			w.checkMigrated(true)
		})
	}
}

// A route the controller adds to the old table after the copy is copied
// again before any subnet moves.
func TestRecopyWhenTheOldTableGainsARoute(t *testing.T) {
	w := newWorld(t, 3)
	var events []string
	injected := false
	_, err := Run(context.Background(), w.mig, w.opts(false), RunOptions{Progress: func(s Step) error {
		events = append(events, s.Action+":"+string(s.Status))
		if s.Action == ActionAssociate && !injected {
			injected = true
			w.putRoute("kubernetes-routes", route.Name("worker-9", netip.MustParsePrefix("10.200.9.0/24")), "10.200.9.0/24", "10.240.0.29")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(events, " ")
	want := "copy-routes:pending copy-routes:applied associate:pending copy-routes:pending copy-routes:applied associate:pending associate:applied"
	if !strings.HasPrefix(got, want) {
		t.Errorf("progress %q\nwant prefix %q", got, want)
	}
	w.nodes = append(w.nodes, source.Node{Name: "worker-9", InternalIPs: []netip.Addr{netip.MustParseAddr("10.240.0.29")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.9.0/24")}})
	w.checkMigrated(false)
}

// The live migration of a 50-node table, with the controller running on
// the old table (policy enforce with restore: the most eager to put the
// old table back) and a sampler reading the fabric after every request
// the controller or migrate makes: no sample shows a subnet on a table
// that lacks a node route, the controller moves to the new table by
// itself, and the old one is deleted.
//
// It runs in a synctest bubble, on its fake clock. The controller's and
// migrate's requests pass one at a time through a transport that samples
// the subnets and their tables after each (the fabric answers one request
// at a time anyway), so every state the two of them leave is sampled, not
// only those a busy loop happens to catch. After each migration step the
// test waits for a guard cycle that started after it: the controller looks
// at every intermediate state.
func TestLiveMigrationInvariant(t *testing.T) { synctest.Test(t, liveMigrationInvariant) }

func liveMigrationInvariant(t *testing.T) {
	w := newWorld(t, 50)
	cfg := w.cfg
	cfg.Restore = true
	cfg.GuardInterval = 40 * time.Millisecond
	cfg.Resync = 100 * time.Millisecond

	var samples, violations int
	seen := map[string]int{} // "<subnet> on <table>" -> samples
	var firstViolation string
	violation := func(format string, args ...any) {
		violations++
		if firstViolation == "" {
			firstViolation = fmt.Sprintf(format, args...)
		}
	}
	sample := func() {
		sctx := context.Background()
		for _, id := range []string{fabSub1, fabSub2} {
			name := id[strings.LastIndex(id, "/")+1:]
			sn, err := w.subs.Get(sctx, "kubernetes", "kubernetes-vnet", name, nil)
			if err != nil {
				t.Errorf("sampler: %v", err)
				return
			}
			if sn.Properties.RouteTable == nil {
				violation("subnet %s has no route table", name)
				continue
			}
			tid := *sn.Properties.RouteTable.ID
			tb, err := w.env.Client.GetRouteTable(sctx, tid)
			if err != nil {
				violation("subnet %s points to %s, which cannot be read: %v", name, tid, err)
				continue
			}
			samples++
			seen[name+" on "+tb.Name]++
			if err := holdsNodes(tb, w.nodes); err != nil {
				violation("subnet %s: %v", name, err)
			}
		}
	}
	var one sync.Mutex // one request of the controller or migrate at a time
	var version string // the state's version at the last sample
	sampled := func() *arm.ClientOptions {
		o := *w.env.Server.ClientOptions()
		o.Transport = transportFunc(func(next policy.Transporter, req *http.Request) (*http.Response, error) {
			one.Lock()
			defer one.Unlock()
			resp, err := next.Do(req)
			// A sample when the request changed the state (a write, or an
			// operation that ended). The bubble's clock stands still while
			// the sampler reads, so no operation ends between its reads.
			if v, verr := w.env.Store.Version(context.Background()); verr != nil {
				t.Errorf("sampler: %v", verr)
			} else if v != version {
				sample()
				version = v
			}
			return resp, err
		}).on(o.Transport)
		return &o
	}
	ctrlCloud, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: sampled(), PollFrequency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mig, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: sampled(), PollFrequency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := &results{}
	ctrl := controller.New(cfg, ctrlCloud, nodesource.New(w.nodes...), nil, rec)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ctrl.Run(ctx) }()

	// A reconcile and a few guard cycles before.
	rec.wait(t, "a first reconcile", func(r *controller.Result) bool { return !r.GuardOnly })
	for range 3 {
		rec.wait(t, "a guard cycle", func(r *controller.Result) bool { return r.GuardOnly })
	}
	_, ctrlWrites0 := ctrlCloud.Calls()
	start := time.Now()
	// After each step, a guard cycle that started after it looks at the
	// state it left.
	looked := func(s Step) error {
		if s.Status == Applied {
			stepped := time.Now()
			rec.wait(t, "a guard cycle after step "+s.Action, func(r *controller.Result) bool { return r.GuardOnly && !r.Start.Before(stepped) })
		}
		return nil
	}
	p, err := Run(context.Background(), mig, w.opts(true), RunOptions{Progress: looked})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// The controller notices (the old table is gone; the subnets are on
	// the new table, which names the old one), then keeps it for a few
	// cycles and a reconcile.
	rec.wait(t, "the controller on the new table", func(r *controller.Result) bool { return armid.Same(r.TableID, fabNew) })
	for range 3 {
		rec.wait(t, "a guard cycle on the new table", func(r *controller.Result) bool { return r.GuardOnly })
	}
	rec.wait(t, "a reconcile on the new table", func(r *controller.Result) bool { return !r.GuardOnly })
	cancel()
	if err := <-runDone; err != nil {
		t.Errorf("controller: %v", err)
	}

	if _, n := ctrlCloud.Calls(); n != ctrlWrites0 {
		t.Errorf("the controller made %d writes during and after the migration, want 0", n-ctrlWrites0)
	}
	if violations > 0 {
		t.Errorf("%d of %d samples broke the invariant; first: %v", violations, samples, firstViolation)
	}
	for _, st := range []string{"kubernetes-subnet on kubernetes-routes", "kubernetes-subnet on kubernetes-routes-v2", "pool-2 on kubernetes-routes", "pool-2 on kubernetes-routes-v2"} {
		if seen[st] == 0 {
			t.Errorf("the sampler never saw %s (saw %v)", st, seen)
		}
	}
	t.Logf("samples: %v", seen)
	if !armid.Same(ctrl.TableID(), fabNew) {
		t.Errorf("the controller still keeps %s", ctrl.TableID())
	}
	w.mig = mig
	w.checkMigrated(true)
	t.Logf("SCENARIO live migration of 50 nodes, 2 subnets, controller running: %s of the bubble's clock, %d ARM writes by migrate, %d samples, %d violations",
		took, p.Writes, samples, violations)
}

// transportFunc is a transport made of a function that gets the next one.
type transportFunc func(next policy.Transporter, req *http.Request) (*http.Response, error)

func (f transportFunc) on(next policy.Transporter) policy.Transporter {
	return boundTransport{f: f, next: next}
}

type boundTransport struct {
	f    transportFunc
	next policy.Transporter
}

func (b boundTransport) Do(req *http.Request) (*http.Response, error) { return b.f(b.next, req) }

// results is a controller.Reporter the test waits on.
type results struct {
	list watchlist.List[*controller.Result]
}

func (r *results) Report(_ context.Context, res *controller.Result) { r.list.Add(res) }

// wait returns the first result reported from now on that satisfies ok,
// failing the test after a minute of the bubble's clock.
func (r *results) wait(t *testing.T, what string, ok func(*controller.Result) bool) *controller.Result {
	t.Helper()
	from := len(r.list.All())
	deadline := time.After(time.Minute)
	for {
		all, next := r.list.Watch()
		got := all[from:]
		from = len(all)
		for _, res := range got {
			if ok(res) {
				return res
			}
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("no %s within a minute", what)
		}
	}
}

// TestLostAnswersDoNotStopTheMigration: each write of the migration
// reaches ARM and loses its answer (a connection reset). Each is read back,
// after a pause that lets its operation end, instead of sent again: the
// run finishes with one write per step, none re-sent blind, and the end
// state is the migrated one. (A synctest bubble: the pauses cost no time.)
func TestLostAnswersDoNotStopTheMigration(t *testing.T) {
	synctest.Test(t, lostAnswersDoNotStopTheMigration)
}

func lostAnswersDoNotStopTheMigration(t *testing.T) {
	w := newWorld(t, 3)
	proxy := lossy.New(w.env.Server.Transporter(), 1)
	opts := w.env.Server.ClientOptions()
	opts.Transport = proxy
	mig, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: opts, PollFrequency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.mig = mig
	proxy.Script(
		lossy.Fault{Method: http.MethodPut, Path: "/routeTables/kubernetes-routes-v2/", Lose: true}, // copy
		lossy.Fault{Method: http.MethodPut, Path: "/subnets/", Lose: true},                          // associate
		lossy.Fault{Method: http.MethodPut, Path: "/routeTables/kubernetes-routes/", Lose: true},    // mark
		lossy.Fault{Method: http.MethodDelete, Path: "/routeTables/kubernetes-routes/", Lose: true}, // delete
	)
	p, err := Run(context.Background(), mig, w.opts(true), RunOptions{})
	if err != nil {
		t.Fatalf("migration with lost answers: %v", err)
	}
	if left := proxy.Pending(); len(left) > 0 {
		t.Errorf("faults not played: %v", left)
	}
	log := proxy.Requests()
	if b := lossy.Blind(log); len(b) > 0 {
		t.Errorf("writes re-sent blind: %v", b)
	}
	if u := lossy.Unread(log); len(u) > 0 {
		t.Errorf("writes after an unknown outcome without a read: %v", u)
	}
	if w.writes() != 5 {
		t.Errorf("writes = %d, want 5 (copy, associate x2, mark, delete), each once:\n%s", w.writes(), dumpLog(log))
	}
	if !p.Complete() {
		t.Errorf("plan not complete: %v", statuses(p))
	}
	w.checkMigrated(true)
}

func dumpLog(log []lossy.Request) string {
	var b strings.Builder
	for _, r := range log {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}
