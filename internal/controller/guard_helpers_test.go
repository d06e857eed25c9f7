package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/watchlist"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// guardInterval is the guard's period in the scenarios: long against the
// fabric's operations (a few ms), so that one guard cycle never overlaps
// the next. The scenarios run in synctest bubbles, so the interval costs
// no wall time.
const guardInterval = 150 * time.Millisecond

// bubble runs a subtest in a synctest bubble: the controller's tickers and
// timers, the SDK's pollers and retries and the fabric's operations all run
// on the bubble's fake clock, which moves only when every goroutine in the
// bubble waits. A scenario then takes no wall time, and "within one guard
// interval" is decided by the order of events, not by how busy the machine
// is. (The in-process fabric does no network I/O; its SQLite calls return
// without waiting on anything outside the bubble.)
func bubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}

const (
	pool2Subnet = fabrictest.KTHWPool2
	newTableID  = fabrictest.KTHWTable2
)

// recorder is a Reporter that keeps every result, as the metrics and event
// reporters would see them.
type recorder struct{ results watchlist.List[*Result] }

func (r *recorder) Report(_ context.Context, res *Result) { r.results.Add(res) }

func (r *recorder) all() []*Result { return r.results.All() }

// wait returns the first result started at or after since that satisfies
// ok, waiting for each new result up to timeout in all. It does not poll:
// in a synctest bubble it blocks durably, so the bubble's clock moves on
// to the next guard tick, resync or retry while it waits.
func (r *recorder) wait(t testing.TB, since time.Time, timeout time.Duration, what string, ok func(*Result) bool) *Result {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		results, next := r.results.Watch()
		for _, res := range results {
			if !res.Start.Before(since) && ok(res) {
				return res
			}
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("no result with %s within %s; results since:\n%s", what, timeout, r.dump(since))
		}
	}
}

func (r *recorder) dump(since time.Time) string {
	var b strings.Builder
	for _, res := range r.all() {
		if res.Start.Before(since) {
			continue
		}
		fmt.Fprintf(&b, "  +%s %s err=%v\n", res.Start.Sub(since).Round(time.Millisecond), res.Summary(), res.Err)
		for _, a := range res.Associations {
			fmt.Fprintf(&b, "      %s %s: %s\n", a.Subnet[strings.LastIndex(a.Subnet, "/")+1:], a.State, a.Message)
		}
	}
	return b.String()
}

// guardCyclesBefore counts the guard checks that started after since and
// before res started: cycles that looked and did not repair. "Within one
// guard interval" means none.
func (r *recorder) guardCyclesBefore(since time.Time, res *Result) int {
	n := 0
	for _, g := range r.all() {
		if g.GuardOnly && g != res && g.Start.After(since) && g.Start.Before(res.Start) {
			n++
		}
	}
	return n
}

// findAssoc returns the association of subnet in res.
func findAssoc(res *Result, subnet string) (verdict.Subnet, bool) {
	for _, a := range res.Associations {
		if armid.Same(a.Subnet, subnet) {
			return a, true
		}
	}
	return verdict.Subnet{}, false
}

func hasState(subnet string, state assoc.State) func(*Result) bool {
	return func(res *Result) bool {
		a, ok := findAssoc(res, subnet)
		return ok && a.State == state
	}
}

// scenario is a controller running its Run loop against an in-process
// fabric, with the real SDK both for routekeeper and for the out-of-band
// actors (an IaC redeploy, an operator in the portal).
type scenario struct {
	t     *testing.T
	env   *fabrictest.Env
	ctrl  *Controller
	rec   *recorder
	nodes []source.Node

	tables  *armnetwork.RouteTablesClient
	subnets *armnetwork.SubnetsClient
	vnets   *armnetwork.VirtualNetworksClient

	stop func()
}

func scenarioConfig() Config {
	return Config{
		Cluster:       "kthw",
		ClusterCIDRs:  []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID:  fabrictest.KTHWTable,
		Location:      "eastus",
		CreateTable:   true,
		Subnets:       []string{fabrictest.KTHWSubnet},
		GuardInterval: guardInterval,
		Resync:        time.Hour,
		BatchWindow:   10 * time.Millisecond,
		RetryBackoff:  guardInterval,
	}
}

func workers(n int) []source.Node {
	out := make([]source.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("worker-%d", i), fmt.Sprintf("10.240.0.%d", 20+i), fmt.Sprintf("10.200.%d.0/24", i))
	}
	return out
}

