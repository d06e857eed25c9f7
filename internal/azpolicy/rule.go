package azpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azrbac"
)

// operators are the condition operators of the subset, spelled as Azure
// documents them.
var operators = []string{"equals", "notEquals", "in", "notIn", "exists", "like", "notLike", "contains", "notContains"}

// RuleError is a policy definition azpolicy cannot compile: malformed, or
// outside the subset it understands. Path says where, relative to the
// definition's properties.policyRule for the rule ("if.allOf[1].field",
// "then.effect") and to its properties otherwise ("mode",
// "parameters.effect.type").
type RuleError struct {
	Path string
	Msg  string
	// Alias is the field as written when the problem is a field that is no
	// alias azpolicy knows (Azure's InvalidPolicyAlias), "" otherwise.
	Alias string
}

func (e *RuleError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func ruleErr(path, format string, args ...any) *RuleError {
	return &RuleError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// cond is a compiled condition: exactly one of allOf, anyOf, not, or a
// field with an operator.
type cond struct {
	allOf, anyOf []*cond
	not          *cond
	field        string // as written
	op           string // one of operators
	value        any    // may be "[parameters('x')]"
}

var paramRE = regexp.MustCompile(`^\[\s*parameters\(\s*'([^']+)'\s*\)\s*\]$`)

// paramRef returns the parameter a value refers to ("[parameters('x')]").
func paramRef(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	m := paramRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// compileCond parses a condition; at is its path in the rule ("if",
// "if.allOf[0]", ...). params receives every parameter referenced.
func compileCond(v any, at string, params map[string]string) (*cond, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ruleErr(at, "a condition must be an object")
	}
	c := &cond{}
	for _, k := range sortedKeys(m) {
		val := m[k]
		switch kl := strings.ToLower(k); {
		case kl == "allof" || kl == "anyof":
			list, ok := val.([]any)
			if !ok || len(list) == 0 {
				return nil, ruleErr(at+"."+k, "must be a non-empty list of conditions")
			}
			for i, e := range list {
				sub, err := compileCond(e, fmt.Sprintf("%s.%s[%d]", at, k, i), params)
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
			sub, err := compileCond(val, at+".not", params)
			if err != nil {
				return nil, err
			}
			c.not = sub
		case kl == "field":
			f, ok := val.(string)
			if !ok {
				return nil, ruleErr(at+".field", "must be a string")
			}
			if err := checkField(f, at+".field"); err != nil {
				return nil, err
			}
			c.field = f
		default:
			i := slices.IndexFunc(operators, func(o string) bool { return strings.EqualFold(o, k) })
			if i < 0 {
				return nil, ruleErr(at, "%q is not supported; routekeeper understands allOf, anyOf, not, field and the operators %s", k, strings.Join(operators, ", "))
			}
			if c.op != "" {
				return nil, ruleErr(at, "a condition has one operator, not %s and %s", c.op, operators[i])
			}
			c.op, c.value = operators[i], val
			if name, ok := paramRef(val); ok {
				params[name] = at + "." + k
			}
		}
	}
	kinds := 0
	for _, b := range []bool{len(c.allOf) > 0, len(c.anyOf) > 0, c.not != nil, c.field != "" || c.op != ""} {
		if b {
			kinds++
		}
	}
	_, isParam := paramRef(c.value)
	switch {
	case kinds != 1:
		return nil, ruleErr(at, "a condition is exactly one of allOf, anyOf, not, or field with an operator")
	case (c.field == "") != (c.op == ""):
		return nil, ruleErr(at, "a field condition needs field and one operator")
	case c.op == "exists" && !isParam:
		switch v := c.value.(type) {
		case bool:
		case string:
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return nil, ruleErr(at+".exists", "%q is not true or false", v)
			}
		default:
			return nil, ruleErr(at+".exists", "%v is not true or false", v)
		}
	case (c.op == "in" || c.op == "notIn") && !isParam:
		if _, ok := c.value.([]any); !ok {
			return nil, ruleErr(at+"."+c.op, "must be a list")
		}
	}
	return c, nil
}

// checkField accepts the fields of the subset.
func checkField(f, at string) error {
	lf := strings.ToLower(f)
	switch {
	case lf == "type" || lf == "name" || lf == "location" || lf == "id" || lf == "kind" || lf == "tags":
		return nil
	case strings.HasPrefix(lf, "tags[") || strings.HasPrefix(lf, "tags."):
		if tagName(f) == "" {
			return ruleErr(at, "%q: write tags['name'] or tags.name", f)
		}
		return nil
	case strings.HasPrefix(f, "["):
		return ruleErr(at, "%q: expressions in field are not supported by routekeeper", f)
	}
	if _, ok := aliases[lf]; ok {
		return nil
	}
	return &RuleError{Path: at, Alias: f, Msg: fmt.Sprintf(
		"the 'field' property '%s' of the policy rule doesn't exist as an alias routekeeper knows; it knows type, name, location, id, kind, tags, tags['name'] and %s",
		f, strings.Join(aliasNames(), ", "))}
}

// tagName is the tag a tags['k'] or tags.k field names, "" when malformed.
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

// Expression is one field condition evaluated on a resource, as ARM
// reports it in a refusal's evaluationDetails.evaluatedExpressions.
type Expression struct {
	// Field is the condition's field as written (ARM's "expression").
	Field string
	// Path is what the field read in the resource document, e.g.
	// properties.routes[*].properties.nextHopType; "" for an alias of
	// another resource type.
	Path string
	// Operator as Azure names it: Equals, NotEquals, In, ...
	Operator string
	// Value is the field's value: nil when missing, every member for a
	// [*] alias (a list, possibly empty).
	Value any
	// Target is the condition's value, parameters resolved.
	Target any
	// Result is whether the condition held.
	Result bool
}

// evaluator evaluates conditions on one resource document with an
// assignment's parameters, and keeps the expressions it evaluated.
type evaluator struct {
	doc       map[string]any
	param     func(name string) (any, error)
	evaluated []Expression
	err       error
}

func (e *evaluator) eval(c *cond) bool {
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
	target := c.value
	if name, ok := paramRef(c.value); ok {
		v, err := e.param(name)
		if err != nil && e.err == nil {
			e.err = err
		}
		target = v
	}
	values, array, path := e.field(c.field)
	var shown any
	result := true
	if array {
		for _, v := range values { // every member; true for none
			if !compare(c.op, v, target) {
				result = false
				break
			}
		}
		shown = values
	} else {
		if len(values) > 0 {
			shown = values[0]
		}
		result = compare(c.op, shown, target)
	}
	e.evaluated = append(e.evaluated, Expression{Field: c.field, Path: path, Operator: strings.ToUpper(c.op[:1]) + c.op[1:],
		Value: shown, Target: target, Result: result})
	return result
}

// field returns the values of a field in the document: one value (nil
// when missing) for a plain field, every member for a [*] alias (array
// true), and the path it read.
func (e *evaluator) field(f string) (values []any, array bool, path string) {
	lf := strings.ToLower(f)
	switch {
	case lf == "type" || lf == "name" || lf == "location" || lf == "id" || lf == "kind":
		v := fold(e.doc, lf)
		if s, ok := v.(string); ok && lf == "location" {
			v = normalizeLocation(s)
		}
		return []any{v}, false, lf
	case lf == "tags":
		return []any{fold(e.doc, "tags")}, false, "tags"
	case strings.HasPrefix(lf, "tags"):
		name := tagName(f)
		tags, _ := fold(e.doc, "tags").(map[string]any)
		return []any{fold(tags, name)}, false, "tags." + name
	}
	a, ok := aliases[lf]
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

// compare applies an operator to a value and the condition's target. A
// missing value (nil) equals nothing, is in nothing, is like nothing and
// contains nothing.
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
// case, anything else by its JSON (so true equals "true", 4 equals "4").
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

// fold returns m[key] with the key matched without regard to case, as
// ARM reads JSON.
func fold(m map[string]any, key string) any {
	if m == nil {
		return nil
	}
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// normalizeLocation is a location as ARM stores it: "East US" is eastus.
func normalizeLocation(loc string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(loc), " ", ""))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
