package armtemplate

import (
	"context"
	"strings"
)

// evalMode says what evaluation may touch.
type evalMode int

const (
	// modeStatic evaluates what is known before anything is deployed:
	// names, types, copy counts, dependsOn. reference() is an error.
	modeStatic evalMode = iota
	// modeDeploy resolves reference() against deployed state.
	modeDeploy
	// modeWhatIf resolves reference() to resources outside this deployment
	// and leaves the rest unresolved.
	modeWhatIf
)

// evaluator evaluates template values in one frame (a template with its
// parameters and variables) and one copy context.
type evaluator struct {
	ctx  context.Context
	f    *frame
	mode evalMode
	// copy maps a loop name (lower case) to its current index; "" is the
	// loop of the resource or output being evaluated.
	copy map[string]int
	// where names the location for messages: "parameter default",
	// "variables", "resource", "output".
	where string
}

func (ev *evaluator) with(copy map[string]int) *evaluator {
	c := *ev
	c.copy = copy
	return &c
}

func (ev *evaluator) withLoop(name string, i int, alsoDefault bool) *evaluator {
	m := make(map[string]int, len(ev.copy)+2)
	for k, v := range ev.copy {
		m[k] = v
	}
	m[strings.ToLower(name)] = i
	if alsoDefault {
		m[""] = i
	}
	return ev.with(m)
}

// value evaluates a template JSON value: expression strings are evaluated,
// arrays and objects recursively, and property copy loops expanded.
func (ev *evaluator) value(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return ev.str(x)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			r, err := ev.value(e)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	case map[string]any:
		return ev.object(x)
	}
	return v, nil
}

func (ev *evaluator) object(x map[string]any) (any, error) {
	out := make(map[string]any, len(x))
	for _, k := range sortedKeys(x) {
		e := x[k]
		if strings.EqualFold(k, "copy") {
			if loops, ok := propertyCopies(e); ok {
				for _, l := range loops {
					arr, err := ev.propertyCopy(l)
					if err != nil {
						return nil, err
					}
					name, _ := l["name"].(string)
					out[name] = arr
				}
				continue
			}
		}
		r, err := ev.value(e)
		if err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, nil
}

// propertyCopies recognizes a property iteration: "copy": [{name, count,
// input}, ...].
func propertyCopies(v any) ([]map[string]any, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, false
	}
	var out []map[string]any
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		_, hasName, _ := lookup(m, "name")
		_, hasCount, _ := lookup(m, "count")
		_, hasInput, _ := lookup(m, "input")
		if hasName == "" || hasCount == "" || hasInput == "" {
			return nil, false
		}
		norm := map[string]any{}
		for k, v := range m {
			norm[strings.ToLower(k)] = v
		}
		out = append(out, norm)
	}
	return out, true
}

// propertyCopy evaluates one {name, count, input} loop to an array.
func (ev *evaluator) propertyCopy(l map[string]any) ([]any, error) {
	name, ok := l["name"].(string)
	if !ok || name == "" {
		return nil, invalidf("The copy property 'name' must be a non-empty string.")
	}
	n, err := ev.copyCount(l["count"], name)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		r, err := ev.withLoop(name, i, false).value(deepCopy(l["input"]))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// maxCopyCount is ARM's limit on a copy loop's count.
const maxCopyCount = 800

func (ev *evaluator) copyCount(raw any, name string) (int, error) {
	v, err := ev.value(raw)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, invalidf("The copy count of '%s' must be an integer; it is of type '%s'.", name, typeName(v))
	}
	if n < 0 || n > maxCopyCount {
		return 0, invalidf("The copy count of '%s' must be between 0 and %d; it is '%d'.", name, maxCopyCount, n)
	}
	return int(n), nil
}

// str evaluates a template string.
func (ev *evaluator) str(s string) (any, error) {
	text, ok := isExpression(s)
	if !ok {
		return literalOf(s), nil
	}
	e, err := ev.f.parse(text)
	if err != nil {
		return nil, err
	}
	v, err := ev.expr(e)
	if err != nil {
		return nil, err
	}
	if isUnresolved(v) {
		// What-if: keep the expression as the template wrote it.
		return s, nil
	}
	return v, nil
}

