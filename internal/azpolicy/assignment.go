package azpolicy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azrbac"
)

// Enforcement modes of a policy assignment.
const (
	EnforcementDefault      = "Default"
	EnforcementDoNotEnforce = "DoNotEnforce"
)

// Assignment is a policy assignment: a definition applied at a scope.
type Assignment struct {
	ID, Name, DisplayName string
	// Scope is where the definition applies: there and below.
	Scope string
	// DefinitionID is the assigned policy definition's ID.
	DefinitionID string
	// NotScopes are the scopes under Scope the assignment leaves out.
	NotScopes []string
	// Parameters are the values the assignment gives, by name (the
	// "value" of each of ARM's {"name": {"value": ...}}).
	Parameters map[string]any
	// EnforcementMode is EnforcementDefault or EnforcementDoNotEnforce;
	// "" is Default.
	EnforcementMode string
}

// ParseAssignment reads the ARM JSON of a policy assignment ({"id",
// "name", "properties": {"policyDefinitionId", "scope", "notScopes",
// "parameters", "enforcementMode", "displayName"}}); property names match
// without regard to case. The scope is properties.scope, else the part of
// the ID before /providers/Microsoft.Authorization/policyAssignments/.
func ParseAssignment(doc []byte) (*Assignment, error) {
	var in struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Properties *struct {
			DisplayName        string                     `json:"displayName"`
			PolicyDefinitionID string                     `json:"policyDefinitionId"`
			Scope              string                     `json:"scope"`
			NotScopes          []string                   `json:"notScopes"`
			Parameters         map[string]json.RawMessage `json:"parameters"`
			EnforcementMode    string                     `json:"enforcementMode"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc, &in); err != nil {
		return nil, fmt.Errorf("decoding policy assignment: %w", err)
	}
	a := &Assignment{ID: in.ID, Name: in.Name}
	if a.Name == "" && a.ID != "" {
		a.Name = armid.Name(a.ID)
	}
	p := in.Properties
	if p == nil {
		return nil, fmt.Errorf("policy assignment %s: no properties", a.label())
	}
	a.DisplayName, a.DefinitionID, a.Scope, a.NotScopes = p.DisplayName, p.PolicyDefinitionID, p.Scope, p.NotScopes
	if a.DefinitionID == "" {
		return nil, fmt.Errorf("policy assignment %s: properties.policyDefinitionId is missing", a.label())
	}
	if a.Scope == "" {
		if scope, ok := armid.ScopeOf(a.ID, "Microsoft.Authorization/policyAssignments"); ok {
			a.Scope = azrbac.NormalizeScope(scope)
		}
	}
	if a.Scope == "" {
		return nil, fmt.Errorf("policy assignment %s: neither properties.scope nor an ID to take it from", a.label())
	}
	switch {
	case p.EnforcementMode == "" || strings.EqualFold(p.EnforcementMode, EnforcementDefault):
		a.EnforcementMode = EnforcementDefault
	case strings.EqualFold(p.EnforcementMode, EnforcementDoNotEnforce):
		a.EnforcementMode = EnforcementDoNotEnforce
	default:
		return nil, fmt.Errorf("policy assignment %s: properties.enforcementMode %q is not Default or DoNotEnforce", a.label(), p.EnforcementMode)
	}
	a.Parameters = map[string]any{}
	for _, name := range sortedKeys(p.Parameters) {
		var v struct {
			Value any `json:"value"`
		}
		if err := json.Unmarshal(p.Parameters[name], &v); err != nil {
			return nil, fmt.Errorf("policy assignment %s: properties.parameters.%s: want {\"value\": ...}: %w", a.label(), name, err)
		}
		a.Parameters[name] = v.Value
	}
	return a, nil
}

// Applies reports whether the assignment covers a resource: the resource
// is at or under Scope, under none of NotScopes, and the assignment is
// enforced (not DoNotEnforce). IDs compare without regard to case.
func (a *Assignment) Applies(resourceID string) bool { return a.skip(resourceID) == "" }

// skip says why the assignment does not cover a resource, "" when it does.
func (a *Assignment) skip(id string) string {
	switch {
	case strings.EqualFold(a.EnforcementMode, EnforcementDoNotEnforce):
		return "the assignment's enforcementMode is DoNotEnforce"
	case !azrbac.ScopeContains(a.Scope, id):
		return "the resource is not at or under the assignment's scope " + a.Scope
	}
	if i := slices.IndexFunc(a.NotScopes, func(s string) bool { return azrbac.ScopeContains(s, id) }); i >= 0 {
		return "the resource is under the assignment's notScopes entry " + a.NotScopes[i]
	}
	return ""
}

func (a *Assignment) label() string {
	if a == nil {
		return "(none)"
	}
	return cmp.Or(a.ID, a.Name, "(unnamed)")
}
