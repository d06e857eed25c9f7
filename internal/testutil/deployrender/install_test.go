package deployrender

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/routekeeper/routekeeper/internal/config"
)

// install is what a rendered installation must hold together, checked by
// checkInstall.
type install struct {
	objs []Object
	// azureJSON is the azure.json the Secret would hold (the example), ""
	// when the installation uses no azure.json.
	azureJSON string
	routes    config.RoutesMode
}

// checkInstall checks that a rendered installation holds together: the
// Deployment mounts the ConfigMap and Secret it names, runs as the
// ServiceAccount the RBAC binds, as non-root on the host network, serves
// its probes on the port the configuration listens on; the configuration
// is valid and names the lease the RBAC allows; the PDB, Service and
// monitors select the Pods; the alerts query metrics that exist.
func checkInstall(t *testing.T, in install) *config.Config {
	t.Helper()
	deps := Of[*appsv1.Deployment](in.objs)
	sas := Of[*corev1.ServiceAccount](in.objs)
	if len(deps) != 1 || len(sas) != 1 {
		t.Fatalf("%d Deployments, %d ServiceAccounts: want one each", len(deps), len(sas))
	}
	dep, sa := deps[0], sas[0]
	pod := dep.Spec.Template.Spec
	podLabels := labels.Set(dep.Spec.Template.Labels)
	if sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector %v does not select its Pods (%v): %v", dep.Spec.Selector, podLabels, err)
	}
	if pod.ServiceAccountName != sa.Name || dep.Namespace != sa.Namespace {
		t.Errorf("Deployment runs as %s/%s, the ServiceAccount is %s/%s", dep.Namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
	}
	for _, b := range Of[*rbacv1.ClusterRoleBinding](in.objs) {
		checkSubjects(t, "ClusterRoleBinding "+b.Name, b.Subjects, sa)
	}
	for _, b := range Of[*rbacv1.RoleBinding](in.objs) {
		checkSubjects(t, "RoleBinding "+b.Namespace+"/"+b.Name, b.Subjects, sa)
	}
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSDefault {
		t.Errorf("hostNetwork %v, dnsPolicy %s: routekeeper must not depend on the pod network it repairs", pod.HostNetwork, pod.DNSPolicy)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod security context %+v: want non-root, user 65532 (the image's)", sc)
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	mounts := map[string]string{}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	var cm *corev1.ConfigMap
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
		v, ok := volumes[m.Name]
		switch {
		case !ok:
			t.Errorf("volume mount %s has no volume", m.Name)
		case v.ConfigMap != nil:
			for _, o := range Of[*corev1.ConfigMap](in.objs) {
				if o.Name == v.ConfigMap.Name && o.Namespace == dep.Namespace {
					cm = o
				}
			}
			if cm == nil {
				t.Errorf("volume %s mounts ConfigMap %s, which is not in the manifests", v.Name, v.ConfigMap.Name)
			}
		case v.Secret != nil:
			if in.azureJSON == "" {
				t.Errorf("volume %s mounts Secret %s, but this installation uses no azure.json", v.Name, v.Secret.SecretName)
			}
			if v.Secret.SecretName != "routekeeper-azure-json" {
				t.Errorf("volume %s mounts Secret %s, the documented one is routekeeper-azure-json", v.Name, v.Secret.SecretName)
			}
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap mounted")
	}
	for _, s := range Of[*corev1.Secret](in.objs) {
		if s.Name != "routekeeper-azure-json" || s.StringData["azure.json"] == "" {
			t.Errorf("the manifests carry Secret %s/%s: only the azure.json Secret, when asked for, may be rendered", s.Namespace, s.Name)
		}
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
		t.Fatalf("--config=%s is not the ConfigMap's key %v mounted at %s", cfgArg, slices.Sorted(maps.Keys(cm.Data)), mounts["config"])
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, key)
	if err := os.WriteFile(cfgPath, []byte(cm.Data[key]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Read(cfgPath)
	if err != nil {
		t.Fatalf("the ConfigMap's configuration does not decode: %v", err)
	}
	if in.azureJSON != "" {
		if want := filepath.Join(mounts["azure-json"], "azure.json"); cfg.Cloud.Azure.ConfigFile != want {
			t.Errorf("cloud.azure.configFile = %s, the Secret is mounted as %s", cfg.Cloud.Azure.ConfigFile, want)
		}
		ajPath := filepath.Join(dir, "azure.json")
		if err := os.WriteFile(ajPath, []byte(in.azureJSON), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Cloud.Azure.ConfigFile = ajPath
	} else if cfg.Cloud.Azure.ConfigFile != "" {
		t.Errorf("cloud.azure.configFile = %s without an azure.json Secret", cfg.Cloud.Azure.ConfigFile)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatalf("completing the ConfigMap's configuration: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the ConfigMap's configuration is not valid: %v", err)
	}
	if cfg.Source.Type != config.SourceKube || cfg.Cloud.Type != config.CloudAzure || cfg.Routes != in.routes {
		t.Errorf("source %s, cloud %s, routes %s: want kube, azure, %s", cfg.Source.Type, cfg.Cloud.Type, cfg.Routes, in.routes)
	}

	// Leader election: on with more than one replica, on a lease the RBAC
	// allows.
	le := cfg.Controller.LeaderElection
	if replicas := dep.Spec.Replicas; (replicas == nil || *replicas > 1) && !le.Enabled {
		t.Error("more than one replica without leader election")
	}
	if le.Enabled {
		var leases []string
		for _, r := range Of[*rbacv1.Role](in.objs) {
			if r.Namespace != le.Namespace {
				continue
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "leases") {
					leases = append(leases, rule.ResourceNames...)
				}
			}
		}
		if !slices.Contains(leases, le.Name) || le.Namespace != dep.Namespace {
			t.Errorf("leader election lease %s/%s is not the one in the RBAC's lease rules (%v) in the Deployment's namespace %s", le.Namespace, le.Name, leases, dep.Namespace)
		}
	}

	// Only manage mode writes the NetworkUnavailable condition.
	patchesStatus := false
	for _, r := range Of[*rbacv1.ClusterRole](in.objs) {
		for _, rule := range r.Rules {
			patchesStatus = patchesStatus || slices.Contains(rule.Resources, "nodes/status")
		}
	}
	if want := in.routes == config.RoutesManage; patchesStatus != want {
		t.Errorf("routes: %s, the ClusterRole grants nodes/status: %v, want %v", in.routes, patchesStatus, want)
	}

	// Metrics and probes.
	_, port, _ := strings.Cut(cfg.Controller.MetricsAddress, ":")
	if len(c.Ports) != 1 || fmt.Sprint(c.Ports[0].ContainerPort) != port || c.Ports[0].Name != "metrics" {
		t.Fatalf("container ports %+v, the configuration listens on %s", c.Ports, cfg.Controller.MetricsAddress)
	}
	if p, ok := dep.Spec.Template.Annotations["prometheus.io/port"]; ok && p != port {
		t.Errorf("prometheus.io/port = %s, want %s", p, port)
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

	// Everything that selects the Pods selects them.
	for _, pdb := range Of[*policyv1.PodDisruptionBudget](in.objs) {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !sel.Matches(podLabels) || pdb.Namespace != dep.Namespace {
			t.Errorf("PodDisruptionBudget %s does not select the Pods", pdb.Name)
		}
	}
	services := Of[*corev1.Service](in.objs)
	for _, s := range services {
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.String() != "metrics" {
			t.Errorf("Service %s does not select the Pods' metrics port: %+v", s.Name, s.Spec)
		}
	}
	known := knownMetrics(t)
	for _, o := range in.objs {
		u := o.Unstructured
		switch u.GetKind() {
		case "PodMonitor":
			checkMonitor(t, u, "podMetricsEndpoints", []labels.Set{podLabels})
		case "ServiceMonitor":
			var sets []labels.Set
			for _, s := range services {
				sets = append(sets, s.Labels)
			}
			checkMonitor(t, u, "endpoints", sets)
		case "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
			n := 0
			for _, g := range groups {
				rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					r := r.(map[string]any)
					expr, _ := r["expr"].(string)
					for _, p := range checkQuery(known, fmt.Sprintf("alert %v", r["alert"]), expr) {
						t.Error(p)
					}
					n++
				}
			}
			if n == 0 {
				t.Errorf("PrometheusRule %s has no rules", u.GetName())
			}
		}
	}
	return cfg
}

func checkSubjects(t *testing.T, what string, subjects []rbacv1.Subject, sa *corev1.ServiceAccount) {
	t.Helper()
	if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || subjects[0].Name != sa.Name || subjects[0].Namespace != sa.Namespace {
		t.Errorf("%s binds %+v, not the ServiceAccount %s/%s", what, subjects, sa.Namespace, sa.Name)
	}
}

// checkMonitor checks that a prometheus-operator monitor selects one of
// the label sets and scrapes the port named metrics at /metrics.
func checkMonitor(t *testing.T, u *unstructured.Unstructured, endpointsField string, targets []labels.Set) {
	t.Helper()
	if u.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("%s %s: apiVersion %s", u.GetKind(), u.GetName(), u.GetAPIVersion())
	}
	ml, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	if len(ml) == 0 || !slices.ContainsFunc(targets, func(s labels.Set) bool { return labels.SelectorFromSet(ml).Matches(s) }) {
		t.Errorf("%s %s selects %v, which matches none of %v", u.GetKind(), u.GetName(), ml, targets)
	}
	eps, _, _ := unstructured.NestedSlice(u.Object, "spec", endpointsField)
	if len(eps) != 1 {
		t.Fatalf("%s %s: %d %s, want 1", u.GetKind(), u.GetName(), len(eps), endpointsField)
	}
	ep := eps[0].(map[string]any)
	if ep["port"] != "metrics" || ep["path"] != "/metrics" {
		t.Errorf("%s %s scrapes port %v path %v, want metrics /metrics", u.GetKind(), u.GetName(), ep["port"], ep["path"])
	}
	for k := range ep {
		if !slices.Contains([]string{"port", "path", "interval"}, k) {
			t.Errorf("%s %s: endpoint field %s is not checked by this test", u.GetKind(), u.GetName(), k)
		}
	}
}
