// Package daemon runs routekeeper as a long-running process: the
// controller with its node source, its reporters (metrics, and in a
// Kubernetes cluster the node conditions and events), leader election
// among replicas, and the HTTP server for /healthz, /readyz and /metrics.
//
// `routekeeper run` builds Options from the configuration and calls Run;
// the end-to-end tests call Run directly with a control plane and a fabric
// of their own.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/routekeeper/routekeeper/internal/cloud"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/source/kube"
)

// Leader election defaults: those of kube-controller-manager.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Kubernetes API client defaults. A burst large enough for the condition
// patches of a whole table at once (Azure's 1,000 routes per route table:
// a cluster's nodes registering together) with room for events and lists,
// then a modest steady rate.
const (
	DefaultKubeQPS   = 50
	DefaultKubeBurst = 1200
)

// ErrLostLeadership ends Run when another replica took the lease: the
// process exits non-zero and is restarted as a follower, the usual
// Kubernetes controller behaviour.
var ErrLostLeadership = errors.New("lost the leader election lease")

// LeaderElection configures leader election on a coordination.k8s.io Lease.
type LeaderElection struct {
	Enabled bool
	// Namespace and Name of the Lease.
	Namespace, Name string
	// Identity of this replica in the lease (default: host name, which is
	// the Pod name, plus a random suffix).
	Identity string
	// LeaseDuration is how long followers wait before taking over a lease
	// that is not renewed; RenewDeadline how long the leader retries
	// renewing before it gives up; RetryPeriod the time between tries.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// KeepOnShutdown does not release the lease when Run is cancelled, so
	// a follower waits LeaseDuration (to test a crash).
	KeepOnShutdown bool
}

// Options configure Run.
type Options struct {
	// Controller is the controller's configuration.
	Controller controller.Config
	// Mirrors are other route tables kept with the pod routes, each by a
	// controller of its own (mirrors.go).
	Mirrors []controller.Mirror
	// Cloud is the route table and subnet back-end.
	Cloud cloud.Cloud
	// Kube is the Kubernetes client configuration. When set, the nodes
	// come from a Node informer and the results go to node conditions and
	// events; when nil, Source is used and nothing is told to Kubernetes.
	Kube *rest.Config
	// Source is the node source when Kube is nil (an inventory file).
	Source controller.Source
	// LeaderElection needs Kube.
	LeaderElection LeaderElection
	// Address is the listen address of /healthz, /readyz and /metrics;
	// "" serves nothing. Listener, when set, is used instead.
	Address  string
	Listener net.Listener
	// Metrics are the metrics to fill and serve; the cloud client should
	// already report its calls to them. Nil makes new ones.
	Metrics *metrics.Metrics
	// Pod is routekeeper's own Pod, the object of events about subnets
	// and stale routes (nil: those events are not sent).
	Pod *corev1.ObjectReference
	// EventInterval is how often a persisting problem is reported again
	// (default kubestatus.DefaultEventInterval); EventGrace how long a
	// problem that usually clears by itself waits before it is reported
	// (default kubestatus.DefaultGrace).
	EventInterval, EventGrace time.Duration
	Logger                    *slog.Logger
}

// Run runs until ctx is cancelled (and returns nil), the lease is lost
// (ErrLostLeadership) or something fails for good (for example the node
// list is refused).
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := o.Metrics
	if m == nil {
		m = metrics.New()
	}
	if o.LeaderElection.Enabled && o.Kube == nil {
		return errors.New("leader election needs the Kubernetes node source")
	}
	// client-go logs through the logger in the context (informers, leader
	// election, events): routekeeper's, not klog's global one. Everything
	// started here (informer, event broadcaster) stops when Run returns.
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(log.With("component", "client-go").Handler()))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	k := kubeParts{src: o.Source}
	reporters := []controller.Reporter{m}
	if o.Kube != nil {
		var err error
		if k, err = startKube(ctx, o, log); err != nil {
			return err
		}
		defer k.stop()
		reporters = append(reporters, k.status)
	}
	if k.src == nil {
		return errors.New("no node source")
	}

	var leHealth *leaderelection.HealthzAdaptor
	if o.LeaderElection.Enabled {
		leHealth = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	// One controller per table: the main one, and one per mirror sharing
	// the node source (mirrors.go).
	var ctrl *controller.Controller
	var run func(context.Context) error
	if len(o.Mirrors) > 0 {
		set := mirrorSet(o, k.src, m, k.events, log, reporters)
		ctrl, run = set.Main, set.Run
	} else {
		ctrl = controller.New(o.Controller, o.Cloud, k.src, log, reporters...)
		run = ctrl.Run
	}
	if k.status != nil {
		run = withStatus(run, k.status)
	}
	var ready atomic.Bool
	stopServer, err := serve(o, m, leHealth, k.nodes, &ready, ctrl.SourceErr, log)
	if err != nil {
		return err
	}
	defer stopServer()

	started := startInformer(ctx, k.nodes, log)
	ready.Store(true)

	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	done := make(chan error, 1)
	go func() {
		if !o.LeaderElection.Enabled {
			// The only replica: it leads.
			m.SetLeader(true)
			defer m.SetLeader(false)
			done <- run(rctx)
			return
		}
		done <- lead(rctx, k.client, o.LeaderElection, leHealth, m, log, run)
	}()
	for {
		select {
		case err := <-started:
			started = nil
			if err != nil && ctx.Err() == nil {
				// The node list is refused (RBAC) or never came: fail.
				rcancel()
				<-done
				return err
			}
		case err := <-done:
			return err
		}
	}
}

