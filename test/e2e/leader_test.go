package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/reason"
)

// Short leader election timings for the tests (production: 15s/10s/2s).
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

func leaderElection(lease, identity string) daemon.LeaderElection {
	return daemon.LeaderElection{
		Enabled: true, Namespace: "kube-system", Name: lease, Identity: identity,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
	}
}

func holder(ctx context.Context, t *testing.T, client kubernetes.Interface, lease string) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeader waits until one of the running replicas leads (its metric
// says so and the lease names it) and returns its index.
func waitLeader(ctx context.Context, t *testing.T, client kubernetes.Interface, lease string, ids []string, rs []*replica, timeout time.Duration) int {
	t.Helper()
	leader := -1
	eventually(t, timeout, func() string {
		h := holder(ctx, t, client, lease)
		for i, id := range ids {
			if rs[i] != nil && h == id && rs[i].metrics.Leading() {
				leader = i
				return ""
			}
		}
		return fmt.Sprintf("no running replica leads (lease holder %q)", h)
	})
	return leader
}

// TestTwoReplicasOneWriter: of two replicas, exactly one reads and writes
// ARM and Kubernetes node status; when it stops, the other takes over (at
// once when the leader releases the lease on shutdown, within the lease
// duration when it crashed) and routes new nodes.
func TestTwoReplicasOneWriter(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "graceful stop"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			env, ctx, client, f := kubeScenario(t)
			prefix := "ha-graceful"
			if crash {
				prefix = "ha-crash"
			}
			lease := prefix
			ids := []string{prefix + "-replica-a", prefix + "-replica-b"}
			rs := make([]*replica, 2)
			for i, id := range ids {
				m := metrics.New()
				le := leaderElection(lease, id)
				le.KeepOnShutdown = crash
				rs[i] = start(t, daemon.Options{Controller: controllerConfig(prefix), Cloud: f.client(t, m), Kube: adminConfig(env),
					LeaderElection: le, Metrics: m})
			}
			leader := waitLeader(ctx, t, client, lease, ids, rs, 30*time.Second)
			follower := 1 - leader
			for i := range 3 {
				createNode(ctx, t, client, node{name: fmt.Sprintf("%s-%d", prefix, i), podCIDRs: []string{podCIDR(30 + i)}, ips: []string{nodeIP(30 + i)}, networkUnavailable: true})
			}
			for i := range 3 {
				waitCondition(ctx, t, client, fmt.Sprintf("%s-%d", prefix, i), corev1.ConditionFalse, reason.RouteCreated)
			}
			if s := rs[leader].cloud.Stats(); s.Writes == 0 {
				t.Errorf("the leader made no ARM writes")
			}
			if s := rs[follower].cloud.Stats(); s.Reads != 0 || s.Writes != 0 {
				t.Errorf("the follower made ARM calls: %+v", s)
			}
			if rs[follower].metrics.Leading() {
				t.Error("both replicas say they lead")
			}

			// Stop the leader; the follower takes over. The lease's records
			// (every version, from a watch) say how: released by the
			// stopping leader, or left to expire.
			records := watchLease(ctx, t, client, lease)
			stopped := time.Now()
			if err := rs[leader].stop(t); err != nil {
				t.Fatalf("stopping the leader: %v", err)
			}
			rs[leader] = nil
			if crash {
				// The lease still names the stopped replica: a crash.
				if h := holder(ctx, t, client, lease); h != ids[leader] {
					t.Fatalf("lease holder %q after the crash, want the crashed %q", h, ids[leader])
				}
			}
			if got := waitLeader(ctx, t, client, lease, ids, rs, 3*leaseDuration); got != follower {
				t.Fatalf("replica %d leads, want %d", got, follower)
			}
			t.Logf("takeover %s after the leader stopped (lease duration %s, retry period %s)", time.Since(stopped).Round(time.Millisecond), leaseDuration, retryPeriod)
			last, released, taken := records.handover(t, ids[leader], ids[follower])
			switch {
			case !crash && !released:
				// A graceful stop releases the lease, so the follower
				// takes it at its next try instead of waiting it out.
				t.Errorf("the stopped leader did not release the lease before %s took it: %s", ids[follower], records)
			case crash && released:
				t.Errorf("the lease was released although the leader crashed: %s", records)
			case crash && taken.Before(last.Add(leaseDuration-time.Millisecond)):
				// After a crash the follower waits out the lease from the
				// last renewal it saw: two leaders never overlap.
				t.Errorf("%s took the lease at %s, before the crashed leader's lease (renewed %s, %s) expired: %s",
					ids[follower], taken.Format(time.StampMicro), last.Format(time.StampMicro), leaseDuration, records)
			}
			createNode(ctx, t, client, node{name: prefix + "-late", podCIDRs: []string{podCIDR(39)}, ips: []string{nodeIP(39)}, networkUnavailable: true})
			waitCondition(ctx, t, client, prefix+"-late", corev1.ConditionFalse, reason.RouteCreated)
			if _, ok := f.routes(t)[routeName(prefix+"-late", podCIDR(39))]; !ok {
				t.Error("the new leader did not route the new node")
			}
		})
	}
}