func newScenario(t *testing.T, topology string, cfg Config, nodes []source.Node) *scenario {
	t.Helper()
	env := fabrictest.New(t, fabric.Options{OperationDuration: 5 * time.Millisecond}, topology)
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s := &scenario{
		t: t, env: env, rec: rec, nodes: nodes,
		tables: f.NewRouteTablesClient(), subnets: f.NewSubnetsClient(), vnets: f.NewVirtualNetworksClient(),
	}
	s.ctrl = New(cfg, env.Client, nodesource.New(nodes...), nil, rec)
	return s
}

// start runs the controller's Run loop until the test ends.
func (s *scenario) start() {
	s.stop = runInBackground(s.t, s.ctrl.Run)
	s.t.Cleanup(s.stop)
}

// runInBackground starts run (a controller's or a set's Run) on a
// goroutine. stop cancels it, waits for it to return and fails tb when it
// returned an error.
func runInBackground(tb testing.TB, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run returned %v", err)
		}
	}
}

// writes is routekeeper's ARM writes so far (the out-of-band actors use
// their own clients and are not counted).
func (s *scenario) writes() int64 {
	_, w := s.env.Client.Calls()
	return w
}

// wantWrites returns the ARM writes routekeeper made since w0 (what
// writes returned then), failing t when they are other than want; why,
// when given, says which writes they are.
func (s *scenario) wantWrites(t testing.TB, w0, want int64, why string) int64 {
	t.Helper()
	w := s.writes() - w0
	if w != want {
		if why != "" {
			t.Errorf("ARM writes = %d, want %d (%s)", w, want, why)
		} else {
			t.Errorf("ARM writes = %d, want %d", w, want)
		}
	}
	return w
}

// withinOneInterval fails t when a guard cycle started after fault and
// before res (what: what res did): the guard looked and did not act, so
// res came later than one guard interval after the fault.
func (s *scenario) withinOneInterval(t testing.TB, fault time.Time, res *Result, what string) {
	t.Helper()
	if n := s.rec.guardCyclesBefore(fault, res); n > 0 {
		t.Errorf("%d guard cycles passed before %s, want it within one interval", n, what)
	}
}

// afterGuardCycle returns right after the next guard cycle ends, so that
// a fault made of several calls lands between two cycles.
func (s *scenario) afterGuardCycle() {
	s.t.Helper()
	s.rec.wait(s.t, time.Now(), 5*time.Second, "a guard cycle", func(r *Result) bool { return r.GuardOnly })
}

// steadyWithSecondTable is steady with a second table,
// kubernetes-routes-v2, made in the group and seen by one guard cycle: the
// table a swap or a replacement moves the node subnet to.
func (s *scenario) steadyWithSecondTable() {
	s.t.Helper()
	s.steady()
	s.putTable("kubernetes-routes-v2", nil)
	s.afterGuardCycle()
}

// moveAndDeleteOurs moves the node subnet to table ("" detaches it) and
// deletes routekeeper's table, as a replacement of the table does; it
// returns when the fault began.
func (s *scenario) moveAndDeleteOurs(table string) time.Time {
	s.t.Helper()
	fault := time.Now()
	s.associate(fabrictest.KTHWSubnet, table)
	s.deleteTable("kubernetes-routes")
	return fault
}

// settle waits for n more guard cycles.
func (s *scenario) settle(n int) {
	since := time.Now()
	s.rec.wait(s.t, since, 5*time.Second, fmt.Sprintf("%d guard cycles", n), func(*Result) bool {
		c := 0
		for _, r := range s.rec.all() {
			if r.GuardOnly && r.Start.After(since) {
				c++
			}
		}
		return c >= n
	})
}

func (s *scenario) getTable(name string) (*armnetwork.RouteTable, error) {
	resp, err := s.tables.Get(context.Background(), "kubernetes", name, nil)
	if err != nil {
		return nil, err
	}
	return &resp.RouteTable, nil
}

// routedTable returns the route table name, failing t unless it holds
// the route of every node of the scenario.
func (s *scenario) routedTable(t testing.TB, name string) *armnetwork.RouteTable {
	t.Helper()
	tb := s.mustTable(name)
	if err := nodeRoutesIn(tb, s.nodes); err != nil {
		t.Error(err)
	}
	return tb
}

