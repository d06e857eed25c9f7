package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// appGWTopology is the KTHW network with an Application Gateway subnet
// whose own route table sends 0.0.0.0/0 to the Internet (as App Gateway
// v2 requires) and holds a custom route to an on-premises range.
const appGWTopology = kthw.AppGateway + `          - name: to-onprem
            addressPrefix: 192.168.0.0/16
            nextHopType: VirtualAppliance
            nextHopIpAddress: 10.240.0.4
`

const (
	appGWSubnet = fabrictest.KTHWVNet + "/subnets/appgw-subnet"
	appGWTable  = "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/appgw-routes"
)

func appGWMirror() Mirror {
	return Mirror{RouteTableID: appGWTable, Subnets: []string{appGWSubnet}, Policy: assoc.Enforce}
}

// mirrorSet builds a set of the main KTHW controller and mirrors on env,
// all on one shared source.
func mirrorSet(env *fabrictest.Env, cfg Config, src Source, mirrors ...Mirror) *Set {
	shared := Share(src, nil)
	s := &Set{Main: New(cfg, env.Client, shared, nil)}
	for _, m := range mirrors {
		s.Mirrors = append(s.Mirrors, New(MirrorConfig(cfg, m), env.Client, shared, nil))
	}
	return s
}

// armRoutes reads a table through the SDK, by name, as "name prefix hop [ip]".
func armRoutes(t *testing.T, env *fabrictest.Env, name string) []string {
	t.Helper()
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.NewRouteTablesClient().Get(context.Background(), "kubernetes", name, nil)
	if err != nil {
		t.Fatalf("reading route table %s: %v", name, err)
	}
	var out []string
	for _, r := range resp.Properties.Routes {
		s := *r.Name + " " + *r.Properties.AddressPrefix + " " + string(*r.Properties.NextHopType)
		if ip := derefStr(r.Properties.NextHopIPAddress); ip != "" {
			s += " " + ip
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// wantRoutes is the node routes of nodes plus extra, sorted like armRoutes.
func wantRoutes(nodes []source.Node, extra ...string) []string {
	out := append([]string(nil), extra...)
	for _, n := range nodes {
		for _, c := range n.PodCIDRs {
			hop, _ := n.NextHop(c)
			out = append(out, route.Name(n.Name, c)+" "+c.String()+" VirtualAppliance "+hop.String())
		}
	}
	slices.Sort(out)
	return out
}

var appGWOwn = []string{"default-internet 0.0.0.0/0 Internet", "to-onprem 192.168.0.0/16 VirtualAppliance 10.240.0.4"}

// TestMirrorFollowsNodes: the App Gateway subnet's table gets the pod
// routes beside its own two routes, in step through a node added, one
// removed and one whose IP changed, with one PUT per table per change; its
// own routes are never changed and it stays on the App Gateway subnet.
func TestMirrorFollowsNodes(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{OperationDuration: 2 * time.Millisecond}, appGWTopology)
	src := nodesource.New(workers(2)...)
	set := mirrorSet(env, scenarioConfig(), src, appGWMirror())
	ctx := context.Background()

	steps := []struct {
		name  string
		nodes []source.Node
	}{
		{"start", workers(2)},
		{"node added", workers(3)},
		{"node removed", workers(3)[1:]},
		{"IP changed", []source.Node{workers(3)[1], node("worker-2", "10.240.0.99", "10.200.2.0/24")}},
		{"steady", []source.Node{workers(3)[1], node("worker-2", "10.240.0.99", "10.200.2.0/24")}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			src.Set(st.nodes)
			res := set.Reconcile(ctx, observe.Scope{})
			for _, r := range res {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.TableID, r.Err)
				}
				wantWrite := i < len(steps)-1
				if r.Wrote != wantWrite {
					t.Errorf("%s wrote = %v, want %v (one PUT per table per change, none when steady)", TableName(r.TableID), r.Wrote, wantWrite)
				}
				if r.Unrouted() != 0 || r.AssociationProblems() != 0 {
					t.Errorf("%s: %s", TableName(r.TableID), r.Summary())
				}
			}
			if got, want := armRoutes(t, env, "appgw-routes"), wantRoutes(st.nodes, appGWOwn...); !slices.Equal(got, want) {
				t.Errorf("mirror table:\n got %q\nwant %q", got, want)
			}
			if got, want := armRoutes(t, env, "kubernetes-routes"), wantRoutes(st.nodes); !slices.Equal(got, want) {
				t.Errorf("main table:\n got %q\nwant %q", got, want)
			}
		})
	}
	s := &scenario{t: t, env: env}
	f, _ := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	s.subnets = f.NewSubnetsClient()
	if got := s.subnetTable(appGWSubnet); !armid.Same(got, appGWTable) {
		t.Errorf("App Gateway subnet is on %q, want its own table", got)
	}
	if got := s.subnetTable(fabrictest.KTHWSubnet); !armid.Same(got, fabrictest.KTHWTable) {
		t.Errorf("node subnet is on %q, want the main table", got)
	}
}

