package fabric

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azrbac"
)

// Azure Policy, the part a deny policy needs: a policy definition's rule
// ({"if": <condition>, "then": {"effect": "deny"}}) over a small,
// documented subset of the policy language, evaluated when a resource is
// written (PUT, PATCH) at or under an assignment's scope.
//
// Supported: the logical operators allOf, anyOf and not; field conditions
// with equals, notEquals, in, notIn, exists, like, notLike, contains and
// notContains; the fields type, name, location, id, kind, tags, tags['k']
// (and tags.k), and the aliases in policyAliases; parameter references
// "[parameters('name')]" as a condition's value and as the effect. An
// alias with [*] is evaluated for every member of the array, and the
// condition holds when it holds for all of them (so for an empty array),
// as Azure documents (author-policies-for-arrays). Effects other than deny
// are stored and never enforced. Anything else is refused when the
// definition is written (400 InvalidPolicyRule, InvalidPolicyAlias).

// policyOperators are the condition operators of the subset.
var policyOperators = []string{"equals", "notEquals", "in", "notIn", "exists", "like", "notLike", "contains", "notContains"}

// policyCond is a compiled condition.
type policyCond struct {
	allOf, anyOf []*policyCond
	not          *policyCond
	field        string // as written
	op           string // one of policyOperators, spelled as there
	value        any    // may be "[parameters('x')]"
}

var paramRE = regexp.MustCompile(`^\[\s*parameters\(\s*'([^']+)'\s*\)\s*\]$`)

// compileCond parses a condition; at is its path in the rule ("if", "if.allOf[0]", ...).
func compileCond(v any, at string) (*policyCond, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a condition must be an object", at)
	}
	c := &policyCond{}
	for k, val := range m {
		switch kl := strings.ToLower(k); {
		case kl == "allof" || kl == "anyof":
			list, ok := val.([]any)
			if !ok || len(list) == 0 {
				return nil, fmt.Errorf("%s.%s: must be a non-empty list of conditions", at, k)
			}
			for i, e := range list {
				sub, err := compileCond(e, fmt.Sprintf("%s.%s[%d]", at, k, i))
				if err != nil {
					return nil, err
				}
				if kl == "allof" {
					c.allOf = append(c.allOf, sub)
				} else {
					c.anyOf = append(c.anyOf, sub)
				}
			}
		case kl == "not":
			sub, err := compileCond(val, at+".not")
			if err != nil {
				return nil, err
			}
			c.not = sub
		case kl == "field":
			f, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("%s.field: must be a string", at)
			}
			if err := checkField(f); err != nil {
				return nil, fmt.Errorf("%s.field: %w", at, err)
			}
			c.field = f
		default:
			i := slices.IndexFunc(policyOperators, func(o string) bool { return strings.EqualFold(o, k) })
			if i < 0 {
				return nil, fmt.Errorf("%s: %q is not supported; the fabric understands allOf, anyOf, not, field and the operators %s", at, k, strings.Join(policyOperators, ", "))
			}
			if c.op != "" {
				return nil, fmt.Errorf("%s: a condition has one operator, not %s and %s", at, c.op, policyOperators[i])
			}
			c.op, c.value = policyOperators[i], val
		}
	}
	kinds := 0
	for _, b := range []bool{len(c.allOf) > 0, len(c.anyOf) > 0, c.not != nil, c.field != "" || c.op != ""} {
		if b {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		return nil, fmt.Errorf("%s: a condition is exactly one of allOf, anyOf, not, or field with an operator", at)
	case (c.field == "") != (c.op == ""):
		return nil, fmt.Errorf("%s: a field condition needs field and one operator", at)
	case c.op == "exists":
		if s, ok := c.value.(string); ok && !paramRE.MatchString(s) && !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			return nil, fmt.Errorf("%s.exists: %q is not true or false", at, s)
		}
	case c.op == "in" || c.op == "notIn":
		if _, ok := c.value.([]any); !ok && !isParamRef(c.value) {
			return nil, fmt.Errorf("%s.%s: must be a list", at, c.op)
		}
	}
	return c, nil
}

func isParamRef(v any) bool {
	s, ok := v.(string)
	return ok && paramRE.MatchString(s)
}

// checkField accepts the fields of the subset.
func checkField(f string) error {
	lf := strings.ToLower(f)
	switch {
	case lf == "type" || lf == "name" || lf == "location" || lf == "id" || lf == "kind" || lf == "tags":
		return nil
	case strings.HasPrefix(lf, "tags[") || strings.HasPrefix(lf, "tags."):
		if tagName(f) == "" {
			return fmt.Errorf("%q: write tags['name'] or tags.name", f)
		}
		return nil
	case strings.HasPrefix(f, "["):
		return fmt.Errorf("%q: expressions in field are not supported by the fabric", f)
	}
	if _, ok := policyAliases[lf]; ok {
		return nil
	}
	return &aliasError{field: f}
}

// aliasError is a field that is no alias the fabric knows.
type aliasError struct{ field string }

