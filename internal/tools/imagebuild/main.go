// Command imagebuild builds routekeeper's container image without a
// container engine (docs/kubernetes.md, "The image"):
//
//	go run ./internal/tools/imagebuild -version v0.1.0 -layout dist/image -tar dist/routekeeper.tar
//
// It builds ./cmd/routekeeper statically (CGO_ENABLED=0, GOOS=linux) unless
// -binary names one, and writes the image as an OCI image layout (for
// skopeo, crane, oras, containerd) and, with -tar, as a tarball for
// `docker load`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/routekeeper/routekeeper/internal/imagebuild"
)

func main() {
	var (
		binary   = flag.String("binary", "", "a static routekeeper binary to use instead of building ./cmd/routekeeper")
		arch     = flag.String("arch", runtime.GOARCH, "GOARCH to build for: amd64 or arm64")
		version  = flag.String("version", "", "the org.opencontainers.image.version label (default: the binary's module version)")
		layout   = flag.String("layout", filepath.Join("dist", "image"), "OCI image layout directory to write")
		tarPath  = flag.String("tar", "", "also write a `docker load` tarball to this file")
		ref      = flag.String("ref", "", "image name in the layout and tarball (default routekeeper:<version>)")
		caBundle = flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA certificates to put in the image (Azure's endpoints are TLS)")
		source   = flag.String("source", "https://github.com/routekeeper/routekeeper", "the org.opencontainers.image.source label")
	)
	flag.Parse()
	if err := run(context.Background(), *binary, *arch, *version, *layout, *tarPath, *ref, *caBundle, *source); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, binary, arch, version, layoutDir, tarPath, ref, caBundle, source string) error {
	if binary == "" {
		dir, err := os.MkdirTemp("", "imagebuild-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "routekeeper")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./cmd/routekeeper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		slog.Info("building", "command", cmd.String(), "GOARCH", arch)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building ./cmd/routekeeper: %w", err)
		}
	}
	created := time.Unix(0, 0)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var sec int64
		if _, err := fmt.Sscan(s, &sec); err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds", s)
		}
		created = time.Unix(sec, 0)
	}
	img, err := imagebuild.Build(imagebuild.Options{Binary: binary, CABundle: caBundle, Version: version, Created: created, Source: source})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if ref == "" {
		ref = "routekeeper:" + imagebuild.Tag(cf.Config.Labels[imagebuild.LabelVersion])
	}
	if err := imagebuild.WriteLayout(layoutDir, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	slog.Info("wrote OCI image layout", "dir", layoutDir, "ref", ref, "digest", digest.String(), "version", cf.Config.Labels[imagebuild.LabelVersion], "arch", cf.Architecture)
	if tarPath != "" {
		if err := imagebuild.WriteTarball(tarPath, ref, img); err != nil {
			return err
		}
		slog.Info("wrote docker load tarball", "file", tarPath, "ref", ref)
	}
	return nil
}
