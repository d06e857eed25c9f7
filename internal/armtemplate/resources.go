package armtemplate

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// Step is one resource instance of a deployment, known before anything is
// deployed: its identity, where the template declares it and what it
// depends on. Its body is evaluated later, by Evaluate.
type Step struct {
	ID         string
	Type       string
	Name       string
	APIVersion string
	// DependsOn holds the IDs of the steps this one waits for, explicit
	// (dependsOn) and implicit (reference(), parent resource, serial copy).
	DependsOn []string
	// CopyName and CopyIndex place an instance of a copy loop; CopyIndex
	// is -1 outside loops.
	CopyName  string
	CopyIndex int
	// Line and Column locate the resource in the template (0 if unknown).
	Line, Column int
	// Nested marks a Microsoft.Resources/deployments resource with an
	// inline template.
	Nested bool

	raw    map[string]any
	copy   map[string]int
	f      *frame
	parent *Step
	order  int
	deps   []*Step
	// skipped is set when the condition (or the parent's) was false.
	skipped bool
}

const deploymentsType = "Microsoft.Resources/deployments"

// templateOnlyKeys are resource members that steer the engine and are not
// part of the resource sent to its provider.
var templateOnlyKeys = map[string]bool{"condition": true, "copy": true, "dependson": true, "resources": true, "comments": true}

func (f *frame) resourceError(err error, name string, line, col int) error {
	return wrapAt(err, line, col, "The template resource '%s' at line '%d' and column '%d' is not valid", name, line, col)
}

// expand turns the template's resources into steps: copy loops unrolled,
// child resources flattened with their full type and name.
func (f *frame) expand(ctx context.Context) error {
	for i, r := range f.t.resources {
		m, ok := r.(map[string]any)
		if !ok {
			return invalidf("The template resource at index '%d' must be an object; it is of type '%s'.", i, typeName(r))
		}
		line, col := f.t.at("/" + escapePointer(f.t.resKey) + "/" + strconv.Itoa(i))
		if err := f.expandResource(ctx, m, line, col, nil, map[string]int{}); err != nil {
			return err
		}
	}
	return nil
}

func (f *frame) expandResource(ctx context.Context, m map[string]any, line, col int, parent *Step, copyCtx map[string]int) error {
	ev := f.ev(ctx, modeStatic, "resource").with(copyCtx)
	rawName := describe(field(m, "name"))
	if c, _, ok := lookup(m, "copy"); ok && c != nil {
		cm, isObj := c.(map[string]any)
		if !isObj {
			return f.resourceError(invalidf("The copy property must be an object."), rawName, line, col)
		}
		name, _ := field(cm, "name").(string)
		if name == "" {
			return f.resourceError(invalidf("The copy property 'name' must be a non-empty string."), rawName, line, col)
		}
		n, err := ev.copyCount(field(cm, "count"), name)
		if err != nil {
			return f.resourceError(err, rawName, line, col)
		}
		batch := int64(0)
		if strings.EqualFold(fieldString(cm, "mode"), "serial") {
			batch = 1
			if b, ok := field(cm, "batchSize").(int64); ok && b > 0 {
				batch = b
			}
		} else if mode := fieldString(cm, "mode"); mode != "" && !strings.EqualFold(mode, "parallel") {
			return f.resourceError(invalidf("The copy mode '%s' is not valid; it must be 'Serial' or 'Parallel'.", mode), rawName, line, col)
		}
		var prev []*Step
		var cur []*Step
		for i := 0; i < n; i++ {
			inst := ev.withLoop(name, i, true)
			s, err := f.instance(ctx, inst, m, line, col, parent, name, i)
			if err != nil {
				return err
			}
			if batch > 0 {
				if int64(i)%batch == 0 && i > 0 {
					prev, cur = cur, nil
				}
				s.deps = append(s.deps, prev...)
				cur = append(cur, s)
			}
		}
		return nil
	}
	_, err := f.instance(ctx, ev, m, line, col, parent, "", -1)
	return err
}

