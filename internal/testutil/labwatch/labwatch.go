// Package labwatch watches, from outside, what pod traffic needs in
// Kubernetes the Hard Way's network (internal/testutil/kthw) while other
// processes write a fabric state file: the node subnet on
// kubernetes-routes and both pod routes of examples/kthw's inventory in it.
// The end-to-end suites that deploy with real tools (test/e2e/tofu,
// test/e2e/armaz) time outages and their repairs with it.
package labwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// PodRoutes are the pod routes routekeeper writes for the inventory of
// examples/kthw: name → "prefix>next hop".
var PodRoutes = map[string]string{
	"worker-0____102000024": "10.200.0.0/24>10.240.0.20",
	"worker-1____102001024": "10.200.1.0/24>10.240.0.21",
}

// EgressRoute is the name of the route the lab's templates keep beside
// the pod routes (0.0.0.0/0 to a firewall).
const EgressRoute = "default-egress"

// Routed is what pod traffic needs: the subnet on routekeeper's table and
// both pod routes in it; Egress tells whether the templates' own route is
// in the table too.
type Routed struct {
	Associated bool // the subnet uses kubernetes-routes
	PodRoutes  int  // pod routes in kubernetes-routes (0-2)
	Egress     bool // EgressRoute is in kubernetes-routes
}

// OK reports whether pod traffic has what it needs.
func (r Routed) OK() bool { return r.Associated && r.PodRoutes == len(PodRoutes) }

func (r Routed) String() string {
	return fmt.Sprintf("associated=%v podRoutes=%d egress=%v", r.Associated, r.PodRoutes, r.Egress)
}

// sample is the state at one time.
type sample struct {
	at time.Time
	Routed
}

// Watcher reads the fabric's state file every 2 ms (as the data plane
// does) and keeps every change of what pod traffic needs, with its time: a
// write lands in the state when the fabric accepts the PUT, so these are
// the times of the deploying tool's and routekeeper's writes. The writers
// are other processes, which Store.Subscribe does not hear, so it polls:
// the 2 ms are its resolution, not a wait for anything.
type Watcher struct {
	mu      sync.Mutex
	changes []sample
	changed chan struct{} // closed at the next change; nil until asked for
}

// Watch starts watching store until the test ends.
func Watch(t *testing.T, store *fabric.Store) *Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last *Routed
		version := ""
		for ctx.Err() == nil {
			v, err := store.Version(ctx)
			if err == nil && v != version {
				version = v
				if st, err := network.Networks(ctx, store); err == nil {
					r := routedIn(st)
					if last == nil || *last != r {
						w.record(r)
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

// record keeps a change and wakes whoever waits for one.
func (w *Watcher) record(r Routed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changes = append(w.changes, sample{time.Now(), r})
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

func routedIn(st *network.State) Routed {
	var r Routed
	for _, v := range st.VirtualNetworks {
		for _, s := range v.Subnets {
			if strings.EqualFold(s.ID, kthw.SubnetID) && strings.EqualFold(s.RouteTable, kthw.TableID) {
				r.Associated = true
			}
		}
	}
	for _, rt := range st.RouteTables {
		if !strings.EqualFold(rt.ID, kthw.TableID) {
			continue
		}
		for _, route := range rt.Routes {
			if want, ok := PodRoutes[route.Name]; ok && want == route.AddressPrefix+">"+route.NextHopIPAddress {
				r.PodRoutes++
			}
			if route.Name == EgressRoute {
				r.Egress = true
			}
		}
	}
	return r
}

// Now is the latest state seen.
func (w *Watcher) Now() Routed {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 {
		return Routed{}
	}
	return w.changes[len(w.changes)-1].Routed
}

// WaitOK waits until pod traffic has what it needs, woken by each change
// the watcher records, and returns when that was seen; what names the
// moment in the failure.
func (w *Watcher) WaitOK(t *testing.T, timeout time.Duration, what string) time.Time {
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
		if n > 0 && last.OK() {
			return last.at
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not routed within %s (last state %v)", what, timeout, last.Routed)
		}
	}
}

// Outage is one break of pod routing and its repair.
type Outage struct {
	Broken, Repaired time.Time
	What             Routed // the state that broke it
}

// Duration is how long the outage lasted.
func (o Outage) Duration() time.Duration { return o.Repaired.Sub(o.Broken) }

// OutagesSince lists the breaks (and repairs) after since. A break not yet
// repaired has a zero Repaired time.
func (w *Watcher) OutagesSince(since time.Time) []Outage {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Outage
	var cur *Outage
	for _, s := range w.changes {
		if s.at.Before(since) {
			continue
		}
		switch {
		case !s.OK() && cur == nil:
			cur = &Outage{Broken: s.at, What: s.Routed}
		case s.OK() && cur != nil:
			cur.Repaired = s.at
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}
