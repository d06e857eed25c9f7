package tofu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tofuRunner runs the real tofu binary in one working directory, with the
// azurerm provider through dev_overrides and the fabric as its cloud.
type tofuRunner struct {
	bin, dir, repo string
	env            []string
	timings        []timing
}

// timing is how long one tofu command took.
type timing struct {
	step, command string
	took          time.Duration
}

// run runs tofu and returns its exit code; an exit code not in ok fails the
// test with tofu's output.
func (tf *tofuRunner) run(ctx context.Context, t *testing.T, step string, ok []int, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tf.bin, args...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = tf.dir, tf.env, sysProcAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: tofu %s: %v", step, strings.Join(args, " "), err)
	}
	tf.timings = append(tf.timings, timing{step, args[0], took})
	if !slices.Contains(ok, code) {
		t.Fatalf("%s: tofu %s exited %d after %s\nstdout:\n%s\nstderr:\n%s", step, strings.Join(args, " "), code,
			took.Round(time.Millisecond), tail(stdout.String(), 80), tail(stderr.String(), 80))
	}
	t.Logf("%s: tofu %s: exit %d in %s", step, args[0], code, took.Round(time.Millisecond))
	return code, stdout.String()
}

// use puts the .tf files of one form of examples/kthw/terraform in the
// working directory, in place of the previous form's; the state stays.
func (tf *tofuRunner) use(t *testing.T, form string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(tf.dir, "*.tf"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	src, _ := filepath.Glob(filepath.Join(tf.repo, "examples", "kthw", "terraform", form, "*.tf"))
	if len(src) == 0 {
		t.Fatalf("no .tf files in examples/kthw/terraform/%s", form)
	}
	for _, f := range src {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tf.dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// plan writes a plan file and returns it with its JSON (tofu show -json)
// and whether it changes anything (-detailed-exitcode 2).
func (tf *tofuRunner) plan(ctx context.Context, t *testing.T, step string) (string, []byte, bool) {
	t.Helper()
	file := step + ".tfplan"
	code, _ := tf.run(ctx, t, step, []int{0, 2}, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-out="+file)
	_, js := tf.run(ctx, t, step, []int{0}, "show", "-json", "-no-color", file)
	return file, []byte(js), code == 2
}

// planJSON is the part of `tofu show -json PLANFILE` the suite reads.
type planJSON struct {
	FormatVersion   string           `json:"format_version"`
	ResourceChanges []resourceChange `json:"resource_changes"`
}

type resourceChange struct {
	Address string `json:"address"`
	Change  struct {
		Actions   []string        `json:"actions"`
		Before    json.RawMessage `json:"before"`
		After     json.RawMessage `json:"after"`
		Importing json.RawMessage `json:"importing"`
	} `json:"change"`
}

func parsePlan(t *testing.T, b []byte) planJSON {
	t.Helper()
	var p planJSON
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("reading the plan JSON: %v\n%s", err, tail(string(b), 20))
	}
	if p.FormatVersion == "" {
		t.Fatalf("the plan JSON has no format_version: %s", tail(string(b), 20))
	}
	return p
}

// actions summarises a plan: "address: actions[+import]" for every
// resource change that does something, sorted.
func (p planJSON) actions() []string {
	var out []string
	for _, rc := range p.ResourceChanges {
		a := strings.Join(rc.Change.Actions, ",")
		if len(rc.Change.Importing) > 0 && string(rc.Change.Importing) != "null" {
			a += "+import"
		}
		if a == "no-op" {
			continue
		}
		out = append(out, rc.Address+": "+a)
	}
	slices.Sort(out)
	return out
}

func (p planJSON) change(address string) *resourceChange {
	for i := range p.ResourceChanges {
		if p.ResourceChanges[i].Address == address {
			return &p.ResourceChanges[i]
		}
	}
	return nil
}

// fixture records a plan's JSON in internal/iac/testdata (with
// ROUTEKEEPER_RECORD_PLANS=1) or checks that the recorded one plans the same
// actions, so a fixture that no longer matches what the provider does is
// noticed.
func (tf *tofuRunner) fixture(t *testing.T, name string, plan []byte) {
	t.Helper()
	path := filepath.Join(tf.repo, "internal", "iac", "testdata", name+".json")
	if os.Getenv("ROUTEKEEPER_RECORD_PLANS") == "1" {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, plan, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", path)
		return
	}
	recorded, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("plan fixture %s: %v (record it with ROUTEKEEPER_RECORD_PLANS=1)", name, err)
		return
	}
	got, want := parsePlan(t, plan).actions(), parsePlan(t, recorded).actions()
	if !slices.Equal(got, want) {
		t.Errorf("plan fixture %s is stale: the run planned\n  %s\nthe fixture has\n  %s\nre-record with ROUTEKEEPER_RECORD_PLANS=1",
			name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// summary prints the timings as a table.
func (tf *tofuRunner) summary() string {
	var b strings.Builder
	for _, tm := range tf.timings {
		fmt.Fprintf(&b, "  %-26s %-6s %8s\n", tm.step, tm.command, tm.took.Round(10*time.Millisecond))
	}
	return b.String()
}
