package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

var listeningTLSRE = regexp.MustCompile(`routekeeper fabric listening on (https://\S+)`)

// serveTLS starts `fabric serve --tls` in process with env and returns its
// endpoint and output.
func serveTLS(t *testing.T, env map[string]string) (string, *syncbuf.Buffer) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	serve := startCLI(&out, &errOut, env, "fabric", "serve", "--tls", "--memory", "--listen", "127.0.0.1:0", "--operation-duration", "0")
	t.Cleanup(func() {
		serve.cancel()
		<-serve.done
	})
	return waitListening(t, listeningTLSRE, &out, &errOut, serve.done), &out
}

// TestCommandsAgainstServedTLSFabric: with ROUTEKEEPER_ENDPOINT (or
// --endpoint) run, doctor, diff, routes and the fabric commands talk to a
// served fabric over TLS, trusting its CA, and never touch the config's
// state file.
func TestCommandsAgainstServedTLSFabric(t *testing.T) {
	stateHome := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": stateHome}
	endpoint, out := serveTLS(t, env)
	ca := filepath.Join(stateHome, "routekeeper", "tls", "ca.pem")
	for _, want := range []string{"export REQUESTS_CA_BUNDLE=" + ca, "export SSL_CERT_FILE=" + ca, "export ROUTEKEEPER_ENDPOINT=" + endpoint} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve --tls output lacks %q:\n%s", want, out.String())
		}
	}
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	withEndpoint := map[string]string{"XDG_STATE_HOME": stateHome, "ROUTEKEEPER_ENDPOINT": endpoint}
	steps := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"apply the lab network", env, []string{"fabric", "apply", "-f", filepath.Join(dir, "topology.yaml"), "--endpoint", endpoint}, ExitOK, "kubernetes-subnet"},
		{"run once", withEndpoint, []string{"run", "--once", "--config", cfg}, ExitOK, "worker-1____102001024"},
		{"routes list", env, []string{"routes", "list", "--config", cfg, "--endpoint", endpoint}, ExitOK, "worker-0____102000024"},
		{"redeploy", withEndpoint, []string{"fabric", "incident", "redeploy", "kubernetes-vnet"}, ExitOK, "route table kubernetes-routes dropped"},
		{"doctor sees the detach", withEndpoint, []string{"doctor", "--config", cfg}, ExitFindings, "kubernetes-subnet"},
		{"run repairs it", withEndpoint, []string{"run", "--once", "--config", cfg}, ExitOK, "worker-0____102000024"},
		{"diff is clean", withEndpoint, []string{"diff", "--config", cfg}, ExitOK, ""},
		{"show through the endpoint", withEndpoint, []string{"fabric", "show"}, ExitOK, "kubernetes-vnet/kubernetes-subnet"},
		{"ipplan reads the served subnets", env, []string{"ipplan", "--config", cfg, "--endpoint", endpoint}, ExitOK, "10.240.0.0/24"},
	}
	for _, s := range steps {
		res := runCLI(t, s.env, "", s.args...)
		if res.code != s.code || !strings.Contains(res.stdout, s.want) {
			t.Fatalf("%s: %v = %d, want %d with %q:\n%s\n%s", s.name, s.args, res.code, s.code, s.want, res.stdout, res.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fabric.db")); err == nil {
		t.Error("the config's state file was created: a command ignored the endpoint")
	}
	// Without the CA the endpoint is not trusted.
	res := runCLI(t, map[string]string{"XDG_STATE_HOME": t.TempDir(), "ROUTEKEEPER_ENDPOINT": endpoint}, "", "routes", "list", "--config", cfg)
	if res.code == ExitOK || !strings.Contains(res.stderr, "certificate") {
		t.Errorf("routes list without the fabric's CA = %d %s, want a certificate error", res.code, res.stderr)
	}
}

// TestFabricShowTakesConfig: after the quick start (run --config), fabric
// show --config shows the state file the config names.
func TestFabricShowTakesConfig(t *testing.T) {
	cfg := ranKTHW(t)
	res := runCLI(t, map[string]string{"XDG_STATE_HOME": t.TempDir()}, "", "fabric", "show", "--config", cfg)
	if res.code != ExitOK || !strings.Contains(res.stdout, "worker-0____102000024") {
		t.Errorf("fabric show --config = %d %s %s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, nil, "", "fabric", "show", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if res.code != ExitUsage {
		t.Errorf("fabric show --config missing = %d, want %d", res.code, ExitUsage)
	}
}
