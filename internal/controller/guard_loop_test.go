package controller

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
)

// blockingSource is a node source that cannot answer (an informer that
// never syncs, an API server that is down) until released.
type blockingSource struct{ release chan struct{} }

func (b *blockingSource) Nodes(ctx context.Context) ([]source.Node, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.release:
		return nil, errors.New("node source unavailable")
	}
}

func (b *blockingSource) Watch(ctx context.Context, _ func()) error {
	<-ctx.Done()
	return nil
}

// The guard does not wait for the node source: with a reconcile stuck
// reading the nodes, a subnet detached by a redeploy is re-associated by
// the next guard cycle.
func TestGuardRunsWhileTheNodeSourceIsUnavailable(t *testing.T) {
	synctest.Test(t, guardRunsWhileTheNodeSourceIsUnavailable)
}

func guardRunsWhileTheNodeSourceIsUnavailable(t *testing.T) {
	s := newScenario(t, fabrictest.KTHW, scenarioConfig(), workers(2))
	boot := New(scenarioConfig(), s.env.Client, nodesource.New(s.nodes...), nil)
	if r := boot.Reconcile(context.Background()); r.Err != nil {
		t.Fatal(r.Err)
	}
	src := &blockingSource{release: make(chan struct{})}
	s.ctrl = New(scenarioConfig(), s.env.Client, src, nil, s.rec)
	s.start()
	t.Cleanup(func() { close(src.release) }) // runs before the stop

	fault := time.Now()
	s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"})
	res := s.rec.wait(t, fault, 5*time.Second, "the subnet re-associated", hasState(fabrictest.KTHWSubnet, assoc.Reassociated))
	if !res.GuardOnly {
		t.Errorf("repaired by %q, want a guard cycle", res.Summary())
	}
	for _, r := range s.rec.all() {
		if !r.GuardOnly {
			t.Errorf("a reconcile finished although the source never answered: %s", r.Summary())
		}
	}
}

// The guard does not wait for a reconcile's long-running write: a subnet
// detached while the table's PUT operation (1.5 s) is in flight is
// repaired by a guard cycle that starts before that reconcile ends.
func TestGuardRunsDuringALongTableWrite(t *testing.T) {
	synctest.Test(t, guardRunsDuringALongTableWrite)
}

func guardRunsDuringALongTableWrite(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Resync = 300 * time.Millisecond
	s := newScenario(t, fabrictest.KTHW, cfg, workers(2))
	boot := New(scenarioConfig(), s.env.Client, nodesource.New(s.nodes...), nil)
	if r := boot.Reconcile(context.Background()); r.Err != nil {
		t.Fatal(r.Err)
	}
	// routekeeper's client on a fabric whose operations take 1.5 s, on the
	// same state.
	slow := fabric.New(s.env.Store, fabric.Options{OperationDuration: 1500 * time.Millisecond})
	opts := *slow.ClientOptions()
	tablePUT := &answered{next: opts.Transport, method: http.MethodPut, path: "/routeTables/kubernetes-routes", seen: make(chan struct{})}
	opts.Transport = tablePUT
	c, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: &opts, PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	src := nodesource.New(s.nodes...)
	s.ctrl = New(cfg, c, src, nil, s.rec)
	s.start()
	s.afterGuardCycle()

	// A new node: the next resync writes the table, slowly.
	src.Set(workers(3))
	select {
	case <-tablePUT.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("no PUT of the table within 10s of the new node")
	}
	if tb := s.mustTable("kubernetes-routes"); tb.Properties.ProvisioningState == nil || *tb.Properties.ProvisioningState != "Updating" {
		t.Fatalf("the table's PUT was answered but the table is not Updating: %v", tb.Properties.ProvisioningState)
	}
	fault := time.Now()
	s.redeployVNet([2]string{"kubernetes-subnet", "10.240.0.0/24"})
	g := s.rec.wait(t, fault, 10*time.Second, "the subnet re-associated by the guard", func(r *Result) bool {
		a, ok := findAssoc(r, fabrictest.KTHWSubnet)
		return r.GuardOnly && ok && a.State == assoc.Reassociated
	})
	w := s.rec.wait(t, time.Time{}, 10*time.Second, "the slow reconcile", func(r *Result) bool { return !r.GuardOnly && r.Wrote })
	if end := w.Start.Add(w.Duration); !g.Start.Before(end) {
		t.Errorf("the repairing guard cycle started %s after the slow reconcile ended: it waited for it", g.Start.Sub(end))
	}
}

// answered is a transport that closes seen once a request with method to a
// path ending in path has been answered: the moment a write is in flight.
type answered struct {
	next         policy.Transporter
	method, path string
	once         sync.Once
	seen         chan struct{}
}

func (a *answered) Do(req *http.Request) (*http.Response, error) {
	resp, err := a.next.Do(req)
	if err == nil && req.Method == a.method && strings.HasSuffix(req.URL.Path, a.path) {
		a.once.Do(func() { close(a.seen) })
	}
	return resp, err
}
