package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/routekeeper/routekeeper/internal/testutil/imagetest"
)

const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// routekeeperBinary builds cmd/routekeeper for the image (see
// imagetest.BuildBinary) once per test run.
func routekeeperBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on Linux only")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imagebuild-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "routekeeper")
		buildErr = imagetest.BuildBinary(binPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func caBundle(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(hostCABundle); err != nil {
		t.Skipf("no CA bundle on this machine: %v", err)
	}
	return hostCABundle
}

// TestImageLayout builds the image, writes it as an OCI layout, loads it
// back as a registry client would, and checks it: OCI media types, the
// entrypoint, the non-root user, the version label, the files; then runs
// the binary extracted from the layer.
func TestImageLayout(t *testing.T) {
	bin := routekeeperBinary(t)
	ca := caBundle(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("routekeeper version: %v", err)
	}
	binaryVersion := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "routekeeper"))
	for _, tc := range []struct {
		name, version, wantLabel string
	}{
		{name: "the binary's version", version: "", wantLabel: binaryVersion},
		{name: "a release version", version: "v1.2.3", wantLabel: "v1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Build(Options{Binary: bin, CABundle: ca, Version: tc.version, Source: "https://example.com/routekeeper"})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			ref := "routekeeper:" + Tag(tc.wantLabel)
			if err := WriteLayout(dir, ref, img); err != nil {
				t.Fatal(err)
			}
			// Writing again replaces the image under the same name.
			if err := WriteLayout(dir, ref, img); err != nil {
				t.Fatal(err)
			}
			loaded := imagetest.LoadLayout(t, dir, Tag(tc.wantLabel))

			mt, err := loaded.MediaType()
			if err != nil || mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s (%v), want %s", mt, err, types.OCIManifestSchema1)
			}
			m, err := loaded.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
				t.Errorf("config %s, layers %+v: want OCI config and one OCI layer", m.Config.MediaType, m.Layers)
			}
			cf, err := loaded.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cf.Config.Entrypoint, []string{"/routekeeper"}) || len(cf.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q, cmd %q: want [/routekeeper] and none", cf.Config.Entrypoint, cf.Config.Cmd)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532 (non-root, the manifests' runAsUser)", cf.Config.User)
			}
			if got := cf.Config.Labels["org.opencontainers.image.version"]; got != tc.wantLabel || got == "" {
				t.Errorf("version label %q, want %q", got, tc.wantLabel)
			}
			if cf.Config.Labels["org.opencontainers.image.source"] != "https://example.com/routekeeper" {
				t.Errorf("labels %v", cf.Config.Labels)
			}
			if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(time.Unix(0, 0)) {
				t.Errorf("os %s, architecture %s, created %s", cf.OS, cf.Architecture, cf.Created)
			}

			files := extract(t, loaded)
			want := map[string]struct {
				mode int64
				uid  int
			}{
				"routekeeper": {0o755, 0}, "etc/passwd": {0o644, 0}, "etc/group": {0o644, 0},
				"etc/ssl/certs/ca-certificates.crt": {0o644, 0}, "home/nonroot": {0o700, 65532}, "tmp": {0o1777, 0},
			}
			for name, w := range want {
				f, ok := files[name]
				if !ok {
					t.Errorf("the image has no %s", name)
					continue
				}
				if f.hdr.Mode != w.mode || f.hdr.Uid != w.uid {
					t.Errorf("%s: mode %o uid %d, want %o %d", name, f.hdr.Mode, f.hdr.Uid, w.mode, w.uid)
				}
			}
			if !strings.Contains(string(files["etc/passwd"].data), ":65532:65532:") {
				t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"].data)
			}
			caData, _ := os.ReadFile(ca)
			if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"].data, caData) {
				t.Error("the image's CA bundle is not the one given")
			}

			// The binary from the image runs.
			run := filepath.Join(t.TempDir(), "routekeeper")
			if err := os.WriteFile(run, files["routekeeper"].data, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(run, "version").CombinedOutput()
			if err != nil {
				t.Fatalf("the image's routekeeper version: %v\n%s", err, out)
			}
			if !strings.HasPrefix(string(out), "routekeeper ") || !strings.Contains(string(out), binaryVersion) {
				t.Errorf("the image's routekeeper version printed %q, want routekeeper %s", out, binaryVersion)
			}
		})
	}
}

type file struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the image's file system.
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = file{h, data}
	}
}

// TestImageIsReproducible: the same inputs give the same digest; another
// version gives another.
func TestImageIsReproducible(t *testing.T) {
	o := Options{Binary: routekeeperBinary(t), CABundle: caBundle(t), Version: "v1.0.0"}
	digest := func(o Options) v1.Hash {
		img, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := digest(o), digest(o)
	if a != b {
		t.Errorf("two builds: %s and %s", a, b)
	}
	o.Version = "v1.0.1"
	if c := digest(o); c == a {
		t.Errorf("another version gave the same digest %s", c)
	}
}

// TestDockerLoadTarball: the tarball holds the same image (config and
// layer) under the tag.
func TestDockerLoadTarball(t *testing.T) {
	img, err := Build(Options{Binary: routekeeperBinary(t), CABundle: caBundle(t), Version: "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "routekeeper.tar")
	if err := WriteTarball(path, "example.azurecr.io/routekeeper:v1.0.0", img); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.azurecr.io/routekeeper:v1.0.0")
	loaded, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.ConfigName()
	got, err := loaded.ConfigName()
	if err != nil || got != want {
		t.Errorf("config %s (%v), want %s", got, err, want)
	}
	if err := WriteTarball(path, "not a reference", img); err == nil || !strings.Contains(err.Error(), `"not a reference"`) {
		t.Errorf("bad reference: %v", err)
	}
}

// TestBuildRefuses: what cannot run on scratch, or is not routekeeper, is
// refused with the reason.
func TestBuildRefuses(t *testing.T) {
	bin := routekeeperBinary(t)
	ca := caBundle(t)
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not certificates"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A static Go program that is not routekeeper.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	cmd := exec.Command("go", "build", "-o", other, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building another program: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"dynamic binary", Options{Binary: "/bin/sh", CABundle: ca}, "CGO_ENABLED=0"},
		{"not an executable", Options{Binary: ca, CABundle: ca}, "not a Linux executable"},
		{"another program", Options{Binary: other, CABundle: ca}, "not github.com/routekeeper/routekeeper/cmd/routekeeper"},
		{"no CA bundle", Options{Binary: bin, CABundle: filepath.Join(t.TempDir(), "missing.crt")}, "CA bundle"},
		{"CA bundle without certificates", Options{Binary: bin, CABundle: notPEM}, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTag(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3": "v1.2.3", "(devel)": "devel", "v0.0.0-20261123-abcdef+dirty": "v0.0.0-20261123-abcdef-dirty", "": "latest",
	} {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
		if _, err := name.NewTag("routekeeper:" + Tag(in)); err != nil {
			t.Errorf("Tag(%q) is not a valid tag: %v", in, err)
		}
	}
}