func (e *aliasError) Error() string {
	var known []string
	for _, a := range policyAliases {
		known = append(known, a.name)
	}
	slices.Sort(known)
	return fmt.Sprintf("the 'field' property '%s' of the policy rule doesn't exist as an alias the routekeeper fabric knows; it knows type, name, location, id, kind, tags, tags['name'] and %s", e.field, strings.Join(known, ", "))
}

func tagName(f string) string {
	rest := f[len("tags"):]
	switch {
	case strings.HasPrefix(rest, "."):
		return rest[1:]
	case strings.HasPrefix(rest, "['") && strings.HasSuffix(rest, "']"):
		return rest[2 : len(rest)-2]
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]"):
		return rest[1 : len(rest)-1]
	}
	return ""
}

// policyEval evaluates conditions on one resource document with an
// assignment's parameters, and keeps the expressions it evaluated for the
// error's evaluationDetails.
type policyEval struct {
	doc       map[string]any
	params    func(name string) (any, bool)
	evaluated []map[string]any
}

func (e *policyEval) eval(c *policyCond) bool {
	switch {
	case len(c.allOf) > 0:
		for _, s := range c.allOf {
			if !e.eval(s) {
				return false
			}
		}
		return true
	case len(c.anyOf) > 0:
		for _, s := range c.anyOf {
			if e.eval(s) {
				return true
			}
		}
		return false
	case c.not != nil:
		return !e.eval(c.not)
	}
	target := e.resolve(c.value)
	values, array, path := e.field(c.field)
	result := true
	if array {
		for _, v := range values { // every member; true for none
			if !compare(c.op, v, target) {
				result = false
				break
			}
		}
	} else {
		var v any
		if len(values) > 0 {
			v = values[0]
		}
		result = compare(c.op, v, target)
	}
	var shown any = values
	if !array {
		shown = nil
		if len(values) > 0 {
			shown = values[0]
		}
	}
	e.evaluated = append(e.evaluated, map[string]any{
		"result": strings.ToUpper(fmt.Sprint(result)[:1]) + fmt.Sprint(result)[1:], "expressionKind": "Field",
		"expression": c.field, "path": path, "expressionValue": shown, "targetValue": target,
		"operator": strings.ToUpper(c.op[:1]) + c.op[1:],
	})
	return result
}

// resolve replaces a parameter reference by its value.
func (e *policyEval) resolve(v any) any {
	if s, ok := v.(string); ok {
		if m := paramRE.FindStringSubmatch(s); m != nil {
			if pv, ok := e.params(m[1]); ok {
				return pv
			}
			return nil
		}
	}
	return v
}

// field returns the values of a field in the document: one value (nil
// when missing) for a plain field, every member for a [*] alias (array
// true), and the path it read.
func (e *policyEval) field(f string) (values []any, array bool, path string) {
	lf := strings.ToLower(f)
	switch {
	case lf == "type" || lf == "name" || lf == "location" || lf == "id" || lf == "kind":
		v := fold(e.doc, lf)
		if lf == "location" {
			if s, ok := v.(string); ok {
				v = normalizeLocation(s)
			}
		}
		return []any{v}, false, lf
	case lf == "tags":
		return []any{fold(e.doc, "tags")}, false, "tags"
	case strings.HasPrefix(lf, "tags"):
		name := tagName(f)
		tags, _ := fold(e.doc, "tags").(map[string]any)
		return []any{fold(tags, name)}, false, "tags." + name
	}
	a, ok := policyAliases[lf]
	typ, _ := fold(e.doc, "type").(string)
	if !ok || !strings.EqualFold(typ, a.resourceType) {
		return []any{nil}, false, ""
	}
	vals, arr := walkPath(e.doc, strings.Split(a.path, "."))
	return vals, arr, a.path
}

// walkPath follows a dotted path; a segment ending in [*] fans out over
// an array.
func walkPath(v any, segs []string) ([]any, bool) {
	if len(segs) == 0 {
		return []any{v}, false
	}
	seg := segs[0]
	star := strings.HasSuffix(seg, "[*]")
	m, _ := v.(map[string]any)
	next := fold(m, strings.TrimSuffix(seg, "[*]"))
	if !star {
		return walkPath(next, segs[1:])
	}
	list, _ := next.([]any)
	out := []any{}
	for _, item := range list {
		vals, _ := walkPath(item, segs[1:])
		out = append(out, vals...)
	}
	return out, true
}

// compare applies an operator to a value and the condition's target.
func compare(op string, v, target any) bool {
	switch op {
	case "equals":
		return v != nil && sameValue(v, target)
	case "notEquals":
		return v == nil || !sameValue(v, target)
	case "in", "notIn":
		list, _ := target.([]any)
		in := v != nil && slices.ContainsFunc(list, func(t any) bool { return sameValue(v, t) })
		return in == (op == "in")
	case "exists":
		want := strings.EqualFold(fmt.Sprint(target), "true")
		return (v != nil) == want
	case "like", "notLike":
		s, ok := v.(string)
		like := ok && azrbac.Match(fmt.Sprint(target), s)
		return like == (op == "like")
	case "contains", "notContains":
		s, ok := v.(string)
		has := ok && strings.Contains(strings.ToLower(s), strings.ToLower(fmt.Sprint(target)))
		return has == (op == "contains")
	}
	return false
}