func (f *frame) instance(ctx context.Context, ev *evaluator, m map[string]any, line, col int, parent *Step, copyName string, copyIndex int) (*Step, error) {
	rawName := describe(field(m, "name"))
	str := func(key string) (string, error) {
		v, err := ev.value(field(m, key))
		if err != nil {
			return "", err
		}
		s, ok := v.(string)
		if !ok {
			return "", invalidf("The '%s' property must be a string; it is of type '%s'.", key, typeName(v))
		}
		return s, nil
	}
	name, err := str("name")
	if err != nil {
		return nil, f.resourceError(err, rawName, line, col)
	}
	if name == "" {
		return nil, &Error{Code: CodeInvalidTemplate, Line: line, Column: col,
			Message: sprintf("The template resource '' at line '%d' and column '%d' is not valid. The name property cannot be null or empty.", line, col)}
	}
	typ, err := str("type")
	if err != nil {
		return nil, f.resourceError(err, name, line, col)
	}
	apiVersion, err := str("apiVersion")
	if err != nil {
		return nil, f.resourceError(err, name, line, col)
	}
	if parent != nil {
		if !strings.Contains(typ, "/") {
			typ = parent.Type + "/" + typ
		}
		if len(strings.Split(name, "/")) != len(strings.Split(typ, "/"))-1 {
			name = parent.Name + "/" + name
		}
	}
	typeSegs, nameSegs := len(strings.Split(typ, "/")), len(strings.Split(name, "/"))
	if typeSegs < 2 || typeSegs != nameSegs+1 {
		return nil, &Error{Code: CodeInvalidTemplate, Line: line, Column: col, Message: sprintf(
			"The template resource '%s' for type '%s' at line '%d' and column '%d' has incorrect segment lengths. A nested resource type must have identical number of segments as its resource name. A root resource type must have segment length one greater than its resource name.", name, typ, line, col)}
	}
	scopeID := ""
	if sv, _, ok := lookup(m, "scope"); ok && sv != nil {
		v, err := ev.value(sv)
		if err != nil {
			return nil, f.resourceError(err, name, line, col)
		}
		s, _ := v.(string)
		if !strings.HasPrefix(s, "/") {
			return nil, f.resourceError(invalidf("The 'scope' property must be a resource ID; '%s' is not.", s), name, line, col)
		}
		scopeID = s
	}
	id := ""
	if scopeID != "" {
		id = extensionID(scopeID, typ, strings.Split(name, "/"))
	} else {
		id = f.resourceID(f.scope.SubscriptionID, f.scope.ResourceGroup, typ, strings.Split(name, "/"))
	}
	s := &Step{ID: id, Type: typ, Name: name, APIVersion: apiVersion, CopyName: copyName, CopyIndex: copyIndex,
		Line: line, Column: col, raw: m, copy: ev.copy, f: f, parent: parent, order: len(f.steps)}
	if strings.EqualFold(typ, deploymentsType) {
		s.Nested = true
	}
	if parent != nil {
		s.deps = append(s.deps, parent)
	}
	f.steps = append(f.steps, s)
	if children, _, ok := lookup(m, "resources"); ok && children != nil {
		arr, isArr := children.([]any)
		if !isArr {
			return nil, f.resourceError(invalidf("The 'resources' property of a resource must be an array."), name, line, col)
		}
		for i, c := range arr {
			cm, isObj := c.(map[string]any)
			if !isObj {
				return nil, f.resourceError(invalidf("The child resource at index '%d' must be an object.", i), name, line, col)
			}
			// A child is reported at its parent's position.
			if err := f.expandResource(ctx, cm, line, col, s, ev.copy); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// resourceID formats a resource ID at resource-group scope (or
// subscription scope when rg is empty).
func (f *frame) resourceID(sub, rg, typ string, names []string) string {
	var b strings.Builder
	b.WriteString("/subscriptions/" + sub)
	if strings.EqualFold(typ, "Microsoft.Resources/resourceGroups") && len(names) == 1 {
		return b.String() + "/resourceGroups/" + names[0]
	}
	if rg != "" {
		b.WriteString("/resourceGroups/" + rg)
	}
	b.WriteString(typeNamePath(typ, names))
	return b.String()
}

func extensionID(base, typ string, names []string) string {
	return strings.TrimSuffix(base, "/") + typeNamePath(typ, names)
}

// typeNamePath is "/providers/NS/t1/n1/t2/n2".
func typeNamePath(typ string, names []string) string {
	segs := strings.Split(typ, "/")
	var b strings.Builder
	b.WriteString("/providers/" + segs[0])
	for i, t := range segs[1:] {
		b.WriteString("/" + t)
		if i < len(names) {
			b.WriteString("/" + names[i])
		}
	}
	return b.String()
}

// findSteps resolves a dependsOn entry or reference() target — an ID, a
// resource name, "type/name", or a copy loop name — to steps.
func (f *frame) findSteps(target string) []*Step {
	var out []*Step
	isID := strings.HasPrefix(target, "/")
	for _, s := range f.steps {
		switch {
		case isID && strings.EqualFold(s.ID, strings.TrimSuffix(target, "/")):
		case !isID && (strings.EqualFold(s.Name, target) || strings.EqualFold(s.Type+"/"+s.Name, target) ||
			(s.CopyName != "" && s.CopyIndex >= 0 && strings.EqualFold(s.CopyName, target))):
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

// dependencies resolves explicit and implicit dependencies of every step.
func (f *frame) dependencies(ctx context.Context) error {
	for _, s := range f.steps {
		ev := f.ev(ctx, modeStatic, "resource").with(s.copy)
		if d, _, ok := lookup(s.raw, "dependsOn"); ok && d != nil {
			v, err := ev.value(d)
			if err != nil {
				return f.resourceError(err, s.Name, s.Line, s.Column)
			}
			arr, isArr := v.([]any)
			if !isArr {
				return f.resourceError(invalidf("The 'dependsOn' property must be an array."), s.Name, s.Line, s.Column)
			}
			for _, e := range arr {
				t, isStr := e.(string)
				if !isStr {
					return f.resourceError(invalidf("The 'dependsOn' entries must be strings; one is of type '%s'.", typeName(e)), s.Name, s.Line, s.Column)
				}
				found := f.findSteps(t)
				if len(found) == 0 {
					return &Error{Code: CodeInvalidTemplate, Line: s.Line, Column: s.Column,
						Message: sprintf("The resource '%s' is not defined in the template. Please see https://aka.ms/arm-syntax for usage details.", t)}
				}
				s.deps = append(s.deps, found...)
			}
		}
		// Implicit: reference() to a resource of this template.
		for k, v := range s.raw {
			if templateOnlyKeys[strings.ToLower(k)] {
				continue
			}
			if s.Nested && strings.EqualFold(k, "properties") {
				v = nestedParentPart(v)
			}
			s.deps = append(s.deps, f.referencedSteps(ev, v)...)
		}
	}
	for _, s := range f.steps {
		seen := map[*Step]bool{}
		var ids []string
		var deps []*Step
		for _, d := range s.deps {
			if !seen[d] {
				seen[d] = true
				deps = append(deps, d)
				ids = append(ids, d.ID)
			}
		}
		s.deps, s.DependsOn = deps, ids
	}
	return nil
}

// nestedParentPart is the part of a nested deployment's properties that the
// parent evaluates: everything but the inline template.
func nestedParentPart(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		if !strings.EqualFold(k, "template") {
			out[k] = e
		}
	}
	return out
}

func (f *frame) referencedSteps(ev *evaluator, v any) []*Step {
	var out []*Step
	switch x := v.(type) {
	case string:
		text, ok := isExpression(x)
		if !ok {
			return nil
		}
		e, err := f.parse(text)
		if err != nil {
			return nil
		}
		e.walk(func(c *expr) {
			if c.kind != exprCall || !strings.EqualFold(c.str, "reference") || len(c.args) == 0 {
				return
			}
			target, err := ev.expr(c.args[0])
			if t, ok := target.(string); err == nil && ok {
				out = append(out, f.findSteps(t)...)
			}
		})
	case []any:
		for _, e := range x {
			out = append(out, f.referencedSteps(ev, e)...)
		}
	case map[string]any:
		for _, e := range x {
			out = append(out, f.referencedSteps(ev, e)...)
		}
	}
	return out
}

// order sorts steps topologically, ties broken by template order, so the
// order is deterministic. A cycle is ARM's InvalidTemplate.
func (f *frame) order() ([]*Step, error) {
	indeg := map[*Step]int{}
	users := map[*Step][]*Step{}
	for _, s := range f.steps {
		indeg[s] += 0
		for _, d := range s.deps {
			indeg[s]++
			users[d] = append(users[d], s)
		}
	}
	var ready, out []*Step
	for _, s := range f.steps {
		if indeg[s] == 0 {
			ready = append(ready, s)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return ready[i].order < ready[j].order })
		s := ready[0]
		ready = ready[1:]
		out = append(out, s)
		for _, u := range users[s] {
			indeg[u]--
			if indeg[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(out) < len(f.steps) {
		for _, s := range f.steps {
			if indeg[s] > 0 && onCycle(s) {
				return nil, &Error{Code: CodeInvalidTemplate, Line: s.Line, Column: s.Column,
					Message: sprintf("Circular dependency detected on resource: '%s'. Please see https://aka.ms/arm-syntax-resources for usage details.", s.ID)}
			}
		}
		return nil, errors.New("armtemplate: dependency order incomplete without a cycle")
	}
	return out, nil
}

// onCycle reports whether s can reach itself through dependencies.
func onCycle(s *Step) bool {
	seen := map[*Step]bool{}
	stack := append([]*Step{}, s.deps...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d == s {
			return true
		}
		if !seen[d] {
			seen[d] = true
			stack = append(stack, d.deps...)
		}
	}
	return false
}
