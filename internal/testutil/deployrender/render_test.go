package deployrender

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/routekeeper/routekeeper/internal/config"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exampleAzureJSON is the azure.json of deploy/examples/azure-json-secret.yaml.
func exampleAzureJSON(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "deploy", "examples", "azure-json-secret.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	s := Of[*corev1.Secret](objs)
	if len(s) != 1 || s[0].Name != "routekeeper-azure-json" || s[0].StringData["azure.json"] == "" {
		t.Fatalf("the example is not one routekeeper-azure-json Secret with azure.json: %+v", objs)
	}
	return s[0].StringData["azure.json"]
}

func kinds(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind())
	}
	slices.Sort(out)
	return out
}

// baseKinds are the objects of every installation.
var baseKinds = []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "Role", "RoleBinding", "RoleBinding", "ServiceAccount"}

// TestKustomizations renders deploy/kustomize/base and every overlay with
// kustomize v5, decodes the result strictly and checks that each is a
// complete, consistent installation with a valid configuration.
func TestKustomizations(t *testing.T) {
	r := root(t)
	dirs, err := Kustomizations(r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		routes           config.RoutesMode
		workloadIdentity bool
	}{
		"deploy/kustomize/base":                       {routes: config.RoutesManage},
		"deploy/kustomize/overlays/observe":           {routes: config.RoutesObserve},
		"deploy/kustomize/overlays/workload-identity": {routes: config.RoutesManage, workloadIdentity: true},
	}
	if len(dirs) != len(want) {
		t.Errorf("kustomizations %v: this test knows %d; add the new one to it", dirs, len(want))
	}
	aj := exampleAzureJSON(t)
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			w, ok := want[filepath.ToSlash(dir)]
			if !ok {
				t.Fatalf("%s: unknown kustomization", dir)
			}
			out, err := Kustomize(filepath.Join(r, dir))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(objs); !slices.Equal(got, baseKinds) {
				t.Errorf("kinds %v, want %v (no Secret: it is created by the operator)", got, baseKinds)
			}
			checkInstall(t, install{objs: objs, azureJSON: aj, routes: w.routes})
			sa := Of[*corev1.ServiceAccount](objs)[0]
			pod := only(t, objs, "Deployment").Unstructured
			useWI, _, _ := unstructuredString(pod.Object, "spec", "template", "metadata", "labels", "azure.workload.identity/use")
			if hasWI := sa.Annotations["azure.workload.identity/client-id"] != ""; hasWI != w.workloadIdentity || (useWI == "true") != w.workloadIdentity {
				t.Errorf("workload identity: ServiceAccount annotations %v, pod label %q; want it %v", sa.Annotations, useWI, w.workloadIdentity)
			}
			// The generated ConfigMap's name carries its content's hash, so
			// a changed configuration rolls the Deployment.
			if cm := Of[*corev1.ConfigMap](objs)[0]; !strings.HasPrefix(cm.Name, "routekeeper-config-") {
				t.Errorf("ConfigMap %s: want the generated routekeeper-config-<hash>", cm.Name)
			}
		})
	}
}

// TestKustomizeNotPickedUpByApplyF: `kubectl apply -f deploy/` must not
// apply a kustomization or the example Secret: deploy/ itself holds no
// manifests.
func TestKustomizeNotPickedUpByApplyF(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(root(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			t.Errorf("deploy/%s: kubectl apply -f deploy/ would take it", e.Name())
		}
	}
}

func only(t *testing.T, objs []Object, kind string) Object {
	t.Helper()
	var found []Object
	for _, o := range objs {
		if o.Kind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s, want 1", len(found), kind)
	}
	return found[0]
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur, ok = m[f]
		if !ok {
			return "", false, nil
		}
	}
	s, ok := cur.(string)
	return s, ok, nil
}

const (
	exampleTable  = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/my-cluster-rg/providers/Microsoft.Network/routeTables/my-cluster-routes"
	exampleSubnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/my-cluster-rg/providers/Microsoft.Network/virtualNetworks/my-cluster-vnet/subnets/nodes"
)

// minimal are the values an operator must give.
func minimal() map[string]any {
	return map[string]any{"cluster": map[string]any{"name": "my-cluster", "clusterCIDRs": []any{"10.244.0.0/16"}}}
}

// with merges extra values into v (one level of maps deep is enough for
// these tests: nested maps are merged recursively).
func with(v map[string]any, extra map[string]any) map[string]any {
	for k, x := range extra {
		if xm, ok := x.(map[string]any); ok {
			if vm, ok := v[k].(map[string]any); ok {
				v[k] = with(vm, xm)
				continue
			}
		}
		v[k] = x
	}
	return v
}

func helm(t *testing.T, release, namespace string, values map[string]any) ([]Object, error) {
	t.Helper()
	out, err := Helm(filepath.Join(root(t), "deploy", "helm", "routekeeper"), release, namespace, values)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("the chart rendered manifests that do not decode: %v\n%s", err, out)
	}
	return objs, nil
}

