// Package imagetest builds routekeeper for the container image and reads
// images back from an OCI layout, for the tests of the image builder
// (internal/imagebuild) and of its command (internal/tools/imagebuild).
package imagetest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// BuildBinary builds cmd/routekeeper at path the way the image needs it:
// static, for Linux on this machine's architecture.
func BuildBinary(path string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", path, "github.com/routekeeper/routekeeper/cmd/routekeeper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building routekeeper: %w\n%s", err, out)
	}
	return nil
}

// LoadLayout reads the image tagged tag from the OCI layout in dir,
// failing the test unless the layout holds exactly that one image, named
// by both the OCI tag and containerd's image name (routekeeper:<tag>).
func LoadLayout(t *testing.T, dir, tag string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
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
	var found []v1.Descriptor
	for _, d := range im.Manifests {
		if d.Annotations["org.opencontainers.image.ref.name"] == tag && d.Annotations["io.containerd.image.name"] == "routekeeper:"+tag {
			found = append(found, d)
		}
	}
	if len(found) != 1 || len(im.Manifests) != 1 {
		t.Fatalf("index %+v: want exactly one image, tagged %s", im.Manifests, tag)
	}
	img, err := idx.Image(found[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
