// Package deployrender renders routekeeper's deployment manifests the way
// an operator's tools do — the kustomize base and overlays in
// deploy/kustomize as `kubectl kustomize` (kustomize v5's krusty), the Helm
// chart in deploy/helm/routekeeper as `helm template` (Helm's chart loader,
// values schema and template engine) — and decodes the result strictly
// into client-go's typed objects. Tests use it to check the manifests and
// to apply them to a real kube-apiserver; nothing in routekeeper's binary
// imports it.
package deployrender

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version of the client-go routekeeper is
// built with: the chart is rendered for it and must accept it.
const KubeVersion = "v1.36.3"

// Root returns the repository's root: the nearest directory at or above
// the working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Kustomizations lists deploy/kustomize/base and every directory under
// deploy/kustomize/overlays, relative to root.
func Kustomizations(root string) ([]string, error) {
	dirs := []string{filepath.Join("deploy", "kustomize", "base")}
	overlays, err := os.ReadDir(filepath.Join(root, "deploy", "kustomize", "overlays"))
	if err != nil {
		return nil, fmt.Errorf("listing overlays: %w", err)
	}
	for _, e := range overlays {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("deploy", "kustomize", "overlays", e.Name()))
		}
	}
	return dirs, nil
}

// Kustomize renders the kustomization in dir as `kubectl kustomize dir`
// does (objects in kubectl's legacy kind order).
func Kustomize(dir string) ([]byte, error) {
	o := krusty.MakeDefaultOptions()
	o.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(o)
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return out, nil
}

// Helm renders the chart in chartDir as `helm template release chartDir
// --namespace namespace` with the values does: the values are checked
// against the chart's values.schema.json, the chart's kubeVersion against
// KubeVersion, and the templates rendered strictly (a reference to a value
// that does not exist is an error). The manifests come in file order,
// NOTES.txt left out.
func Helm(chartDir, release, namespace string, values map[string]any) ([]byte, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, KubeVersion) {
		return nil, fmt.Errorf("chart %s: kubeVersion %q does not accept %s", ch.Name(), c, KubeVersion)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: KubeVersion, Major: "1", Minor: "36"}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, fmt.Errorf("chart %s values: %w", ch.Name(), err)
	}
	files, err := engine.Engine{Strict: true}.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", ch.Name(), err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue // NOTES.txt, _helpers.tpl
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, name := range names {
		doc := strings.TrimSpace(files[name])
		if doc == "" {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, doc)
	}
	return b.Bytes(), nil
}

// Object is one decoded manifest.
type Object struct {
	// Typed is the object as client-go's type, or nil for kinds client-go
	// does not know (monitoring.coreos.com).
	Typed runtime.Object
	// Unstructured is the object as written.
	Unstructured *unstructured.Unstructured
}

// Kind returns the object's kind.
func (o Object) Kind() string { return o.Unstructured.GetKind() }

// Name returns "kind namespace/name".
func (o Object) Name() string {
	return fmt.Sprintf("%s %s/%s", o.Kind(), o.Unstructured.GetNamespace(), o.Unstructured.GetName())
}

// strict decodes into client-go's types, refusing unknown and duplicate
// fields: what `kubectl apply --validate=strict` refuses.
var strict = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	serializerjson.SerializerOptions{Yaml: true, Strict: true})

// Decode decodes every document of a multi-document YAML stream. Kinds
// client-go knows are decoded strictly into their types; others only need
// apiVersion, kind and metadata.name.
func Decode(manifests []byte) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	var out []Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue // only comments
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion %q, kind %q, metadata.name %q: all three are required", i, u.GetAPIVersion(), u.GetKind(), u.GetName())
		}
		o := Object{Unstructured: &u}
		if scheme.Scheme.Recognizes(u.GroupVersionKind()) {
			typed, _, err := strict.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("document %d (%s %s): %w", i, u.GetKind(), u.GetName(), err)
			}
			o.Typed = typed
		}
		out = append(out, o)
	}
}

// Of returns the typed objects of type T.
func Of[T runtime.Object](objs []Object) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.Typed.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
