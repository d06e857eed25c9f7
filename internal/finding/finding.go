// Package finding is the one shape of what routekeeper tells a person to
// look at — doctor's checks, the overlay pre-flight, iac check and ipplan
// all report Findings — and the renderings they share: the findings table
// of -o table and the SARIF 2.1.0 log of -o sarif. It decides nothing: the
// packages that find things say what they found.
package finding

import (
	"cmp"
	"slices"

	"github.com/routekeeper/routekeeper/internal/reason"
)

// Severity of a finding.
type Severity string

// The severities. An error is something to do before traffic is safe; a
// warning something to look at; info is a remark.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Rank orders severities: 0 for errors, 1 for warnings, 2 for the rest.
func (s Severity) Rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Finding is one problem, or remark, with what shows it and what fixes it.
type Finding struct {
	Severity Severity `json:"severity"`
	// Rule is the stable identifier of what found it (route-limit,
	// vnet-inline-subnets-drop-table, pod-overlaps-vnet, ...), for
	// scripts, docs and SARIF.
	Rule string `json:"rule"`
	// Resource is what the finding is about: an ARM ID, a Terraform
	// address, a node; "" when it is about the whole.
	Resource string `json:"resource,omitempty"`
	Message  string `json:"message"`
	// Evidence is what the finding was drawn from, when there is more to
	// say than the message.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Fix is the command, setting or code that resolves it, when there is
	// one; it may span lines (HCL, a Bicep block).
	Fix string `json:"fix,omitempty"`
}

// Evidence are the facts behind a finding, each optional.
type Evidence struct {
	// Subnet and RouteTable are the ARM IDs involved.
	Subnet     string `json:"subnet,omitempty"`
	RouteTable string `json:"routeTable,omitempty"`
	// Nodes are the nodes it concerns (those that lose their route), with
	// their pod CIDRs, and the verdict's reason for them.
	Nodes    []string      `json:"nodes,omitempty"`
	PodCIDRs []string      `json:"podCIDRs,omitempty"`
	Reason   reason.Reason `json:"reason,omitempty"`
	// Plugins are the network plugins an address-plan finding is about;
	// empty when it holds whatever the plugin.
	Plugins []string `json:"plugins,omitempty"`
	// Values are the offending values, by what they are.
	Values map[string]string `json:"values,omitempty"`
}

// Errors counts the error findings.
func Errors(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// Sort orders findings by severity, errors first, keeping the order of
// findings of one severity.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(a.Severity.Rank(), b.Severity.Rank()) })
}

// Value is the evidence's value named k; nil evidence has none.
func (e *Evidence) Value(k string) (string, bool) {
	if e == nil {
		return "", false
	}
	v, ok := e.Values[k]
	return v, ok
}
