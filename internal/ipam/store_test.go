package ipam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var cfg16 = Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}}

func reqs(names ...string) []Request {
	out := make([]Request, len(names))
	for i, n := range names {
		out[i] = Request{Name: n}
	}
	return out
}

func assign(t *testing.T, s *Store, cfg Config, nodes []Request) map[string]string {
	t.Helper()
	got, err := s.Assign(context.Background(), cfg, nodes)
	if err != nil {
		t.Fatalf("Assign: %v", err)
	}
	return flat(got)
}

func flat(m map[string][]netip.Prefix) map[string]string {
	out := map[string]string{}
	for n, ps := range m {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = p.String()
		}
		out[n] = strings.Join(s, ",")
	}
	return out
}

func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestStoreKeepsCIDRsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes.allocations.json")
	first := assign(t, NewStore(path, nil), cfg16, reqs("w2", "w0", "w1"))
	want := map[string]string{"w0": "10.200.1.0/24", "w1": "10.200.2.0/24", "w2": "10.200.3.0/24"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("first run (-want +got), in name order after the service block:\n%s", diff)
	}
	// A new store ("restart") with a node added in front keeps every CIDR.
	second := assign(t, NewStore(path, nil), cfg16, reqs("a-new", "w0", "w1", "w2"))
	want["a-new"] = "10.200.4.0/24"
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
	// The record is readable JSON in the documented shape.
	rec, err := NewStore(path, nil).Load()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 1 || rec.NodeMask.IPv4 != 24 || len(rec.ClusterCIDRs) != 1 || len(rec.Allocations) != 4 {
		t.Errorf("record = %+v", rec)
	}
}

