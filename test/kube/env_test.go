package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var cluster Shared

func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }

func TestNodeSpecAndStatus(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	client := env.Clientset(t)

	created := env.CreateNode(ctx, t, Node{
		Name:        "smoke-node-0",
		PodCIDRs:    []string{"10.244.0.0/24", "fd00:10:244::/64"},
		InternalIPs: []string{"10.240.0.4", "fd00::4"},
		Hostname:    "smoke-node-0",
	})
	got, err := client.CoreV1().Nodes().Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node back: %v", err)
	}
	if diff := cmp.Diff([]string{"10.244.0.0/24", "fd00:10:244::/64"}, got.Spec.PodCIDRs); diff != "" {
		t.Errorf("spec.podCIDRs (-want +got):\n%s", diff)
	}
	if got.Spec.PodCIDR != "10.244.0.0/24" {
		t.Errorf("spec.podCIDR = %q, want 10.244.0.0/24", got.Spec.PodCIDR)
	}
	wantAddrs := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.240.0.4"},
		{Type: corev1.NodeInternalIP, Address: "fd00::4"},
		{Type: corev1.NodeHostName, Address: "smoke-node-0"},
	}
	if diff := cmp.Diff(wantAddrs, got.Status.Addresses); diff != "" {
		t.Errorf("status.addresses (-want +got):\n%s", diff)
	}

	// Status is a subresource: a plain update must not change it.
	got.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}
	got.Labels = map[string]string{"touched": "yes"}
	updated, err := client.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating node: %v", err)
	}
	if diff := cmp.Diff(wantAddrs, updated.Status.Addresses); diff != "" {
		t.Errorf("a plain update changed status.addresses (-want +got):\n%s", diff)
	}
	if updated.Labels["touched"] != "yes" {
		t.Errorf("labels after update = %v, want touched=yes", updated.Labels)
	}
}

