// Package kube is routekeeper's Kubernetes node source: a client-go shared
// informer on Nodes that keeps only what routekeeper needs of each node
// (name, UID, pod CIDRs, InternalIP addresses and the NetworkUnavailable
// condition), and tells the controller when a change matters for routes: a
// node added or deleted, or its pod CIDRs or InternalIPs changed. Status
// updates (heartbeats, conditions, routekeeper's own NetworkUnavailable
// patches) do not trigger a reconcile.
//
// A Source works in two ways. Started (Start), the informer runs and Nodes
// reads its cache: the daemon. Not started, Nodes lists the nodes from the
// API server once: one-shot commands (run --once, diff, doctor).
package kube

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/routekeeper/routekeeper/internal/source"
)

// DefaultSyncTimeout bounds Start's wait for the first list of nodes.
const DefaultSyncTimeout = 2 * time.Minute

// Options configure a Source.
type Options struct {
	// SyncTimeout bounds how long Start waits for the informer's first
	// list (default DefaultSyncTimeout).
	SyncTimeout time.Duration
	Logger      *slog.Logger
}

// Source is the Kubernetes node source. It is safe for concurrent use.
type Source struct {
	client      kubernetes.Interface
	log         *slog.Logger
	syncTimeout time.Duration
	informer    cache.SharedIndexInformer

	mu       sync.Mutex
	started  bool
	changed  func() // the controller's callback, nil when nobody watches
	watchErr error  // last list/watch error of the informer
}

// New makes a Source on client. Nothing is read until Start, Watch or Nodes.
func New(client kubernetes.Interface, opts Options) *Source {
	s := &Source{client: client, log: opts.Logger, syncTimeout: opts.SyncTimeout}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.syncTimeout <= 0 {
		s.syncTimeout = DefaultSyncTimeout
	}
	// Resync 0: the controller resyncs against the cloud on its own
	// period; replaying the cache would only trigger reconciles.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Trim))
	s.informer = factory.Core().V1().Nodes().Informer()
	// Both only fail once the informer has started; it has not.
	_ = s.informer.SetWatchErrorHandlerWithContext(s.onWatchError)
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.warnInvalid(obj)
			s.notify()
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && !RoutesChanged(o, n) {
				return
			}
			s.warnInvalid(newObj)
			s.notify()
		},
		DeleteFunc: func(any) { s.notify() },
	})
	return s
}

func (s *Source) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	s.mu.Lock()
	s.watchErr = err
	s.mu.Unlock()
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

func (s *Source) notify() {
	s.mu.Lock()
	f := s.changed
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// Start runs the informer until ctx is done and waits for its first list.
// It fails at once when the API server refuses the list (401, 403: a
// missing RBAC rule), and after Options.SyncTimeout otherwise; the informer
// then stops. Start is a no-op when already started.
func (s *Source) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return s.waitSynced(ctx)
	}
	s.started = true
	s.mu.Unlock()
	ictx, cancel := context.WithCancel(ctx)
	go s.informer.RunWithContext(ictx)
	if err := s.waitSynced(ctx); err != nil {
		cancel()
		return err
	}
	context.AfterFunc(ctx, cancel)
	return nil
}

// waitSynced waits for the first list, failing early on refusals.
func (s *Source) waitSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.syncTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !s.informer.HasSynced() {
		s.mu.Lock()
		werr := s.watchErr
		s.mu.Unlock()
		if apierrors.IsForbidden(werr) || apierrors.IsUnauthorized(werr) {
			return fmt.Errorf("listing nodes: %w (routekeeper needs list and watch on nodes: see deploy/kustomize/base/rbac.yaml or the Helm chart deploy/helm/routekeeper)", werr)
		}
		select {
		case <-ctx.Done():
			if werr != nil {
				return fmt.Errorf("node informer did not sync: %w (last error: %v)", ctx.Err(), werr)
			}
			return fmt.Errorf("node informer did not sync: %w", ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// HasSynced reports whether the informer has listed the nodes (readiness).
func (s *Source) HasSynced() bool { return s.informer.HasSynced() }

// Watch calls changed whenever a node that matters for routes changes,
// until ctx is done. It starts the informer if Start has not.
//
// It also calls changed once as soon as it is registered: the informer may
// already run (the daemon starts it for readiness) and deliver a node
// between the caller's first read of the nodes and this registration; that
// change would otherwise wait for the next resync.
func (s *Source) Watch(ctx context.Context, changed func()) error {
	s.mu.Lock()
	s.changed = changed
	s.mu.Unlock()
	changed()
	defer func() {
		s.mu.Lock()
		s.changed = nil
		s.mu.Unlock()
	}()
	if err := s.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	<-ctx.Done()
	return nil
}

// Nodes returns the nodes, sorted by name: from the informer's cache when
// started (waiting for its first list), else listed from the API server.
func (s *Source) Nodes(ctx context.Context) ([]source.Node, error) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return s.list(ctx)
	}
	if err := s.waitSynced(ctx); err != nil {
		return nil, err
	}
	objs := s.informer.GetStore().List()
	out := make([]source.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, Convert(n))
		}
	}
	sortNodes(out)
	return out, nil
}

