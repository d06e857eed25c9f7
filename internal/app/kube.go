package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/source/kube"
)

// KubeRESTConfig returns the Kubernetes client configuration of cfg: the
// kubeconfig file when one is set, else in-cluster (a Pod's service
// account), else $KUBECONFIG, else ~/.kube/config.
func (a *App) KubeRESTConfig(cfg *config.Config) (*rest.Config, error) {
	k := cfg.Source.Kube
	var rc *rest.Config
	switch {
	case k.Kubeconfig != "":
		c, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
		if err != nil {
			return nil, BadInputf("source.kube.kubeconfig %s: %w", k.Kubeconfig, err)
		}
		rc = c
	default:
		c, err := rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.Precedence = nil
			if env := a.Getenv("KUBECONFIG"); env != "" {
				rules.Precedence = filepath.SplitList(env)
			}
			if len(rules.Precedence) == 0 {
				rules.Precedence = []string{clientcmd.RecommendedHomeFile}
			}
			c, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("no Kubernetes configuration: not in a cluster, and %s: %w (set source.kube.kubeconfig, or use an inventory file)",
					strings.Join(rules.Precedence, ", "), err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("in-cluster Kubernetes configuration: %w", err)
		}
		rc = c
	}
	rc.QPS, rc.Burst = float32(k.QPS), k.Burst
	rc.UserAgent = "routekeeper"
	return rc, nil
}

// kubeClient is a Kubernetes client for cfg.
func (a *App) kubeClient(cfg *config.Config) (kubernetes.Interface, error) {
	rc, err := a.KubeRESTConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", rc.Host, err)
	}
	return client, nil
}

// kubeSource is the Kubernetes node source for one-shot commands: it lists
// the nodes once (the daemon runs an informer instead).
func (a *App) kubeSource(cfg *config.Config) (*kube.Source, error) {
	client, err := a.kubeClient(cfg)
	if err != nil {
		return nil, err
	}
	return kube.New(client, kube.Options{Logger: a.Log.With("component", "nodes")}), nil
}

// podRef is routekeeper's own Pod as the downward API tells it (POD_NAME,
// POD_NAMESPACE and optionally POD_UID in the environment), the object of
// events about subnets and stale routes; nil outside a Pod.
func (a *App) podRef() *corev1.ObjectReference {
	name, ns := a.Getenv("POD_NAME"), a.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(a.Getenv("POD_UID"))}
}
