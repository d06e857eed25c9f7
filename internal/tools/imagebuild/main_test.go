package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestRun builds the image from a prebuilt binary into a layout and a
// tarball, with the creation time from SOURCE_DATE_EPOCH and the tag from
// the version.
func TestRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on Linux only")
	}
	const ca = "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(ca); err != nil {
		t.Skipf("no CA bundle: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "routekeeper")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/routekeeper/routekeeper/cmd/routekeeper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building routekeeper: %v\n%s", err, out)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "1800000000")
	o := options{binary: bin, version: "v1.2.3+dirty", layout: filepath.Join(dir, "image"), tar: filepath.Join(dir, "image.tar"), caBundle: ca}
	if err := run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(o.layout)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3-dirty" {
		t.Fatalf("index %+v: want one image tagged v1.2.3-dirty", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Time.Equal(time.Unix(1800000000, 0)) || cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3+dirty" {
		t.Errorf("created %s, version %q", cf.Created, cf.Config.Labels["org.opencontainers.image.version"])
	}
	if st, err := os.Stat(o.tar); err != nil || st.Size() == 0 {
		t.Errorf("tarball: %v", err)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if err := run(t.Context(), o); err == nil || !strings.Contains(err.Error(), `SOURCE_DATE_EPOCH="yesterday"`) {
		t.Errorf("run with a bad SOURCE_DATE_EPOCH = %v", err)
	}
}