// TestHelmChart renders deploy/helm/routekeeper with the values of each
// way to install it and checks that each is a complete, consistent
// installation with a valid configuration.
func TestHelmChart(t *testing.T) {
	aj := exampleAzureJSON(t)
	wi := map[string]any{
		"identity":   map[string]any{"type": "workloadIdentity", "workloadIdentity": map[string]any{"clientID": "11111111-1111-1111-1111-111111111111"}},
		"azure":      map[string]any{"subscriptionID": "00000000-0000-0000-0000-000000000000", "tenantID": "22222222-2222-2222-2222-222222222222"},
		"routeTable": map[string]any{"id": exampleTable},
		"subnets":    []any{exampleSubnet},
	}
	monitoring := map[string]any{"metrics": map[string]any{
		"podMonitor": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
	}}
	for _, tc := range []struct {
		name, release, namespace string
		values                   map[string]any
		azureJSON                string
		routes                   config.RoutesMode
		extraKinds               []string
		check                    func(t *testing.T, objs []Object, cfg *config.Config)
	}{
		{name: "defaults", release: "routekeeper", namespace: "kube-system", values: minimal(), azureJSON: aj, routes: config.RoutesManage,
			check: func(t *testing.T, objs []Object, cfg *config.Config) {
				dep := Of[*appsv1.Deployment](objs)[0]
				if img := dep.Spec.Template.Spec.Containers[0].Image; img != "routekeeper:0.1.0" {
					t.Errorf("image %s, want routekeeper:<appVersion>", img)
				}
				if cfg.Controller.LeaderElection.Name != "routekeeper" || cfg.Controller.MetricsAddress != ":10271" {
					t.Errorf("lease %s, metrics %s", cfg.Controller.LeaderElection.Name, cfg.Controller.MetricsAddress)
				}
			}},
		{name: "observe", release: "routekeeper", namespace: "kube-system", values: with(minimal(), map[string]any{"routes": "observe"}), azureJSON: aj, routes: config.RoutesObserve},
		{name: "workload identity", release: "routekeeper", namespace: "kube-system", values: with(minimal(), wi), routes: config.RoutesManage,
			check: func(t *testing.T, objs []Object, cfg *config.Config) {
				sa := Of[*corev1.ServiceAccount](objs)[0]
				if sa.Annotations["azure.workload.identity/client-id"] != "11111111-1111-1111-1111-111111111111" {
					t.Errorf("ServiceAccount annotations %v", sa.Annotations)
				}
				if cfg.Cloud.Azure.SubscriptionID != "00000000-0000-0000-0000-000000000000" || cfg.Cloud.Azure.TenantID != "22222222-2222-2222-2222-222222222222" {
					t.Errorf("subscription %q, tenant %q", cfg.Cloud.Azure.SubscriptionID, cfg.Cloud.Azure.TenantID)
				}
			}},
		{name: "monitoring", release: "routekeeper", namespace: "kube-system", values: with(minimal(), monitoring), azureJSON: aj, routes: config.RoutesManage,
			extraKinds: []string{"PodMonitor", "PrometheusRule", "Service", "ServiceMonitor"}},
		{name: "azure.json from values, other release and namespace", release: "rk", namespace: "network",
			values: with(minimal(), map[string]any{"identity": map[string]any{"azureJSON": map[string]any{"create": true, "content": aj}},
				"replicas": 1, "leaderElection": map[string]any{"enabled": false}, "podDisruptionBudget": map[string]any{"enabled": false},
				"config": map[string]any{"controller": map[string]any{"resync": "30s"}}}),
			azureJSON: aj, routes: config.RoutesManage, extraKinds: []string{"Secret"},
			check: func(t *testing.T, objs []Object, cfg *config.Config) {
				if cfg.Controller.Resync.String() != "30s" || cfg.Controller.LeaderElection.Enabled {
					t.Errorf("resync %s, leader election %v: want 30s from config, off", cfg.Controller.Resync, cfg.Controller.LeaderElection.Enabled)
				}
				for _, o := range objs {
					if ns := o.Unstructured.GetNamespace(); ns != "" && ns != "network" && !(ns == "default" && strings.HasSuffix(o.Unstructured.GetName(), "-node-events")) {
						t.Errorf("%s is outside the release namespace", o.Name())
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := helm(t, tc.release, tc.namespace, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(baseKinds)
			if tc.name == "azure.json from values, other release and namespace" {
				want = slices.DeleteFunc(want, func(k string) bool { return k == "PodDisruptionBudget" })
			}
			want = append(want, tc.extraKinds...)
			slices.Sort(want)
			if got := kinds(objs); !slices.Equal(got, want) {
				t.Errorf("kinds %v, want %v", got, want)
			}
			cfg := checkInstall(t, install{objs: objs, azureJSON: tc.azureJSON, routes: tc.routes})
			if tc.check != nil {
				tc.check(t, objs, cfg)
			}
		})
	}
}

// TestHelmChartRefusesBadValues: values routekeeper would only reject at
// start, or that would break the installation, fail the install with a
// message naming the value.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no cluster name", map[string]any{"cluster": map[string]any{"clusterCIDRs": []any{"10.244.0.0/16"}}}, "cluster.name is required"},
		{"no cluster CIDR", map[string]any{"cluster": map[string]any{"name": "c"}}, "cluster.clusterCIDRs is required"},
		{"unknown mode", with(minimal(), map[string]any{"routes": "write"}), "'/routes'"},
		{"unknown identity", with(minimal(), map[string]any{"identity": map[string]any{"type": "secret"}}), "'/identity/type'"},
		{"unknown association policy", with(minimal(), map[string]any{"association": map[string]any{"policy": "always"}}), "'/association/policy'"},
		{"subnet not an ARM ID", with(minimal(), map[string]any{"subnets": []any{"nodes"}}), "'/subnets/0'"},
		{"two replicas without leader election", with(minimal(), map[string]any{"leaderElection": map[string]any{"enabled": false}}), "replicas=2 needs leaderElection.enabled=true"},
		{"workload identity without client ID", with(minimal(), map[string]any{"identity": map[string]any{"type": "workloadIdentity"}}), "identity.workloadIdentity.clientID is required"},
		{"workload identity without subscription", with(minimal(), map[string]any{"identity": map[string]any{"type": "workloadIdentity", "workloadIdentity": map[string]any{"clientID": "x"}}}), "azure.subscriptionID and azure.tenantID are required"},
		{"azure.json to create without content", with(minimal(), map[string]any{"identity": map[string]any{"azureJSON": map[string]any{"create": true}}}), "identity.azureJSON.content"},
		{"lease set through config", with(minimal(), map[string]any{"config": map[string]any{"controller": map[string]any{"leaderElection": map[string]any{"name": "other"}}}}), "set leaderElection.enabled and leaderElection.leaseName instead"},
		{"metrics address set through config", with(minimal(), map[string]any{"config": map[string]any{"controller": map[string]any{"metricsAddress": ":9090"}}}), "set metrics.port instead"},
		{"source set through config", with(minimal(), map[string]any{"config": map[string]any{"source": map[string]any{"type": "inventory"}}}), "config.source"},
		{"metrics port out of range", with(minimal(), map[string]any{"metrics": map[string]any{"port": 70000}}), "'/metrics/port'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helm(t, "routekeeper", "kube-system", tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestHelmRBACIsKustomizeRBAC: the chart installed as release routekeeper
// in kube-system grants exactly the rules of the kustomization of the same
// mode, the ones test/e2e proves sufficient and least.
func TestHelmRBACIsKustomizeRBAC(t *testing.T) {
	for _, tc := range []struct {
		kustomization string
		routes        string
	}{
		{"base", "manage"},
		{"overlays/observe", "observe"},
	} {
		t.Run(tc.kustomization, func(t *testing.T) {
			out, err := Kustomize(filepath.Join(root(t), "deploy", "kustomize", tc.kustomization))
			if err != nil {
				t.Fatal(err)
			}
			kobjs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			hobjs, err := helm(t, "routekeeper", "kube-system", with(minimal(), map[string]any{"routes": tc.routes}))
			if err != nil {
				t.Fatal(err)
			}
			kr, kb := rbacOf(kobjs)
			hr, hb := rbacOf(hobjs)
			if d := cmp.Diff(kr, hr); d != "" {
				t.Errorf("RBAC rules, kustomize (-) vs Helm chart (+):\n%s", d)
			}
			if d := cmp.Diff(kb, hb); d != "" {
				t.Errorf("RBAC bindings, kustomize (-) vs Helm chart (+):\n%s", d)
			}
		})
	}
}

type binding struct{ Role, Subject string }

// rbacOf returns the rules of every role and what every binding binds.
func rbacOf(objs []Object) (map[string][]rbacv1.PolicyRule, map[string]binding) {
	r, b := map[string][]rbacv1.PolicyRule{}, map[string]binding{}
	for _, o := range Of[*rbacv1.ClusterRole](objs) {
		r["ClusterRole "+o.Name] = o.Rules
	}
	for _, o := range Of[*rbacv1.Role](objs) {
		r["Role "+o.Namespace+"/"+o.Name] = o.Rules
	}
	for _, o := range Of[*rbacv1.ClusterRoleBinding](objs) {
		b["ClusterRoleBinding "+o.Name] = binding{o.RoleRef.Kind + " " + o.RoleRef.Name, o.Subjects[0].Namespace + "/" + o.Subjects[0].Name}
	}
	for _, o := range Of[*rbacv1.RoleBinding](objs) {
		b["RoleBinding "+o.Namespace+"/"+o.Name] = binding{o.RoleRef.Kind + " " + o.RoleRef.Name, o.Subjects[0].Namespace + "/" + o.Subjects[0].Name}
	}
	return r, b
}
