package armtemplate

import (
	"context"
	"fmt"
	"strings"
)

// Resources reads the current state of resources: what reference() sees of
// a resource this deployment did not deploy itself.
type Resources interface {
	// Get returns the resource's full state (id, name, type, location,
	// tags, properties, ...), or found false when it does not exist.
	Get(ctx context.Context, id, apiVersion string) (state map[string]any, found bool, err error)
}

// Deployer puts resources: Deploy hands it each evaluated resource once its
// dependencies are deployed, and reference() afterwards sees the state it
// answers.
type Deployer interface {
	Resources
	Put(ctx context.Context, r *Resource) (state map[string]any, err error)
}

// Resource is an evaluated resource, ready to PUT.
type Resource struct {
	ID         string
	Type       string
	Name       string
	APIVersion string
	Location   string
	Tags       map[string]any
	Properties any
	// Body is the whole evaluated resource as the template declares it
	// (name, type, apiVersion, location, tags, sku, kind, properties, ...)
	// without the template-only members (condition, copy, dependsOn,
	// resources, comments).
	Body      map[string]any
	DependsOn []string
	// Deployment is the name of the (nested) deployment that declares it.
	Deployment string
}

// Output is an evaluated template output.
type Output struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Result is what a deployment or what-if produced.
type Result struct {
	// Resources are the evaluated resources in deployment order; those of
	// nested deployments come where their deployment runs.
	Resources []*Resource
	// Skipped are the IDs of resources whose condition was false.
	Skipped []string
	Outputs map[string]Output
	// Nested are the nested deployments that ran, each after its
	// resources, in the order they finished.
	Nested []*NestedDeployment
}

// NestedDeployment is a nested inline deployment that ran: ARM keeps it as
// a deployment of its own in the resource group.
type NestedDeployment struct {
	ID, Name string
	// Parent is the name of the deployment that declares it.
	Parent string
	Mode   string
	// Resources are the IDs of the resources it (and the deployments
	// nested in it) deployed, in order.
	Resources []string
	Outputs   map[string]Output
}

// NestedRecorder is a Deployer that keeps nested deployments: Deploy tells
// it of each one when it has run, before the parent goes on.
type NestedRecorder interface {
	Nested(ctx context.Context, n *NestedDeployment) error
}

// run is what one deployment (with its nested deployments) shares.
type run struct {
	mode   evalMode
	reader Resources
	// states holds the state of resources deployed in this run, by
	// lower-case ID; nested deployments' outputs are here too.
	states map[string]map[string]any
	// declared holds the lower-case IDs of every resource the run's
	// templates declare.
	declared map[string]bool
}

// Deployment is a prepared template: parameters bound and validated,
// variables evaluated, resources expanded and ordered. Preparing is ARM's
// validation.
type Deployment struct {
	f     *frame
	steps []*Step
}

// Prepare validates a template against its parameters (a deployment
// request's parameters object: {"name": {"value": v}}) and plans it.
func Prepare(ctx context.Context, t *Template, scope Scope, params map[string]any, opts Options) (*Deployment, error) {
	r := &run{states: map[string]map[string]any{}, declared: map[string]bool{}}
	return prepare(ctx, t, scope, params, opts, r, nil)
}

func newFrame(t *Template, scope Scope, opts Options, r *run, outer *frame) *frame {
	return &frame{t: t, scope: scope, opts: opts, outer: outer, given: map[string]any{}, params: map[string]any{},
		busy: map[string]bool{}, vars: map[string]any{}, varBusy: map[string]bool{}, varLoops: map[string]map[string]any{},
		exprs: map[string]*expr{}, run: r}
}

func prepare(ctx context.Context, t *Template, scope Scope, params map[string]any, opts Options, r *run, outer *frame) (*Deployment, error) {
	f := newFrame(t, scope, opts, r, outer)
	if outer == nil {
		if err := f.bindParameters(ctx, params); err != nil {
			return nil, err
		}
		if err := f.loadVariableLoops(); err != nil {
			return nil, err
		}
		if err := f.evalVariables(ctx); err != nil {
			return nil, err
		}
	}
	if err := f.expand(ctx); err != nil {
		return nil, err
	}
	if err := f.dependencies(ctx); err != nil {
		return nil, err
	}
	steps, err := f.order()
	if err != nil {
		return nil, err
	}
	for _, s := range steps {
		r.declared[strings.ToLower(s.ID)] = true
	}
	return &Deployment{f: f, steps: steps}, nil
}

// Steps are the resources in deployment order.
func (d *Deployment) Steps() []*Step { return d.steps }