func TestNodeConditionPatch(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	env.CreateNode(ctx, t, Node{Name: "smoke-node-1", PodCIDRs: []string{"10.244.1.0/24"}, InternalIPs: []string{"10.240.0.5"}})

	if _, ok := env.NodeCondition(ctx, t, "smoke-node-1", corev1.NodeNetworkUnavailable); ok {
		t.Fatal("a new node already has a NetworkUnavailable condition")
	}
	for _, tc := range []struct {
		status corev1.ConditionStatus
		reason string
	}{
		{corev1.ConditionTrue, "NoRouteCreated"},
		{corev1.ConditionFalse, "RouteCreated"},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			// The same strategic merge patch on nodes/status that
			// cloud-provider's route controller sends.
			now := metav1.Now().Rfc3339Copy()
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"reason":%q,"message":"set by the smoke test","lastTransitionTime":%q,"lastHeartbeatTime":%q}]}}`,
				corev1.NodeNetworkUnavailable, tc.status, tc.reason, now.Format(time.RFC3339), now.Format(time.RFC3339))
			if _, err := env.Clientset(t).CoreV1().Nodes().Patch(ctx, "smoke-node-1", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				t.Fatalf("patching nodes/status: %v", err)
			}
			c := env.WaitForNodeCondition(ctx, t, "smoke-node-1", corev1.NodeNetworkUnavailable, tc.status)
			if c.Reason != tc.reason {
				t.Errorf("reason = %q, want %q", c.Reason, tc.reason)
			}
		})
	}
}

func TestLeaseAndEvent(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	client := env.Clientset(t)

	holder, duration := "routekeeper-0", int32(15)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "smoke-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &holder,
			LeaseDurationSeconds: &duration,
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
		},
	}
	if _, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating lease: %v", err)
	}
	got, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "smoke-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading lease: %v", err)
	}
	if got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != holder {
		t.Errorf("lease holder = %v, want %s", got.Spec.HolderIdentity, holder)
	}

	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "smoke-node-0.route"},
		EventTime:           metav1.NowMicro(),
		ReportingController: "routekeeper.io/routekeeper",
		ReportingInstance:   "routekeeper-0",
		Action:              "UpdateRouteTable",
		Reason:              "RouteCreated",
		Regarding:           corev1.ObjectReference{Kind: "Node", Name: "smoke-node-0", APIVersion: "v1"},
		Note:                "created route smoke-node-0____102440024",
		Type:                corev1.EventTypeNormal,
	}
	if _, err := client.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating events.k8s.io/v1 event: %v", err)
	}
	// The same event through the core/v1 view of events.
	core, err := client.CoreV1().Events(metav1.NamespaceDefault).Get(ctx, "smoke-node-0.route", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading event through core/v1: %v", err)
	}
	if core.Reason != "RouteCreated" || core.InvolvedObject.Name != "smoke-node-0" {
		t.Errorf("core/v1 event reason=%q involvedObject=%q, want RouteCreated smoke-node-0", core.Reason, core.InvolvedObject.Name)
	}
}

// TestInformerSeesNodeChanges runs a client-go node informer, as the kube
// node source does: the initial list (or watch-list) and the watch must work
// against this etcd and apiserver.
func TestInformerSeesNodeChanges(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	env.CreateNode(ctx, t, Node{Name: "smoke-informer-0", PodCIDRs: []string{"10.244.10.0/24"}, InternalIPs: []string{"10.240.0.10"}})

	factory := informers.NewSharedInformerFactory(env.Clientset(t), 0)
	nodes := factory.Core().V1().Nodes()
	seen := make(chan string, 100)
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { seen <- "add " + obj.(*corev1.Node).Name },
		UpdateFunc: func(_, obj any) {
			n := obj.(*corev1.Node)
			seen <- "update " + n.Name + " " + strings.Join(n.Spec.PodCIDRs, ",")
		},
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				seen <- "delete " + n.Name
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown() // waits for the informer goroutines
	}()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		t.Fatal("node informer did not sync")
	}
	expect := func(want string) {
		t.Helper()
		timeout := time.After(DefaultWait)
		for {
			select {
			case got := <-seen:
				if got == want {
					return
				}
			case <-timeout:
				t.Fatalf("informer did not report %q", want)
			}
		}
	}
	expect("add smoke-informer-0")

	env.CreateNode(ctx, t, Node{Name: "smoke-informer-1", InternalIPs: []string{"10.240.0.11"}})
	expect("add smoke-informer-1")

	client := env.Clientset(t)
	patch := []byte(`{"spec":{"podCIDR":"10.244.11.0/24","podCIDRs":["10.244.11.0/24"]}}`)
	if _, err := client.CoreV1().Nodes().Patch(ctx, "smoke-informer-1", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("assigning a pod CIDR: %v", err)
	}
	expect("update smoke-informer-1 10.244.11.0/24")

	if err := client.CoreV1().Nodes().Delete(ctx, "smoke-informer-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node: %v", err)
	}
	expect("delete smoke-informer-1")
}

// TestRBACEnforced proves that identities without bindings are refused and
// that a narrow ClusterRole grants exactly what it lists.
func TestRBACEnforced(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	admin := env.Clientset(t)

	tests := []struct {
		name    string
		subject rbacv1.Subject
		config  func(t *testing.T) *rest.Config
	}{
		{
			name:    "user certificate",
			subject: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "smoke-alice"},
			config:  func(*testing.T) *rest.Config { return env.UserConfig("smoke-alice", "smoke-team") },
		},
		{
			name:    "service account name in a certificate",
			subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "smoke-cert-sa"},
			config: func(*testing.T) *rest.Config {
				return env.UserConfig("system:serviceaccount:kube-system:smoke-cert-sa",
					"system:serviceaccounts", "system:serviceaccounts:kube-system")
			},
		},
		{
			name:    "service account token",
			subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "smoke-token-sa"},
			config: func(t *testing.T) *rest.Config {
				return env.ServiceAccountConfig(ctx, t, "kube-system", "smoke-token-sa")
			},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := env.ClientsetFor(t, tc.config(t))
			role := fmt.Sprintf("smoke-node-reader-%d", i)

			_, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("listing nodes without a binding: err = %v, want 403 Forbidden", err)
			}

			if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: role},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating ClusterRole: %v", err)
			}
			if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{tc.subject},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating ClusterRoleBinding: %v", err)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{})
				_ = admin.RbacV1().ClusterRoles().Delete(ctx, role, metav1.DeleteOptions{})
			})

			// The authorizer reads bindings from an informer: wait for it.
			waitAllowed(ctx, t, client)

			err = client.CoreV1().Nodes().Delete(ctx, "smoke-no-such-node", metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("deleting a node with a read-only role: err = %v, want 403 Forbidden", err)
			}
			_, err = client.CoreV1().Nodes().Patch(ctx, "smoke-no-such-node", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status")
			if !apierrors.IsForbidden(err) {
				t.Errorf("patching nodes/status with a role on nodes only: err = %v, want 403 Forbidden", err)
			}
		})
	}
}

func waitAllowed(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, DefaultWait)
	defer cancel()
	for {
		_, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing nodes after the binding: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("listing nodes still forbidden after the binding: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestStartStopsProcesses checks that Start's cleanup stops both processes
// and frees their ports.
func TestStartStopsProcesses(t *testing.T) {
	var env *Env
	t.Run("start", func(t *testing.T) {
		env = Start(t.Context(), t)
		v, err := env.Clientset(t).Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("reading server version: %v", err)
		}
		if v.GitVersion != KubeVersion {
			t.Errorf("server version = %s, want %s (rebuild with scripts/kube-testenv.sh)", v.GitVersion, KubeVersion)
		}
	})
	if env == nil {
		t.Skip("no control plane started")
	}
	for _, p := range []*process{env.etcd, env.apiserver} {
		if err := p.running(); err == nil {
			t.Errorf("%s still runs after the test's cleanup", p.name)
		}
	}
	for _, u := range []string{env.URL, env.EtcdURL} {
		addr := u[strings.LastIndex(u, "/")+1:]
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the test's cleanup", addr)
		}
	}
}

func TestBinaries(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "fake-binary")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	cached := filepath.Join(cache, "kube", KubeVersion, "kube-apiserver")
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name          string
		env           map[string]string
		wantEtcd      string
		wantAPIServer string
		wantErr       []string // substrings of the error
		wantNotFound  bool
	}{
		{
			name:          "environment variables win",
			env:           map[string]string{EnvEtcd: exe, EnvAPIServer: exe, EnvCache: cache},
			wantEtcd:      exe,
			wantAPIServer: exe,
		},
		{
			name:          "kube-apiserver from the cache",
			env:           map[string]string{EnvEtcd: exe, EnvCache: cache},
			wantEtcd:      exe,
			wantAPIServer: cached,
		},
		{
			name:         "nothing anywhere",
			env:          map[string]string{EnvCache: filepath.Join(dir, "empty")},
			wantErr:      []string{"etcd not found", "kube-apiserver not found", "scripts/kube-testenv.sh"},
			wantNotFound: true,
		},
		{
			name:         "variable names a missing file",
			env:          map[string]string{EnvEtcd: filepath.Join(dir, "nope"), EnvCache: cache},
			wantErr:      []string{EnvEtcd + "=" + filepath.Join(dir, "nope"), "not found"},
			wantNotFound: false,
		},
		{
			name:    "variable names a directory",
			env:     map[string]string{EnvEtcd: dir, EnvCache: cache},
			wantErr: []string{EnvEtcd + "=" + dir, "not an executable file"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", filepath.Join(dir, "empty-path"))
			for _, k := range []string{EnvEtcd, EnvAPIServer, EnvCache} {
				t.Setenv(k, tc.env[k])
			}
			etcd, apiserver, err := Binaries()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Binaries() error = %v", err)
				}
				if etcd != tc.wantEtcd || apiserver != tc.wantAPIServer {
					t.Errorf("Binaries() = %q, %q, want %q, %q", etcd, apiserver, tc.wantEtcd, tc.wantAPIServer)
				}
				return
			}
			if err == nil {
				t.Fatalf("Binaries() = %q, %q, want an error", etcd, apiserver)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if got := errors.Is(err, errNotFound); got != tc.wantNotFound {
				t.Errorf("errors.Is(err, errNotFound) = %v, want %v", got, tc.wantNotFound)
			}
		})
	}
}

// recorder is a testing.TB that records Skip and Fatal instead of stopping
// the goroutine.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(args ...any)      { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)     { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Fatalf(string, ...any) { r.fatal = "Fatalf" }

func TestMissingBinariesSkipOrFail(t *testing.T) {
	tests := []struct {
		name     string
		required string
		etcd     string
		wantSkip bool
	}{
		{name: "skip on a laptop", required: "", etcd: "", wantSkip: true},
		{name: "fail in CI", required: "1", etcd: "", wantSkip: false},
		{name: "variable naming nothing fails", required: "", etcd: "/nonexistent/etcd", wantSkip: false},
		{name: "misconfiguration fails everywhere", required: "", etcd: t.TempDir(), wantSkip: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvRequired, tc.required)
			t.Setenv(EnvEtcd, tc.etcd)
			t.Setenv(EnvAPIServer, "")
			t.Setenv(EnvCache, "/nonexistent")
			t.Setenv("PATH", "/nonexistent")
			r := &recorder{TB: t}
			requireBinaries(r)
			msg := r.skipped + r.fatal
			if gotSkip := r.skipped != ""; gotSkip != tc.wantSkip || msg == "" {
				t.Fatalf("skipped=%q fatal=%q, want skip=%v", r.skipped, r.fatal, tc.wantSkip)
			}
			if !strings.Contains(msg, "scripts/kube-testenv.sh") {
				t.Errorf("message %q does not say how to get the binaries", msg)
			}
		})
	}
}

// BenchmarkStart measures starting a control plane until it is ready and
// stopping it again.
func BenchmarkStart(b *testing.B) {
	etcdBin, apiserverBin := requireBinaries(b)
	var ready, stopped time.Duration
	for b.Loop() {
		t0 := time.Now()
		env, err := start(b.Context(), b.TempDir(), etcdBin, apiserverBin)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := env.stop(); err != nil {
			b.Fatal(err)
		}
		ready += t1.Sub(t0)
		stopped += time.Since(t1)
	}
	b.ReportMetric(ready.Seconds()/float64(b.N), "s-to-ready/op")
	b.ReportMetric(stopped.Seconds()/float64(b.N), "s-to-stop/op")
}
