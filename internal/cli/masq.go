package cli

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/overlay"
)

// The ip-masq-agent ConfigMaps in kube-system and the data key each keeps
// its configuration under: AKS's (the operator's custom one and the one
// AKS reconciles: Upgrade Azure CNI) and the upstream agent's.
var masqConfigMaps = []struct {
	name, key string
	custom    bool
}{
	{"azure-ip-masq-agent-config", "ip-masq-agent", true},
	{"azure-ip-masq-agent-config-reconciled", "ip-masq-agent-reconciled", false},
	{"ip-masq-agent", "config", true},
}

// readMasq reads the cluster's ip-masq-agent configuration for the
// pre-flight, in Kubernetes mode only; note says why it was not read.
func (a *shell) readMasq(ctx context.Context, cfg *config.Config) (m *overlay.Masq, note string) {
	if cfg.Source.Type != config.SourceKube {
		return nil, "the nodes come from an inventory, so the cluster's ip-masq-agent configuration was not read; check its nonMasqueradeCIDRs by hand (kubectl -n kube-system get configmaps)"
	}
	rc, err := a.kubeRESTConfig(cfg)
	if err != nil {
		return nil, err.Error()
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Sprintf("kubernetes client for %s: %v", rc.Host, err)
	}
	return masqFrom(ctx, client)
}

// masqFrom reads the ip-masq-agent ConfigMaps through client. A ConfigMap
// that does not exist is skipped; one the identity may not read, or that
// does not parse, is named in note.
func masqFrom(ctx context.Context, client kubernetes.Interface) (*overlay.Masq, string) {
	m := &overlay.Masq{}
	var notes []string
	for _, c := range masqConfigMaps {
		cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			notes = append(notes, fmt.Sprintf("reading ConfigMap kube-system/%s: %v", c.name, err))
			continue
		}
		var doc struct {
			NonMasqueradeCIDRs []string `json:"nonMasqueradeCIDRs"`
		}
		if err := yaml.Unmarshal([]byte(cm.Data[c.key]), &doc); err != nil {
			notes = append(notes, fmt.Sprintf("ConfigMap kube-system/%s: data %q is not an ip-masq-agent configuration: %v", c.name, c.key, err))
			continue
		}
		mc := overlay.MasqConfig{Name: c.name, Custom: c.custom}
		for _, s := range doc.NonMasqueradeCIDRs {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				notes = append(notes, fmt.Sprintf("ConfigMap kube-system/%s: nonMasqueradeCIDRs %q is not a CIDR", c.name, s))
				continue
			}
			mc.NonMasqueradeCIDRs = append(mc.NonMasqueradeCIDRs, p.Masked())
		}
		m.ConfigMaps = append(m.ConfigMaps, mc)
	}
	if len(notes) > 0 && len(m.ConfigMaps) == 0 {
		return nil, strings.Join(notes, "; ")
	}
	return m, strings.Join(notes, "; ")
}
