// Package iac reads a Terraform/OpenTofu plan (the JSON of `tofu show
// -json PLAN`), or the what-if of an ARM template or Bicep file (the JSON
// of `az deployment group what-if --no-pretty-print -o json`, whatif.go),
// and tells, before the apply or deployment, every change that would break
// pod routing: a guarded subnet whose route table goes away
// (a VNet's inline subnets, a subnet resource, an association destroyed),
// the table replaced or destroyed, routekeeper's routes removed by a table
// with inline routes, a node subnet whose prefix changes under its nodes,
// an address space that overlaps the pod CIDRs.
//
// It has no routing rules of its own. The plan (or the what-if's after
// payloads) is applied, in memory, to the cloud as it stands (read live,
// or rebuilt from the input's own before-values when the cloud cannot be
// read); the observer reads both
// worlds and the verdict judges both; a finding is a node the verdict
// finds routed now and not after the apply, or a subnet it finds on the
// table now and not after, with the planned change that causes it and the
// code that avoids it (HCL for a plan, ARM JSON for a what-if).
package iac

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Plan is what the check reads of a plan's JSON.
type Plan struct {
	FormatVersion    string           `json:"format_version"`
	TerraformVersion string           `json:"terraform_version"`
	ResourceChanges  []ResourceChange `json:"resource_changes"`
}

// ResourceChange is one resource's planned change.
type ResourceChange struct {
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Change  Change `json:"change"`
}

// Change is a resource's values before and after, and the actions.
type Change struct {
	Actions []string `json:"actions"`
	// Before and After are the attribute values (nil when the resource
	// does not exist before or after); AfterUnknown marks the values
	// "known after apply", which are unknown, not removals.
	Before       map[string]any `json:"before"`
	After        map[string]any `json:"after"`
	AfterUnknown map[string]any `json:"after_unknown"`
}

// ErrNotAPlan: the JSON is not a plan's (`tofu show -json PLAN`): a state,
// a configuration, something else.
var ErrNotAPlan = errors.New("not the JSON of a Terraform/OpenTofu plan")

// ErrBadValue is the error of a plan that holds a value Azure would refuse
// (an ID that is not one, an address space that is not CIDRs): the error
// names the resource address, the attribute and the value.
var ErrBadValue = errors.New("a value in the plan is not valid")

// ParsePlan reads a plan's JSON. Anything else — not JSON, a state file's
// JSON, a plan of an unknown format version — is an error that says what
// it found.
func ParsePlan(b []byte) (*Plan, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: it is not a JSON object; make it with `tofu show -json PLANFILE` (or `terraform show -json PLANFILE`)", ErrNotAPlan)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(t, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAPlan, err)
	}
	if _, ok := probe["format_version"]; !ok {
		return nil, fmt.Errorf("%w: it has no format_version; make it with `tofu show -json PLANFILE`", ErrNotAPlan)
	}
	if _, ok := probe["resource_changes"]; !ok {
		what := "no resource_changes"
		if _, state := probe["values"]; state {
			what = "it is the JSON of a state (`tofu show -json` without a plan file), not of a plan"
		}
		return nil, fmt.Errorf("%w: %s; make it with `tofu plan -out PLANFILE && tofu show -json PLANFILE`", ErrNotAPlan, what)
	}
	p := &Plan{}
	if err := json.Unmarshal(t, p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAPlan, err)
	}
	if major, _, _ := strings.Cut(p.FormatVersion, "."); major != "1" {
		return nil, fmt.Errorf("plan format_version %q: routekeeper reads format 1.x (OpenTofu 1.x, Terraform 1.x)", p.FormatVersion)
	}
	return p, nil
}

// Kinds of change, from a change's actions.
const (
	kindNone    = "no-op"
	kindCreate  = "create"
	kindUpdate  = "update"
	kindDelete  = "delete"
	kindReplace = "replace"
)

// kind sums up a change's actions.
func (c Change) kind() string {
	switch {
	case slices.Contains(c.Actions, "delete") && slices.Contains(c.Actions, "create"):
		return kindReplace
	case slices.Contains(c.Actions, "delete"):
		return kindDelete
	case slices.Contains(c.Actions, "create"):
		return kindCreate
	case slices.Contains(c.Actions, "update"):
		return kindUpdate
	}
	return kindNone
}

// value reads a dotted path of attributes ("subnet", "tags") from m; ok is
// false when it is absent.
func value(m map[string]any, key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

func str(m map[string]any, key string) string {
	v, _ := value(m, key)
	s, _ := v.(string)
	return s
}

func strs(m map[string]any, key string) []string {
	v, _ := value(m, key)
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func objects(m map[string]any, key string) []map[string]any {
	v, _ := value(m, key)
	list, _ := v.([]any)
	var out []map[string]any
	for _, e := range list {
		if o, ok := e.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// unknown reports whether after_unknown marks key of m as known only after
// the apply (true, or a structure holding true somewhere).
func unknown(m map[string]any, key string) bool {
	v, ok := value(m, key)
	return ok && anyTrue(v)
}

func anyTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case []any:
		return slices.ContainsFunc(x, anyTrue)
	case map[string]any:
		for _, e := range x {
			if anyTrue(e) {
				return true
			}
		}
	}
	return false
}

// unknownAt returns the after_unknown object of the i-th element of the
// list attribute key (nil when none).
func unknownAt(m map[string]any, key string, i int) map[string]any {
	v, _ := value(m, key)
	list, _ := v.([]any)
	if i >= len(list) {
		return nil
	}
	o, _ := list[i].(map[string]any)
	return o
}
