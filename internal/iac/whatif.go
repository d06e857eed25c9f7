package iac

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
)

// WhatIf is what the check reads of an ARM what-if result: the JSON of
// `az deployment group what-if --no-pretty-print -o json` ({"status",
// "changes", "error"}), of the REST API's WhatIfOperationResult
// ({"status", "properties": {"changes"}}), or of PowerShell's
// `Get-AzResourceGroupDeploymentWhatIfResult -WhatIfResultFormat
// FullResourcePayloads | ConvertTo-Json` ({"Status", "Changes"}, change
// types as names or as the enum's numbers). Property names are read
// without regard to case, as ARM does.
type WhatIf struct {
	Status  string
	Changes []WhatIfChange
}

// WhatIfChange is one resource's predicted change: the full resource
// payloads before and after (nil when it does not exist then).
type WhatIfChange struct {
	ResourceID string
	ChangeType string
	Before     map[string]any
	After      map[string]any
}

// What-if's change types.
const (
	whatIfCreate   = "Create"
	whatIfDelete   = "Delete"
	whatIfIgnore   = "Ignore"
	whatIfDeploy   = "Deploy"
	whatIfNoChange = "NoChange"
	whatIfModify   = "Modify"
	whatIfUnsupp   = "Unsupported"
)

// changeTypes are the change types by the number PowerShell's
// ConvertTo-Json writes for them (the SDK's enum order).
var changeTypes = []string{whatIfCreate, whatIfDelete, whatIfIgnore, whatIfDeploy, whatIfNoChange, whatIfModify, whatIfUnsupp}

// ErrNotAWhatIf: the JSON looked like a what-if result but is not a usable
// one (a failed what-if, changes of an unknown shape).
var ErrNotAWhatIf = errors.New("not the JSON of a usable ARM what-if result")

// isWhatIf reports whether a decoded JSON object has a what-if result's
// shape: a changes array at the top (az, PowerShell) or under properties
// (the REST API).
func isWhatIf(probe map[string]any) bool {
	if _, ok := member(probe, "changes").([]any); ok {
		return true
	}
	props, _ := member(probe, "properties").(map[string]any)
	_, ok := member(props, "changes").([]any)
	return ok
}

// ParseWhatIf reads a what-if result's JSON. A what-if that failed, or
// changes without resourceId or changeType, are errors that say so.
func ParseWhatIf(b []byte) (*WhatIf, error) {
	d := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(b)))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAWhatIf, err)
	}
	if !isWhatIf(doc) {
		return nil, fmt.Errorf("%w: it has no changes array; make it with `az deployment group what-if --no-pretty-print -o json`", ErrNotAWhatIf)
	}
	w := &WhatIf{}
	w.Status, _ = member(doc, "status").(string)
	if e, ok := member(doc, "error").(map[string]any); ok && len(e) > 0 || strings.EqualFold(w.Status, "Failed") {
		code, _ := member(e, "code").(string)
		msg, _ := member(e, "message").(string)
		return nil, fmt.Errorf("%w: the what-if failed (%s: %s); fix the template and run it again", ErrNotAWhatIf, code, msg)
	}
	changes, _ := member(doc, "changes").([]any)
	if changes == nil {
		props, _ := member(doc, "properties").(map[string]any)
		changes, _ = member(props, "changes").([]any)
	}
	for i, c := range changes {
		m, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: changes[%d] is not an object", ErrNotAWhatIf, i)
		}
		ch := WhatIfChange{}
		ch.ResourceID, _ = member(m, "resourceId").(string)
		if ch.ResourceID == "" {
			ch.ResourceID, _ = member(m, "fullyQualifiedResourceId").(string)
		}
		switch t := member(m, "changeType").(type) {
		case string:
			ch.ChangeType = canonicalChangeType(t)
		case json.Number:
			if n, err := t.Int64(); err == nil && n >= 0 && int(n) < len(changeTypes) {
				ch.ChangeType = changeTypes[n]
			}
		}
		if ch.ResourceID == "" || ch.ChangeType == "" {
			return nil, fmt.Errorf("%w: changes[%d] has no resourceId or no known changeType (%v)", ErrNotAWhatIf, i, member(m, "changeType"))
		}
		ch.Before, _ = member(m, "before").(map[string]any)
		ch.After, _ = member(m, "after").(map[string]any)
		w.Changes = append(w.Changes, ch)
	}
	return w, nil
}

func canonicalChangeType(s string) string {
	for _, t := range changeTypes {
		if strings.EqualFold(t, s) {
			return t
		}
	}
	return ""
}

// member reads an object member without regard to case.
func member(m map[string]any, name string) any {
	if m == nil {
		return nil
	}
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// Changes are what iac check reads: a plan or a what-if result.
type Changes interface {
	// beforeWorld rebuilds the cloud as it stands from the input's own
	// before-values.
	beforeWorld(x ids) *memcloud.Cloud
	// apply returns the world after the changes, and why each changed
	// resource changed.
	apply(base *memcloud.Cloud, x ids) (*memcloud.Cloud, *causes, error)
	// fix is the code that avoids a rule's hazard, in the input's own
	// language (HCL, ARM JSON).
	fix(rule, address string) string
	// next names what repeats the change: "plan", "deployment".
	next() string
}

// Parse reads the input of iac check: a Terraform/OpenTofu plan's JSON or
// an ARM what-if result's, told apart by their shapes. Anything else is
// ErrNotAPlan, saying what it found.
func Parse(b []byte) (Changes, error) {
	t := bytes.TrimSpace(b)
	var probe map[string]any
	if len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &probe) == nil && isWhatIf(probe) {
		return ParseWhatIf(t)
	}
	p, err := ParsePlan(b)
	if err != nil {
		if len(t) > 0 && t[0] == '{' && probe != nil {
			if _, plan := probe["format_version"]; !plan {
				return nil, fmt.Errorf("%w (nor of an ARM what-if result: it has no changes array); make a plan with `tofu show -json PLANFILE`, a what-if with `az deployment group what-if --no-pretty-print -o json`", ErrNotAPlan)
			}
		}
		return nil, err
	}
	return p, nil
}
