package app

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func configMap(name, key, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Data: map[string]string{key: data}}
}

// masqFrom reads AKS's and the upstream agent's ConfigMaps: custom and
// reconciled told apart, a missing one skipped, a refused or broken one
// named in the note.
func TestMasqFrom(t *testing.T) {
	tests := []struct {
		name    string
		objs    []runtime.Object
		deny    string
		want    string // name:custom:cidrs per ConfigMap
		wantNil bool
		note    string
	}{
		{name: "none: checked, nothing custom", want: ""},
		{
			name: "AKS custom and reconciled",
			objs: []runtime.Object{
				configMap("azure-ip-masq-agent-config", "ip-masq-agent", "nonMasqueradeCIDRs:\n  - 10.240.0.0/16\n  - 172.16.0.0/12\nmasqLinkLocal: true\n"),
				configMap("azure-ip-masq-agent-config-reconciled", "ip-masq-agent-reconciled", "nonMasqueradeCIDRs:\n  - 10.0.0.0/8\n"),
			},
			want: "azure-ip-masq-agent-config:true:10.240.0.0/16,172.16.0.0/12 azure-ip-masq-agent-config-reconciled:false:10.0.0.0/8",
		},
		{
			name: "upstream agent",
			objs: []runtime.Object{configMap("ip-masq-agent", "config", "nonMasqueradeCIDRs: [192.168.0.0/16]\n")},
			want: "ip-masq-agent:true:192.168.0.0/16",
		},
		{
			name: "a value that is no CIDR",
			objs: []runtime.Object{configMap("ip-masq-agent", "config", "nonMasqueradeCIDRs: [192.168.0.0/16, everything]\n")},
			want: "ip-masq-agent:true:192.168.0.0/16", note: `nonMasqueradeCIDRs "everything" is not a CIDR`,
		},
		{
			name: "not allowed to read",
			deny: "configmaps", wantNil: true, note: "reading ConfigMap kube-system/azure-ip-masq-agent-config: configmaps",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objs...)
			if tt.deny != "" {
				client.PrependReactor("get", tt.deny, func(a k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tt.deny}, a.(k8stesting.GetAction).GetName(), fmt.Errorf("RBAC"))
				})
			}
			m, note := masqFrom(context.Background(), client)
			if (m == nil) != tt.wantNil || !strings.Contains(note, tt.note) || (tt.note == "") != (note == "") {
				t.Fatalf("masq %+v note %q; want nil=%v and a note with %q", m, note, tt.wantNil, tt.note)
			}
			if m == nil {
				return
			}
			var got []string
			for _, c := range m.ConfigMaps {
				var cidrs []string
				for _, p := range c.NonMasqueradeCIDRs {
					cidrs = append(cidrs, p.String())
				}
				got = append(got, fmt.Sprintf("%s:%v:%s", c.Name, c.Custom, strings.Join(cidrs, ",")))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("config maps %q, want %q", g, tt.want)
			}
		})
	}
}
