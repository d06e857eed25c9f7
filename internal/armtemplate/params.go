package armtemplate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func sortStrings(s []string) { sort.Strings(s) }

// checkParameter converts v to the parameter's declared type and checks
// allowedValues, minValue/maxValue and minLength/maxLength.
func checkParameter(name string, def map[string]any, v any, line, col int) (any, error) {
	bad := func(format string, args ...any) error {
		return &Error{Code: CodeInvalidTemplate, Line: line, Column: col, Message: sprintf(
			"The provided value for the template parameter '%s' at line '%d' and column '%d' is not valid. ", name, line, col) + sprintf(format, args...)}
	}
	typ := strings.ToLower(fieldString(def, "type"))
	switch typ {
	case "string", "securestring":
		if _, ok := v.(string); !ok {
			return nil, bad("Template parameter JToken type is not valid. Expected 'String'. Actual '%s'.", typeName(v))
		}
	case "int":
		switch x := v.(type) {
		case int64:
		case float64:
			if x != float64(int64(x)) {
				return nil, bad("Template parameter JToken type is not valid. Expected 'Integer'. Actual 'Float'.")
			}
			v = int64(x)
		case string: // values given on a command line arrive as strings
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, bad("Template parameter JToken type is not valid. Expected 'Integer'. Actual 'String'.")
			}
			v = n
		default:
			return nil, bad("Template parameter JToken type is not valid. Expected 'Integer'. Actual '%s'.", typeName(v))
		}
	case "bool":
		switch x := v.(type) {
		case bool:
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				v = true
			case "false":
				v = false
			default:
				return nil, bad("Template parameter JToken type is not valid. Expected 'Boolean'. Actual 'String'.")
			}
		default:
			return nil, bad("Template parameter JToken type is not valid. Expected 'Boolean'. Actual '%s'.", typeName(v))
		}
	case "object", "secureobject":
		if _, ok := v.(map[string]any); !ok {
			return nil, bad("Template parameter JToken type is not valid. Expected 'Object'. Actual '%s'.", typeName(v))
		}
	case "array":
		if _, ok := v.([]any); !ok {
			return nil, bad("Template parameter JToken type is not valid. Expected 'Array'. Actual '%s'.", typeName(v))
		}
	default:
		return nil, &Error{Code: CodeInvalidTemplate, Line: line, Column: col, Message: sprintf(
			"The template parameter '%s' at line '%d' and column '%d' is not valid: the type '%s' is not one of string, securestring, int, bool, object, secureObject, array.", name, line, col, fieldString(def, "type"))}
	}
	if allowed, ok := field(def, "allowedValues").([]any); ok {
		vals := []any{v}
		if arr, isArr := v.([]any); isArr {
			vals = arr // every element of an array parameter must be allowed
		}
		for _, x := range vals {
			if !containsValue(allowed, x) {
				return nil, bad("The parameter value is not part of the allowed value(s): '%s'.", joinValues(allowed))
			}
		}
	}
	if n, ok := v.(int64); ok {
		if min, isInt := field(def, "minValue").(int64); isInt && n < min {
			return nil, bad("The provided value '%d' is less than the minimum value '%d'.", n, min)
		}
		if max, isInt := field(def, "maxValue").(int64); isInt && n > max {
			return nil, bad("The provided value '%d' is greater than the maximum value '%d'.", n, max)
		}
	}
	length := -1
	switch x := v.(type) {
	case string:
		length = len([]rune(x))
	case []any:
		length = len(x)
	}
	if length >= 0 {
		if min, isInt := field(def, "minLength").(int64); isInt && int64(length) < min {
			return nil, bad("The length of the provided value is '%d', which is less than the minimum length '%d'.", length, min)
		}
		if max, isInt := field(def, "maxLength").(int64); isInt && int64(length) > max {
			return nil, bad("The length of the provided value is '%d', which is greater than the maximum length '%d'.", length, max)
		}
	}
	return v, nil
}

func joinValues(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = stringOf(v)
	}
	return strings.Join(parts, ",")
}

// Parameters are the deployment's bound parameter values as ARM reports
// them on the deployment ({"name": {"type": "String", "value": v}}), in the
// template's spelling; a secure parameter's value is left out.
func (d *Deployment) Parameters() map[string]Output {
	f := d.f.scopeFrame()
	out := map[string]Output{}
	for _, name := range f.t.paramOrder() {
		def, realName, _ := f.t.paramDef(name)
		v, ok := f.params[strings.ToLower(name)]
		if !ok {
			continue
		}
		typ := strings.ToLower(fieldString(def, "type"))
		o := Output{Type: outputTypes[typ][0], Value: v}
		if strings.HasPrefix(typ, "secure") {
			o.Value = nil
		}
		out[realName] = o
	}
	return out
}
