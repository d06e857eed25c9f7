package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWalkthroughAgainstFabricServe builds routekeeper, serves the fabric
// on a free loopback port, walks through Kubernetes the Hard Way's pod
// network routes lab with nothing but the SDK, restarts the server on the
// same state file and checks that the lab's result survived.
func TestWalkthroughAgainstFabricServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs routekeeper")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "routekeeper")
	build := exec.Command("go", "build", "-o", bin, "github.com/routekeeper/routekeeper/cmd/routekeeper")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building routekeeper: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "fabric.db")
	ctx := context.Background()

	endpoint, stop := serve(t, bin, state)
	var out bytes.Buffer
	err := run(ctx, []string{"-endpoint", endpoint}, &out, func(string) string { return "" })
	t.Logf("walkthrough:\n%s", out.String())
	if err != nil {
		t.Fatalf("walkthrough: %v", err)
	}
	for _, want := range []string{"412 PreconditionFailed", "400 RouteConflict", "400 InUseRouteTableCannotBeDeleted",
		"the table's subnets are empty", "RoutesPerRouteTable: 1000", "400 RouteTableRouteLimitExceeded", "404 ResourceNotFound", "201 Created", "followed it to Succeeded", "walkthrough complete"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the walkthrough did not report %q", want)
		}
	}
	stop()

	endpoint, stop = serve(t, bin, state)
	defer stop()
	out.Reset()
	err = run(ctx, []string{"-endpoint", endpoint, "-check-state"}, &out, func(string) string { return "" })
	t.Logf("after restart:\n%s", out.String())
	if err != nil {
		t.Fatalf("state after a restart: %v", err)
	}
	// A second walkthrough on the same state refuses: it wants a fresh fabric.
	if err := run(ctx, []string{"-endpoint", endpoint}, io.Discard, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "fresh") {
		t.Errorf("walkthrough on a used fabric: %v", err)
	}
}

var listening = regexp.MustCompile(`routekeeper fabric listening on (http://\S+)`)

// serve starts `routekeeper fabric serve` and returns its endpoint and a
// function that stops it with SIGINT and checks that it exits cleanly.
func serve(t *testing.T, bin, state string) (string, func()) {
	t.Helper()
	cmd := exec.Command(bin, "fabric", "serve", "--state", state, "--listen", "127.0.0.1:0", "--operation-duration", "200ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	var endpoint string
	select {
	case endpoint = <-found:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("fabric serve printed no endpoint: %s", stderr.String())
	}
	stopped := false
	return endpoint, func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("fabric serve exited with %v: %s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("fabric serve did not stop on SIGINT")
		}
	}
}
