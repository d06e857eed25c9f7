package armtemplate

import (
	"fmt"
	"sort"
)

// Template is a parsed ARM JSON template. Section names are matched without
// regard to case ("Parameters" works), as ARM does.
type Template struct {
	parameters map[string]any
	variables  map[string]any
	resources  []any
	outputs    map[string]any
	raw        map[string]any
	// positions maps JSON pointers (with the template's own spelling of
	// section keys) to where each value starts; nil for inline templates.
	positions map[string]pos
	paramsKey string
	resKey    string
}

// Parse reads a template. A JSON syntax error is an *Error with the line
// and column of the fault.
func Parse(data []byte) (*Template, error) {
	positions := map[string]pos{}
	v, err := parseJSON(string(data), false, positions)
	if err != nil {
		ae := err.(*Error)
		return nil, &Error{Code: CodeInvalidTemplate, Line: ae.Line, Column: ae.Column, Err: ae,
			Message: "Deployment template parse failed: '" + ae.Message + "'."}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalidf("Deployment template parse failed: 'The template must be a JSON object; it is of type '%s'.'.", typeName(v))
	}
	return newTemplate(m, positions)
}

func newTemplate(m map[string]any, positions map[string]pos) (*Template, error) {
	t := &Template{raw: m, positions: positions}
	if lv, _, ok := lookup(m, "languageVersion"); ok {
		s, _ := lv.(string)
		if s != "1.0" {
			return nil, invalidf("The template language version '%v' is not supported by this engine: languageVersion 2.0 (symbolic-name resources, user-defined types) is not implemented; use a template without languageVersion.", lv)
		}
	}
	if fns, _, ok := lookup(m, "functions"); ok {
		if arr, isArr := fns.([]any); !isArr || len(arr) > 0 {
			return nil, invalidf("The template section 'functions' is not supported by this engine: user-defined functions are not implemented.")
		}
	}
	if defs, _, ok := lookup(m, "definitions"); ok {
		if o, isObj := defs.(map[string]any); !isObj || len(o) > 0 {
			return nil, invalidf("The template section 'definitions' is not supported by this engine: user-defined types are not implemented.")
		}
	}
	var err error
	if t.parameters, t.paramsKey, err = section(m, "parameters"); err != nil {
		return nil, err
	}
	if t.variables, _, err = section(m, "variables"); err != nil {
		return nil, err
	}
	if t.outputs, _, err = section(m, "outputs"); err != nil {
		return nil, err
	}
	if r, key, ok := lookup(m, "resources"); ok && r != nil {
		switch rs := r.(type) {
		case []any:
			t.resources, t.resKey = rs, key
		case map[string]any:
			return nil, invalidf("The template 'resources' is an object of symbolic names, which needs languageVersion 2.0; symbolic-name resources are not supported by this engine.")
		default:
			return nil, invalidf("The template 'resources' must be an array; it is of type '%s'.", typeName(r))
		}
	}
	return t, nil
}

func section(m map[string]any, name string) (map[string]any, string, error) {
	v, key, ok := lookup(m, name)
	if !ok || v == nil {
		return map[string]any{}, name, nil
	}
	o, isObj := v.(map[string]any)
	if !isObj {
		return nil, "", invalidf("The template '%s' section must be an object; it is of type '%s'.", name, typeName(v))
	}
	return o, key, nil
}

// at returns the line and column of a JSON pointer, 0 when unknown.
func (t *Template) at(pointer string) (int, int) {
	if p, ok := t.positions[pointer]; ok {
		return p.line, p.col
	}
	return 0, 0
}

func (t *Template) paramPos(name string) (int, int) {
	return t.at("/" + escapePointer(t.paramsKey) + "/" + escapePointer(name))
}

// ParameterNames lists the template's parameters in a stable order.
func (t *Template) ParameterNames() []string { return sortedKeys(t.parameters) }

func (t *Template) paramDef(name string) (map[string]any, string, bool) {
	v, key, ok := lookup(t.parameters, name)
	if !ok {
		return nil, "", false
	}
	def, _ := v.(map[string]any)
	return def, key, true
}

// paramOrder is the template's parameters in the order they are written.
func (t *Template) paramOrder() []string {
	names := sortedKeys(t.parameters)
	sort.SliceStable(names, func(i, j int) bool {
		li, ci := t.paramPos(names[i])
		lj, cj := t.paramPos(names[j])
		return li < lj || li == lj && ci < cj
	})
	return names
}

// field reads a member of a template object without regard to case.
func field(m map[string]any, name string) any {
	v, _, _ := lookup(m, name)
	return v
}

func fieldString(m map[string]any, name string) string {
	s, _ := field(m, name).(string)
	return s
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
