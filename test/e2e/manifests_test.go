package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/routekeeper/routekeeper/internal/testutil/deployrender"
)

// deployDir is the repository's deploy/ directory.
var deployDir = filepath.Join("..", "..", "deploy")

// kustomize renders a kustomization under deploy/kustomize (as `kubectl
// kustomize`) and decodes it strictly.
func kustomize(t testing.TB, dir string) []deployrender.Object {
	t.Helper()
	out, err := deployrender.Kustomize(filepath.Join(deployDir, "kustomize", dir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deployrender.Decode(out)
	if err != nil {
		t.Fatalf("kustomization %s: %v", dir, err)
	}
	return objs
}

// helmChart renders deploy/helm/routekeeper (as `helm template`) and
// decodes it strictly.
func helmChart(t testing.TB, release, namespace string, values map[string]any) []deployrender.Object {
	t.Helper()
	out, err := deployrender.Helm(filepath.Join(deployDir, "helm", "routekeeper"), release, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deployrender.Decode(out)
	if err != nil {
		t.Fatalf("chart: %v", err)
	}
	return objs
}

// chartValues are the values every chart install needs.
func chartValues() map[string]any {
	return map[string]any{"cluster": map[string]any{"name": "e2e", "clusterCIDRs": []any{clusterCIDR.String()}}}
}

// creator creates rendered objects of any kind through the dynamic client.
type creator struct {
	client dynamic.Interface
	mapper meta.RESTMapper
}

func newCreator(t testing.TB, cfg *rest.Config) *creator {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &creator{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// resource returns the client of the object's resource, or ok false when
// the API server does not serve its kind (a CRD that is not installed).
func (c *creator) resource(t testing.TB, o deployrender.Object) (dynamic.ResourceInterface, bool) {
	t.Helper()
	u := o.Unstructured
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("%s: %v", o.Name(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.client.Resource(m.Resource).Namespace(u.GetNamespace()), true
	}
	return c.client.Resource(m.Resource), true
}

// validate creates every object in server-side dry-run mode with strict
// field validation: the API server checks each against its OpenAPI schema
// and admission, and stores nothing. It returns the objects whose kinds
// the API server does not serve, and the refusals.
func (c *creator) validate(ctx context.Context, t testing.TB, objs []deployrender.Object) (unserved []string, refused []error) {
	t.Helper()
	for _, o := range objs {
		r, ok := c.resource(t, o)
		if !ok {
			unserved = append(unserved, o.Name())
			continue
		}
		opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
		if _, err := r.Create(ctx, o.Unstructured, opts); err != nil {
			refused = append(refused, fmt.Errorf("the API server refuses %s: %w", o.Name(), err))
		}
	}
	return unserved, refused
}

// create creates the objects for real with strict field validation
// (replacing any left by an earlier test) and deletes them when the test
// ends.
func (c *creator) create(ctx context.Context, t *testing.T, objs []deployrender.Object) {
	t.Helper()
	for _, o := range objs {
		r, ok := c.resource(t, o)
		if !ok {
			t.Fatalf("the API server does not serve %s", o.Name())
		}
		opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
		_, err := r.Create(ctx, o.Unstructured, opts)
		if apierrors.IsAlreadyExists(err) {
			if err := r.Delete(ctx, o.Unstructured.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting the %s an earlier test left: %v", o.Name(), err)
			}
			_, err = r.Create(ctx, o.Unstructured, opts)
		}
		if err != nil {
			t.Fatalf("creating %s: %v", o.Name(), err)
		}
		t.Cleanup(func() {
			if err := r.Delete(context.Background(), o.Unstructured.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", o.Name(), err)
			}
		})
	}
}
