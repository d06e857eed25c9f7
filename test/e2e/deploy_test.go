package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func only[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T, found %d", zero, len(found))
	}
	return found[0]
}

// TestDeployManifestsAgree checks that deploy/ holds together: the
// Deployment mounts the ConfigMap and Secret it names, runs as the
// ServiceAccount the RBAC binds, serves its probes on the port the
// configuration listens on, and the configuration itself is valid and
// names the lease the RBAC allows.
func TestDeployManifestsAgree(t *testing.T) {
	dep := only[*appsv1.Deployment](t, readManifests(t, "deployment.yaml"))
	cm := only[*corev1.ConfigMap](t, readManifests(t, "configmap.yaml"))
	sa := only[*corev1.ServiceAccount](t, readManifests(t, "serviceaccount.yaml"))
	secret := only[*corev1.Secret](t, readManifests(t, "azure-json.example.yaml"))
	rbac := readManifests(t, "rbac.yaml")
	readManifests(t, "pdb.yaml")

	pod := dep.Spec.Template.Spec
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *dep.Spec.Replicas)
	}
	if pod.ServiceAccountName != sa.Name || dep.Namespace != sa.Namespace {
		t.Errorf("Deployment runs as %s/%s, the ServiceAccount is %s/%s", dep.Namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
	}
	for _, o := range rbac {
		var subjects []rbacv1.Subject
		switch b := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			subjects = b.Subjects
		case *rbacv1.RoleBinding:
			subjects = b.Subjects
		default:
			continue
		}
		if len(subjects) != 1 || subjects[0].Name != sa.Name || subjects[0].Namespace != sa.Namespace {
			t.Errorf("a binding in rbac.yaml names %+v, not the ServiceAccount", subjects)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	c := pod.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
		v := volumes[m.Name]
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name != cm.Name:
			t.Errorf("volume %s mounts ConfigMap %s, the manifest is %s", v.Name, v.ConfigMap.Name, cm.Name)
		case v.Secret != nil && v.Secret.SecretName != secret.Name:
			t.Errorf("volume %s mounts Secret %s, the example is %s", v.Name, v.Secret.SecretName, secret.Name)
		}
	}
	if !pod.HostNetwork {
		t.Error("routekeeper must not depend on the pod network it repairs: hostNetwork should be true")
	}

	// The configuration file as the container sees it.
	var cfgArg string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			cfgArg = v
		}
	}
	key := filepath.Base(cfgArg)
	if mounts["config"] != filepath.Dir(cfgArg) || cm.Data[key] == "" {
		t.Fatalf("--config=%s is not the ConfigMap's key %v mounted at %s", cfgArg, keys(cm.Data), mounts["config"])
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, key)
	if err := os.WriteFile(cfgPath, []byte(cm.Data[key]), 0o644); err != nil {
		t.Fatal(err)
	}
	ajPath := filepath.Join(dir, "azure.json")
	if err := os.WriteFile(ajPath, []byte(secret.StringData["azure.json"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Read(cfgPath)
	if err != nil {
		t.Fatalf("the ConfigMap's configuration does not decode: %v", err)
	}
	if want := filepath.Join(mounts["azure-json"], "azure.json"); cfg.Cloud.Azure.ConfigFile != want {
		t.Errorf("cloud.azure.configFile = %s, the Secret is mounted as %s", cfg.Cloud.Azure.ConfigFile, want)
	}
	cfg.Cloud.Azure.ConfigFile = ajPath
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the ConfigMap's configuration with the example azure.json is not valid: %v", err)
	}
	if cfg.Source.Type != config.SourceKube || !cfg.Controller.LeaderElection.Enabled {
		t.Errorf("source %s, leader election %v: want kube and on", cfg.Source.Type, cfg.Controller.LeaderElection.Enabled)
	}
	var leases []string
	for _, o := range rbac {
		if r, ok := o.(*rbacv1.Role); ok && r.Namespace == cfg.Controller.LeaderElection.Namespace {
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "leases") {
					leases = append(leases, rule.ResourceNames...)
				}
			}
		}
	}
	if !slices.Contains(leases, cfg.Controller.LeaderElection.Name) {
		t.Errorf("leader election lease %s/%s is not in rbac.yaml's lease rules (%v)", cfg.Controller.LeaderElection.Namespace, cfg.Controller.LeaderElection.Name, leases)
	}
	_, port, _ := strings.Cut(cfg.Controller.MetricsAddress, ":")
	if len(c.Ports) != 1 || fmt.Sprint(c.Ports[0].ContainerPort) != port {
		t.Errorf("container ports %+v, the configuration listens on %s", c.Ports, cfg.Controller.MetricsAddress)
	}
	if dep.Spec.Template.Annotations["prometheus.io/port"] != port {
		t.Errorf("prometheus.io/port = %s, want %s", dep.Spec.Template.Annotations["prometheus.io/port"], port)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("%s probe %+v does not use the metrics port", name, p)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("POD_NAME/POD_NAMESPACE not from the downward API: %v", env)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// armRecorder records the ARM requests of a client.
type armRecorder struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	reqs []string // "METHOD path"
}

