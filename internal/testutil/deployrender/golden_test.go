package deployrender

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestRenderedGolden keeps what each kustomization and the chart's main
// value sets render in testdata/, so that a change to deploy/ shows its
// effect on the installed objects in review. After a deliberate change:
//
//	go test ./internal/testutil/deployrender -run TestRenderedGolden -update
func TestRenderedGolden(t *testing.T) {
	r := root(t)
	dirs, err := Kustomizations(r)
	if err != nil {
		t.Fatal(err)
	}
	renders := map[string]func() ([]byte, error){}
	for _, dir := range dirs {
		name := "kustomize-" + filepath.Base(dir)
		renders[name] = func() ([]byte, error) { return Kustomize(filepath.Join(r, dir)) }
	}
	chart := filepath.Join(r, "deploy", "helm", "routekeeper")
	renders["helm-defaults"] = func() ([]byte, error) { return Helm(chart, "routekeeper", "kube-system", minimal()) }
	renders["helm-monitoring"] = func() ([]byte, error) {
		return Helm(chart, "routekeeper", "kube-system", with(minimal(), map[string]any{"metrics": map[string]any{
			"podMonitor": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
		}}))
	}
	for name, render := range renders {
		t.Run(name, func(t *testing.T) {
			got, err := render()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s renders differently from %s (-want +got; run with -update after a deliberate change):\n%s", name, path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}