// sameValue compares as Azure Policy does: strings without regard to
// case, anything else by its JSON.
func sameValue(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.EqualFold(as, bs)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) || strings.EqualFold(strings.Trim(string(ja), `"`), strings.Trim(string(jb), `"`))
}

// --- definitions and assignments ---

// policyDefinition is a stored policy definition with its compiled rule.
type policyDefinition struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Type       string              `json:"type"`
	Properties policyDefProperties `json:"properties"`

	cond   *policyCond
	effect any
}

type policyDefProperties struct {
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
func decodePolicyDefinition(doc []byte) (*policyDefinition, error) {
	var d policyDefinition
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decoding policy definition: %w", err)
	}
	if err := d.compile(); err != nil {
		return nil, err
	}
	return &d, nil
}

// compile checks the rule against the supported subset.
func (d *policyDefinition) compile() error {
	var rule map[string]any
	if err := json.Unmarshal(d.Properties.PolicyRule, &rule); err != nil || rule == nil {
		return errPolicyRule("properties.policyRule must be an object with if and then")
	}
	var ifc, then any
	for k, v := range rule {
		switch strings.ToLower(k) {
		case "if":
			ifc = v
		case "then":
			then = v
		default:
			return errPolicyRule("policyRule.%s: a policy rule has if and then only", k)
		}
	}
	if ifc == nil || then == nil {
		return errPolicyRule("a policy rule needs if and then")
	}
	c, err := compileCond(ifc, "if")
	if err != nil {
		var ae *aliasError
		if errors.As(err, &ae) {
			return newError(http.StatusBadRequest, "InvalidPolicyAlias", "The policy definition '%s' rule is invalid. %v", d.Name, err)
		}
		return errPolicyRule("%v", err)
	}
	tm, _ := then.(map[string]any)
	effect := fold(tm, "effect")
	if effect == nil {
		return errPolicyRule("then.effect is missing")
	}
	if s, ok := effect.(string); ok && !isParamRef(s) {
		switch strings.ToLower(s) {
		case "deny", "audit", "disabled", "auditifnotexists", "deployifnotexists", "append", "modify", "denyaction", "manual":
		default:
			return errPolicyRule("then.effect %q is not an effect of Azure Policy", s)
		}
	}
	for name, p := range d.Properties.Parameters {
		switch strings.ToLower(p.Type) {
		case "string", "array", "object", "boolean", "integer", "float", "datetime":
		default:
			return errPolicyRule("parameters.%s.type %q is not String, Array, Object, Boolean, Integer, Float or DateTime", name, p.Type)
		}
	}
	d.cond, d.effect = c, effect
	return nil
}

func errPolicyRule(format string, args ...any) *apiError {
	return badRequest("InvalidPolicyRule", "Failed to parse policy rule: "+format, args...)
}

// policyAssignment is a stored policy assignment.
type policyAssignment struct {
	ID         string                     `json:"id"`
	Name       string                     `json:"name"`
	Type       string                     `json:"type"`
	Location   string                     `json:"location,omitempty"`
	Properties policyAssignmentProperties `json:"properties"`
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

// param returns a parameter's value: the assignment's, else the
// definition's default.
func (a *policyAssignment) param(d *policyDefinition, name string) (any, bool) {
	for k, v := range a.Properties.Parameters {
		if strings.EqualFold(k, name) {
			return v.Value, true
		}
	}
	for k, p := range d.Properties.Parameters {
		if strings.EqualFold(k, name) && len(p.DefaultValue) > 0 {
			var v any
			if json.Unmarshal(p.DefaultValue, &v) == nil {
				return v, true
			}
		}
	}
	return nil, false
}

// applies reports whether the assignment covers a resource ID: at or
// under its scope, not under one of its notScopes, enforced.
func (a *policyAssignment) applies(id string) bool {
	if strings.EqualFold(a.Properties.EnforcementMode, "DoNotEnforce") || !azrbac.ScopeContains(a.Properties.Scope, id) {
		return false
	}
	return !slices.ContainsFunc(a.Properties.NotScopes, func(s string) bool { return azrbac.ScopeContains(s, id) })
}

// indexedTypes are the types the fabric serves that support tags and a
// location: the only ones a policy of mode Indexed evaluates.
func indexedType(typ string) bool {
	switch strings.ToLower(typ) {
	case "microsoft.network/routetables", "microsoft.network/virtualnetworks", "microsoft.network/networkinterfaces",
		"microsoft.network/natgateways", "microsoft.network/networkwatchers", "microsoft.network/networksecuritygroups",
		"microsoft.resources/subscriptions/resourcegroups":
		return true
	}
	return false
}