// Evaluate evaluates one step for a caller that drives the deployment
// itself: call it for each step in order, after the step's dependencies
// were deployed, and Record what each deployment answered. reference()
// reads recorded states first, then world. It returns nil for a resource
// whose condition is false. Nested deployment steps are not evaluated here:
// templates with nested deployments are run with Deploy or WhatIf.
func (d *Deployment) Evaluate(ctx context.Context, s *Step, world Resources) (*Resource, error) {
	if s.Nested {
		return nil, invalidf("The resource '%s' is a nested deployment; run templates with nested deployments through Deploy or WhatIf.", s.Name)
	}
	d.f.run.mode, d.f.run.reader = modeDeploy, world
	return d.evaluate(ctx, s)
}

// Record stores a deployed resource's state for later reference() calls.
func (d *Deployment) Record(id string, state map[string]any) {
	d.f.run.states[strings.ToLower(strings.TrimSuffix(id, "/"))] = normalize(state).(map[string]any)
}

// Outputs evaluates the template's outputs once every step was deployed.
func (d *Deployment) Outputs(ctx context.Context, world Resources) (map[string]Output, error) {
	d.f.run.mode, d.f.run.reader = modeDeploy, world
	return d.f.outputs(ctx)
}

// reference resolves reference(target, apiVersion, 'Full').
func fnReference(ev *evaluator, name string, args []any) (any, error) {
	if ev.where == "variables" || ev.where == "parameter default" {
		return nil, notExpectedHere(name)
	}
	target, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	apiVersion, full := "", false
	if len(args) > 1 {
		if apiVersion, err = argString(name, args, 1); err != nil {
			return nil, err
		}
	}
	if len(args) > 2 {
		s, err := argString(name, args, 2)
		if err != nil {
			return nil, err
		}
		full = strings.EqualFold(s, "full")
	}
	if ev.mode == modeStatic {
		// Names, types, copy counts and dependsOn are fixed before anything
		// is deployed.
		return nil, notExpectedHere(name)
	}
	id := target
	if !strings.HasPrefix(target, "/") {
		found := ev.f.findSteps(target)
		if len(found) != 1 {
			return nil, invalidf("The template reference '%s' is not valid: could not find template resource or resource copy with this name. %s", target, exprDocs)
		}
		id = found[0].ID
		if apiVersion == "" {
			apiVersion = found[0].APIVersion
		}
	}
	key := strings.ToLower(strings.TrimSuffix(id, "/"))
	state, ok := ev.f.run.states[key]
	if !ok {
		if ev.mode == modeWhatIf && ev.f.run.declared[key] {
			return unresolved, nil
		}
		var found bool
		if ev.f.run.reader != nil {
			state, found, err = ev.f.run.reader.Get(ev.ctx, id, apiVersion)
			if err != nil {
				return nil, fmt.Errorf("reading %s for reference(): %w", id, err)
			}
		}
		if !found {
			if ev.mode == modeWhatIf {
				return unresolved, nil
			}
			return nil, &Error{Code: "ResourceNotFound", Message: sprintf("The Resource '%s' was not found.", id)}
		}
		state = normalize(state).(map[string]any)
	}
	if full {
		out := deepCopy(state).(map[string]any)
		if _, _, ok := lookup(out, "apiVersion"); !ok && apiVersion != "" {
			out["apiVersion"] = apiVersion
		}
		return out, nil
	}
	props, _, _ := lookup(state, "properties")
	if props == nil {
		return map[string]any{}, nil
	}
	return deepCopy(props), nil
}

// Evaluate evaluates a step's condition and body against the run's state.
// It returns nil for a resource whose condition (or whose parent's) is
// false.
func (d *Deployment) evaluate(ctx context.Context, s *Step) (*Resource, error) {
	if s.parent != nil && s.parent.skipped {
		s.skipped = true
		return nil, nil
	}
	ev := s.f.ev(ctx, s.f.run.mode, "resource").with(s.copy)
	if c, _, ok := lookup(s.raw, "condition"); ok && c != nil {
		v, err := ev.strict(c)
		if err != nil {
			return nil, s.f.resourceError(err, s.Name, s.Line, s.Column)
		}
		if !isUnresolved(v) { // what-if: a condition it cannot know keeps the resource
			b, isBool := v.(bool)
			if !isBool {
				return nil, s.f.resourceError(invalidf("The condition must be a boolean; it is of type '%s'.", typeName(v)), s.Name, s.Line, s.Column)
			}
			if !b {
				s.skipped = true
				return nil, nil
			}
		}
	}
	body := map[string]any{}
	for _, k := range sortedKeys(s.raw) {
		if templateOnlyKeys[strings.ToLower(k)] {
			continue
		}
		raw := s.raw[k]
		switch strings.ToLower(k) {
		case "name":
			body[k] = s.Name
			continue
		case "type":
			body[k] = s.Type
			continue
		case "apiversion":
			body[k] = s.APIVersion
			continue
		case "properties":
			if s.Nested {
				raw = nestedParentPart(raw)
			}
		}
		v, err := ev.value(deepCopy(raw))
		if err != nil {
			return nil, s.f.resourceError(err, s.Name, s.Line, s.Column)
		}
		body[k] = v
	}
	r := &Resource{ID: s.ID, Type: s.Type, Name: s.Name, APIVersion: s.APIVersion, Body: body,
		DependsOn: s.DependsOn, Deployment: s.f.scope.DeploymentName}
	r.Location, _ = field(body, "location").(string)
	r.Tags, _ = field(body, "tags").(map[string]any)
	r.Properties = field(body, "properties")
	return r, nil
}

