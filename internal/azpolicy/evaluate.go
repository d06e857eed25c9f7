package azpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Result is the evaluation of one policy assignment on one resource.
type Result struct {
	// Skip says why the definition's rule was not evaluated: the
	// assignment does not cover the resource (scope, notScopes,
	// DoNotEnforce) or its mode does not evaluate the resource's type.
	// "" when it was evaluated.
	Skip string
	// Effect is the definition's effect for the assignment (Deny, Audit,
	// Disabled, ...), its parameter resolved; "" when skipped.
	Effect string
	// Match is whether the rule's if held: the effect applies.
	Match bool
	// Expressions are the field conditions evaluated, in order (ARM's
	// evaluationDetails.evaluatedExpressions).
	Expressions []Expression
}

// Denied reports whether the write the resource document stands for is
// refused: the rule was evaluated, held, and the effect is Deny.
func (r Result) Denied() bool { return r.Skip == "" && r.Match && r.Effect == "Deny" }

// Evaluate evaluates a policy assignment of a definition on the resource
// a PUT or PATCH would leave. resource is the ARM JSON of it, decoded into
// maps (see Resource): id, name, type, location, kind, tags and
// properties in the wire form (a route table's routes at
// properties.routes[*].properties.nextHopType). Property names match
// without regard to case.
//
// The assignment must cover the resource's id (Assignment.Applies), and
// the definition's mode must evaluate its type: mode Indexed evaluates
// only the types that have tags and a location, which azpolicy takes to
// be the top-level types of a resource provider other than
// Microsoft.Resources (so neither routes, subnets nor resource groups,
// as Azure's built-in "Allowed locations" notes of resource groups).
// Otherwise Result.Skip says why nothing was evaluated.
//
// Errors: a nil definition or assignment, an assignment of another
// definition, a resource without id or type, a parameter without a value
// (ErrMissingParameter), an effect parameter that is no effect.
func Evaluate(d *Definition, a *Assignment, resource map[string]any) (Result, error) {
	if d == nil || a == nil || d.cond == nil {
		return Result{}, errors.New("policy evaluation needs a definition made by ParseDefinition and an assignment")
	}
	if d.ID != "" && a.DefinitionID != "" && !strings.EqualFold(strings.TrimRight(d.ID, "/"), strings.TrimRight(a.DefinitionID, "/")) {
		return Result{}, fmt.Errorf("policy assignment %s assigns %s, not %s", a.label(), a.DefinitionID, d.ID)
	}
	id, _ := fold(resource, "id").(string)
	typ, _ := fold(resource, "type").(string)
	if id == "" || typ == "" {
		return Result{}, fmt.Errorf("policy evaluation of %s: the resource document needs its id and type", d.label())
	}
	if why := a.skip(id); why != "" {
		return Result{Skip: why}, nil
	}
	if d.Mode == ModeIndexed && !IndexedType(typ) {
		return Result{Skip: "mode Indexed does not evaluate " + typ}, nil
	}
	effect, err := d.Effect(a)
	if err != nil {
		return Result{}, err
	}
	ev := &evaluator{doc: resource, param: func(name string) (any, error) {
		if v, ok := d.ParameterValue(a, name); ok {
			return v, nil
		}
		return nil, d.missingParam(a, name)
	}}
	match := ev.eval(d.cond)
	if ev.err != nil {
		return Result{}, ev.err
	}
	return Result{Effect: effect, Match: match, Expressions: ev.evaluated}, nil
}

// Denies reports whether a deny policy refuses the write of resource:
// Evaluate(d, a, resource).Denied().
func Denies(d *Definition, a *Assignment, resource map[string]any) (bool, error) {
	r, err := Evaluate(d, a, resource)
	return r.Denied(), err
}

// IndexedType reports whether a policy of mode Indexed evaluates a
// resource type: a top-level type of a resource provider
// ("Microsoft.Network/routeTables"), not a child type
// ("Microsoft.Network/routeTables/routes",
// "Microsoft.Network/virtualNetworks/subnets") and not one of
// Microsoft.Resources (resource groups, subscriptions).
func IndexedType(typ string) bool {
	parts := strings.Split(strings.Trim(typ, "/"), "/")
	return len(parts) == 2 && parts[0] != "" && parts[1] != "" && !strings.EqualFold(parts[0], "Microsoft.Resources")
}

// Resource makes the document Evaluate reads for a write of body at id:
// body (a map, json.RawMessage, []byte, or any value encoding/json
// marshals in ARM's wire form, such as an armnetwork model) decoded into
// maps, with id, name and type set from the ID. The type of an ID is its
// provider namespace and every type segment:
// /subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/n
// is Microsoft.Network/virtualNetworks/subnets; a resource group's is
// Microsoft.Resources/subscriptions/resourceGroups.
func Resource(id string, body any) (map[string]any, error) {
	typ, name, err := ResourceType(id)
	if err != nil {
		return nil, err
	}
	var b []byte
	switch v := body.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("resource %s: %w", id, err)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("resource %s: the body is not a JSON object: %w", id, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	for _, k := range []string{"id", "name", "type"} { // no second spelling
		for dk := range doc {
			if strings.EqualFold(dk, k) {
				delete(doc, dk)
			}
		}
	}
	doc["id"], doc["name"], doc["type"] = id, name, typ
	return doc, nil
}

// ResourceType returns the type and name of the resource an ARM ID names.
func ResourceType(id string) (typ, name string, err error) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	bad := fmt.Errorf("%q is not a resource ID: want /subscriptions/{s}/resourceGroups/{g}[/providers/{namespace}/{type}/{name}...]", id)
	if len(segs) < 4 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") || segs[1] == "" || segs[3] == "" {
		return "", "", bad
	}
	if len(segs) == 4 {
		return "Microsoft.Resources/subscriptions/resourceGroups", segs[3], nil
	}
	if len(segs) < 8 || len(segs)%2 != 0 || !strings.EqualFold(segs[4], "providers") {
		return "", "", bad
	}
	typ = segs[5]
	for i := 6; i < len(segs); i += 2 {
		if segs[i] == "" || segs[i+1] == "" {
			return "", "", bad
		}
		typ += "/" + segs[i]
	}
	return typ, segs[len(segs)-1], nil
}
