//go:build !linux

package dataplane

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
)

var errNotLinux = errors.New("the data plane needs Linux (network namespaces)")

// Plane is the data plane; it exists only on Linux.
type Plane struct{}

// New fails: the data plane needs Linux.
func New(string, *slog.Logger) (*Plane, error) { return nil, errNotLinux }

// Prefix is the namespace prefix of the plane.
func (p *Plane) Prefix() string { return "" }

// Apply fails: the data plane needs Linux.
func (p *Plane) Apply(context.Context, Spec) error { return errNotLinux }

// Close does nothing.
func (p *Plane) Close(context.Context) error { return nil }

// CheckPrivileges fails: the data plane needs Linux.
func CheckPrivileges() error { return errNotLinux }

// Cleanup fails: the data plane needs Linux.
func Cleanup(context.Context, string) error { return errNotLinux }

// FindNamespace fails: the data plane needs Linux.
func FindNamespace(context.Context, string, netip.Addr) (string, error) { return "", errNotLinux }

// CleanupNamespaces fails: the data plane needs Linux.
func CleanupNamespaces(context.Context, string) ([]string, error) { return nil, errNotLinux }

// Probe fails: the data plane needs Linux.
func Probe(context.Context, string, netip.Addr, netip.Addr, ProbeOptions) (ProbeResult, error) {
	return ProbeResult{}, errNotLinux
}
