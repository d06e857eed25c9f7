// Package kubetest starts a real Kubernetes control plane — etcd and
// kube-apiserver, no controllers, no kubelets — on loopback for end-to-end
// tests, and hands out clients for it.
//
// The binaries come from scripts/kube-testenv.sh (see docs/testing.md):
//
//	eval "$(scripts/kube-testenv.sh)"
//	ROUTEKEEPER_E2E=1 go test ./test/...
//
// When they are missing, tests that ask for a control plane are skipped, or
// fail when ROUTEKEEPER_E2E=1 is set (CI sets it, so CI cannot skip silently).
//
// RBAC is enforced (--authorization-mode=Node,RBAC). Env.Config is an admin
// (group system:masters); Env.UserConfig authenticates as any user and groups
// with a client certificate, and Env.ServiceAccountConfig as a real service
// account with a token from the TokenRequest API, so least-privilege roles can
// be tested as they will run in a cluster.
//
// One control plane takes a few seconds to start. Tests of one package can
// share it through Shared and a TestMain.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Environment variables read by this package.
const (
	// EnvEtcd names the etcd binary.
	EnvEtcd = "ROUTEKEEPER_ETCD"
	// EnvAPIServer names the kube-apiserver binary.
	EnvAPIServer = "ROUTEKEEPER_KUBE_APISERVER"
	// EnvRequired, when "1", turns a missing binary into a test failure
	// instead of a skip.
	EnvRequired = "ROUTEKEEPER_E2E"
	// EnvCache is the cache root of scripts/kube-testenv.sh.
	EnvCache = "ROUTEKEEPER_CACHE"
)

// KubeVersion is the kube-apiserver version scripts/kube-testenv.sh builds;
// it matches the client-go version in go.mod.
const KubeVersion = "v1.36.3"

// ServiceClusterIPRange is the service network of the control plane.
const ServiceClusterIPRange = "10.0.0.0/24"

// ServiceAccountIssuer is the issuer of service account tokens.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

const (
	adminUser    = "routekeeper-e2e-admin"
	readyTimeout = 90 * time.Second
	stopGrace    = 10 * time.Second
	startTries   = 3
	logTailLines = 60
)

// errNotFound marks a missing binary; tests skip on it unless EnvRequired is set.
var errNotFound = errors.New("not found")

// Env is a running control plane.
type Env struct {
	// Config authenticates as an administrator (group system:masters).
	// Copy it (rest.CopyConfig) before changing it.
	Config *rest.Config
	// URL is the kube-apiserver address, https://127.0.0.1:<port>.
	URL string
	// EtcdURL is the etcd client address, http://127.0.0.1:<port>.
	EtcdURL string
	// Dir holds the certificates, the etcd data and the logs (etcd.log,
	// kube-apiserver.log). It is removed with the test's temporary
	// directory (Start) or when Shared.Run returns.
	Dir string

	ca        *authority
	etcd      *process
	apiserver *process
}

// Start starts etcd and kube-apiserver on free 127.0.0.1 ports with their data
// in t.TempDir() and waits until the apiserver is ready. The processes stop
// when the test ends. Start skips the test when the binaries are missing
// (fails when ROUTEKEEPER_E2E=1) and fails it, with the process logs, when
// the control plane does not become ready.
func Start(ctx context.Context, t testing.TB) *Env {
	t.Helper()
	etcdBin, apiserverBin := requireBinaries(t)
	env, err := start(ctx, t.TempDir(), etcdBin, apiserverBin)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log (tail):\n%s", env.apiserver.tail(logTailLines))
		}
		if err := env.stop(); stopFailed(err) != nil {
			t.Errorf("stopping control plane: %v", err)
		} else if err != nil {
			t.Logf("stopping control plane: %v", err)
		}
	})
	return env
}

// requireBinaries returns the binaries, or skips (fails with EnvRequired=1)
// the test when they are missing.
func requireBinaries(t testing.TB) (etcd, apiserver string) {
	t.Helper()
	etcd, apiserver, err := Binaries()
	if err != nil {
		msg := fmt.Sprintf("no control plane for end-to-end tests: %v", err)
		if errors.Is(err, errNotFound) && os.Getenv(EnvRequired) != "1" {
			t.Skip(msg + " (set " + EnvRequired + "=1 to make this a failure)")
			return "", ""
		}
		t.Fatal(msg)
		return "", ""
	}
	return etcd, apiserver
}

