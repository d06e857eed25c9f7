package tofu

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// process is a long-running child (fabric serve, routekeeper run): its
// output goes to a buffer and a log file in the test's directory, and it is
// stopped (SIGTERM, then SIGKILL after 10 s) when the test ends, pass or fail.
type process struct {
	name string
	cmd  *exec.Cmd
	out  syncbuf.Buffer
	done chan struct{}
	err  error
}

func startProcess(t *testing.T, dir, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, done: make(chan struct{})}
	if d := os.Getenv("ROUTEKEEPER_E2E_TF_LOGS"); d != "" {
		dir = d // keep the logs after the run
	}
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = io.MultiWriter(&p.out, logFile)
	p.cmd.Stderr = p.cmd.Stdout
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s's log (the last 60 lines; ROUTEKEEPER_E2E_TF_LOGS=DIR keeps it all):\n%s", name, tail(p.out.String(), 60))
		}
	})
	return p
}

// stop ends the process and its group; a process that ended by itself
// before the test was done is an error.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		if !t.Failed() {
			t.Errorf("%s exited before the test ended: %v\n%s", p.name, p.err, tail(p.out.String(), 40))
		}
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Logf("%s did not stop within 10s of SIGTERM: killed", p.name)
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Errorf("%s: %v", p.name, p.err)
	} else if ee != nil && ee.ExitCode() != 0 && !t.Failed() {
		t.Errorf("%s exit %d after SIGTERM:\n%s", p.name, ee.ExitCode(), tail(p.out.String(), 40))
	}
}

// waitFor polls the process's output for a regular expression and returns
// its first submatch.
func (p *process) waitFor(t *testing.T, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, tail(p.out.String(), 40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %s within %s:\n%s", p.name, re, timeout, tail(p.out.String(), 40))
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// buildRoutekeeper builds the routekeeper binary of this module into dir.
func buildRoutekeeper(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "routekeeper")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/routekeeper/routekeeper/cmd/routekeeper")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build routekeeper: %v\n%s", err, out.String())
	}
	t.Logf("built routekeeper in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// problemLines are the lines of a fabric log that say it met something it
// does not know, or failed: the suite fails on any.
func problemLines(log string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "unknown request") || strings.Contains(l, "level=ERROR") ||
			strings.Contains(l, "token request refused") || strings.Contains(l, "does not hold") {
			out = append(out, l)
		}
	}
	return out
}
