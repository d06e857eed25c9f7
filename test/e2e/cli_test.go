package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/routekeeper/routekeeper/internal/cli"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
	kubetest "github.com/routekeeper/routekeeper/test/kube"
)

// writeKubeconfig writes a kubeconfig file for the admin of env.
func writeKubeconfig(t *testing.T, env *kubetest.Env, path string) {
	t.Helper()
	c := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunCommandInCluster runs `routekeeper run` itself, as the Deployment
// does: a config file, a kubeconfig, the local fabric's state file, leader
// election, and the health and metrics endpoints.
func TestRunCommandInCluster(t *testing.T) {
	env, ctx, client := kubeCluster(t)
	dir := t.TempDir()
	writeKubeconfig(t, env, filepath.Join(dir, "kubeconfig"))
	if err := os.WriteFile(filepath.Join(dir, "topology.yaml"), []byte(topology), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	config := fmt.Sprintf(`cluster:
  name: cli
  clusterCIDRs: [%s]
routeTable:
  id: %s
  create: true
subnets:
  - %s
cloud:
  type: local
  local:
    state: fabric.db
    topology: topology.yaml
source:
  type: kube
  kube:
    kubeconfig: kubeconfig
controller:
  resync: 1h
  leaderElection:
    enabled: true
    name: cli-run
    leaseDuration: 4s
    renewDeadline: 3s
    retryPeriod: 500ms
  metricsAddress: 127.0.0.1:%d
`, clusterCIDR, tableID, subnetID, port)
	cfgPath := filepath.Join(dir, "routekeeper.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncbuf.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- cli.Run(runCtx, []string{"run", "--config", cfgPath}, strings.NewReader(""), io.Discard, stderr)
	}()
	defer func() {
		if t.Failed() || os.Getenv("E2E_VERBOSE") != "" {
			t.Logf("routekeeper run's log:\n%s", stderr.String())
		}
	}()

	for i := range 2 {
		createNode(ctx, t, client, node{name: fmt.Sprintf("cli-%d", i), podCIDRs: []string{podCIDR(60 + i)}, ips: []string{nodeIP(60 + i)}, networkUnavailable: true})
	}
	for i := range 2 {
		waitCondition(ctx, t, client, fmt.Sprintf("cli-%d", i), corev1.ConditionFalse, reason.RouteCreated)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for _, p := range []string{"/healthz", "/readyz"} {
		if c, body := httpGet(t, base+p); c != http.StatusOK {
			t.Errorf("GET %s = %d %s", p, c, body)
		}
	}
	_, body := httpGet(t, base+"/metrics")
	for _, want := range []string{"routekeeper_leader 1", `routekeeper_routes{kind="present"} 2`, `routekeeper_arm_requests_total{code="200",method="GET"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("routekeeper run exited %d after cancel, want 0", c)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("routekeeper run did not stop")
	}

	// One-shot: run --once lists the nodes from the API server (no
	// informer, no lease) and prints the table.
	var out strings.Builder
	onceErr := &syncbuf.Buffer{}
	if c := cli.Run(ctx, []string{"run", "--once", "--config", cfgPath, "-o", "json"}, strings.NewReader(""), &out, onceErr); c != 0 {
		t.Errorf("run --once exited %d:\n%s", c, onceErr.String())
	}
	for i := range 2 {
		if name := routeName(fmt.Sprintf("cli-%d", i), podCIDR(60+i)); !strings.Contains(out.String(), name) {
			t.Errorf("run --once output lacks %s:\n%s", name, out.String())
		}
	}

	// The routes are in the state file, for any other tool to read.
	store, err := fabric.Open(ctx, filepath.Join(dir, "fabric.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: fabric.New(store, fabric.Options{}).ClientOptions()})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := c.GetRouteTable(ctx, tableID)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range tb.Routes {
		names[r.Name] = true
	}
	for i := range 2 {
		if !names[routeName(fmt.Sprintf("cli-%d", i), podCIDR(60+i))] {
			t.Errorf("route of cli-%d not in the state file: %v", i, names)
		}
	}
	if tb.Claim() != "cli" {
		t.Errorf("table claim %q, want cli (tag %s)", tb.Claim(), route.ClaimTag)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