// Binaries finds etcd and kube-apiserver: the environment variables
// ROUTEKEEPER_ETCD and ROUTEKEEPER_KUBE_APISERVER first, then the cache of
// scripts/kube-testenv.sh (kube-apiserver only; its version matches
// client-go), then PATH. An error names what is missing and how to get it.
func Binaries() (etcd, apiserver string, err error) {
	cacheRoot := os.Getenv(EnvCache)
	if cacheRoot == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cacheRoot = filepath.Join(home, ".cache", "routekeeper")
		}
	}
	var cached []string
	if cacheRoot != "" {
		cached = []string{filepath.Join(cacheRoot, "kube", KubeVersion, "kube-apiserver")}
	}
	etcd, errEtcd := findBinary(EnvEtcd, "etcd", nil)
	apiserver, errAPI := findBinary(EnvAPIServer, "kube-apiserver", cached)
	err = errors.Join(errEtcd, errAPI)
	if err == nil {
		return etcd, apiserver, nil
	}
	const hint = `; run: eval "$(scripts/kube-testenv.sh)"`
	for _, e := range []error{errEtcd, errAPI} {
		if e != nil && !errors.Is(e, errNotFound) {
			// A variable that names something unusable is a
			// mistake to fix, never a reason to skip.
			return "", "", fmt.Errorf("%v%s", err, hint)
		}
	}
	return "", "", fmt.Errorf("%w%s", err, hint)
}

func findBinary(envVar, name string, candidates []string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if err := executable(p); err != nil {
			// %v: a variable naming nothing usable is a mistake, not
			// a missing binary, so it fails tests instead of skipping.
			return "", fmt.Errorf("%s=%s: %v", envVar, p, err)
		}
		return p, nil
	}
	for _, p := range candidates {
		if executable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	where := "on PATH"
	if len(candidates) > 0 {
		where = "at " + strings.Join(candidates, ", ") + " or on PATH"
	}
	return "", fmt.Errorf("%s %w (%s unset, nothing %s)", name, errNotFound, envVar, where)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errNotFound
		}
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// start runs the control plane in dir. Ports are picked free just before use;
// when another process takes one first, start tries again with new ports.
func start(ctx context.Context, dir, etcdBin, apiserverBin string) (*Env, error) {
	etcdVersion, err := versionOf(etcdBin, etcdVersionRE)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for try := range startTries {
		tryDir := filepath.Join(dir, "try-"+strconv.Itoa(try))
		if err := os.MkdirAll(tryDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", tryDir, err)
		}
		env, err := startOnce(ctx, tryDir, etcdBin, etcdVersion, apiserverBin)
		if err == nil {
			return env, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

var errPortTaken = errors.New("address already in use")

var etcdVersionRE = regexp.MustCompile(`etcd Version: (\d+)\.(\d+)\.(\d+)`)

// versionOf runs bin --version and returns major and minor version.
func versionOf(bin string, re *regexp.Regexp) ([2]int, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return [2]int{}, fmt.Errorf("running %s --version: %w: %s", bin, err, out)
	}
	m := re.FindSubmatch(out)
	if m == nil {
		return [2]int{}, fmt.Errorf("%s --version printed %q, want a match of %s", bin, out, re)
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	return [2]int{major, minor}, nil
}

func startOnce(ctx context.Context, dir, etcdBin string, etcdVersion [2]int, apiserverBin string) (_ *Env, err error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]

	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	env := &Env{
		URL:     fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		EtcdURL: fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		Dir:     dir,
		ca:      ca,
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, env.stop())
		}
	}()
	if err := env.writeFiles(); err != nil {
		return nil, err
	}

	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcdArgs := []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + env.EtcdURL,
		"--advertise-client-urls=" + env.EtcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL,
		"--log-level=warn",
	}
	if etcdVersion[0] == 3 && etcdVersion[1] < 5 {
		// 3.4 logs through capnslog unless told otherwise, and --log-level
		// only applies to zap.
		etcdArgs = append(etcdArgs, "--logger=zap")
	} else {
		// 3.5 and later can skip fsync: test data need not survive a crash.
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	if env.etcd, err = startProcess(dir, "etcd", etcdBin, etcdArgs); err != nil {
		return nil, err
	}

	apiArgs := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--etcd-servers=" + env.EtcdURL,
		"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
		"--client-ca-file=" + filepath.Join(dir, "ca.crt"),
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// No controller manager runs: nothing would create the token
		// secrets or default service accounts this plugin waits for.
		"--disable-admission-plugins=ServiceAccount",
		// One client at a time: fairness queues only cost memory and CPU.
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(dir, "certs"),
	}
	if env.apiserver, err = startProcess(dir, "kube-apiserver", apiserverBin, apiArgs); err != nil {
		return nil, err
	}

	env.Config = env.clientConfig(adminUser, "system:masters")
	if err := env.waitReady(ctx); err != nil {
		return nil, err
	}
	return env, nil
}

