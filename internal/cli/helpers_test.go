package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func init() {
	flag.Bool("update", false, "rewrite golden files under testdata/")
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; run with -update if the change is intended):\n%s", path, diff)
	}
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return env[k] })
	return cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// background is a command the test runs in process while it does other
// things, as a shell runs one with &.
type background struct {
	cancel context.CancelFunc
	done   chan int // its exit code
}

// startCLI runs the CLI with args in the background, with env as its
// environment (nil: none), writing to stdout and stderr.
func startCLI(stdout, stderr io.Writer, env map[string]string, args ...string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1)}
	go func() {
		b.done <- run(ctx, args, strings.NewReader(""), stdout, stderr, func(k string) string { return env[k] })
	}()
	return b
}

// stop interrupts the command (its context ends, as on SIGINT) and waits
// up to within for it to end, failing t unless it exits 0; what names
// the command and output is shown when it fails.
func (b *background) stop(t testing.TB, within time.Duration, what string, output fmt.Stringer) {
	t.Helper()
	b.cancel()
	select {
	case code := <-b.done:
		if code != ExitOK {
			t.Errorf("%s exited %d after it was stopped, want 0:\n%s", what, code, output)
		}
	case <-time.After(within):
		t.Errorf("%s did not stop within %s", what, within)
	}
}

// wantExit runs the CLI with args (no environment, no input) and fails
// the test unless it exits with want.
func wantExit(t *testing.T, want int, args ...string) cliResult {
	t.Helper()
	res := runCLI(t, nil, "", args...)
	if res.code != want {
		t.Fatalf("routekeeper %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.code, want, res.stdout, res.stderr)
	}
	return res
}

// mustRun runs `run --once --config cfg` with more args and fails the test
// unless every node was routed (exit 0).
func mustRun(t *testing.T, cfg string, args ...string) cliResult {
	t.Helper()
	return wantExit(t, ExitOK, append([]string{"run", "--once", "--config", cfg}, args...)...)
}
