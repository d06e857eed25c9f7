package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/deployrender"
	"github.com/routekeeper/routekeeper/internal/verdict"
	kubetest "github.com/routekeeper/routekeeper/test/kube"
)

// access is one Kubernetes API permission a request needed.
type access struct {
	verb, group, resource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	s := a.verb + " " + r
	if a.namespace != "" {
		s += " in " + a.namespace
	}
	if a.name != "" {
		s += " named " + a.name
	}
	return s
}

// recorder records the access every request of a client needed, and the
// ones refused.
type recorder struct {
	mu      sync.Mutex
	used    []access
	refused []string
}

func (r *recorder) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			a, ok := accessOf(req)
			r.mu.Lock()
			defer r.mu.Unlock()
			if ok {
				r.used = append(r.used, a)
			}
			if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized) {
				r.refused = append(r.refused, fmt.Sprintf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode))
			}
			return resp, err
		})
	}
	return cfg
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// accessOf maps a request to the RBAC verb and resource it needs, the way
// the API server's request info does for the paths routekeeper uses.
func accessOf(req *http.Request) (access, bool) {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var a access
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		a.group, segs = segs[1], segs[3:]
	default:
		return a, false
	}
	if len(segs) >= 2 && segs[0] == "namespaces" && len(segs) > 2 {
		a.namespace, segs = segs[1], segs[2:]
	}
	if len(segs) == 0 {
		return a, false
	}
	a.resource = segs[0]
	if len(segs) > 1 {
		a.name = segs[1]
	}
	if len(segs) > 2 {
		a.resource += "/" + segs[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			a.verb = "watch"
		case a.name == "":
			a.verb = "list"
		default:
			a.verb = "get"
		}
	case http.MethodPost:
		a.verb = "create"
	case http.MethodPut:
		a.verb = "update"
	case http.MethodPatch:
		a.verb = "patch"
	case http.MethodDelete:
		a.verb = "delete"
	default:
		return a, false
	}
	return a, true
}

// granted lists every (verb, resource, namespace, name) a set of rules
// grants, for comparison with what was used. Rules of Roles carry their
// namespace.
type grant struct {
	rbacv1.PolicyRule
	namespace string // "" for a ClusterRole bound cluster-wide
}

func allows(g grant, a access) bool {
	if g.namespace != "" && g.namespace != a.namespace {
		return false
	}
	return slices.Contains(g.APIGroups, a.group) && slices.Contains(g.Resources, a.resource) && slices.Contains(g.Verbs, a.verb) &&
		(len(g.ResourceNames) == 0 || slices.Contains(g.ResourceNames, a.name))
}

// unexercised are rule parts this test cannot be expected to use, with why.
var unexercised = map[string]string{
	"patch events.events.k8s.io": "client-go's event library patches an event when the same event repeats within its series window; routekeeper's own deduplication makes that rare, and the library may still do it",
}

// TestRBACManifestIsSufficientAndLeast installs routekeeper as rendered
// from deploy/kustomize/base and from the Helm chart (every object created
// on the API server) and runs routekeeper as the installation's service
// account with exactly its RBAC: everything works (routes, conditions,
// events on Nodes and on the Pod, the lease), nothing is refused, and
// every rule of the manifests was needed. Without the bindings,
// routekeeper stops at once with an error naming the missing permission
// (TestWithoutRBACRoutekeeperStops).
func TestRBACManifestIsSufficientAndLeast(t *testing.T) {
	env := cluster.Env(t)
	observe := chartValues()
	observe["routes"] = "observe"
	for i, tc := range []struct {
		name   string
		mode   verdict.Mode
		render func(t *testing.T) []deployrender.Object
	}{
		{"kustomize base", verdict.Manage, func(t *testing.T) []deployrender.Object { return kustomize(t, "base") }},
		{"helm chart", verdict.Manage, func(t *testing.T) []deployrender.Object {
			return helmChart(t, "routekeeper", "kube-system", chartValues())
		}},
		{"kustomize observe", verdict.Observe, func(t *testing.T) []deployrender.Object { return kustomize(t, "overlays/observe") }},
		{"helm chart observe", verdict.Observe, func(t *testing.T) []deployrender.Object {
			return helmChart(t, "routekeeper", "kube-system", observe)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkRBAC(t, env, tc.render(t), tc.mode, 40+2*i) })
	}
}

