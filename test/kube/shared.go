package kubetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is one control plane for all tests of a package: it starts on the
// first call of Env and stops when Run returns. Declare it next to TestMain:
//
//	var cluster kubetest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		env := cluster.Env(t)
//		...
//	}
//
// Tests that share a control plane run one after another (no t.Parallel):
// when each ends, its nodes, events and leases (not the API server's own)
// are deleted, so the next test, or the same one again under -count, starts
// from the same cluster. Namespaces stay (see Env.reset); give other
// objects distinct names.
// The zero value is ready to use.
type Shared struct {
	mu      sync.Mutex
	running bool // inside Run
	env     *Env // started control plane
	dir     string
	err     error // why the start failed; every later Env call fails with it
}

// Env returns the package's control plane, starting it on first use. It
// skips or fails t like Start when the binaries are missing, and fails t when
// the control plane could not start.
func (s *Shared) Env(t testing.TB) *Env {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		t.Fatal("kubetest.Shared.Env called outside Shared.Run: call os.Exit(shared.Run(m)) from TestMain")
	}
	if s.env == nil && s.err == nil {
		etcdBin, apiserverBin := requireBinaries(t)
		s.env, s.err = s.start(etcdBin, apiserverBin)
	}
	if s.err != nil {
		t.Fatalf("starting shared control plane: %v", s.err)
	}
	env := s.env
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log (tail, shared by the package's tests):\n%s", env.apiserver.tail(logTailLines))
		}
		if err := env.reset(context.Background()); err != nil {
			t.Errorf("resetting the shared control plane for the next test: %v", err)
		}
	})
	return env
}

func (s *Shared) start(etcdBin, apiserverBin string) (*Env, error) {
	dir, err := os.MkdirTemp("", "routekeeper-kube-")
	if err != nil {
		return nil, fmt.Errorf("creating control plane directory: %w", err)
	}
	// Not the test's context: the control plane outlives the first test.
	env, err := start(context.Background(), dir, etcdBin, apiserverBin)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.dir = dir
	return env, nil
}

// Run runs the tests (m.Run), then stops the control plane if one was
// started and returns the exit code for os.Exit. A failure to stop turns a
// passing run into a failing one.
func (s *Shared) Run(m *testing.M) int {
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()

	code := m.Run()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	if s.env == nil {
		return code
	}
	if err := s.env.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: stopping shared control plane: %v\n", err)
		if stopFailed(err) != nil && code == 0 {
			code = 1
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: removing %s: %v\n", s.dir, err)
	}
	s.env = nil
	return code
}