// withStatus runs the status reporter's condition writer beside run, for
// as long as run runs: the conditions are patched beside the passes, not in
// them (a pass's route writes never wait for a burst's patches), and only
// while this replica leads (run is the leader's term): a lost lease stops
// the patches with the term, before the next leader starts its own.
func withStatus(run func(context.Context) error, status *kubestatus.Reporter) func(context.Context) error {
	return func(ctx context.Context) error {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			status.Run(sctx)
		}()
		defer func() {
			stop()
			<-done
		}()
		return run(ctx)
	}
}

// kubeParts are what the daemon runs on in Kubernetes mode: the client,
// the Node informer as node source, the event recorder and the status
// writer; outside it, only the node source.
type kubeParts struct {
	client kubernetes.Interface
	nodes  *kube.Source
	src    controller.Source
	events kubestatus.Recorder
	status *kubestatus.Reporter
	stop   func()
}

// startKube makes the Kubernetes client of o.Kube, the Node informer (not
// started yet), the event recorder and the status writer.
func startKube(ctx context.Context, o Options, log *slog.Logger) (kubeParts, error) {
	cfg := rest.CopyConfig(o.Kube)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = DefaultKubeQPS, DefaultKubeBurst
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "routekeeper"
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return kubeParts{}, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	k := kubeParts{client: client}
	k.nodes = kube.New(client, kube.Options{Logger: log.With("component", "nodes")})
	k.src = k.nodes
	k.events, k.stop = kubestatus.NewEventRecorder(ctx, client)
	k.status = kubestatus.New(client, kubestatus.Options{
		Mode:          o.Controller.Mode,
		Nodes:         k.nodes,
		Events:        k.events,
		Pod:           o.Pod,
		EventInterval: o.EventInterval,
		Grace:         o.EventGrace,
		Logger:        log.With("component", "status"),
	})
	return k, nil
}

// startInformer starts the Node informer, when there is one; the channel
// gets its outcome (nil: none, so it never fires). The informer runs on
// every replica, leader or not: a follower that takes over has its nodes
// at hand, and readiness says the cluster can be read (RBAC, connectivity)
// before it leads. The controller does not wait for it: its association
// guard needs no nodes, so a subnet detached while the API server is
// unreachable is still repaired.
func startInformer(ctx context.Context, ks *kube.Source, log *slog.Logger) chan error {
	if ks == nil {
		return nil
	}
	started := make(chan error, 1)
	go func() {
		err := ks.Start(ctx)
		if err == nil {
			log.Info("node informer synced")
		}
		started <- err
	}()
	return started
}

// lead runs run while this replica holds the lease. On shutdown the
// controller finishes first, then the lease is released, so the next
// leader starts at once and never overlaps a write of this one.
func lead(ctx context.Context, client kubernetes.Interface, le LeaderElection, health *leaderelection.HealthzAdaptor,
	m *metrics.Metrics, log *slog.Logger, run func(context.Context) error) error {
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + uuid.NewString()[:8]
	}
	if le.LeaseDuration <= 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline <= 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod <= 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	// The elector's context outlives ctx until the controller has stopped.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	var started atomic.Bool
	ctrlDone := make(chan error, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: !le.KeepOnShutdown,
		WatchDog:        health,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				started.Store(true)
				m.SetLeader(true)
				log.Info("became the leader; starting the controller", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
				cctx, cancel := context.WithCancel(lctx)
				stop := context.AfterFunc(ctx, cancel)
				err := run(cctx)
				stop()
				cancel()
				ctrlDone <- err
				if le.KeepOnShutdown && ctx.Err() != nil {
					return // a simulated crash: keep the lease until it expires
				}
				leCancel()
			},
			OnStoppedLeading: func() { m.SetLeader(false) },
			OnNewLeader: func(id string) {
				if id != le.Identity {
					log.Info("following the leader", "leader", id, "lease", le.Namespace+"/"+le.Name)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if health != nil {
		health.SetLeaderElection(elector)
	}
	stopWaiting := context.AfterFunc(ctx, func() {
		if !started.Load() || le.KeepOnShutdown {
			leCancel() // not leading: nothing to finish first
		}
	})
	defer stopWaiting()
	elector.Run(leCtx)
	if !started.Load() {
		return nil // cancelled before leading
	}
	err = <-ctrlDone
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return nil
	default:
		log.Error("lost the leader election lease; stopping", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
		return ErrLostLeadership
	}
}

// serve starts the HTTP server of o (nothing when no address): /metrics,
// /healthz (the process runs; with leader election, the lease is renewed
// in time while leading) and /readyz (the nodes have been read; the
// details name the node source's last error).
func serve(o Options, m *metrics.Metrics, le *leaderelection.HealthzAdaptor, ks *kube.Source, ready *atomic.Bool, sourceErr func() error, log *slog.Logger) (func(), error) {
	l := o.Listener
	if l == nil && o.Address == "" {
		return func() {}, nil
	}
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", o.Address); err != nil {
			return nil, fmt.Errorf("metrics and health server: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if le != nil {
			if err := le.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		// The details name the node source's last error; the guard keeps
		// running meanwhile.
		detail := ""
		if err := sourceErr(); err != nil {
			detail = "; node source: " + err.Error() + " (the association guard goes on with the last known nodes)"
		}
		if !ready.Load() || (ks != nil && !ks.HasSynced()) {
			http.Error(w, "node informer not synced"+detail, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok"+detail)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics and health server stopped", "address", l.Addr().String(), "err", err)
		}
	}()
	log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
