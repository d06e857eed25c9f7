package armtemplate

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Values in this package are JSON-shaped: nil, bool, int64, float64, string,
// []any and map[string]any. ARM property names are case-insensitive on
// lookup; their spelling is kept as written.

// unresolvedValue stands, in what-if, for a value that needs the runtime
// state of a resource this deployment has not deployed yet. Any function
// given one returns one; a template string whose expression ends up
// unresolved keeps its expression text.
type unresolvedValue struct{}

var unresolved = &unresolvedValue{}

func isUnresolved(v any) bool { _, ok := v.(*unresolvedValue); return ok }

// typeName is ARM's name for a value's type, as its error messages use.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "Null"
	case bool:
		return "Boolean"
	case int64:
		return "Integer"
	case float64:
		return "Float"
	case string:
		return "String"
	case []any:
		return "Array"
	case map[string]any:
		return "Object"
	}
	return "Unknown"
}

// lookup finds key in m: exactly first, then regardless of case.
func lookup(m map[string]any, key string) (any, string, bool) {
	if v, ok := m[key]; ok {
		return v, key, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, k, true
		}
	}
	return nil, "", false
}

// sortedKeys returns m's keys in a stable order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normalize turns what encoding/json or a caller produced (float64 numbers,
// json.Number, []map, int) into this package's value shapes.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, string:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case float32:
		return normalize(float64(x))
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	}
	// Anything else goes through JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return nil
	}
	return normalize(out)
}

// deepCopy copies arrays and objects so evaluation never aliases the
// template or the caller's values.
func deepCopy(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	}
	return v
}

// deepEqual is ARM's equals(): same type and same value; numbers compare
// by value across int and float.
func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !deepEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// compactJSON renders v as ARM's string() does: compact JSON, no HTML
// escaping. Object members come out in sorted key order.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// stringOf is string(): strings as they are, booleans as .NET prints them
// (True, False), numbers in invariant form, arrays and objects as compact
// JSON.
func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return compactJSON(v)
}