// list reads every node from the API server, in pages.
func (s *Source) list(ctx context.Context) ([]source.Node, error) {
	var out []source.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := s.client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		for i := range l.Items {
			out = append(out, Convert(&l.Items[i]))
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	sortNodes(out)
	return out, nil
}

func sortNodes(ns []source.Node) {
	slices.SortFunc(ns, func(a, b source.Node) int { return strings.Compare(a.Name, b.Name) })
}

// Node returns the node as the informer holds it (trimmed by Trim), and
// false when it is not known or the informer is not started. The status
// reporter reads the NetworkUnavailable condition from it.
func (s *Source) Node(name string) (*corev1.Node, bool) {
	obj, ok, err := s.informer.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	n, ok := obj.(*corev1.Node)
	return n, ok
}

// Trim is the informer's transform: it replaces a Node with a new one that
// holds only name, UID, resource version, deletion time, pod CIDRs,
// InternalIP addresses and the NetworkUnavailable condition. A kubelet's
// Node carries images, capacity, managed fields and a dozen conditions:
// kilobytes per node that routekeeper never reads. Trim is idempotent and
// passes other objects (tombstones' contents are trimmed) through.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return trimNode(o), nil
	case cache.DeletedFinalStateUnknown:
		if n, ok := o.Obj.(*corev1.Node); ok {
			o.Obj = trimNode(n)
		}
		return o, nil
	default:
		return obj, nil
	}
}

func trimNode(n *corev1.Node) *corev1.Node {
	t := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			t.Status.Addresses = append(t.Status.Addresses, a)
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			t.Status.Conditions = append(t.Status.Conditions, c)
		}
	}
	return t
}

// RoutesChanged reports whether a node update matters for its routes: a
// different pod CIDR list or InternalIP list. Everything else (heartbeats,
// conditions, labels) does not.
func RoutesChanged(old, cur *corev1.Node) bool {
	return !slices.Equal(podCIDRs(old), podCIDRs(cur)) || !slices.Equal(internalIPs(old), internalIPs(cur))
}

func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func internalIPs(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// Convert makes a source.Node of a Node: spec.podCIDRs (spec.podCIDR when
// the list is empty, as on clusters older than dual-stack) and the
// InternalIP addresses in the node's order. Values that do not parse are
// left out; a node left without a pod CIDR or address is then reported by
// the planner (NoPodCIDR, NoNodeIP).
func Convert(n *corev1.Node) source.Node {
	out := source.Node{Name: n.Name, UID: string(n.UID)}
	for _, c := range podCIDRs(n) {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil {
			out.PodCIDRs = append(out.PodCIDRs, p)
		}
	}
	for _, a := range internalIPs(n) {
		if ip, err := netip.ParseAddr(strings.TrimSpace(a)); err == nil {
			out.InternalIPs = append(out.InternalIPs, ip.Unmap())
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse {
			out.NetworkAvailable = true
		}
	}
	return out
}

// warnInvalid logs pod CIDRs and addresses that do not parse, once per
// change of the node (from the event handlers, not from every reconcile).
func (s *Source) warnInvalid(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	var bad []string
	for _, c := range podCIDRs(n) {
		if _, err := netip.ParsePrefix(strings.TrimSpace(c)); err != nil {
			bad = append(bad, fmt.Sprintf("pod CIDR %q", c))
		}
	}
	for _, a := range internalIPs(n) {
		if _, err := netip.ParseAddr(strings.TrimSpace(a)); err != nil {
			bad = append(bad, fmt.Sprintf("InternalIP %q", a))
		}
	}
	if len(bad) > 0 {
		s.log.Warn("node has values that are not addresses; ignoring them", "node", n.Name, "invalid", strings.Join(bad, ", "))
	}
}
