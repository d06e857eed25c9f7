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
	"strconv"
	"time"

	"github.com/routekeeper/routekeeper/internal/imagebuild"
)

// options are the command's flags.
type options struct {
	binary, arch, version, layout, tar, ref, caBundle, source string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "a static routekeeper binary to use instead of building ./cmd/routekeeper")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH to build for: amd64 or arm64")
	flag.StringVar(&o.version, "version", "", "the org.opencontainers.image.version label (default: the binary's module version)")
	flag.StringVar(&o.layout, "layout", filepath.Join("dist", "image"), "OCI image layout directory to write")
	flag.StringVar(&o.tar, "tar", "", "also write a `docker load` tarball to this file")
	flag.StringVar(&o.ref, "ref", "", "image name:tag in the layout and tarball (default routekeeper:<version>)")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA certificates to put in the image (Azure's endpoints are TLS)")
	flag.StringVar(&o.source, "source", "https://github.com/routekeeper/routekeeper", "the org.opencontainers.image.source label")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "imagebuild: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	binary := o.binary
	if binary == "" {
		dir, err := os.MkdirTemp("", "imagebuild-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "routekeeper")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./cmd/routekeeper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		slog.Info("building", "command", cmd.String(), "GOARCH", o.arch)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building ./cmd/routekeeper: %w", err)
		}
	}
	created := time.Unix(0, 0)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds", s)
		}
		created = time.Unix(sec, 0)
	}
	img, err := imagebuild.Build(imagebuild.Options{Binary: binary, CABundle: o.caBundle, Version: o.version, Created: created, Source: o.source})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	ref := o.ref
	if ref == "" {
		ref = "routekeeper:" + imagebuild.Tag(cf.Config.Labels[imagebuild.LabelVersion])
	}
	if err := imagebuild.WriteLayout(o.layout, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	slog.Info("wrote OCI image layout", "dir", o.layout, "ref", ref, "digest", digest.String(), "version", cf.Config.Labels[imagebuild.LabelVersion], "arch", cf.Architecture)
	if o.tar != "" {
		if err := imagebuild.WriteTarball(o.tar, ref, img); err != nil {
			return err
		}
		slog.Info("wrote docker load tarball", "file", o.tar, "ref", ref)
	}
	return nil
}
