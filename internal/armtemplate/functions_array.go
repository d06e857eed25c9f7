package armtemplate

import (
	"sort"
	"strings"
)

var arrayFunctions = map[string]function{
	"array":        fixed(1, fnArray),
	"createArray":  {0, -1, func(_ *evaluator, _ string, a []any) (any, error) { return append([]any{}, a...), nil }},
	"createObject": {0, -1, fnCreateObject},
	"union":        {1, -1, fnUnion},
	"intersection": {1, -1, fnIntersection},
	"contains":     fixed(2, fnContains),
	"empty":        fixed(1, fnEmpty),
	"first":        fixed(1, fnFirst),
	"last":         fixed(1, fnLast),
	"take":         fixed(2, fnTake),
	"skip":         fixed(2, fnSkip),
	"range":        fixed(2, fnRange),
	"length":       fixed(1, fnLength),
	"min":          {1, -1, fnMin},
	"max":          {1, -1, fnMax},
	"json":         fixed(1, fnJSON),
	"null":         fixed(0, func(*evaluator, string, []any) (any, error) { return nil, nil }),
	"items":        fixed(1, fnItems),
	"coalesce":     {1, -1, fnCoalesce},
	"join":         fixed(2, fnJoin),
}

func fnArray(_ *evaluator, _ string, args []any) (any, error) {
	if a, ok := args[0].([]any); ok {
		return a, nil
	}
	return []any{args[0]}, nil
}

func fnCreateObject(_ *evaluator, name string, args []any) (any, error) {
	if len(args)%2 != 0 {
		return nil, invalidf("The template language function 'createObject' must have an even number of parameters. %s", exprDocs)
	}
	out := map[string]any{}
	for i := 0; i < len(args); i += 2 {
		k, err := argString(name, args, i)
		if err != nil {
			return nil, err
		}
		out[k] = args[i+1]
	}
	return out, nil
}

// unionObjects merges b into a: later values win, objects present in both
// are merged recursively; arrays are replaced, not merged (as the ARM
// reference's deep-merge example shows).
func unionObjects(a, b map[string]any) map[string]any {
	out := deepCopy(a).(map[string]any)
	for k, v := range b {
		if old, key, ok := lookup(out, k); ok {
			om, ok1 := old.(map[string]any)
			nm, ok2 := v.(map[string]any)
			if ok1 && ok2 {
				out[key] = unionObjects(om, nm)
				continue
			}
			delete(out, key)
		}
		out[k] = deepCopy(v)
	}
	return out
}

func fnUnion(_ *evaluator, name string, args []any) (any, error) {
	switch first := args[0].(type) {
	case map[string]any:
		out := first
		for i, a := range args[1:] {
			m, ok := a.(map[string]any)
			if !ok {
				return nil, typeError(name, ordinal(i+1), "Object", a)
			}
			out = unionObjects(out, m)
		}
		return deepCopy(out), nil
	case []any:
		out := []any{}
		for i, a := range args {
			arr, ok := a.([]any)
			if !ok {
				return nil, typeError(name, ordinal(i), "Array", a)
			}
			for _, e := range arr {
				if !containsValue(out, e) {
					out = append(out, e)
				}
			}
		}
		return out, nil
	}
	return nil, typeError(name, "parameters", "Array or Object", args[0])
}

func containsValue(arr []any, v any) bool {
	for _, e := range arr {
		if deepEqual(e, v) {
			return true
		}
	}
	return false
}

