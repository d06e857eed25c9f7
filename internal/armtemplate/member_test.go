package armtemplate

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The body az sends a deployment in: JSONC, with the template spliced in
// under an unquoted `template:` key, comments and all. Template errors are
// reported at the template's position in the body.
func TestParseMember(t *testing.T) {
	body := `{"properties": {"parameters": {"name": {"value": "x"}}, "mode": "Incremental", template:{
  // a comment, as templates may hold
  "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
  "parameters": {"name": {"type": "string"}, "missing": {"type": "string"}},
  "resources": []
}}}`
	tmpl, doc, err := ParseMember([]byte(body), "properties", "template")
	if err != nil {
		t.Fatal(err)
	}
	props, _ := doc["properties"].(map[string]any)
	if props["mode"] != "Incremental" {
		t.Errorf("document's mode = %v", props["mode"])
	}
	params, _ := props["parameters"].(map[string]any)
	_, err = Prepare(context.Background(), tmpl, testScope, params, Options{})
	var ae *Error
	if !errors.As(err, &ae) || ae.Line != 4 || !strings.Contains(ae.Message, "'missing' at line '4'") {
		t.Errorf("missing parameter: %v (line %d), want one at line 4", err, ae.Line)
	}

	for name, tc := range map[string]struct {
		body string
		line int
	}{
		"broken JSON":       {"{\"properties\": {\n\"template\": {\"resources\": [}}}", 2},
		"not an object":     {`[]`, 0},
		"template a string": {`{"properties": {"template": "x"}}`, 0},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseMember([]byte(tc.body), "properties", "template")
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != CodeInvalidTemplate || ae.Line != tc.line {
				t.Errorf("ParseMember = %v (%+v), want InvalidTemplate at line %d", err, ae, tc.line)
			}
		})
	}
	if tmpl, _, err := ParseMember([]byte(`{"properties": {"mode": "Incremental"}}`), "properties", "template"); err != nil || tmpl != nil {
		t.Errorf("no template: %v, %v; want nil, nil", tmpl, err)
	}
}

// nestedWorld records the nested deployments Deploy reports.
type nestedWorld struct {
	*fakeWorld
	nested []string
}

func (w *nestedWorld) Nested(_ context.Context, n *NestedDeployment) error {
	w.nested = append(w.nested, n.Parent+">"+n.Name+":"+strings.Join(n.Resources, ","))
	return nil
}

func TestNestedDeploymentsAreReported(t *testing.T) {
	src := `{"resources": [
	  {"type": "Microsoft.Resources/deployments", "apiVersion": "2022-09-01", "name": "inner",
	   "properties": {"mode": "Incremental", "expressionEvaluationOptions": {"scope": "inner"},
	     "template": {"resources": [{"type": "Microsoft.Network/routeTables", "apiVersion": "2023-04-01", "name": "rt"}],
	       "outputs": {"n": {"type": "int", "value": 3}}}}}]}`
	w := &nestedWorld{fakeWorld: newWorld()}
	res, err := Deploy(context.Background(), mustParse(t, src), testScope, nil, Options{}, w)
	if err != nil {
		t.Fatal(err)
	}
	want := "exampledeployment>inner:" + rgPrefix + "Microsoft.Network/routeTables/rt"
	if len(w.nested) != 1 || !strings.EqualFold(w.nested[0], want) {
		t.Errorf("nested = %v, want [%s]", w.nested, want)
	}
	if len(res.Nested) != 1 || res.Nested[0].Outputs["n"].Value != int64(3) {
		t.Errorf("Result.Nested = %+v", res.Nested)
	}
	wi, err := WhatIf(context.Background(), mustParse(t, src), testScope, nil, Options{}, nil)
	if err != nil || len(wi.Nested) != 1 || wi.Nested[0].ID != res.Nested[0].ID {
		t.Errorf("what-if's nested = %+v, %v", wi, err)
	}
}
