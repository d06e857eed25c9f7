package azpolicy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// Modes of a policy definition.
const (
	ModeAll     = "All"
	ModeIndexed = "Indexed"
)

// Definition is a compiled policy definition.
type Definition struct {
	// ID is the definition's resource ID: /subscriptions/{s}/providers/
	// Microsoft.Authorization/policyDefinitions/{name} for a custom one,
	// /providers/Microsoft.Authorization/policyDefinitions/{guid} for a
	// built-in; "" when the document had none.
	ID, Name, DisplayName string
	// PolicyType is BuiltIn, Custom or Static, as ARM says ("" when absent).
	PolicyType string
	// Mode is ModeAll or ModeIndexed (Azure's default when absent).
	Mode string
	// Parameters are the declared parameters, by name as declared.
	Parameters map[string]Parameter

	cond   *cond
	effect any // a string: an effect or "[parameters('x')]"
}

// Parameter is a declared parameter of a definition.
type Parameter struct {
	// Type is String, Array, Object, Boolean, Integer, Float or DateTime.
	Type string
	// DefaultValue is used when an assignment gives no value; HasDefault
	// tells a default of null from none.
	DefaultValue any
	HasDefault   bool
	// AllowedValues, when not nil, are the values an assignment may give.
	AllowedValues []any
}

// definitionProps are the properties of a policy definition's ARM JSON.
type definitionProps struct {
	DisplayName       string                     `json:"displayName"`
	PolicyType        string                     `json:"policyType"`
	Mode              string                     `json:"mode"`
	Parameters        map[string]json.RawMessage `json:"parameters"`
	PolicyRule        json.RawMessage            `json:"policyRule"`
	PolicyDefinitions json.RawMessage            `json:"policyDefinitions"` // an initiative's
}