func (e *Env) writeFiles() error {
	servingCert, servingKey, err := e.ca.serving()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.crt":      e.ca.certPEM,
		"serving.crt": servingCert,
		"serving.key": servingKey,
	} {
		if err := writeFile(filepath.Join(e.Dir, name), data); err != nil {
			return err
		}
	}
	return serviceAccountKeys(filepath.Join(e.Dir, "sa.key"), filepath.Join(e.Dir, "sa.pub"))
}

// waitReady polls /readyz, then waits for the namespaces the apiserver
// creates on its own (default, kube-system, kube-node-lease), which tests
// use right away.
func (e *Env) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("creating client for %s: %w", e.URL, err)
	}
	var last error
	check := func() error {
		for _, p := range []*process{e.etcd, e.apiserver} {
			if err := p.running(); err != nil {
				return err
			}
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("GET %s/readyz: %w: %s", e.URL, err, body)
		}
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, "kube-node-lease"} {
			if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if last = check(); last == nil {
			return nil
		}
		for _, p := range []*process{e.etcd, e.apiserver} {
			if p.running() != nil {
				return e.startError(p.running())
			}
		}
		select {
		case <-ctx.Done():
			return e.startError(fmt.Errorf("control plane not ready after %s: %w", readyTimeout, last))
		case <-tick.C:
		}
	}
}

// startError wraps err with the tails of both logs, and marks port clashes
// so that start can retry.
func (e *Env) startError(err error) error {
	etcdLog, apiLog := e.etcd.tail(logTailLines), e.apiserver.tail(logTailLines)
	if strings.Contains(etcdLog, "address already in use") || strings.Contains(apiLog, "address already in use") {
		err = fmt.Errorf("%w (%w)", err, errPortTaken)
	}
	return fmt.Errorf("%w\n--- etcd log (%s):\n%s\n--- kube-apiserver log (%s):\n%s",
		err, e.etcd.logPath, etcdLog, e.apiserver.logPath, apiLog)
}

// stop stops kube-apiserver, then etcd.
func (e *Env) stop() error {
	var errs []error
	for _, p := range []*process{e.apiserver, e.etcd} {
		if p != nil {
			errs = append(errs, p.stop(stopGrace))
		}
	}
	return errors.Join(errs...)
}

func (e *Env) clientConfig(user string, groups ...string) *rest.Config {
	certPEM, keyPEM, err := e.ca.client(user, groups)
	if err != nil {
		// Signing with an in-memory ECDSA key only fails when the
		// system's random source is broken; no test can go on then.
		panic(fmt.Sprintf("kubetest: issuing client certificate for %q: %v", user, err))
	}
	cfg := e.anonymousConfig()
	cfg.CertData = certPEM
	cfg.KeyData = keyPEM
	return cfg
}

// anonymousConfig trusts the control plane's CA and carries no credentials.
func (e *Env) anonymousConfig() *rest.Config {
	return &rest.Config{
		Host:            e.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.ca.certPEM},
		QPS:             200,
		Burst:           400,
		Timeout:         30 * time.Second,
		UserAgent:       "routekeeper-e2e",
	}
}

// UserConfig returns a client configuration that authenticates as user, a
// member of groups, with a client certificate signed by the control plane's
// CA. Any name works, for example
// "system:serviceaccount:kube-system:routekeeper" to test the RBAC rules
// bound to that service account (add the groups "system:serviceaccounts" and
// "system:serviceaccounts:kube-system" to match a real token). The
// authenticated group system:authenticated is added by the apiserver.
func (e *Env) UserConfig(user string, groups ...string) *rest.Config {
	return e.clientConfig(user, groups...)
}

// Clientset returns a clientset for the admin configuration.
func (e *Env) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	return e.ClientsetFor(t, e.Config)
}

// ClientsetFor returns a clientset for cfg (for example from UserConfig).
func (e *Env) ClientsetFor(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating clientset for %s: %v", cfg.Host, err)
	}
	return c
}