func (s *scenario) mustTable(name string) *armnetwork.RouteTable {
	s.t.Helper()
	t, err := s.getTable(name)
	if err != nil {
		s.t.Fatalf("reading route table %s: %v", name, err)
	}
	return t
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

func (s *scenario) putTable(name string, tags map[string]string, routes ...*armnetwork.Route) *armnetwork.RouteTable {
	s.t.Helper()
	t := armnetwork.RouteTable{Location: to.Ptr("eastus"), Tags: map[string]*string{}, Properties: &armnetwork.RouteTablePropertiesFormat{Routes: routes}}
	for k, v := range tags {
		t.Tags[k] = to.Ptr(v)
	}
	p, err := s.tables.BeginCreateOrUpdate(context.Background(), "kubernetes", name, t, nil)
	res := fabrictest.MustPoll(s.t, p, err)
	return &res.RouteTable
}

func (s *scenario) deleteTable(name string) {
	s.t.Helper()
	p, err := s.tables.BeginDelete(context.Background(), "kubernetes", name, nil)
	fabrictest.MustPoll(s.t, p, err)
}

// associate is `az network vnet subnet update --route-table` (tableID ""
// removes the association): GET the subnet, PUT it back with the change.
func (s *scenario) associate(subnet, tableID string) {
	s.t.Helper()
	name := subnet[strings.LastIndex(subnet, "/")+1:]
	ctx := context.Background()
	sn, err := s.subnets.Get(ctx, "kubernetes", "kubernetes-vnet", name, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if tableID == "" {
		sn.Properties.RouteTable = nil
	} else {
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
	}
	p, err := s.subnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", name, sn.Subnet, nil)
	fabrictest.MustPoll(s.t, p, err)
}

func (s *scenario) subnetTable(subnet string) string {
	s.t.Helper()
	name := subnet[strings.LastIndex(subnet, "/")+1:]
	sn, err := s.subnets.Get(context.Background(), "kubernetes", "kubernetes-vnet", name, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if sn.Properties.RouteTable == nil {
		return ""
	}
	return *sn.Properties.RouteTable.ID
}

// redeployVNet is what an ARM template or Terraform redeploy of the VNet
// sends (the IaC redeploy that detaches the table): the VNet with its
// inline subnets, none of them carrying the routeTable the IaC code does
// not know about.
func (s *scenario) redeployVNet(subnets ...[2]string) {
	s.t.Helper()
	fabrictest.RedeployKTHWVNet(s.t, s.env.Server.ClientOptions(), subnets...)
}

// nodeRoutesIn checks that the table holds every node's route.
func nodeRoutesIn(t *armnetwork.RouteTable, nodes []source.Node) error {
	have := map[string]string{}
	for _, r := range t.Properties.Routes {
		have[strings.ToLower(*r.Name)] = *r.Properties.AddressPrefix + " " + string(*r.Properties.NextHopType) + " " + derefStr(r.Properties.NextHopIPAddress)
	}
	var missing []string
	for _, n := range nodes {
		for _, c := range n.PodCIDRs {
			want := c.String() + " VirtualAppliance " + n.InternalIPs[0].String()
			if have[strings.ToLower(route.Name(n.Name, c))] != want {
				missing = append(missing, route.Name(n.Name, c))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("route table %s lacks node routes %v", *t.Name, missing)
	}
	return nil
}

func derefStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func tagOf(t *armnetwork.RouteTable, key string) string {
	for k, v := range t.Tags {
		if strings.EqualFold(k, key) && v != nil {
			return *v
		}
	}
	return ""
}

// steady sets the network up (the table created, filled and associated,
// by a reconcile of a controller allowed to do so), starts the loop and
// waits for its first clean reconcile.
func (s *scenario) steady() *Result {
	s.t.Helper()
	boot := s.ctrl.cfg
	boot.Policy, boot.CreateTable, boot.Mode = assoc.Enforce, true, verdict.Manage
	if r := New(boot, s.env.Client, nodesource.New(s.nodes...), nil).Reconcile(context.Background()); r.Err != nil || r.AssociationProblems() > 0 {
		s.t.Fatalf("setting the network up: %s: %v", r.Summary(), r.Err)
	}
	s.start()
	res := s.rec.wait(s.t, time.Time{}, 5*time.Second, "a first successful reconcile", func(r *Result) bool {
		return !r.GuardOnly && r.Err == nil && r.AssociationProblems() == 0
	})
	return res
}

// repairTime is from the fault to the end of the result that repaired it.
func repairTime(fault time.Time, res *Result) time.Duration {
	return res.Start.Add(res.Duration).Sub(fault)
}

// armNodeRoutes are the node routes as another tool would copy them into
// a table (same names, prefixes and next hops).
func armNodeRoutes(nodes []source.Node) []*armnetwork.Route {
	var out []*armnetwork.Route
	for _, n := range nodes {
		for _, cidr := range n.PodCIDRs {
			hop, _ := n.NextHop(cidr)
			out = append(out, &armnetwork.Route{Name: to.Ptr(route.Name(n.Name, cidr)), Properties: &armnetwork.RoutePropertiesFormat{
				AddressPrefix: to.Ptr(cidr.String()), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr(hop.String())}})
		}
	}
	return out
}
