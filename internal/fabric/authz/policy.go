package authz

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Azure Policy, the part a deny policy needs: definitions and assignments
// as ARM stores and answers them, compiled by internal/azpolicy, which
// evaluates them when a resource is written (PUT, PATCH) at or under an
// assignment's scope (policy_check.go). A rule outside azpolicy's subset
// is refused when the definition is written (400 InvalidPolicyRule,
// InvalidPolicyAlias). Effects other than deny are stored and never
// enforced.

// PolicyDefinition is a stored policy definition with its compiled rule.
type PolicyDefinition struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Type       string              `json:"type"`
	Properties PolicyDefProperties `json:"properties"`

	compiled *azpolicy.Definition
}

type PolicyDefProperties struct {
	PolicyType  string                     `json:"policyType"`
	Mode        string                     `json:"mode"`
	DisplayName string                     `json:"displayName,omitempty"`
	Description string                     `json:"description,omitempty"`
	Metadata    json.RawMessage            `json:"metadata,omitempty"`
	Parameters  map[string]policyParameter `json:"parameters,omitempty"`
	PolicyRule  json.RawMessage            `json:"policyRule"`
}

type policyParameter struct {
	Type          string          `json:"type"`
	DefaultValue  json.RawMessage `json:"defaultValue,omitempty"`
	AllowedValues []any           `json:"allowedValues,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

// decodePolicyDefinition reads and compiles a stored definition.
func decodePolicyDefinition(doc []byte) (*PolicyDefinition, error) {
	var d PolicyDefinition
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decoding policy definition: %w", err)
	}
	if err := d.Compile(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Compile checks the definition against azpolicy's subset and keeps the
// compiled form; its errors are ARM's (InvalidPolicyAlias for a field
// that is no known alias, InvalidPolicyRule otherwise).
func (d *PolicyDefinition) Compile() error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding policy definition %s: %w", d.Name, err)
	}
	c, err := azpolicy.ParseDefinition(b)
	var re *azpolicy.RuleError
	switch {
	case errors.As(err, &re) && re.Alias != "":
		return api.NewError(http.StatusBadRequest, "InvalidPolicyAlias", "The policy definition '%s' rule is invalid. %v", d.Name, err)
	case err != nil:
		return errPolicyRule("%v", err)
	}
	d.compiled = c
	return nil
}

func errPolicyRule(format string, args ...any) *api.Error {
	return api.BadRequest("InvalidPolicyRule", "Failed to parse policy rule: "+format, args...)
}

// policyAssignment is a stored policy assignment with its compiled form.
type policyAssignment struct {
	ID         string                     `json:"id"`
	Name       string                     `json:"name"`
	Type       string                     `json:"type"`
	Location   string                     `json:"location,omitempty"`
	Properties policyAssignmentProperties `json:"properties"`

	compiled *azpolicy.Assignment
}

type policyAssignmentProperties struct {
	DisplayName        string                     `json:"displayName,omitempty"`
	Description        string                     `json:"description,omitempty"`
	PolicyDefinitionID string                     `json:"policyDefinitionId"`
	Scope              string                     `json:"scope"`
	NotScopes          []string                   `json:"notScopes"`
	Parameters         map[string]policyParamSpec `json:"parameters,omitempty"`
	EnforcementMode    string                     `json:"enforcementMode"`
	Metadata           json.RawMessage            `json:"metadata,omitempty"`
}

type policyParamSpec struct {
	Value any `json:"value"`
}

// compile keeps the assignment as azpolicy evaluates it.
func (a *policyAssignment) compile() error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encoding policy assignment %s: %w", a.Name, err)
	}
	c, err := azpolicy.ParseAssignment(b)
	if err != nil {
		return api.BadRequest("InvalidPolicyAssignment", "%v", err)
	}
	a.compiled = c
	return nil
}
