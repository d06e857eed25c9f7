package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/testutil/imagetest"
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
	if err := imagetest.BuildBinary(bin); err != nil {
		t.Fatal(err)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "1800000000")
	o := options{binary: bin, version: "v1.2.3+dirty", layout: filepath.Join(dir, "image"), tar: filepath.Join(dir, "image.tar"), caBundle: ca}
	if err := run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	img := imagetest.LoadLayout(t, o.layout, "v1.2.3-dirty")
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