// strict evaluates like str but keeps the unresolved marker, for callers
// (conditions, copy counts) that must know.
func (ev *evaluator) strict(v any) (any, error) {
	if s, ok := v.(string); ok {
		if text, ok := isExpression(s); ok {
			e, err := ev.f.parse(text)
			if err != nil {
				return nil, err
			}
			return ev.expr(e)
		}
	}
	return ev.value(v)
}

func (ev *evaluator) expr(e *expr) (any, error) {
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	switch e.kind {
	case exprString:
		return e.str, nil
	case exprInt:
		return e.num, nil
	case exprFloat:
		return e.fnum, nil
	case exprCall:
		return ev.call(e)
	case exprMember:
		x, err := ev.expr(e.x)
		if err != nil || isUnresolved(x) {
			return x, err
		}
		return member(x, e.str)
	case exprIndex:
		x, err := ev.expr(e.x)
		if err != nil || isUnresolved(x) {
			return x, err
		}
		i, err := ev.expr(e.index)
		if err != nil || isUnresolved(i) {
			return i, err
		}
		return index(x, i)
	}
	return nil, invalidf("The language expression is not valid. %s", exprDocs)
}

func member(x any, name string) (any, error) {
	m, ok := x.(map[string]any)
	if !ok {
		return nil, invalidf("The language expression property '%s' can't be evaluated, property name must be a string and the target must be an object; the target is of type '%s'.", name, typeName(x))
	}
	v, _, ok := lookup(m, name)
	if !ok {
		return nil, invalidf("The language expression property '%s' doesn't exist, available properties are '%s'.", name, strings.Join(sortedKeys(m), ", "))
	}
	return v, nil
}

func index(x, i any) (any, error) {
	switch t := x.(type) {
	case []any:
		n, ok := i.(int64)
		if !ok {
			return nil, invalidf("The language expression property array index must be an integer; it is of type '%s'.", typeName(i))
		}
		if n < 0 || n >= int64(len(t)) {
			return nil, invalidf("The language expression property array index '%d' is out of bounds.", n)
		}
		return t[n], nil
	case map[string]any:
		s, ok := i.(string)
		if !ok {
			return nil, invalidf("The language expression property name must be a string; it is of type '%s'.", typeName(i))
		}
		return member(t, s)
	}
	return nil, invalidf("The language expression can't index a value of type '%s'.", typeName(x))
}

// call evaluates a function call. if() is lazy: only the branch taken is
// evaluated.
func (ev *evaluator) call(e *expr) (any, error) {
	name := strings.ToLower(e.str)
	if strings.Contains(name, ".") {
		return nil, invalidf("The template function '%s' is not valid: user-defined functions are not supported by this engine. %s", e.str, exprDocs)
	}
	if name == "if" {
		return ev.lazyIf(e)
	}
	fn, ok := functions[name]
	if !ok {
		if strings.HasPrefix(name, "list") {
			return nil, invalidf("The template function '%s' is not valid: list*() functions are not supported by this engine. %s", e.str, exprDocs)
		}
		return nil, invalidf("The template function '%s' is not valid. %s", e.str, exprDocs)
	}
	args := make([]any, len(e.args))
	anyUnresolved := false
	for i, a := range e.args {
		v, err := ev.expr(a)
		if err != nil {
			return nil, err
		}
		if isUnresolved(v) {
			anyUnresolved = true
		}
		args[i] = v
	}
	if anyUnresolved {
		return unresolved, nil
	}
	if fn.min >= 0 && len(args) < fn.min || fn.max >= 0 && len(args) > fn.max {
		return nil, arityError(e.str, fn.min, fn.max, len(args))
	}
	return fn.f(ev, e.str, args)
}

func (ev *evaluator) lazyIf(e *expr) (any, error) {
	if len(e.args) != 3 {
		return nil, arityError(e.str, 3, 3, len(e.args))
	}
	c, err := ev.expr(e.args[0])
	if err != nil || isUnresolved(c) {
		return c, err
	}
	b, ok := c.(bool)
	if !ok {
		return nil, invalidf("The template language function 'if' expects its first parameter to be of type 'Boolean'. The provided value is of type '%s'. %s", typeName(c), exprDocs)
	}
	if b {
		return ev.expr(e.args[1])
	}
	return ev.expr(e.args[2])
}
