package kubetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// apiserverIdentityLabel marks the leases kube-apiserver keeps for itself.
const apiserverIdentityLabel = "apiserver.kubernetes.io/identity"

// reset deletes what a test leaves behind in the shared control plane and
// the next test (or the same test under -count) would trip over: events
// (a re-created node of the same name would find its predecessor's), leases
// other than the API server's own (a leader-election test would find its
// last holder), and nodes. Namespaces are not deleted: without a
// namespace controller a deleted namespace stays Terminating for good, so
// tests create theirs idempotently and keep them.
func (e *Env) reset(ctx context.Context) error {
	c, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("client for %s: %w", e.Config.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	all := metav1.ListOptions{}
	var errs []error
	if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		errs = append(errs, fmt.Errorf("deleting nodes: %w", err))
	}
	nss, err := c.CoreV1().Namespaces().List(ctx, all)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing namespaces: %w", err))...)
	}
	for _, ns := range nss.Items {
		if err := c.CoreV1().Events(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
			errs = append(errs, fmt.Errorf("deleting events in %s: %w", ns.Name, err))
		}
		others := metav1.ListOptions{LabelSelector: "!" + apiserverIdentityLabel}
		if err := c.CoordinationV1().Leases(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, others); err != nil {
			errs = append(errs, fmt.Errorf("deleting leases in %s: %w", ns.Name, err))
		}
	}
	return errors.Join(errs...)
}
