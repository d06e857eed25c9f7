package armtemplate

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Scope is where a deployment runs: the values behind subscription(),
// resourceGroup() and deployment(), and the prefix of resource IDs.
type Scope struct {
	TenantID       string
	SubscriptionID string
	// ResourceGroup is empty for a subscription-scope deployment.
	ResourceGroup         string
	ResourceGroupLocation string
	DeploymentName        string
	// Mode is Incremental (default) or Complete, as deployment() reports.
	Mode string
}

// Options tunes what the engine cannot know by itself.
type Options struct {
	// NewGUID serves newGuid() in parameter defaults; random when nil.
	NewGUID func() string
	// Now serves utcNow() in parameter defaults; time.Now when nil.
	Now func() time.Time
	// Environment is environment()'s value; Azure's public cloud when nil.
	Environment map[string]any
}

// frame is one template being evaluated: its parameters, variables and
// expanded resources. A nested template with outer scope has outer set and
// reads parameters and variables from it.
type frame struct {
	t        *Template
	scope    Scope
	opts     Options
	outer    *frame
	given    map[string]any // lower-case name -> supplied value
	params   map[string]any // lower-case name -> bound value
	busy     map[string]bool
	vars     map[string]any // lower-case name -> evaluated value
	varBusy  map[string]bool
	varLoops map[string]map[string]any // lower-case name -> {name,count,input}
	exprs    map[string]*expr
	run      *run
	steps    []*Step
}

func (f *frame) parse(text string) (*expr, error) {
	if e, ok := f.exprs[text]; ok {
		return e, nil
	}
	e, err := parseExpr(text)
	if err != nil {
		return nil, err
	}
	f.exprs[text] = e
	return e, nil
}

func (f *frame) ev(ctx context.Context, mode evalMode, where string) *evaluator {
	return &evaluator{ctx: ctx, f: f, mode: mode, where: where, copy: map[string]int{}}
}

// scopeFrame is the frame whose parameters and variables expressions see.
func (f *frame) scopeFrame() *frame {
	for f.outer != nil {
		f = f.outer
	}
	return f
}

func (f *frame) newGUID() string {
	if f.opts.NewGUID != nil {
		return f.opts.NewGUID()
	}
	return uuid.NewString()
}

func (f *frame) now() time.Time {
	if f.opts.Now != nil {
		return f.opts.Now()
	}
	return time.Now()
}

// parameter binds (once) and returns a parameter's value.
func (f *frame) parameter(ctx context.Context, name string) (any, error) {
	key := strings.ToLower(name)
	if v, ok := f.params[key]; ok {
		return v, nil
	}
	def, realName, ok := f.t.paramDef(name)
	if !ok {
		return nil, invalidf("The template parameter '%s' is not found. %s", name, exprDocs)
	}
	if f.busy[key] {
		return nil, invalidf("The template parameter '%s' refers to itself through its default value.", realName)
	}
	f.busy[key] = true
	defer delete(f.busy, key)
	line, col := f.t.paramPos(realName)
	v, supplied := f.given[key]
	if !supplied {
		d, _, hasDefault := lookup(def, "defaultValue")
		if !hasDefault {
			return nil, &Error{Code: CodeInvalidTemplate, Line: line, Column: col, Message: sprintf(
				"The value for the template parameter '%s' at line '%d' and column '%d' is not provided. Please see https://aka.ms/arm-create-parameter-file for usage details.", realName, line, col)}
		}
		var err error
		v, err = f.ev(ctx, modeStatic, "parameter default").value(deepCopy(d))
		if err != nil {
			return nil, wrapAt(err, line, col, "The template parameter '%s' at line '%d' and column '%d' is not valid", realName, line, col)
		}
	}
	v, err := checkParameter(realName, def, v, line, col)
	if err != nil {
		return nil, err
	}
	f.params[key] = v
	return v, nil
}

