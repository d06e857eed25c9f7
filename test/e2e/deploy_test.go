package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/deployrender"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/reqlog"
)

// TestDeployManifestsOnKubeAPIServer renders every kustomization and the
// chart with the values of each way to install it, and has the real
// kube-apiserver validate every object (server-side dry run, strict field
// validation: its OpenAPI schemas and admission). internal/testutil/
// deployrender's tests check that each installation holds together; this
// one that the API server takes it.
func TestDeployManifestsOnKubeAPIServer(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	c := newCreator(t, env.Config)
	const otherNamespace = "routekeeper-e2e-chart"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNamespace}}
	admin := env.Clientset(t)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The namespace stays: nothing is stored in it (the objects are
	// created in dry-run mode), and a deleted one would stay Terminating
	// for good without a namespace controller, refusing the next run's.

	example, err := os.ReadFile(filepath.Join(deployDir, "examples", "azure-json-secret.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exampleObjs, err := deployrender.Decode(example)
	if err != nil {
		t.Fatal(err)
	}
	// The example Secret itself must be valid too.
	if unserved, refused := c.validate(ctx, t, exampleObjs); len(unserved)+len(refused) > 0 {
		t.Fatalf("the example Secret: unserved %v, refused %v", unserved, refused)
	}
	aj := deployrender.Of[*corev1.Secret](exampleObjs)[0].StringData["azure.json"]
	wi := chartValues()
	wi["identity"] = map[string]any{"type": "workloadIdentity", "workloadIdentity": map[string]any{"clientID": "11111111-1111-1111-1111-111111111111"}}
	wi["azure"] = map[string]any{"subscriptionID": "00000000-0000-0000-0000-000000000000", "tenantID": "22222222-2222-2222-2222-222222222222"}
	wi["routeTable"] = map[string]any{"id": tableID}
	wi["subnets"] = []any{subnetID}
	monitoring := chartValues()
	monitoring["metrics"] = map[string]any{"podMonitor": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}
	observe := chartValues()
	observe["routes"] = "observe"
	other := chartValues()
	other["replicas"] = 1
	other["identity"] = map[string]any{"azureJSON": map[string]any{"create": true, "content": aj}}

	renders := map[string]func(t *testing.T) []deployrender.Object{
		"chart defaults": func(t *testing.T) []deployrender.Object {
			return helmChart(t, "routekeeper", "kube-system", chartValues())
		},
		"chart observe":           func(t *testing.T) []deployrender.Object { return helmChart(t, "routekeeper", "kube-system", observe) },
		"chart workload identity": func(t *testing.T) []deployrender.Object { return helmChart(t, "routekeeper", "kube-system", wi) },
		"chart monitoring": func(t *testing.T) []deployrender.Object {
			return helmChart(t, "routekeeper", "kube-system", monitoring)
		},
		"chart azure.json Secret, other namespace": func(t *testing.T) []deployrender.Object {
			return helmChart(t, "rk", otherNamespace, other)
		},
	}
	root, err := filepath.Abs(filepath.Join(deployDir, ".."))
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := deployrender.Kustomizations(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(filepath.Join("deploy", "kustomize"), dir)
		renders["kustomize "+rel] = func(t *testing.T) []deployrender.Object { return kustomize(t, rel) }
	}
	for _, name := range slices.Sorted(maps.Keys(renders)) {
		t.Run(name, func(t *testing.T) {
			objs := renders[name](t)
			unserved, refused := c.validate(ctx, t, objs)
			for _, err := range refused {
				t.Error(err)
			}
			for _, u := range unserved {
				if !strings.Contains(u, "Monitor ") && !strings.HasPrefix(u, "PrometheusRule ") {
					t.Errorf("the API server does not serve %s", u)
				}
			}
			if len(unserved) > 0 {
				t.Logf("prometheus-operator's CRDs are not installed; not validated by the API server: %v", unserved)
			}
		})
	}

	// The validation refuses what is wrong: a misspelt field, a value of
	// the wrong type, a missing required field.
	for name, breakIt := range map[string]func(u map[string]any){
		"misspelt field": func(u map[string]any) {
			_ = unstructured.SetNestedField(u, true, "spec", "template", "spec", "hostNetwrok")
		},
		"wrong type":    func(u map[string]any) { _ = unstructured.SetNestedField(u, "two", "spec", "replicas") },
		"no containers": func(u map[string]any) { unstructured.RemoveNestedField(u, "spec", "template", "spec", "containers") },
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			var dep []deployrender.Object
			for _, o := range helmChart(t, "routekeeper", "kube-system", chartValues()) {
				if o.Kind() == "Deployment" {
					breakIt(o.Unstructured.Object)
					dep = append(dep, o)
				}
			}
			if _, refused := c.validate(ctx, t, dep); len(refused) != 1 {
				t.Errorf("refused %v, want the broken Deployment refused", refused)
			} else {
				t.Log(refused[0])
			}
		})
	}
}

