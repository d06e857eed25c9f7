package armaz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/cli"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/labwatch"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

var (
	listening = regexp.MustCompile(`routekeeper fabric listening on (https://\S+)`)
	caLine    = regexp.MustCompile(`TLS CA:\s+(\S+)`)
)

// lab is the served fabric, the az that talks to it, routekeeper running
// against it and the watcher of its state.
type lab struct {
	repo, dir, endpoint, config string
	env                         []string // az's environment
	fabricLog                   *syncbuf.Buffer
	watch                       *labwatch.Watcher
	results                     []string
}

// startLab serves a fabric over TLS on a state file (operations of 100 ms,
// so deployments run in the background and poll their resources' long
// running operations), points a private az configuration at it with
// `fabric az --apply` (which also gives Debian's az its workarounds), and
// watches the state. It skips unless ROUTEKEEPER_E2E_AZ=1.
func startLab(t *testing.T) *lab {
	t.Helper()
	if os.Getenv("ROUTEKEEPER_E2E_AZ") != "1" {
		t.Skip("set ROUTEKEEPER_E2E_AZ=1 (with Debian's azure-cli installed) to run the ARM template end-to-end test")
	}
	if _, err := exec.LookPath("az"); err != nil {
		t.Fatal("ROUTEKEEPER_E2E_AZ=1 but az is not installed: apt-get install azure-cli")
	}
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{repo: repo, dir: t.TempDir(), fabricLog: &syncbuf.Buffer{}}
	t.Setenv("XDG_STATE_HOME", filepath.Join(l.dir, "state"))
	t.Setenv("ROUTEKEEPER_ENDPOINT", "")
	// The state file where the fabric's own is (its TLS CA beside it), so
	// routekeeper's --endpoint finds the CA as a user's would.
	db := filepath.Join(l.dir, "state", "routekeeper", "fabric.db")

	ctx, cancel := context.WithCancel(context.Background())
	var out syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"fabric", "serve", "--tls", "--state", db, "--listen", "127.0.0.1:0", "--operation-duration", "100ms"},
			strings.NewReader(""), &out, l.fabricLog)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	ca := ""
	for l.endpoint == "" || ca == "" {
		text, written := out.Next()
		if m := listening.FindStringSubmatch(text); m != nil {
			l.endpoint = m[1]
		}
		if m := caLine.FindStringSubmatch(text); m != nil {
			ca = m[1]
		}
		if l.endpoint != "" && ca != "" {
			break
		}
		select {
		case <-written:
		case code := <-done:
			done <- code
			t.Fatalf("fabric serve --tls exited %d: %s %s", code, text, l.fabricLog.String())
		case <-timeout.C:
			t.Fatalf("fabric serve --tls printed no endpoint: %s", text)
		}
	}
	code, exports, stderr := routekeeper(t, "fabric", "az", "--apply", "--endpoint", l.endpoint, "--ca", ca)
	if code != cli.ExitOK {
		t.Fatalf("fabric az --apply = %d:\n%s", code, stderr)
	}
	l.env = os.Environ()
	for _, line := range strings.Split(strings.TrimSpace(exports), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		if !ok {
			t.Fatalf("fabric az --apply printed %q, want only export lines", line)
		}
		l.env = append(l.env, strings.Trim(strings.Replace(kv, "='", "=", 1), "'"))
	}
	store, err := fabric.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l.watch = labwatch.Watch(t, store)
	return l
}