// bindParameters checks the supplied values against the template and binds
// every parameter, in the order the template writes them.
func (f *frame) bindParameters(ctx context.Context, supplied map[string]any) error {
	var unknown []string
	for name, raw := range supplied {
		if _, _, ok := f.t.paramDef(name); !ok {
			unknown = append(unknown, name)
			continue
		}
		v, err := parameterValue(name, raw)
		if err != nil {
			return err
		}
		f.given[strings.ToLower(name)] = v
	}
	if len(unknown) > 0 {
		sortStrings(unknown)
		return invalidf("The template parameters '%s' are not valid; they are not present in the original template and can therefore not be provided at deployment time. The only supported parameters for this template are '%s'. Please see https://aka.ms/arm-create-parameter-file for usage details.",
			strings.Join(unknown, ", "), strings.Join(f.t.paramOrder(), ", "))
	}
	for _, name := range f.t.paramOrder() {
		if _, err := f.parameter(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// parameterValue unwraps a deployment request's {"value": v}.
func parameterValue(name string, raw any) (any, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, invalidf("The value of the deployment parameter '%s' must be an object with a 'value' property.", name)
	}
	if _, _, isRef := lookup(m, "reference"); isRef {
		return nil, invalidf("The deployment parameter '%s' is a Key Vault reference, which this engine does not resolve.", name)
	}
	v, _, ok := lookup(m, "value")
	if !ok {
		return nil, invalidf("The value of the deployment parameter '%s' must be an object with a 'value' property.", name)
	}
	return normalize(v), nil
}

// Values wraps plain values into a deployment request's parameter shape,
// {"name": {"value": v}}.
func Values(plain map[string]any) map[string]any {
	out := make(map[string]any, len(plain))
	for k, v := range plain {
		out[k] = map[string]any{"value": v}
	}
	return out
}

// variable evaluates (once) a template variable.
func (f *frame) variable(ctx context.Context, name string) (any, error) {
	f = f.scopeFrame()
	key := strings.ToLower(name)
	if v, ok := f.vars[key]; ok {
		return v, nil
	}
	if f.varBusy[key] {
		return nil, invalidf("The template variable '%s' is not valid: it refers to itself. %s", name, exprDocs)
	}
	f.varBusy[key] = true
	defer delete(f.varBusy, key)
	ev := f.ev(ctx, modeStatic, "variables")
	var v any
	var err error
	if loop, ok := f.varLoops[key]; ok {
		v, err = ev.propertyCopy(loop)
	} else {
		raw, realName, found := lookup(f.t.variables, name)
		if !found || strings.EqualFold(realName, "copy") {
			return nil, invalidf("The template variable '%s' is not found. Please see https://aka.ms/arm-template/#variables for usage details.", name)
		}
		name = realName
		v, err = ev.value(deepCopy(raw))
	}
	if err != nil {
		return nil, wrapAt(err, 0, 0, "The template variable '%s' is not valid", name)
	}
	f.vars[key] = v
	return v, nil
}

func (f *frame) loadVariableLoops() error {
	raw, _, ok := lookup(f.t.variables, "copy")
	if !ok {
		return nil
	}
	loops, ok := propertyCopies(raw)
	if !ok {
		return invalidf("The template variable 'copy' must be an array of objects with 'name', 'count' and 'input' properties.")
	}
	for _, l := range loops {
		name, _ := l["name"].(string)
		f.varLoops[strings.ToLower(name)] = l
	}
	return nil
}

// evalVariables evaluates every variable so errors surface at validation.
func (f *frame) evalVariables(ctx context.Context) error {
	for _, name := range sortedKeys(f.t.variables) {
		if strings.EqualFold(name, "copy") {
			continue
		}
		if _, err := f.variable(ctx, name); err != nil {
			return err
		}
	}
	for name := range f.varLoops {
		if _, err := f.variable(ctx, name); err != nil {
			return err
		}
	}
	return nil
}
