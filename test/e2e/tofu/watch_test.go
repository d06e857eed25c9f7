package tofu

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
// both pod routes in it.
type routed struct {
	Associated bool // the subnet uses kubernetes-routes
	PodRoutes  int  // pod routes in kubernetes-routes (0-2)
}

func (r routed) ok() bool { return r.Associated && r.PodRoutes == len(podRoutes) }

func (r routed) String() string {
	return fmt.Sprintf("associated=%v podRoutes=%d", r.Associated, r.PodRoutes)
}

// sample is the state at one time.
type sample struct {
	at time.Time
	routed
}

// watcher reads the fabric's state file every 2 ms (as the data plane
// does) and keeps every change of what pod traffic needs, with its time: a
// write lands in the state when the fabric accepts the PUT, so these are
// the times of the provider's and routekeeper's writes. The writers are
// other processes, which Store.Subscribe does not hear, so it polls: the
// 2 ms are its resolution, not a wait for anything.
type watcher struct {
	mu      sync.Mutex
	changes []sample
	changed chan struct{} // closed at the next change; nil until asked for
	stop    func()
	done    chan struct{}
}

func watch(t *testing.T, store *fabric.Store) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var last *routed
		version := ""
		for ctx.Err() == nil {
			v, err := store.Version(ctx)
			if err == nil && v != version {
				version = v
				if st, err := network.Networks(ctx, store); err == nil {
					r := routedIn(st)
					if last == nil || *last != r {
						w.mu.Lock()
						w.changes = append(w.changes, sample{time.Now(), r})
						if w.changed != nil {
							close(w.changed)
							w.changed = nil
						}
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
		<-w.done
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
		}
	}
	return r
}

// now is the latest state seen.
func (w *watcher) now() routed {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 {
		return routed{}
	}
	return w.changes[len(w.changes)-1].routed
}

// waitOK waits until pod traffic has what it needs, woken by each change
// the watcher records.
func (w *watcher) waitOK(t *testing.T, timeout time.Duration, what string) time.Time {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		n := len(w.changes)
		var last sample
		if n > 0 {
			last = w.changes[n-1]
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		changed := w.changed
		w.mu.Unlock()
		if n > 0 && last.ok() {
			return last.at
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not routed within %s (last state %v)", what, timeout, last.routed)
		}
	}
}

// outage is one break of pod routing and its repair.
type outage struct {
	broken, repaired time.Time
	what             routed // the state that broke it
}

func (o outage) duration() time.Duration { return o.repaired.Sub(o.broken) }

// outagesSince lists the breaks (and repairs) after since. A break not yet
// repaired has a zero repaired time.
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
