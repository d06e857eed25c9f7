package overlay

import (
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"
)

// MasqConfigMap is where an ip-masq-agent keeps its configuration: a
// ConfigMap in kube-system and its data key.
type MasqConfigMap struct {
	Name, Key string
	// Custom: the operator's configuration, not one AKS reconciles.
	Custom bool
}

// MasqConfigMaps are the ip-masq-agent ConfigMaps the pre-flight reads:
// AKS's (the operator's custom one and the one AKS reconciles, as Upgrade
// Azure CNI documents them) and the upstream agent's.
var MasqConfigMaps = []MasqConfigMap{
	{"azure-ip-masq-agent-config", "ip-masq-agent", true},
	{"azure-ip-masq-agent-config-reconciled", "ip-masq-agent-reconciled", false},
	{"ip-masq-agent", "config", true},
}

// ParseMasq reads the data of one ip-masq-agent ConfigMap; notes name the
// values that are not CIDRs. An error means the data is not an
// ip-masq-agent configuration.
func ParseMasq(c MasqConfigMap, data string) (MasqConfig, []string, error) {
	var doc struct {
		NonMasqueradeCIDRs []string `json:"nonMasqueradeCIDRs"`
	}
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		return MasqConfig{}, nil, fmt.Errorf("ConfigMap kube-system/%s: data %q is not an ip-masq-agent configuration: %w", c.Name, c.Key, err)
	}
	mc := MasqConfig{Name: c.Name, Custom: c.Custom}
	var notes []string
	for _, s := range doc.NonMasqueradeCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			notes = append(notes, fmt.Sprintf("ConfigMap kube-system/%s: nonMasqueradeCIDRs %q is not a CIDR", c.Name, s))
			continue
		}
		mc.NonMasqueradeCIDRs = append(mc.NonMasqueradeCIDRs, p.Masked())
	}
	return mc, notes, nil
}