func TestStoreReleasesNodesThatLeft(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	var logs bytes.Buffer
	s := NewStore(path, logTo(&logs))
	assign(t, s, cfg16, reqs("a", "b", "c"))
	got := assign(t, s, cfg16, reqs("a", "c"))
	if diff := cmp.Diff(map[string]string{"a": "10.200.1.0/24", "c": "10.200.3.0/24"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	rec, _ := s.Load()
	if _, ok := rec.Allocations["b"]; ok {
		t.Error("b is still recorded after leaving the inventory")
	}
	if !strings.Contains(logs.String(), "released pod CIDR") || !strings.Contains(logs.String(), "node=b") {
		t.Errorf("no log line for the release:\n%s", logs.String())
	}
	// b's CIDR is not handed out at once (round robin continues).
	if got := assign(t, s, cfg16, reqs("a", "c", "d")); got["d"] != "10.200.4.0/24" {
		t.Errorf("d = %s, want 10.200.4.0/24", got["d"])
	}
}

func TestStoreDropsRecordsThatNoLongerFit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	assign(t, NewStore(path, nil), cfg16, reqs("a", "b", "c"))

	// The cluster CIDR shrinks to 10.200.0.0/23 and the service range moves
	// onto a's CIDR: a's record is dropped, b's kept, c's dropped.
	var logs bytes.Buffer
	shrunk := Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/22")}, ServiceCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}}
	got := assign(t, NewStore(path, logTo(&logs)), shrunk, reqs("a", "b", "c"))
	if got["b"] != "10.200.2.0/24" {
		t.Errorf("b = %s, want its recorded 10.200.2.0/24", got["b"])
	}
	if got["a"] == "10.200.1.0/24" || got["c"] == "10.200.3.0/24" && got["a"] == got["c"] {
		t.Errorf("a = %s, c = %s", got["a"], got["c"])
	}
	for _, w := range []string{"cluster CIDRs or node mask changed", "dropped recorded pod CIDR", "node=a", "service range"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	// The node mask changes: every record is dropped, every node reallocated.
	logs.Reset()
	m25 := Config{ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/22")}, NodeMaskV4: 25}
	got = assign(t, NewStore(path, logTo(&logs)), m25, reqs("a", "b", "c"))
	for n, c := range got {
		if !strings.HasSuffix(c, "/25") {
			t.Errorf("%s = %s, want a /25", n, c)
		}
	}
	if !strings.Contains(logs.String(), "not a /25") {
		t.Errorf("log lacks the mask reason:\n%s", logs.String())
	}
}

func TestStoreExplicitCIDRsWin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	s := NewStore(path, nil)
	assign(t, s, cfg16, reqs("a", "b"))
	// c now claims a's recorded CIDR explicitly; b claims an explicit one of
	// its own; d has one outside the cluster CIDR.
	nodes := []Request{
		{Name: "a"},
		{Name: "b", PodCIDRs: []netip.Prefix{pfx("10.200.9.0/24")}},
		{Name: "c", PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}},
		{Name: "d", PodCIDRs: []netip.Prefix{pfx("192.168.0.0/24")}},
	}
	var logs bytes.Buffer
	got := assign(t, NewStore(path, logTo(&logs)), cfg16, nodes)
	// a's record is lost to c and b's record is dropped for its explicit
	// CIDR; a gets the next block after the last one handed out. b, c and d
	// get nothing: their CIDRs are their own.
	if diff := cmp.Diff(map[string]string{"a": "10.200.3.0/24"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, w := range []string{"node=a", "overlaps 10.200.1.0/24 of node c", "node=b", "the inventory now gives the node its own pod CIDR"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	rec, _ := s.Load()
	if len(rec.Allocations) != 1 {
		t.Errorf("recorded %v, want only a (explicit CIDRs are not recorded)", rec.Allocations)
	}
}

func TestStoreWritesNothingWhenNothingIsNeeded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	got := assign(t, NewStore(path, nil), cfg16, []Request{{Name: "a", PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}}})
	if len(got) != 0 {
		t.Errorf("got %v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("files were made although no allocation was needed: %v", entries)
	}
	// An unchanged record is not rewritten.
	assign(t, NewStore(path, nil), cfg16, reqs("a"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	assign(t, NewStore(path, nil), cfg16, reqs("a"))
	fi, _ := os.Stat(path)
	if !fi.ModTime().Equal(old) {
		t.Error("the allocations file was rewritten without a change")
	}
	entries, _ = os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestStoreRefusesDamagedFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"truncated": `{"version": 1, "allocations": {"a": ["10.200.1.0/24"`,
		"bad cidr":  `{"version": 1, "allocations": {"a": ["10.200.1.0/33"]}}`,
		"newer":     `{"version": 2, "allocations": {}}`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := NewStore(path, nil).Assign(context.Background(), cfg16, reqs("a"))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s: the damaged file was overwritten", name)
		}
	}
}

func TestStoreExhaustionKeepsOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	small := Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/23")}}
	got, err := NewStore(path, nil).Assign(context.Background(), small, reqs("a", "b", "c", "d"))
	if !errors.Is(err, ErrCIDRExhausted) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "node c") || !strings.Contains(err.Error(), "node d") {
		t.Errorf("err does not name both nodes left out: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"a": "10.0.0.0/24", "b": "10.0.1.0/24"}, flat(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStoreConcurrentGoroutines: stores sharing a file, each with the
// common node and one of its own, never give two nodes the same CIDR, and
// the common node keeps its CIDR. Without the lock, every "own" node would
// get the same block.
func TestStoreConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.json")
	const workers = 16
	var mu sync.Mutex
	seen := map[string]string{} // CIDR -> node
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := NewStore(path, nil).Assign(context.Background(), cfg16, reqs("common", fmt.Sprintf("own-%02d", i)))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for n, c := range flat(got) {
				if prev, ok := seen[c]; ok && prev != n {
					errs <- fmt.Errorf("%s handed to %s and %s", c, prev, n)
				}
				seen[c] = n
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != workers+1 {
		t.Errorf("%d distinct CIDRs handed out, want %d", len(seen), workers+1)
	}
}

// TestStoreConcurrentProcesses runs the same check across processes.
func TestStoreConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shared.json")
	const procs = 6
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "IPAM_HELPER_FILE="+path, fmt.Sprintf("IPAM_HELPER_NODE=own-%d", i))
		cmd.Stdout = &outs[i]
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	seen := map[string]string{}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		var got map[string]string
		line := outs[i].String()
		if j := strings.Index(line, "RESULT "); j >= 0 {
			line = line[j+len("RESULT "):]
			line = line[:strings.Index(line, "\n")]
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("helper %d printed %q: %v", i, outs[i].String(), err)
		}
		for n, c := range got {
			if prev, ok := seen[c]; ok && prev != n {
				t.Errorf("%s handed to %s and %s", c, prev, n)
			}
			seen[c] = n
		}
	}
	if len(seen) != procs+1 {
		t.Errorf("%d distinct CIDRs, want %d: %v", len(seen), procs+1, seen)
	}
}

// TestHelperProcess is the child of TestStoreConcurrentProcesses.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("IPAM_HELPER_FILE")
	if path == "" {
		t.Skip("helper process only")
	}
	got, err := NewStore(path, nil).Assign(context.Background(), cfg16, reqs("common", os.Getenv("IPAM_HELPER_NODE")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, _ := json.Marshal(flat(got))
	fmt.Printf("RESULT %s\n", b)
}

func TestStoreLockHonoursContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	unlock, err := lockFile(context.Background(), path+".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = NewStore(path, nil).Assign(ctx, cfg16, reqs("a"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline while the lock is held", err)
	}
}

func BenchmarkStoreAssign5000(b *testing.B) {
	cfg := Config{ClusterCIDRs: []netip.Prefix{pfx("10.0.0.0/8")}, ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/12")}}
	nodes := make([]Request, 5000)
	for i := range nodes {
		nodes[i] = Request{Name: fmt.Sprintf("node-%05d", i)}
	}
	dir := b.TempDir()
	b.Run("fresh", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := NewStore(filepath.Join(dir, fmt.Sprintf("fresh-%d.json", i)), nil).Assign(context.Background(), cfg, nodes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recorded", func(b *testing.B) {
		s := NewStore(filepath.Join(dir, "steady.json"), nil)
		if _, err := s.Assign(context.Background(), cfg, nodes); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Assign(context.Background(), cfg, nodes); err != nil {
				b.Fatal(err)
			}
		}
	})
}
