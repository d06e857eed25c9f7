package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// readCounter counts the GETs of each subnet and table.
type readCounter struct {
	cloud.Cloud
	mu   sync.Mutex
	gets map[string]int
}

func (r *readCounter) count(id string) {
	r.mu.Lock()
	r.gets[strings.ToLower(id)]++
	r.mu.Unlock()
}

func (r *readCounter) GetRouteTable(ctx context.Context, id string) (*route.Table, error) {
	r.count(id)
	return r.Cloud.GetRouteTable(ctx, id)
}

func (r *readCounter) GetSubnet(ctx context.Context, id string) (*observe.Subnet, error) {
	r.count(id)
	return r.Cloud.GetSubnet(ctx, id)
}

// Each subnet and each table is read at most once per pass (one pass
// observes once for all its steps; before, a first reconcile under follow
// with two subnets read the same subnet five times), in the incidents that
// make a pass read the most: a swap under follow, a migration with the old
// table deleted, a swap to a new, empty table with the old one deleted.
func TestEachResourceReadOncePerPass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy assoc.Policy
		setup  func(s *scenario)
	}{
		{"swap followed, two subnets", assoc.Follow, func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil)
			s.associate(fabrictest.KTHWSubnet, newTableID)
		}},
		{"swap to a new empty table, old deleted (enforce)", assoc.Enforce, func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil)
			s.associate(fabrictest.KTHWSubnet, newTableID)
			s.associate(pool2Subnet, newTableID)
			s.deleteTable("kubernetes-routes")
		}},
		{"migrated, old table deleted", assoc.Enforce, func(s *scenario) {
			s.putTable("kubernetes-routes-v2", map[string]string{route.ClaimTag: "kthw", route.MigratedFromTag: fabrictest.KTHWTable}, armNodeRoutes(s.nodes)...)
			s.associate(fabrictest.KTHWSubnet, newTableID)
			s.associate(pool2Subnet, newTableID)
			s.deleteTable("kubernetes-routes")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.Subnets = []string{fabrictest.KTHWSubnet, pool2Subnet}
			s := newScenario(t, fabrictest.KTHWTwoSubnets, cfg, workers(2))
			boot := New(cfg, s.env.Client, nodesource.New(s.nodes...), nil)
			if r := boot.Reconcile(context.Background()); r.Err != nil {
				t.Fatal(r.Err)
			}
			tc.setup(s)
			cfg.Policy = tc.policy
			rc := &readCounter{Cloud: s.env.Client, gets: map[string]int{}}
			c := New(cfg, rc, nodesource.New(s.nodes...), nil)
			for _, pass := range []string{"reconcile", "guard"} {
				rc.gets = map[string]int{}
				var r *Result
				if pass == "reconcile" {
					r = c.Reconcile(context.Background())
				} else {
					r = c.Guard(context.Background())
				}
				if r.Err != nil {
					t.Fatalf("%s: %v", pass, r.Err)
				}
				for id, n := range rc.gets {
					if n > 1 {
						t.Errorf("%s read %s %d times", pass, armid.Name(id), n)
					}
				}
			}
		})
	}
}

// take returns the reads counted since the last take, by resource name,
// and starts counting afresh.
func (r *readCounter) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for id, n := range r.gets {
		out[armid.Name(id)] = n
	}
	r.gets = map[string]int{}
	return out
}

// The steady guard reads our table, and a subnet only when the table no
// longer lists it (then also the table the subnet points to): the
// verdict it acts on is the one a full read would give, and a repair
// still carries the subnet's etag as read.
func TestSteadyGuardReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy assoc.Policy
		fault  func(s *scenario)
		// gets are the reads of the guard cycle after the fault, by name.
		gets map[string]int
		// state is each subnet's state after the cycle.
		state map[string]assoc.State
	}{
		{"steady", assoc.Enforce, func(*scenario) {},
			map[string]int{"kubernetes-routes": 1},
			map[string]assoc.State{fabrictest.KTHWSubnet: assoc.Associated, pool2Subnet: assoc.Associated}},
		{"IaC redeploy detaches both", assoc.Enforce, func(s *scenario) {
			s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"}, [2]string{"pool-2", "10.240.1.0/24"})
		},
			map[string]int{"kubernetes-routes": 1, "kubernetes-subnet": 1, "pool-2": 1},
			map[string]assoc.State{fabrictest.KTHWSubnet: assoc.Reassociated, pool2Subnet: assoc.Reassociated}},
		{"one subnet detached", assoc.Enforce, func(s *scenario) { s.associate(pool2Subnet, "") },
			map[string]int{"kubernetes-routes": 1, "pool-2": 1},
			map[string]assoc.State{fabrictest.KTHWSubnet: assoc.Associated, pool2Subnet: assoc.Reassociated}},
		{"swap under enforce and restore", assoc.Enforce, func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil)
			s.associate(fabrictest.KTHWSubnet, newTableID)
		},
			map[string]int{"kubernetes-routes": 1, "kubernetes-routes-v2": 1, "kubernetes-subnet": 1},
			map[string]assoc.State{fabrictest.KTHWSubnet: assoc.Reassociated, pool2Subnet: assoc.Associated}},
		// Under follow the other subnet is to be moved to the new table:
		// the guard reads it (its etag for the PUT) before it judges again.
		{"swap under follow", assoc.Follow, func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil)
			s.associate(fabrictest.KTHWSubnet, newTableID)
		},
			map[string]int{"kubernetes-routes": 1, "kubernetes-routes-v2": 1, "kubernetes-subnet": 1, "pool-2": 1},
			map[string]assoc.State{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.Subnets = []string{fabrictest.KTHWSubnet, pool2Subnet}
			cfg.Policy, cfg.Restore = tc.policy, true
			s := newScenario(t, fabrictest.KTHWTwoSubnets, cfg, workers(2))
			rc := &readCounter{Cloud: s.env.Client, gets: map[string]int{}}
			c := New(cfg, rc, nodesource.New(s.nodes...), nil)
			ctx := context.Background()
			if r := c.Reconcile(ctx); r.Err != nil || r.AssociationProblems() > 0 {
				t.Fatalf("set-up: %s %v", r.Summary(), r.Err)
			}
			if g := c.Guard(ctx); g.Err != nil || g.Repairs() != 0 {
				t.Fatalf("first guard cycle: %s %v", g.Summary(), g.Err)
			}
			tc.fault(s)
			rc.take()
			g := c.Guard(ctx)
			if got := rc.take(); !maps.Equal(got, tc.gets) {
				t.Errorf("guard cycle read %v, want %v", got, tc.gets)
			}
			for sub, want := range tc.state {
				if a, _ := findAssoc(g, sub); a.State != want || a.RepairFailed {
					t.Errorf("%s: %s (%s), want %s", armid.Name(sub), a.State, a.Message, want)
				}
				if got := s.subnetTable(sub); !armid.Same(got, fabrictest.KTHWTable) {
					t.Errorf("%s on %q after the cycle, want our table", armid.Name(sub), got)
				}
			}
			for _, r := range g.Observation.Subnets() {
				if r.Listed && !armid.Same(r.Subnet.RouteTableID, fabrictest.KTHWTable) {
					t.Errorf("%s listed on %s", r.ID, r.Subnet.RouteTableID)
				}
			}
		})
	}
}