var clusterCIDR = netip.MustParsePrefix("10.200.0.0/16")

// TestMirrorNeverChangesForeignRoutes is a property test: whatever routes
// the mirror table holds of its own (random prefixes, next hop types,
// names, some inside the cluster CIDR, some named like node routes of
// another cluster), a pass adds exactly the node routes and leaves every
// foreign route bit for bit.
func TestMirrorNeverChangesForeignRoutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 15))
	for iter := range 12 {
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			env := fabrictest.New(t, fabric.Options{}, appGWTopology)
			s := &scenario{t: t, env: env}
			f, _ := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
			s.tables = f.NewRouteTablesClient()
			nodes := workers(1 + rng.IntN(5))
			taken := map[string]bool{}
			for _, n := range nodes {
				taken[n.PodCIDRs[0].String()] = true
			}
			var foreign []*armnetwork.Route
			var want []string
			for i := range 1 + rng.IntN(20) {
				var p netip.Prefix
				for {
					switch rng.IntN(3) {
					case 0: // inside the cluster CIDR 10.200.0.0/16, not a node's
						p = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200, byte(rng.IntN(256)), 0}), 24)
					case 1:
						p = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(1 + rng.IntN(223)), byte(rng.IntN(256)), 0, 0}), 8+rng.IntN(17)).Masked()
					default:
						p = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200, 0, 0}), 16+rng.IntN(8)).Masked()
					}
					if !taken[p.String()] {
						break
					}
				}
				taken[p.String()] = true
				name := fmt.Sprintf("custom-%d", i)
				if rng.IntN(3) == 0 && !clusterCIDR.Overlaps(p) {
					// The naming scheme outside the cluster CIDRs: another
					// cluster's route. (A scheme route inside them is this
					// cluster's, copied by a script: adopted, as in the
					// main table; see docs/mirrors.md.)
					name = route.Name(fmt.Sprintf("other-%d", i), p)
				}
				r := &armnetwork.Route{Name: to.Ptr(name), Properties: &armnetwork.RoutePropertiesFormat{AddressPrefix: to.Ptr(p.String())}}
				line := name + " " + p.String() + " "
				switch rng.IntN(4) {
				case 0:
					r.Properties.NextHopType = to.Ptr(armnetwork.RouteNextHopTypeInternet)
					line += "Internet"
				case 1:
					r.Properties.NextHopType = to.Ptr(armnetwork.RouteNextHopTypeNone)
					line += "None"
				case 2:
					r.Properties.NextHopType = to.Ptr(armnetwork.RouteNextHopTypeVnetLocal)
					line += "VnetLocal"
				default:
					ip := fmt.Sprintf("10.240.0.%d", 2+rng.IntN(200))
					r.Properties.NextHopType = to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance)
					r.Properties.NextHopIPAddress = to.Ptr(ip)
					line += "VirtualAppliance " + ip
				}
				foreign = append(foreign, r)
				want = append(want, line)
			}
			s.putTable("appgw-routes", nil, foreign...)
			set := mirrorSet(env, scenarioConfig(), nodesource.New(nodes...), appGWMirror())
			for pass := range 2 {
				for _, r := range set.Reconcile(context.Background(), observe.Scope{}) {
					if r.Err != nil {
						t.Fatalf("pass %d, %s: %v", pass, TableName(r.TableID), r.Err)
					}
				}
				if got, want := armRoutes(t, env, "appgw-routes"), wantRoutes(nodes, want...); !slices.Equal(got, want) {
					t.Fatalf("pass %d: mirror table:\n got %q\nwant %q", pass, got, want)
				}
			}
		})
	}
}