func (r *armRecorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return r.rt.RoundTrip(req)
}

// actionsOf maps an ARM request to the Azure RBAC actions it needs.
func actionsOf(t *testing.T, req string) []string {
	method, path, _ := strings.Cut(req, " ")
	p := strings.ToLower(path)
	switch {
	case strings.Contains(p, "/providers/microsoft.network/locations/") && strings.Contains(p, "/operation"):
		return []string{"Microsoft.Network/locations/operations/read"}
	case strings.Contains(p, "/subnets/"):
		if method == http.MethodGet {
			return []string{"Microsoft.Network/virtualNetworks/subnets/read"}
		}
		// Writing a subnet that references a route table is a linked
		// access check on the table.
		return []string{"Microsoft.Network/virtualNetworks/subnets/write", "Microsoft.Network/routeTables/join/action"}
	case strings.Contains(p, "/virtualnetworks/"):
		return []string{"Microsoft.Network/virtualNetworks/read"}
	case strings.Contains(p, "/routetables/"):
		if method == http.MethodGet {
			return []string{"Microsoft.Network/routeTables/read"}
		}
		if method == http.MethodPut {
			return []string{"Microsoft.Network/routeTables/write"}
		}
	}
	t.Errorf("ARM request %s: no known action", req)
	return nil
}

// TestAzureRoleHasExactlyTheActionsUsed runs what `routekeeper run` does
// against ARM (the location lookup for a new table, creating and filling
// the table, associating it, updating it, repairing a detached subnet,
// waiting for long-running operations) and compares the Azure actions
// those requests need with deploy/azure-role.json.
func TestAzureRoleHasExactlyTheActionsUsed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "azure-role.json"))
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Actions, NotActions, DataActions []string
		AssignableScopes                 []string
	}
	if err := json.Unmarshal(b, &role); err != nil {
		t.Fatalf("azure-role.json: %v", err)
	}

	env := fabrictest.New(t, fabric.Options{OperationDuration: 30 * time.Millisecond}, topology)
	rec := &armRecorder{rt: env.Server.RoundTripper()}
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: fabric.ClientOptions(rec, fabric.InProcessEndpoint), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vnetID, _ := azure.VNetOfSubnet(subnetID)
	if _, err := client.GetVirtualNetwork(ctx, vnetID); err != nil {
		t.Fatal(err)
	}
	nodes := staticSource{{Name: "role-0", InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(0))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(0))}}}
	ctrl := controller.New(controllerConfig("role"), client, nodes, nil)
	if res := ctrl.Reconcile(ctx); res.Err != nil || !res.Wrote {
		t.Fatalf("creating reconcile: wrote %v, %v", res.Wrote, res.Err)
	}
	nodes = append(nodes, source.Node{Name: "role-1", InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(1))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(1))}})
	ctrl = controller.New(controllerConfig("role"), client, nodes, nil)
	if res := ctrl.Reconcile(ctx); res.Err != nil || !res.Wrote {
		t.Fatalf("updating reconcile: wrote %v, %v", res.Wrote, res.Err)
	}
	s, _ := env.Client.GetSubnet(ctx, subnetID)
	if _, err := env.Client.SetSubnetRouteTable(ctx, subnetID, "", s.Etag); err != nil {
		t.Fatal(err)
	}
	if g := ctrl.Guard(ctx); g.Repairs() != 1 {
		t.Fatalf("guard repairs %d, want 1 (%+v)", g.Repairs(), g.Associations)
	}

	used := map[string]bool{}
	for _, r := range rec.reqs {
		for _, a := range actionsOf(t, r) {
			used[a] = true
		}
	}
	// Linked access checks on what a node subnet may reference besides
	// the route table; the fabric's subnets reference none.
	linkedOnly := map[string]string{
		"Microsoft.Network/networkSecurityGroups/join/action": "writing a subnet re-sends its network security group reference, which ARM checks",
	}
	for _, a := range role.Actions {
		if !used[a] {
			if why, ok := linkedOnly[a]; ok {
				t.Logf("%s: not exercised on the fabric: %s", a, why)
				continue
			}
			t.Errorf("azure-role.json grants %s, which routekeeper run never needed", a)
		}
	}
	for a := range used {
		if !slices.Contains(role.Actions, a) {
			t.Errorf("routekeeper run needed %s, which azure-role.json lacks", a)
		}
	}
	if len(role.NotActions)+len(role.DataActions) != 0 || len(role.AssignableScopes) == 0 {
		t.Errorf("role: NotActions %v, DataActions %v, AssignableScopes %v", role.NotActions, role.DataActions, role.AssignableScopes)
	}
}

type staticSource []source.Node

func (s staticSource) Nodes(context.Context) ([]source.Node, error) { return s, nil }
func (s staticSource) Watch(ctx context.Context, _ func()) error    { <-ctx.Done(); return nil }