// The verdict on a steady observation is the verdict on a full read, in
// every state the guard meets, for every subnet and node: the judge is
// given the same facts, only fewer GETs.
func TestSteadyVerdictIsTheFullVerdict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(s *scenario)
	}{
		{"steady", func(*scenario) {}},
		{"one subnet detached", func(s *scenario) { s.associate(pool2Subnet, "") }},
		{"IaC redeploy", func(s *scenario) {
			s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"}, [2]string{"pool-2", "10.240.1.0/24"})
		}},
		{"swapped to an empty table", func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil)
			s.associate(fabrictest.KTHWSubnet, newTableID)
		}},
		{"swapped to a table with the routes", func(s *scenario) {
			s.putTable("kubernetes-routes-v2", nil, armNodeRoutes(s.nodes)...)
			s.associate(pool2Subnet, newTableID)
		}},
		{"route deleted out of band", func(s *scenario) {
			tb := s.mustTable("kubernetes-routes")
			tb.Properties.Routes = tb.Properties.Routes[1:]
			p, err := s.tables.BeginCreateOrUpdate(context.Background(), "kubernetes", "kubernetes-routes", *tb, nil)
			fabrictest.MustPoll(s.t, p, err)
		}},
		{"table deleted", func(s *scenario) {
			s.associate(fabrictest.KTHWSubnet, "")
			s.associate(pool2Subnet, "")
			s.deleteTable("kubernetes-routes")
		}},
	} {
		for _, policy := range []assoc.Policy{assoc.Enforce, assoc.Follow, assoc.Report} {
			t.Run(tc.name+"/"+string(policy), func(t *testing.T) {
				cfg := scenarioConfig()
				cfg.Subnets = []string{fabrictest.KTHWSubnet, pool2Subnet}
				s := newScenario(t, fabrictest.KTHWTwoSubnets, cfg, workers(2))
				ctx := context.Background()
				boot := New(cfg, s.env.Client, nodesource.New(s.nodes...), nil)
				if r := boot.Reconcile(ctx); r.Err != nil || r.AssociationProblems() > 0 {
					t.Fatalf("set-up: %s %v", r.Summary(), r.Err)
				}
				cfg.Policy = policy
				c := New(cfg, s.env.Client, nodesource.New(s.nodes...), nil)
				if r := c.Reconcile(ctx); r.Err != nil || r.AssociationProblems() > 0 {
					t.Fatalf("first reconcile under %s: %s %v", policy, r.Summary(), r.Err)
				}
				tc.fault(s)
				want := c.desired(c.lastNodes())
				scope := observe.Scope{Table: want.Table, Subnets: cfg.Subnets, Earlier: c.lastNetworks()}
				full := verdict.Judge(observe.Observe(ctx, s.env.Client, scope), want, nil)
				scope.Steady = true
				steady := verdict.Judge(observe.Observe(ctx, s.env.Client, scope), want, nil)
				if d := cmp.Diff(summary(full), summary(steady)); d != "" {
					t.Errorf("steady verdict differs from the full one (-full +steady):\n%s", d)
				}
			})
		}
	}
}

// summary is what a verdict says of the table, each subnet and each node.
func summary(v *verdict.Verdict) []string {
	out := []string{fmt.Sprintf("table %s err=%v write=%v", v.Table, v.Err, func() bool { _, _, w := v.TableWrite(); return w }())}
	for _, s := range v.Subnets {
		out = append(out, fmt.Sprintf("subnet %s: %s on %q action %s; %s", armid.Name(s.Subnet), s.State, s.Table, s.Action, s.Message))
	}
	for _, name := range slices.Sorted(maps.Keys(v.Nodes)) {
		n := v.Nodes[name]
		out = append(out, fmt.Sprintf("node %s: routed=%v %s %s", name, n.Routed, n.Reason, n.Message))
	}
	return out
}
