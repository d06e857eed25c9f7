// Package imagebuild builds routekeeper's container image without a
// container engine: one layer on an empty base (scratch) holding the
// static routekeeper binary, a CA bundle for Azure's TLS endpoints and the
// passwd and group entries of the non-root user 65532, in the OCI image
// format. The image is reproducible: the same binary, bundle and version
// give the same digest. internal/tools/imagebuild is its command.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and runs as.
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/routekeeper"
	// User is the non-root user and group the image runs as, the one the
	// Kubernetes manifests name (runAsUser, runAsGroup).
	User = "65532:65532"
	// CABundle is where the CA certificates go: Go's crypto/x509 reads it
	// on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"

	// LabelVersion is the OCI annotation the version goes in.
	LabelVersion = "org.opencontainers.image.version"
)

// Options say what to build.
type Options struct {
	// Binary is the routekeeper binary: a static Linux executable
	// (CGO_ENABLED=0); scratch has no C library.
	Binary string
	// CABundle is a PEM file of CA certificates to copy into the image.
	CABundle string
	// Version goes in the org.opencontainers.image.version label; empty
	// means the binary's own module version (what `routekeeper version`
	// prints).
	Version string
	// Created is the image's creation time; zero means the Unix epoch, so
	// that builds are reproducible.
	Created time.Time
	// Source is the org.opencontainers.image.source label, if not empty.
	Source string
}

// Build builds the image.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	arch, version, err := inspect(o.Binary, bin)
	if err != nil {
		return nil, err
	}
	if o.Version != "" {
		version = o.Version
	}
	ca, err := os.ReadFile(o.CABundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", o.CABundle)
	}

	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0)
	}
	files, err := layerTar(bin, ca, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: o.Created.UTC()}
	labels := map[string]string{
		LabelVersion:                           version,
		"org.opencontainers.image.title":       "routekeeper",
		"org.opencontainers.image.description": "Pod routes for Kubernetes clusters in Azure route tables",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if o.Source != "" {
		labels["org.opencontainers.image.source"] = o.Source
	}
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot", "SSL_CERT_FILE=" + CABundle},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// inspect checks that the binary runs on scratch — a static Linux
// executable — and returns its architecture and module version.
func inspect(path string, bin []byte) (arch, version string, err error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", "", fmt.Errorf("binary %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", "", fmt.Errorf("binary %s is dynamically linked (it names an ELF interpreter): build it with CGO_ENABLED=0; the image has no C library", path)
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		arch = "amd64"
	case elf.EM_AARCH64:
		arch = "arm64"
	default:
		return "", "", fmt.Errorf("binary %s: machine %s is not amd64 or arm64", path, f.Machine)
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return "", "", fmt.Errorf("binary %s carries no Go build information: %w", path, err)
	}
	if bi.Path != "github.com/routekeeper/routekeeper/cmd/routekeeper" {
		return "", "", fmt.Errorf("binary %s is %s, not github.com/routekeeper/routekeeper/cmd/routekeeper", path, bi.Path)
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			return "", "", fmt.Errorf("binary %s was built with CGO_ENABLED=%s: build it with CGO_ENABLED=0", path, s.Value)
		}
	}
	return arch, bi.Main.Version, nil
}

// layerTar is the image's one layer. Every entry has the same time and
// fixed owners, so the same input gives the same bytes.
func layerTar(bin, ca []byte, mtime time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	type entry struct {
		name string
		mode int64
		uid  int
		data []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CABundle[1:], mode: 0o644, data: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: Entrypoint[1:], mode: 0o755, data: bin},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime.UTC(), Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if e.uid != 0 {
			h.Uname, h.Gname = "nonroot", "nonroot"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteLayout writes the image into an OCI image layout directory (created
// if missing) under the image reference ref (name:tag): the index entry's
// org.opencontainers.image.ref.name is the tag (what `skopeo copy
// oci:DIR:TAG` and crane take), io.containerd.image.name the full name
// (what `ctr image import` takes). An image already there under the same
// tag is replaced.
func WriteLayout(dir, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	opt := layout.WithAnnotations(map[string]string{
		RefName:                    tag.TagStr(),
		"io.containerd.image.name": tag.String(),
	})
	sameTag := func(d v1.Descriptor) bool { return d.Annotations[RefName] == tag.TagStr() }
	if err := p.ReplaceImage(img, sameTag, opt); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// RefName is the OCI annotation of an image's tag in a layout's index.
const RefName = "org.opencontainers.image.ref.name"

// WriteTarball writes the image as a tarball that `docker load` and
// `podman load` take, tagged ref.
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Tag turns a version into an image tag: a Go pseudo-version's "+dirty"
// or "(devel)" have characters tags cannot carry.
func Tag(version string) string {
	var b []byte
	for _, r := range version {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b = append(b, byte(r))
		case r == '+':
			b = append(b, '-')
		}
	}
	if len(b) == 0 {
		return "latest"
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