// routekeeper runs the CLI in process.
func routekeeper(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// az runs a bash script with the lab's az; the test fails when it fails.
func (l *lab) az(t *testing.T, script string) string {
	t.Helper()
	out, errOut, err := l.azMay(t, script)
	if err != nil {
		t.Fatalf("%s\n%v\nstdout:\n%s\nstderr:\n%s", script, err, out, errOut)
	}
	return out
}

// azMay runs a bash script with the lab's az and returns what it printed
// and how it ended.
func (l *lab) azMay(t *testing.T, script string) (string, string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = l.env
	cmd.Dir = filepath.Join(l.repo, "examples", "kthw", "arm")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// routekeeperConfig is examples/kthw/routekeeper.yaml without its local
// state and topology: the served fabric (--endpoint) holds what az built.
const routekeeperConfig = `cluster:
  name: kthw
  clusterCIDRs: [10.200.0.0/16]
  serviceCIDRs: [10.32.0.0/24]
  nodeCIDRMaskSize: 24
routeTable:
  id: ` + kthw.TableID + `
  create: true
  location: eastus
subnets:
  - ` + kthw.SubnetID + `
association:
  policy: enforce
cloud:
  type: local
source:
  type: inventory
  inventory:
    file: ./nodes.yaml
controller:
  metricsAddress: ""
`

// startRoutekeeper runs `routekeeper run` in process against the served
// fabric with a guard cycle of 1 s.
func (l *lab) startRoutekeeper(t *testing.T) {
	t.Helper()
	dir := filepath.Join(l.dir, "rk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodes, err := os.ReadFile(filepath.Join(l.repo, "examples", "kthw", "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l.config = filepath.Join(dir, "routekeeper.yaml")
	for name, b := range map[string][]byte{"nodes.yaml": nodes, "routekeeper.yaml": []byte(routekeeperConfig)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var out, errOut syncbuf.Buffer
	go func() {
		defer close(done)
		cli.Run(ctx, []string{"run", "--config", l.config, "--endpoint", l.endpoint,
			"--association-interval", "1s", "--resync", "1s", "--batch-window", "50ms"}, strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// whatIf runs az's what-if as a pipeline would and returns its JSON.
func (l *lab) whatIf(t *testing.T, args string) []byte {
	t.Helper()
	return []byte(l.az(t, "az deployment group what-if -g kubernetes --no-pretty-print -o json "+args))
}

// iacCheck runs `routekeeper iac check` on a what-if against the served
// fabric as it stands (the live check): a hazard exits 3 and its output
// names every word of says, a fix (rule "") exits 0.
func (l *lab) iacCheck(t *testing.T, step string, whatIf []byte, rule string, says ...string) {
	t.Helper()
	file := filepath.Join(l.dir, step+".whatif.json")
	if err := os.WriteFile(file, whatIf, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := routekeeper(t, "iac", "check", file, "--config", l.config, "--endpoint", l.endpoint, "-o", "json")
	want := cli.ExitOK
	if rule != "" {
		want = cli.ExitFindings
	}
	text := out + stderr
	if code != want || strings.Contains(text, "could not be read") {
		t.Errorf("%s: iac check exited %d, want %d (and the cloud read):\n%s", step, code, want, text)
		return
	}
	for _, s := range append([]string{rule}, says...) {
		if !strings.Contains(out, s) {
			t.Errorf("%s: iac check does not name %q:\n%s", step, s, out)
		}
	}
	l.results = append(l.results, fmt.Sprintf("%s: iac check on the what-if exit %d", step, code))
}

// fixture records a step's what-if into internal/iac/testdata/whatif
// (ROUTEKEEPER_RECORD_WHATIF=1), or checks that the recorded one has the
// same changes (resource and change type) as this run's.
func (l *lab) fixture(t *testing.T, step string, whatIf []byte) {
	t.Helper()
	file := filepath.Join(l.repo, "internal", "iac", "testdata", "whatif", step+".json")
	if os.Getenv("ROUTEKEEPER_RECORD_WHATIF") == "1" {
		if err := os.WriteFile(file, whatIf, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	recorded, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("%s: no recorded what-if (ROUTEKEEPER_RECORD_WHATIF=1 records it): %v", step, err)
		return
	}
	if got, want := changeTypes(t, whatIf), changeTypes(t, recorded); got != want {
		t.Errorf("%s: the what-if changed since it was recorded:\n%s\nrecorded:\n%s", step, got, want)
	}
}

func changeTypes(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		Changes []struct{ ResourceID, ChangeType string }
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("what-if JSON: %v", err)
	}
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.ChangeType+" "+c.ResourceID)
	}
	return strings.Join(out, "\n")
}