func fnIntersection(_ *evaluator, name string, args []any) (any, error) {
	switch first := args[0].(type) {
	case map[string]any:
		out := map[string]any{}
	keys:
		for k, v := range first {
			for i, a := range args[1:] {
				m, ok := a.(map[string]any)
				if !ok {
					return nil, typeError(name, ordinal(i+1), "Object", a)
				}
				w, ok := m[k]
				if !ok || !deepEqual(v, w) {
					continue keys
				}
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := []any{}
	elems:
		for _, e := range first {
			for i, a := range args[1:] {
				arr, ok := a.([]any)
				if !ok {
					return nil, typeError(name, ordinal(i+1), "Array", a)
				}
				if !containsValue(arr, e) {
					continue elems
				}
			}
			if !containsValue(out, e) {
				out = append(out, e)
			}
		}
		return out, nil
	}
	return nil, typeError(name, "parameters", "Array or Object", args[0])
}

func fnContains(_ *evaluator, name string, args []any) (any, error) {
	switch c := args[0].(type) {
	case string:
		s, ok := args[1].(string)
		if !ok {
			s = stringOf(args[1])
		}
		return strings.Contains(c, s), nil
	case map[string]any:
		k, ok := args[1].(string)
		if !ok {
			return nil, typeError(name, "second parameter", "String", args[1])
		}
		_, _, found := lookup(c, k)
		return found, nil
	case []any:
		return containsValue(c, args[1]), nil
	}
	return nil, typeError(name, "first parameter", "String, Array or Object", args[0])
}

func fnEmpty(_ *evaluator, name string, args []any) (any, error) {
	switch c := args[0].(type) {
	case nil:
		return true, nil
	case string:
		return c == "", nil
	case []any:
		return len(c) == 0, nil
	case map[string]any:
		return len(c) == 0, nil
	}
	return nil, typeError(name, "first parameter", "String, Array or Object", args[0])
}

func fnFirst(_ *evaluator, name string, args []any) (any, error) {
	switch c := args[0].(type) {
	case string:
		r := []rune(c)
		if len(r) == 0 {
			return "", nil
		}
		return string(r[0]), nil
	case []any:
		if len(c) == 0 {
			return nil, nil
		}
		return c[0], nil
	}
	return nil, typeError(name, "first parameter", "String or Array", args[0])
}

func fnLast(_ *evaluator, name string, args []any) (any, error) {
	switch c := args[0].(type) {
	case string:
		r := []rune(c)
		if len(r) == 0 {
			return "", nil
		}
		return string(r[len(r)-1]), nil
	case []any:
		if len(c) == 0 {
			return nil, nil
		}
		return c[len(c)-1], nil
	}
	return nil, typeError(name, "first parameter", "String or Array", args[0])
}

func clamp(n int64, l int) int {
	if n < 0 {
		return 0
	}
	if n > int64(l) {
		return l
	}
	return int(n)
}

func fnTake(_ *evaluator, name string, args []any) (any, error) {
	n, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	switch c := args[0].(type) {
	case string:
		r := []rune(c)
		return string(r[:clamp(n, len(r))]), nil
	case []any:
		return append([]any{}, c[:clamp(n, len(c))]...), nil
	}
	return nil, typeError(name, "first parameter", "String or Array", args[0])
}

func fnSkip(_ *evaluator, name string, args []any) (any, error) {
	n, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	switch c := args[0].(type) {
	case string:
		r := []rune(c)
		return string(r[clamp(n, len(r)):]), nil
	case []any:
		return append([]any{}, c[clamp(n, len(c)):]...), nil
	}
	return nil, typeError(name, "first parameter", "String or Array", args[0])
}

func fnRange(_ *evaluator, name string, args []any) (any, error) {
	start, err := argInt(name, args, 0)
	if err != nil {
		return nil, err
	}
	count, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	if count < 0 || count > 10000 {
		return nil, invalidf("The template language function 'range' expects its second parameter to be a non-negative integer no greater than 10000; it is '%d'. %s", count, exprDocs)
	}
	if start+count > 2147483647 {
		return nil, invalidf("The template language function 'range' expects the sum of its parameters to be no greater than 2147483647. %s", exprDocs)
	}
	out := make([]any, count)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out, nil
}

func fnLength(_ *evaluator, name string, args []any) (any, error) {
	switch c := args[0].(type) {
	case string:
		return int64(len([]rune(c))), nil
	case []any:
		return int64(len(c)), nil
	case map[string]any:
		return int64(len(c)), nil
	}
	return nil, typeError(name, "first parameter", "String, Array or Object", args[0])
}

func numbersOf(name string, args []any) ([]any, error) {
	vals := args
	if len(args) == 1 {
		if arr, ok := args[0].([]any); ok {
			vals = arr
		}
	}
	if len(vals) == 0 {
		return nil, invalidf("The template language function '%s' expects at least one value. %s", name, exprDocs)
	}
	for i, v := range vals {
		switch v.(type) {
		case int64, float64:
		default:
			return nil, typeError(name, ordinal(i), "Integer", v)
		}
	}
	return vals, nil
}

func asFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

func fnMin(_ *evaluator, name string, args []any) (any, error) {
	vals, err := numbersOf(name, args)
	if err != nil {
		return nil, err
	}
	best := vals[0]
	for _, v := range vals[1:] {
		if asFloat(v) < asFloat(best) {
			best = v
		}
	}
	return best, nil
}

func fnMax(_ *evaluator, name string, args []any) (any, error) {
	vals, err := numbersOf(name, args)
	if err != nil {
		return nil, err
	}
	best := vals[0]
	for _, v := range vals[1:] {
		if asFloat(v) > asFloat(best) {
			best = v
		}
	}
	return best, nil
}

// fnJSON is json(): parses as Json.NET does, which accepts single-quoted
// strings.
func fnJSON(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	v, err := parseJSON(s, true, nil)
	if err != nil {
		return nil, invalidf("The template language function '%s' expects a valid JSON string: %s %s", name, err.(*Error).Message, exprDocs)
	}
	return v, nil
}

// fnItems is items(): the object's members as {key, value} objects, sorted
// by key (the reference's example shows item001 before item002 whatever the
// template's order).
func fnItems(_ *evaluator, name string, args []any) (any, error) {
	m, ok := args[0].(map[string]any)
	if !ok {
		return nil, typeError(name, "first parameter", "Object", args[0])
	}
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = map[string]any{"key": k, "value": m[k]}
	}
	return out, nil
}

func fnCoalesce(_ *evaluator, _ string, args []any) (any, error) {
	for _, a := range args {
		if a != nil {
			return a, nil
		}
	}
	return nil, nil
}

func fnJoin(_ *evaluator, name string, args []any) (any, error) {
	arr, ok := args[0].([]any)
	if !ok {
		return nil, typeError(name, "first parameter", "Array", args[0])
	}
	sep, err := argString(name, args, 1)
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(arr))
	for i, e := range arr {
		switch e.(type) {
		case []any, map[string]any:
			return nil, typeError(name, "first parameter", "Array of String", e)
		}
		parts[i] = stringOf(e)
	}
	return strings.Join(parts, sep), nil
}
