package controller

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
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

func (r *readCounter) GetSubnet(ctx context.Context, id string) (*cloud.Subnet, error) {
	r.count(id)
	return r.Cloud.GetSubnet(ctx, id)
}

// Each subnet and each table is read at most once per pass (issue 9: a
// first reconcile under follow with two subnets read the same subnet five
// times), in the incidents that make a pass read the most: a swap under
// follow, a migration with the old table deleted, the article's swap.
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
		{"the article's swap under enforce", assoc.Enforce, func(s *scenario) {
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
			boot := New(cfg, s.env.Client, &staticSource{nodes: s.nodes}, nil)
			if r := boot.Reconcile(context.Background()); r.Err != nil {
				t.Fatal(r.Err)
			}
			tc.setup(s)
			cfg.Policy = tc.policy
			rc := &readCounter{Cloud: s.env.Client, gets: map[string]int{}}
			c := New(cfg, rc, &staticSource{nodes: s.nodes}, nil)
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
						t.Errorf("%s read %s %d times", pass, id[strings.LastIndex(id, "/")+1:], n)
					}
				}
			}
		})
	}
}
