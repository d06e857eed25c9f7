package armaz

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// The pod routes routekeeper writes for the inventory of examples/kthw.
var podRoutes = map[string]string{ // name → "prefix>next hop"
	"worker-0____102000024": "10.200.0.0/24>10.240.0.20",
	"worker-1____102001024": "10.200.1.0/24>10.240.0.21",
}

const (
	subnetID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
	tableID  = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
)

// routed is what pod traffic needs: the subnet on routekeeper's table and
// both pod routes in it; Egress tells whether the template's own route is
// in the table too.
type routed struct {
	Associated bool
	PodRoutes  int
	Egress     bool
}

func (r routed) ok() bool { return r.Associated && r.PodRoutes == len(podRoutes) }

func (r routed) String() string {
	return fmt.Sprintf("associated=%v podRoutes=%d egress=%v", r.Associated, r.PodRoutes, r.Egress)
}

type sample struct {
	at time.Time
	routed
}

// watcher reads the served fabric's state file every 2 ms and keeps every
// change of what pod traffic needs, with its time: a write lands in the
// state when the fabric accepts the PUT, so these are the times of the
// deployment's and routekeeper's writes.
type watcher struct {
	mu      sync.Mutex
	changes []sample
}

func watch(t *testing.T, store *fabric.Store) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last *routed
		version := ""
		for ctx.Err() == nil {
			if v, err := store.Version(ctx); err == nil && v != version {
				version = v
				if st, err := network.Networks(ctx, store); err == nil {
					r := routedIn(st)
					if last == nil || *last != r {
						w.mu.Lock()
						w.changes = append(w.changes, sample{time.Now(), r})
						w.mu.Unlock()
						last = &r
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

func routedIn(st *network.State) routed {
	var r routed
	for _, v := range st.VirtualNetworks {
		for _, s := range v.Subnets {
			if strings.EqualFold(s.ID, subnetID) && strings.EqualFold(s.RouteTable, tableID) {
				r.Associated = true
			}
		}
	}
	for _, rt := range st.RouteTables {
		if !strings.EqualFold(rt.ID, tableID) {
			continue
		}
		for _, route := range rt.Routes {
			if want, ok := podRoutes[route.Name]; ok && want == route.AddressPrefix+">"+route.NextHopIPAddress {
				r.PodRoutes++
			}
			if route.Name == "default-egress" {
				r.Egress = true
			}
		}
	}
	return r
}

func (w *watcher) now() routed {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 {
		return routed{}
	}
	return w.changes[len(w.changes)-1].routed
}

// waitOK waits until pod traffic has what it needs.
func (w *watcher) waitOK(t *testing.T, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !w.now().ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not routed within %s (last state %v)", what, timeout, w.now())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outage is one break of pod routing and its repair.
type outage struct {
	broken, repaired time.Time
	what             routed
}

func (o outage) duration() time.Duration { return o.repaired.Sub(o.broken) }

// outagesSince lists the breaks (and repairs) after since; a break not
// repaired yet has a zero repaired time.
func (w *watcher) outagesSince(since time.Time) []outage {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []outage
	var cur *outage
	for _, s := range w.changes {
		if s.at.Before(since) {
			continue
		}
		switch {
		case !s.ok() && cur == nil:
			cur = &outage{broken: s.at, what: s.routed}
		case s.ok() && cur != nil:
			cur.repaired = s.at
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}
