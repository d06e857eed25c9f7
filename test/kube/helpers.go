package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// DefaultWait bounds the Wait helpers when ctx has no earlier deadline.
const DefaultWait = 30 * time.Second

// Node describes a node for CreateNode. Without kubelets nothing else sets a
// node's addresses, and without kube-controller-manager nothing assigns pod
// CIDRs, so tests state both.
type Node struct {
	Name string
	// PodCIDRs become spec.podCIDRs; the first is also spec.podCIDR.
	PodCIDRs []string
	// InternalIPs become status.addresses of type InternalIP.
	InternalIPs []string
	// Hostname, when set, becomes a status address of type Hostname.
	Hostname   string
	Labels     map[string]string
	ProviderID string
}

// CreateNode creates the node with the admin client, sets its addresses
// through the status subresource (as a kubelet would) and deletes it when the
// test ends. It returns the node as stored after the status update.
func (e *Env) CreateNode(ctx context.Context, t testing.TB, n Node) *corev1.Node {
	t.Helper()
	client := e.Clientset(t)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:       corev1.NodeSpec{PodCIDRs: n.PodCIDRs, ProviderID: n.ProviderID},
	}
	if len(n.PodCIDRs) > 0 {
		node.Spec.PodCIDR = n.PodCIDRs[0]
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultWait)
		defer cancel()
		err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", n.Name, err)
		}
	})

	var addrs []corev1.NodeAddress
	for _, ip := range n.InternalIPs {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	if n.Hostname != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Hostname})
	}
	if len(addrs) == 0 {
		return created
	}
	created.Status.Addresses = addrs
	updated, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("setting addresses of node %s: %v", n.Name, err)
	}
	return updated
}

// NodeCondition returns the condition of type typ of the node, and false when
// the node has no such condition.
func (e *Env) NodeCondition(ctx context.Context, t testing.TB, node string, typ corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	t.Helper()
	n, err := e.Clientset(t).CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node %s: %v", node, err)
	}
	return findCondition(n.Status.Conditions, typ)
}

// WaitForNodeCondition waits until the node's condition typ has status and
// returns it. It fails the test, showing the conditions last seen, when ctx
// ends or DefaultWait passes first.
func (e *Env) WaitForNodeCondition(ctx context.Context, t testing.TB, node string, typ corev1.NodeConditionType, status corev1.ConditionStatus) corev1.NodeCondition {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, DefaultWait)
	defer cancel()
	client := e.Clientset(t)
	var last string
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case err != nil:
			last = fmt.Sprintf("reading node: %v", err)
		default:
			if c, ok := findCondition(n.Status.Conditions, typ); ok && c.Status == status {
				return c
			}
			last = fmt.Sprintf("conditions %s", formatConditions(n.Status.Conditions))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s: condition %s=%s not reached: %v; last seen: %s", node, typ, status, ctx.Err(), last)
			return corev1.NodeCondition{}
		case <-tick.C:
		}
	}
}

func findCondition(conds []corev1.NodeCondition, typ corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

func formatConditions(conds []corev1.NodeCondition) string {
	if len(conds) == 0 {
		return "(none)"
	}
	s := ""
	for i, c := range conds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// ServiceAccountConfig returns a client configuration that authenticates as
// the service account namespace/name with a real bound token from the
// TokenRequest API, exactly as a pod using that account would. The service
// account is created when it does not exist. The identity is
// system:serviceaccount:<namespace>:<name> with the groups
// system:serviceaccounts and system:serviceaccounts:<namespace>.
func (e *Env) ServiceAccountConfig(ctx context.Context, t testing.TB, namespace, name string) *rest.Config {
	t.Helper()
	client := e.Clientset(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating service account %s/%s: %v", namespace, name, err)
	}
	expiry := int64(time.Hour / time.Second)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s/%s: %v", namespace, name, err)
	}
	cfg := e.anonymousConfig()
	cfg.BearerToken = tr.Status.Token
	return cfg
}
