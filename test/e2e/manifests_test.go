package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// deployDir is the repository's deploy/ directory.
var deployDir = filepath.Join("..", "..", "deploy")

// readManifests decodes every object of a multi-document YAML file in
// deploy/.
func readManifests(t testing.TB, name string) []runtime.Object {
	t.Helper()
	f, err := os.Open(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: decoding %q: %v", name, firstLine(doc), err)
		}
		out = append(out, obj)
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func firstLine(b []byte) string {
	b = stripComments(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// apply creates the objects with the admin client (replacing any left by
// an earlier test) and deletes them when the test ends.
func apply(ctx context.Context, t *testing.T, client kubernetes.Interface, objs []runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var create func() error
		var del func(context.Context) error
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			c := client.CoreV1().ServiceAccounts(o.Namespace)
			create = func() error { _, err := c.Create(ctx, o, metav1.CreateOptions{}); return err }
			del = func(ctx context.Context) error { return c.Delete(ctx, o.Name, metav1.DeleteOptions{}) }
		case *rbacv1.ClusterRole:
			c := client.RbacV1().ClusterRoles()
			create = func() error { _, err := c.Create(ctx, o, metav1.CreateOptions{}); return err }
			del = func(ctx context.Context) error { return c.Delete(ctx, o.Name, metav1.DeleteOptions{}) }
		case *rbacv1.ClusterRoleBinding:
			c := client.RbacV1().ClusterRoleBindings()
			create = func() error { _, err := c.Create(ctx, o, metav1.CreateOptions{}); return err }
			del = func(ctx context.Context) error { return c.Delete(ctx, o.Name, metav1.DeleteOptions{}) }
		case *rbacv1.Role:
			c := client.RbacV1().Roles(o.Namespace)
			create = func() error { _, err := c.Create(ctx, o, metav1.CreateOptions{}); return err }
			del = func(ctx context.Context) error { return c.Delete(ctx, o.Name, metav1.DeleteOptions{}) }
		case *rbacv1.RoleBinding:
			c := client.RbacV1().RoleBindings(o.Namespace)
			create = func() error { _, err := c.Create(ctx, o, metav1.CreateOptions{}); return err }
			del = func(ctx context.Context) error { return c.Delete(ctx, o.Name, metav1.DeleteOptions{}) }
		default:
			t.Fatalf("apply: %T is not handled", obj)
		}
		if err := create(); apierrors.IsAlreadyExists(err) {
			if err := del(ctx); err != nil {
				t.Fatal(err)
			}
			err = create()
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
		t.Cleanup(func() {
			if err := del(context.Background()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T: %v", obj, err)
			}
		})
	}
}