// Deploy runs a template: each resource is evaluated after its dependencies
// were deployed and handed to the deployer; nested inline deployments run in
// place. Outputs are evaluated last.
func Deploy(ctx context.Context, t *Template, scope Scope, params map[string]any, opts Options, deployer Deployer) (*Result, error) {
	return drive(ctx, t, scope, params, opts, modeDeploy, deployer, deployer)
}

// WhatIf evaluates a template without deploying anything. reference() to a
// resource this deployment declares stays unevaluated: a property whose
// value needs it keeps its expression string, as Azure's what-if shows it.
// reference() to other resources reads them through reader (which may be
// nil).
func WhatIf(ctx context.Context, t *Template, scope Scope, params map[string]any, opts Options, reader Resources) (*Result, error) {
	return drive(ctx, t, scope, params, opts, modeWhatIf, reader, nil)
}

func drive(ctx context.Context, t *Template, scope Scope, params map[string]any, opts Options, mode evalMode, reader Resources, deployer Deployer) (*Result, error) {
	r := &run{mode: mode, reader: reader, states: map[string]map[string]any{}, declared: map[string]bool{}}
	d, err := prepare(ctx, t, scope, params, opts, r, nil)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if err := d.execute(ctx, deployer, res); err != nil {
		return nil, err
	}
	if res.Outputs, err = d.f.outputs(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

func (d *Deployment) execute(ctx context.Context, deployer Deployer, res *Result) error {
	for _, s := range d.steps {
		r, err := d.evaluate(ctx, s)
		if err != nil {
			return err
		}
		if r == nil {
			res.Skipped = append(res.Skipped, s.ID)
			continue
		}
		if s.Nested {
			if err := d.nested(ctx, s, r, deployer, res); err != nil {
				return s.f.resourceError(err, s.Name, s.Line, s.Column)
			}
			continue
		}
		res.Resources = append(res.Resources, r)
		if deployer == nil {
			continue
		}
		state, err := deployer.Put(ctx, r)
		if err != nil {
			return fmt.Errorf("deploying %s: %w", r.ID, err)
		}
		if state == nil {
			state = r.Body
		}
		d.f.run.states[strings.ToLower(r.ID)] = normalize(state).(map[string]any)
	}
	return nil
}

// nested runs a Microsoft.Resources/deployments resource's inline template.
func (d *Deployment) nested(ctx context.Context, s *Step, r *Resource, deployer Deployer, res *Result) error {
	props, _ := r.Properties.(map[string]any)
	rawProps, _ := field(s.raw, "properties").(map[string]any)
	if field(props, "templateLink") != nil {
		return invalidf("The nested deployment uses 'templateLink'; linked templates are not supported by this engine (they need the network). Use an inline 'template'.")
	}
	for _, k := range []string{"subscriptionId", "resourceGroup"} {
		if v, ok := field(r.Body, k).(string); ok && v != "" &&
			!strings.EqualFold(v, map[string]string{"subscriptionId": s.f.scope.SubscriptionID, "resourceGroup": s.f.scope.ResourceGroup}[k]) {
			return invalidf("The nested deployment targets another %s ('%s'); cross-scope nested deployments are not supported by this engine.", k, v)
		}
	}
	inline, ok := field(rawProps, "template").(map[string]any)
	if !ok {
		return invalidf("The nested deployment must have an inline 'template' object.")
	}
	t, err := newTemplate(inline, nil)
	if err != nil {
		return err
	}
	scopeName := "outer"
	if opts, ok := field(props, "expressionEvaluationOptions").(map[string]any); ok {
		if sc := fieldString(opts, "scope"); sc != "" {
			scopeName = strings.ToLower(sc)
		}
	}
	scope := s.f.scope
	scope.DeploymentName = s.Name
	if m := fieldString(props, "mode"); m != "" {
		scope.Mode = m
	}
	var child *Deployment
	switch scopeName {
	case "inner":
		params, _ := field(props, "parameters").(map[string]any)
		child, err = prepare(ctx, t, scope, params, s.f.opts, s.f.run, nil)
	case "outer":
		if p, ok := field(props, "parameters").(map[string]any); ok && len(p) > 0 {
			return invalidf("The nested deployment passes 'parameters' but its expression evaluation scope is 'outer', where the nested template sees the parent's parameters; set expressionEvaluationOptions.scope to 'inner'.")
		}
		child, err = prepare(ctx, t, scope, nil, s.f.opts, s.f.run, s.f)
	default:
		return invalidf("The expression evaluation scope '%s' is not valid; it must be 'inner' or 'outer'.", scopeName)
	}
	if err != nil {
		return err
	}
	first := len(res.Resources)
	if err := child.execute(ctx, deployer, res); err != nil {
		return err
	}
	outs, err := child.f.outputs(ctx)
	if err != nil {
		return err
	}
	n := &NestedDeployment{ID: s.ID, Name: s.Name, Parent: s.f.scope.DeploymentName, Mode: scope.Mode, Outputs: outs}
	for _, r := range res.Resources[first:] {
		n.Resources = append(n.Resources, r.ID)
	}
	res.Nested = append(res.Nested, n)
	if rec, ok := deployer.(NestedRecorder); ok {
		if err := rec.Nested(ctx, n); err != nil {
			return fmt.Errorf("recording nested deployment %s: %w", s.Name, err)
		}
	}
	outObj := map[string]any{}
	for k, o := range outs {
		outObj[k] = map[string]any{"type": o.Type, "value": o.Value}
	}
	s.f.run.states[strings.ToLower(s.ID)] = map[string]any{
		"id": s.ID, "name": s.Name, "type": deploymentsType,
		"properties": map[string]any{"outputs": outObj, "provisioningState": "Succeeded", "mode": scope.Mode},
	}
	return nil
}

// outputTypes maps a template output type to the name ARM reports and the
// value type it must have.
var outputTypes = map[string][2]string{
	"string": {"String", "String"}, "securestring": {"SecureString", "String"}, "int": {"Int", "Integer"},
	"bool": {"Bool", "Boolean"}, "object": {"Object", "Object"}, "secureobject": {"SecureObject", "Object"},
	"array": {"Array", "Array"},
}

func (f *frame) outputs(ctx context.Context) (map[string]Output, error) {
	out := map[string]Output{}
	for _, name := range sortedKeys(f.t.outputs) {
		def, ok := f.t.outputs[name].(map[string]any)
		if !ok {
			return nil, invalidf("The template output '%s' must be an object.", name)
		}
		o, keep, err := f.output(ctx, def)
		if err != nil {
			return nil, wrapAt(err, 0, 0, "The template output '%s' is not valid", name)
		}
		if keep {
			out[name] = o
		}
	}
	return out, nil
}

func (f *frame) output(ctx context.Context, def map[string]any) (Output, bool, error) {
	ev := f.ev(ctx, f.run.mode, "output")
	if c, _, ok := lookup(def, "condition"); ok && c != nil {
		v, err := ev.strict(c)
		if err != nil {
			return Output{}, false, err
		}
		if b, isBool := v.(bool); isBool && !b {
			return Output{}, false, nil
		} else if !isBool && !isUnresolved(v) {
			return Output{}, false, invalidf("The condition must be a boolean; it is of type '%s'.", typeName(v))
		}
	}
	typ := strings.ToLower(fieldString(def, "type"))
	names, ok := outputTypes[typ]
	if !ok {
		return Output{}, false, invalidf("The output type '%s' is not valid.", fieldString(def, "type"))
	}
	var v any
	var err error
	if c, _, ok := lookup(def, "copy"); ok && c != nil {
		cm, isObj := c.(map[string]any)
		if !isObj {
			return Output{}, false, invalidf("The output 'copy' must be an object with 'count' and 'input'.")
		}
		n, err := ev.copyCount(field(cm, "count"), "output")
		if err != nil {
			return Output{}, false, err
		}
		arr := make([]any, 0, n)
		for i := 0; i < n; i++ {
			e, err := ev.withLoop("", i, true).value(deepCopy(field(cm, "input")))
			if err != nil {
				return Output{}, false, err
			}
			arr = append(arr, e)
		}
		v = arr
	} else if v, err = ev.value(deepCopy(field(def, "value"))); err != nil {
		return Output{}, false, err
	}
	if s, isStr := v.(string); isStr && f.run.mode == modeWhatIf && typ != "string" && typ != "securestring" {
		if _, isExpr := isExpression(s); isExpr {
			return Output{Type: names[0], Value: v}, true, nil // unresolved in what-if
		}
	}
	if got := typeName(v); got != names[1] && v != nil {
		return Output{}, false, invalidf("Template output JToken type is not valid. Expected '%s'. Actual '%s'.", names[1], got)
	}
	return Output{Type: names[0], Value: v}, true, nil
}