// ParseDefinition compiles the ARM JSON of a policy definition: the
// resource as ARM returns it ({"id", "name", "properties": {"mode",
// "parameters", "policyRule", ...}}), or its properties object alone.
// Property names match without regard to case, as ARM reads them. A rule
// outside the subset azpolicy understands (see the package comment), a
// reference to an undeclared parameter, or an unknown mode is a
// *RuleError that names where it is. A policy set definition (an
// initiative) is refused with an error that says so.
func ParseDefinition(doc []byte) (*Definition, error) {
	var top struct {
		ID         string           `json:"id"`
		Name       string           `json:"name"`
		Properties *definitionProps `json:"properties"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("decoding policy definition: %w", err)
	}
	props := top.Properties
	if props == nil { // the properties object alone
		props = &definitionProps{}
		if err := json.Unmarshal(doc, props); err != nil {
			return nil, fmt.Errorf("decoding policy definition: %w", err)
		}
	}
	d := &Definition{ID: top.ID, Name: top.Name, DisplayName: props.DisplayName, PolicyType: props.PolicyType}
	if d.Name == "" && d.ID != "" {
		d.Name = armid.Name(d.ID)
	}
	if len(props.PolicyDefinitions) > 0 && len(props.PolicyRule) == 0 {
		return nil, fmt.Errorf("policy definition %s is a policy set definition (an initiative): not supported", cmp.Or(d.ID, d.Name))
	}
	if err := d.compile(props); err != nil {
		return nil, err
	}
	return d, nil
}

// compile checks the mode, parameters and rule against the subset.
func (d *Definition) compile(p *definitionProps) error {
	switch {
	case p.Mode == "" || strings.EqualFold(p.Mode, ModeIndexed):
		d.Mode = ModeIndexed // Azure's default
	case strings.EqualFold(p.Mode, ModeAll):
		d.Mode = ModeAll
	default:
		return ruleErr("mode", "%q is not All or Indexed (resource provider modes are not supported)", p.Mode)
	}
	d.Parameters = map[string]Parameter{}
	for _, name := range sortedKeys(p.Parameters) {
		var raw struct {
			Type          string          `json:"type"`
			DefaultValue  json.RawMessage `json:"defaultValue"`
			AllowedValues []any           `json:"allowedValues"`
		}
		if err := json.Unmarshal(p.Parameters[name], &raw); err != nil {
			return ruleErr("parameters."+name, "%v", err)
		}
		switch strings.ToLower(raw.Type) {
		case "string", "array", "object", "boolean", "integer", "float", "datetime":
		default:
			return ruleErr("parameters."+name+".type", "%q is not String, Array, Object, Boolean, Integer, Float or DateTime", raw.Type)
		}
		prm := Parameter{Type: raw.Type, AllowedValues: raw.AllowedValues}
		if len(raw.DefaultValue) > 0 {
			if err := json.Unmarshal(raw.DefaultValue, &prm.DefaultValue); err != nil {
				return ruleErr("parameters."+name+".defaultValue", "%v", err)
			}
			prm.HasDefault = true
		}
		d.Parameters[name] = prm
	}
	var rule map[string]any
	if err := json.Unmarshal(p.PolicyRule, &rule); err != nil || rule == nil {
		return ruleErr("", "properties.policyRule must be an object with if and then")
	}
	var ifc, then any
	for _, k := range sortedKeys(rule) {
		switch strings.ToLower(k) {
		case "if":
			ifc = rule[k]
		case "then":
			then = rule[k]
		default:
			return ruleErr("policyRule."+k, "a policy rule has if and then only")
		}
	}
	if ifc == nil || then == nil {
		return ruleErr("", "a policy rule needs if and then")
	}
	refs := map[string]string{}
	c, err := compileCond(ifc, "if", refs)
	if err != nil {
		return err
	}
	tm, _ := then.(map[string]any)
	effect := Field(tm, "effect")
	switch e := effect.(type) {
	case nil:
		return ruleErr("then.effect", "is missing")
	case string:
		if name, ok := paramRef(e); ok {
			refs[name] = "then.effect"
		} else if canonicalEffect(e) == "" {
			return ruleErr("then.effect", "%q is not an effect of Azure Policy", e)
		}
	default:
		return ruleErr("then.effect", "must be a string")
	}
	for _, name := range sortedKeys(refs) {
		if _, ok := d.param(name); !ok {
			return ruleErr(refs[name], "parameter '%s' is not declared in the definition's parameters", name)
		}
	}
	d.cond, d.effect = c, effect
	return nil
}

// effects are Azure Policy's effects, as Azure spells them.
var effects = []string{"Deny", "Audit", "Disabled", "AuditIfNotExists", "DeployIfNotExists", "Append", "Modify", "DenyAction", "Manual"}

// canonicalEffect is Azure's spelling of an effect, "" when it is none.
func canonicalEffect(s string) string {
	for _, e := range effects {
		if strings.EqualFold(e, strings.TrimSpace(s)) {
			return e
		}
	}
	return ""
}

// param finds a declared parameter; names compare without regard to case.
func (d *Definition) param(name string) (Parameter, bool) {
	if p, ok := d.Parameters[name]; ok {
		return p, true
	}
	for k, p := range d.Parameters {
		if strings.EqualFold(k, name) {
			return p, true
		}
	}
	return Parameter{}, false
}

// ParameterValue is the value of a parameter for an assignment: the
// assignment's, else the definition's default. Names compare without
// regard to case. ok is false when there is neither.
func (d *Definition) ParameterValue(a *Assignment, name string) (v any, ok bool) {
	if a != nil {
		for k, v := range a.Parameters {
			if strings.EqualFold(k, name) {
				return v, true
			}
		}
	}
	if p, ok := d.param(name); ok && p.HasDefault {
		return p.DefaultValue, true
	}
	return nil, false
}

// CheckParameters compares an assignment's parameters with the
// definition's: missing are declared parameters with no value and no
// default, undefined are values the definition does not declare (ARM
// refuses both when the assignment is written). Both sorted.
func (d *Definition) CheckParameters(a *Assignment) (missing, undefined []string) {
	for _, name := range sortedKeys(d.Parameters) {
		if _, ok := d.ParameterValue(a, name); !ok {
			missing = append(missing, name)
		}
	}
	for _, name := range sortedKeys(a.Parameters) {
		if _, ok := d.param(name); !ok {
			undefined = append(undefined, name)
		}
	}
	return missing, undefined
}

// Effect is the definition's effect for an assignment, in Azure's
// spelling (Deny, Audit, Disabled...), its parameter resolved.
func (d *Definition) Effect(a *Assignment) (string, error) {
	s, _ := d.effect.(string)
	if name, ok := paramRef(s); ok {
		v, ok := d.ParameterValue(a, name)
		if !ok {
			return "", d.missingParam(a, name)
		}
		s, _ = v.(string)
		if canonicalEffect(s) == "" {
			return "", fmt.Errorf("policy definition %s: the effect parameter '%s' is %v, not an effect of Azure Policy", d.label(), name, v)
		}
	}
	return canonicalEffect(s), nil
}

// ErrMissingParameter: a rule refers to a parameter that neither the
// assignment nor the definition's default gives a value.
var ErrMissingParameter = errors.New("policy parameter without a value")

func (d *Definition) missingParam(a *Assignment, name string) error {
	return fmt.Errorf("policy assignment %s of definition %s: parameter '%s' has no value and no default: %w",
		a.label(), d.label(), name, ErrMissingParameter)
}

func (d *Definition) label() string { return cmp.Or(d.ID, d.Name, "(unnamed)") }