// TestLostLeaseStopsTheController: when another holder takes the lease,
// the leader stops its controller and Run returns ErrLostLeadership (the
// process exits non-zero and restarts as a follower).
func TestLostLeaseStopsTheController(t *testing.T) {
	env, ctx, client, f := kubeScenario(t)
	const lease = "lost-lease"
	m := metrics.New()
	r := start(t, daemon.Options{Controller: controllerConfig("lost"), Cloud: f.client(t, m), Kube: adminConfig(env),
		LeaderElection: leaderElection(lease, "lost-replica"), Metrics: m})
	waitLeader(ctx, t, client, lease, []string{"lost-replica"}, []*replica{r}, 30*time.Second)

	// An impostor overwrites the lease for a long time.
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, long := "impostor", int32(3600)
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &other, &long, &now, &now
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		close(r.done)
		if !errors.Is(err, daemon.ErrLostLeadership) {
			t.Errorf("Run = %v, want ErrLostLeadership", err)
		}
	case <-time.After(renewDeadline + 10*time.Second):
		t.Fatal("Run did not return after the lease was taken")
	}
	if m.Leading() {
		t.Error("leader metric still 1 after the lease was lost")
	}
}

// leaseRecords are the versions of a Lease seen by a watch.
type leaseRecords struct {
	mu   sync.Mutex
	seen []leaseRecord
}

type leaseRecord struct {
	holder         string
	renew, acquire time.Time
}

func (r *leaseRecords) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.seen {
		fmt.Fprintf(&b, "[%q renewed %s acquired %s] ", l.holder, l.renew.Format(time.StampMicro), l.acquire.Format(time.StampMicro))
	}
	return b.String()
}

// watchLease records every version of the lease from now on, until the
// test ends.
func watchLease(ctx context.Context, t *testing.T, client kubernetes.Interface, lease string) *leaseRecords {
	t.Helper()
	leases := client.CoordinationV1().Leases("kube-system")
	cur, err := leases.Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := leases.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + lease, ResourceVersion: cur.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &leaseRecords{}
	add := func(l *coordinationv1.Lease) {
		rec := leaseRecord{}
		if l.Spec.HolderIdentity != nil {
			rec.holder = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			rec.renew = l.Spec.RenewTime.Time
		}
		if l.Spec.AcquireTime != nil {
			rec.acquire = l.Spec.AcquireTime.Time
		}
		r.mu.Lock()
		r.seen = append(r.seen, rec)
		r.mu.Unlock()
	}
	add(cur)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok {
				add(l)
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return r
}

// handover reads how the lease went from one holder to the other: the
// last renewal by from, whether a version without a holder (a release)
// came between, and when to acquired it. It waits for the watch to deliver
// to's first version (the caller saw it lead already).
func (r *leaseRecords) handover(t *testing.T, from, to string) (lastRenew time.Time, released bool, taken time.Time) {
	t.Helper()
	eventually(t, 30*time.Second, func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		lastRenew, released, taken = time.Time{}, false, time.Time{}
		for _, l := range r.seen {
			switch l.holder {
			case from:
				lastRenew, released = l.renew, false
			case "":
				released = true
			case to:
				taken = l.acquire
				return ""
			}
		}
		return "the watch has not delivered " + to + "'s lease yet"
	})
	return lastRenew, released, taken
}