// TestMirrorFailureDoesNotDelayMain: a mirror that fails (5xx on every
// request, 429 beyond the retry budget, at its route limit, missing, or
// claimed by another cluster) does not keep the main table from its write
// in the same pass, nor the other mirror from its own. (A 412 loop is
// the "conflicting" mirror: another writer changes it after every read.)
func TestMirrorFailureDoesNotDelayMain(t *testing.T) {
	const hubTopology = `      - name: hub-routes
`
	hubTable := "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/hub-routes"
	cases := []struct {
		name string
		// setup breaks the App Gateway mirror.
		setup func(s *scenario)
		// wantErr is in the App Gateway mirror's error ("" = no error, but
		// nodes not routed in it).
		wantErr string
	}{
		{"5xx", func(s *scenario) {
			s.env.Server.SetFaults(fabric.Faults{ErrorRate: 1, Target: "/routeTables/appgw-routes"})
		}, "injected by the routekeeper fabric"},
		{"throttled", func(s *scenario) {
			s.env.Server.SetFaults(fabric.Faults{ReadBucket: 1, ReadRefillPerSecond: 1.0 / 600, Target: "/routeTables/appgw-routes"})
			s.mustTable("appgw-routes") // the one read the bucket allows
		}, "throttled"},
		{"route limit", func(s *scenario) {
			var routes []*armnetwork.Route
			for i := range fabric.DefaultRouteLimit { // Azure's, which the usages API reports
				routes = append(routes, &armnetwork.Route{Name: to.Ptr(fmt.Sprintf("r%d", i)), Properties: &armnetwork.RoutePropertiesFormat{
					AddressPrefix: to.Ptr(fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256)), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeNone)}})
			}
			s.putTable("appgw-routes", nil, routes...)
		}, ""},
		{"another writer on every read (412)", func(s *scenario) {
			s.env.Server.SetFaults(fabric.Faults{IntruderRate: 1, Target: "/routeTables/appgw-routes"})
		}, "kept changing under us"},
		{"missing", func(s *scenario) {
			s.associate(appGWSubnet, "") // a table in use cannot be deleted
			s.deleteTable("appgw-routes")
		}, "does not exist"},
		{"claimed by another cluster", func(s *scenario) {
			s.putTable("appgw-routes", map[string]string{route.ClaimTag: "prod"})
		}, `claimed by cluster "prod"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, bubble(func(t *testing.T) {
			env := fabrictest.New(t, fabric.Options{}, appGWTopology+hubTopology)
			f, _ := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
			s := &scenario{t: t, env: env, tables: f.NewRouteTablesClient(), subnets: f.NewSubnetsClient()}
			tc.setup(s)
			nodes := workers(3)
			set := mirrorSet(env, scenarioConfig(), nodesource.New(nodes...), appGWMirror(), Mirror{RouteTableID: hubTable, Policy: assoc.Enforce})
			res := set.Reconcile(context.Background(), observe.Scope{})
			main, appgw, hub := res[0], res[1], res[2]

			// The main table and the other mirror: written in this pass.
			for _, r := range []*Result{main, hub} {
				if r.Err != nil || !r.Wrote || r.Unrouted() != 0 {
					t.Errorf("%s: wrote=%v unrouted=%d err=%v; want its write in the same pass", TableName(r.TableID), r.Wrote, r.Unrouted(), r.Err)
				}
			}
			env.Server.SetFaults(fabric.Faults{})
			if got, want := armRoutes(t, env, "kubernetes-routes"), wantRoutes(nodes); !slices.Equal(got, want) {
				t.Errorf("main table:\n got %q\nwant %q", got, want)
			}
			if got, want := armRoutes(t, env, "hub-routes"), wantRoutes(nodes); !slices.Equal(got, want) {
				t.Errorf("hub mirror:\n got %q\nwant %q", got, want)
			}
			// The failing mirror reports its own problem.
			switch {
			case tc.wantErr != "" && (appgw.Err == nil || !strings.Contains(appgw.Err.Error(), tc.wantErr)):
				t.Errorf("App Gateway mirror err = %v, want one containing %q", appgw.Err, tc.wantErr)
			case tc.wantErr == "" && appgw.Unrouted() != len(nodes):
				t.Errorf("App Gateway mirror at its limit: %d nodes unrouted, want %d: %s", appgw.Unrouted(), len(nodes), appgw.Summary())
			}
			if tc.wantErr != "" && appgw.Wrote {
				t.Error("the failing mirror was written")
			}
		}))
	}
}

// TestMirrorRunIndependent: in the daemon loop, a mirror whose writes keep
// failing retries with its own backoff while the main table follows a new
// node at once. The backoffs run on a synctest bubble's clock.
func TestMirrorRunIndependent(t *testing.T) { synctest.Test(t, mirrorRunIndependent) }

func mirrorRunIndependent(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, appGWTopology)
	cfg := scenarioConfig()
	cfg.MaxRetryBackoff = time.Second // the mirror's retries stay frequent while it fails
	src := &notifySource{Static: nodesource.New(workers(2)...)}
	rec, mrec := &recorder{}, &recorder{}
	shared := Share(src, nil)
	set := &Set{Main: New(cfg, env.Client, shared, nil, rec), Mirrors: []*Controller{New(MirrorConfig(cfg, appGWMirror()), env.Client, shared, nil, mrec)}}
	env.Server.SetFaults(fabric.Faults{ErrorRate: 1, Target: "/routeTables/appgw-routes"})
	defer runInBackground(t, set.Run)()
	rec.wait(t, time.Time{}, 10*time.Second, "the main table's first write", func(r *Result) bool { return !r.GuardOnly && r.Wrote })
	mrec.wait(t, time.Time{}, 10*time.Second, "a failed mirror reconcile", func(r *Result) bool { return !r.GuardOnly && r.Err != nil })

	since := time.Now()
	src.set(workers(3))
	res := rec.wait(t, since, 10*time.Second, "the main table's write of the new node", func(r *Result) bool { return !r.GuardOnly && r.Wrote })
	if res.Err != nil || res.Unrouted() != 0 {
		t.Errorf("main: %s: %v", res.Summary(), res.Err)
	}
	for _, r := range rec.all() {
		if r.Err != nil {
			t.Errorf("a main reconcile failed while the mirror was failing: %v", r.Err)
		}
	}
	// The mirror recovers by itself once the table answers again. (A
	// mirror reconcile that read the two nodes before the change may still
	// be in its retries and write them first: wait for the three.)
	env.Server.SetFaults(fabric.Faults{})
	mrec.wait(t, since, 30*time.Second, "the mirror's write of the three nodes after recovery", func(r *Result) bool {
		return !r.GuardOnly && r.Wrote && r.Err == nil && len(r.Nodes) == 3 && r.Unrouted() == 0
	})
	if got, want := armRoutes(t, env, "appgw-routes"), wantRoutes(workers(3), appGWOwn...); !slices.Equal(got, want) {
		t.Errorf("mirror table after recovery:\n got %q\nwant %q", got, want)
	}
}

// notifySource is a static source whose changes are announced to its
// single watcher (the Shared fan-out is what lets several controllers
// watch it).
type notifySource struct {
	*nodesource.Static
	mu      sync.Mutex
	watcher func()
}

func (s *notifySource) set(nodes []source.Node) {
	s.Set(nodes)
	s.mu.Lock()
	w := s.watcher
	s.mu.Unlock()
	if w != nil {
		w()
	}
}

func (s *notifySource) Watch(ctx context.Context, changed func()) error {
	s.mu.Lock()
	if s.watcher != nil {
		s.mu.Unlock()
		return fmt.Errorf("notifySource: a second watcher (the source keeps one callback)")
	}
	s.watcher = changed
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}