// actionsOf maps an ARM request to the Azure RBAC actions it needs.
func actionsOf(t *testing.T, req string) []string {
	method, path, _ := strings.Cut(req, " ")
	p := strings.ToLower(path)
	switch {
	case strings.Contains(p, "/providers/microsoft.network/locations/") && strings.Contains(p, "/operation"):
		return []string{"Microsoft.Network/locations/operations/read"}
	case strings.Contains(p, "/providers/microsoft.network/locations/") && strings.HasSuffix(strings.SplitN(p, "?", 2)[0], "/usages"):
		return []string{"Microsoft.Network/locations/usages/read"}
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
// those requests need with deploy/azure/routekeeper-role.json.
func TestAzureRoleHasExactlyTheActionsUsed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "azure", "routekeeper-role.json"))
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Actions, NotActions, DataActions []string
		AssignableScopes                 []string
	}
	if err := json.Unmarshal(b, &role); err != nil {
		t.Fatalf("routekeeper-role.json: %v", err)
	}

	env := fabrictest.New(t, fabric.Options{OperationDuration: 30 * time.Millisecond}, topology)
	rec := reqlog.New(env.Server.Transporter())
	client, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: fabric.ClientOptions(rec, fabric.InProcessEndpoint), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vnetID, _ := armid.VNetOfSubnet(subnetID)
	if _, err := client.GetVirtualNetwork(ctx, vnetID); err != nil {
		t.Fatal(err)
	}
	nodes := nodesource.New(source.Node{Name: "role-0", InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(0))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(0))}})
	ctrl := controller.New(controllerConfig("role"), client, nodes, nil)
	if res := ctrl.Reconcile(ctx); res.Err != nil || !res.Wrote {
		t.Fatalf("creating reconcile: wrote %v, %v", res.Wrote, res.Err)
	}
	nodes.Add(source.Node{Name: "role-1", InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP(1))}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR(1))}})
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
	for _, r := range rec.Requests() {
		for _, a := range actionsOf(t, r) {
			used[a] = true
		}
	}
	// Linked access checks on what a node subnet may reference besides
	// the route table; this topology's subnets reference none
	// (TestShippedRoleIsEnoughAndLeast in internal/controller exercises both).
	linkedOnly := map[string]string{
		"Microsoft.Network/networkSecurityGroups/join/action": "writing a subnet re-sends its network security group reference, which ARM checks",
		"Microsoft.Network/natGateways/join/action":           "writing a subnet re-sends its NAT gateway reference, which ARM checks",
	}
	for _, a := range role.Actions {
		if !used[a] {
			if why, ok := linkedOnly[a]; ok {
				t.Logf("%s: not exercised on the fabric: %s", a, why)
				continue
			}
			t.Errorf("routekeeper-role.json grants %s, which routekeeper run never needed", a)
		}
	}
	// Azure's limits are read on the subscription, with the optional role
	// of their own (routekeeper-limits-role.json): without it routekeeper
	// keeps to Azure's default.
	lb, err := os.ReadFile(filepath.Join(deployDir, "azure", "routekeeper-limits-role.json"))
	if err != nil {
		t.Fatal(err)
	}
	var limits struct{ Actions []string }
	if err := json.Unmarshal(lb, &limits); err != nil {
		t.Fatalf("routekeeper-limits-role.json: %v", err)
	}
	for _, a := range limits.Actions {
		if !used[a] {
			t.Errorf("routekeeper-limits-role.json grants %s, which routekeeper run never needed", a)
		}
	}
	for a := range used {
		if !slices.Contains(role.Actions, a) && !slices.Contains(limits.Actions, a) {
			t.Errorf("routekeeper run needed %s, which routekeeper-role.json lacks", a)
		}
	}
	if len(role.NotActions)+len(role.DataActions) != 0 || len(role.AssignableScopes) == 0 {
		t.Errorf("role: NotActions %v, DataActions %v, AssignableScopes %v", role.NotActions, role.DataActions, role.AssignableScopes)
	}
}