// checkRBAC creates the rendered installation and runs routekeeper in the
// mode as its service account; n numbers the test's nodes.
func checkRBAC(t *testing.T, env *kubetest.Env, objs []deployrender.Object, mode verdict.Mode, n int) {
	ctx := t.Context()
	admin := env.Clientset(t)
	newCreator(t, env.Config).create(ctx, t, objs)
	sas := deployrender.Of[*corev1.ServiceAccount](objs)
	if len(sas) != 1 {
		t.Fatalf("%d ServiceAccounts rendered, want 1", len(sas))
	}
	sa := sas[0]

	var grants []grant
	lease := ""
	for _, o := range objs {
		switch r := o.Typed.(type) {
		case *rbacv1.ClusterRole:
			for _, rule := range r.Rules {
				grants = append(grants, grant{PolicyRule: rule})
			}
		case *rbacv1.Role:
			for _, rule := range r.Rules {
				grants = append(grants, grant{PolicyRule: rule, namespace: r.Namespace})
				if slices.Contains(rule.Resources, "leases") && len(rule.ResourceNames) == 1 {
					lease = rule.ResourceNames[0]
				}
			}
		}
	}
	if lease == "" {
		t.Fatal("the RBAC names no lease")
	}
	// The lease is created anew, so that its create is used.
	if err := admin.CoordinationV1().Leases("kube-system").Delete(ctx, lease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	rec := &recorder{}
	saConfig := rec.wrap(env.ServiceAccountConfig(ctx, t, sa.Namespace, sa.Name))
	f := newFabric(t)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kube-system", Name: fmt.Sprintf("routekeeper-rbac-test-%d", n), UID: types.UID(fmt.Sprintf("rbac-test-pod-%d", n))}
	le := leaderElection(lease, "rbac-replica")
	cfg := controllerConfig("rbac")
	inside, outside := fmt.Sprintf("rbac-%d", n), fmt.Sprintf("rbac-outside-%d", n)
	var r *replica
	if mode == verdict.Observe {
		// The platform's table: a route of a node that is gone, none
		// for the new node.
		gone := fmt.Sprintf("10.200.%d.0/24", 100+n)
		_, err := f.Client.PutRouteTable(ctx, &route.Table{ID: tableID, Name: "kubernetes-routes", ResourceGroup: "kubernetes", Location: "eastus",
			Routes: []route.Route{{Name: routeName("rbac-gone", gone), AddressPrefix: gone, Prefix: netip.MustParsePrefix(gone),
				NextHopType: route.VirtualAppliance, NextHopIP: netip.MustParseAddr(nodeIP(n + 1))}}}, "")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := f.Client.GetSubnet(ctx, subnetID)
		if _, err := f.Client.SetSubnetRouteTable(ctx, subnetID, tableID, s.Etag); err != nil {
			t.Fatal(err)
		}
		cfg.Mode, cfg.CreateTable = verdict.Observe, false
		cfg.Resync = 300 * time.Millisecond // the missing route is reported at a reconcile after the grace
		r = start(t, daemon.Options{Controller: cfg, Cloud: f.client(t, nil), Kube: saConfig, LeaderElection: le, Pod: pod, EventGrace: 500 * time.Millisecond})
		createNode(ctx, t, admin, node{name: inside, podCIDRs: []string{podCIDR(n)}, ips: []string{nodeIP(n)}, networkUnavailable: true})
		waitEvent(ctx, t, admin, "default", "Node", inside, kubestatus.EventRouteMissing)
		waitEvent(ctx, t, admin, "kube-system", "Pod", pod.Name, kubestatus.EventStaleRoutes)
		if c, _ := condition(ctx, t, admin, inside); c.Status != corev1.ConditionTrue {
			t.Errorf("observe mode changed %s's condition: %+v", inside, c)
		}
	} else {
		r = start(t, daemon.Options{Controller: cfg, Cloud: f.client(t, nil), Kube: saConfig, LeaderElection: le, Pod: pod})
		createNode(ctx, t, admin, node{name: inside, podCIDRs: []string{podCIDR(n)}, ips: []string{nodeIP(n)}, networkUnavailable: true})
		createNode(ctx, t, admin, node{name: outside, podCIDRs: []string{fmt.Sprintf("10.98.%d.0/24", n)}, ips: []string{nodeIP(n + 1)}, networkUnavailable: true})
		waitCondition(ctx, t, admin, inside, corev1.ConditionFalse, reason.RouteCreated)
		waitCondition(ctx, t, admin, outside, corev1.ConditionTrue, reason.OutsideClusterCIDR)
		waitEvent(ctx, t, admin, "default", "Node", outside, kubestatus.EventFailedToCreateRoute)
	}

	// Someone detaches the subnet: the guard repairs it and says so on
	// routekeeper's Pod.
	s, err := f.Client.GetSubnet(ctx, subnetID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.SetSubnetRouteTable(ctx, subnetID, "", s.Etag); err != nil {
		t.Fatal(err)
	}
	waitEvent(ctx, t, admin, "kube-system", "Pod", pod.Name, "RouteTableReassociated")

	// Stop gracefully: the lease is released (get + update).
	if err := r.stop(t); err != nil {
		t.Fatalf("routekeeper as the service account: %v", err)
	}
	if h := holder(ctx, t, admin, lease); h != "" && h != "rbac-replica" {
		t.Errorf("lease holder %q", h)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.refused) > 0 {
		t.Errorf("requests refused with the rendered RBAC:\n  %s", strings.Join(rec.refused, "\n  "))
	}
	// Every request was allowed by some rule (sufficient)...
	for _, a := range rec.used {
		if !slices.ContainsFunc(grants, func(g grant) bool { return allows(g, a) }) {
			t.Errorf("request needing %s is not granted by the rendered RBAC (it succeeded only through a default role?)", a)
		}
	}
	// ...and every verb of every rule was used (least privilege).
	for _, g := range grants {
		for _, verb := range g.Verbs {
			for _, res := range g.Resources {
				group := g.APIGroups[0]
				key := verb + " " + res
				if group != "" {
					key += "." + group
				}
				used := slices.ContainsFunc(rec.used, func(a access) bool {
					return a.verb == verb && a.resource == res && a.group == group && (g.namespace == "" || a.namespace == g.namespace) &&
						(len(g.ResourceNames) == 0 || slices.Contains(g.ResourceNames, a.name))
				})
				if !used {
					if why, ok := unexercised[key]; ok {
						t.Logf("not exercised: %s in %q: %s", key, g.namespace, why)
						continue
					}
					t.Errorf("the rendered RBAC grants %s (namespace %q) but routekeeper never needed it", key, g.namespace)
				}
			}
		}
	}
}

// TestWithoutRBACRoutekeeperStops: a service account without the
// manifest's bindings cannot list nodes; routekeeper says so and stops
// instead of waiting forever.
func TestWithoutRBACRoutekeeperStops(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	cfg := env.ServiceAccountConfig(ctx, t, "kube-system", "routekeeper-without-rbac")
	f := newFabric(t)
	begin := time.Now()
	err := daemon.Run(context.WithoutCancel(ctx), daemon.Options{Controller: controllerConfig("norbac"), Cloud: f.client(t, nil), Kube: cfg,
		LeaderElection: leaderElection("norbac", "norbac"), Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "deploy/kustomize/base/rbac.yaml") {
		t.Fatalf("Run without RBAC = %v, want a forbidden error pointing to deploy/kustomize/base/rbac.yaml", err)
	}
	t.Logf("stopped after %s: %v", time.Since(begin).Round(time.Millisecond), err)
	if f.table(t) != nil {
		t.Error("routekeeper wrote the route table without being able to read the nodes")
	}
}
