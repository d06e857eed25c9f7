package armtemplate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeWorld is a Deployer over an in-memory map of resource states: Put
// stores the body with a provisioningState, as a provider would answer.
type fakeWorld struct {
	states map[string]map[string]any
	puts   []string
}

func newWorld() *fakeWorld { return &fakeWorld{states: map[string]map[string]any{}} }

func (w *fakeWorld) Get(_ context.Context, id, _ string) (map[string]any, bool, error) {
	s, ok := w.states[strings.ToLower(id)]
	return s, ok, nil
}

func (w *fakeWorld) Put(_ context.Context, r *Resource) (map[string]any, error) {
	w.puts = append(w.puts, r.Name)
	state := deepCopy(r.Body).(map[string]any)
	state["id"] = r.ID
	props, _ := state["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props["provisioningState"] = "Succeeded"
	state["properties"] = props
	w.states[strings.ToLower(r.ID)] = state
	return state, nil
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tmpl, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tmpl
}

func deploy(t *testing.T, src string, params map[string]any) (*Result, *fakeWorld) {
	t.Helper()
	w := newWorld()
	res, err := Deploy(context.Background(), mustParse(t, src), testScope, Values(params), Options{}, w)
	if err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	return res, w
}

func outputs(res *Result) map[string]any {
	out := map[string]any{}
	for k, o := range res.Outputs {
		out[k] = o.Value
	}
	return out
}

const rgPrefix = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/examplegroup/providers/"

func TestCopyLoops(t *testing.T) {
	res, w := deploy(t, `{
	  "parameters": {"count": {"type": "int", "defaultValue": 3}},
	  "variables": {"copy": [{"name": "names", "count": 2, "input": "[concat('n', copyIndex('names', 1))]"}]},
	  "resources": [{
	    "type": "Microsoft.Network/publicIPAddresses", "apiVersion": "2023-04-01",
	    "name": "[concat('ip-', copyIndex(10))]", "location": "westus",
	    "copy": {"name": "ips", "count": "[parameters('count')]", "mode": "Serial", "batchSize": 2},
	    "properties": {
	      "idleTimeoutInMinutes": "[add(4, copyIndex())]",
	      "copy": [{"name": "ipTags", "count": 2, "input": {"tag": "[format('{0}-{1}', copyIndex('ips'), copyIndex('ipTags'))]"}}]
	    }
	  }],
	  "outputs": {
	    "names": {"type": "array", "value": "[variables('names')]"},
	    "loop": {"type": "array", "copy": {"count": 2, "input": "[reference(resourceId('Microsoft.Network/publicIPAddresses', concat('ip-', copyIndex(10)))).idleTimeoutInMinutes]"}}
	  }
	}`, nil)
	if diff := cmp.Diff([]string{"ip-10", "ip-11", "ip-12"}, w.puts); diff != "" {
		t.Errorf("deployed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"names": []any{"n1", "n2"}, "loop": []any{int64(4), int64(5)}}, outputs(res)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	third := res.Resources[2]
	if diff := cmp.Diff([]any{map[string]any{"tag": "2-0"}, map[string]any{"tag": "2-1"}}, third.Properties.(map[string]any)["ipTags"]); diff != "" {
		t.Errorf("property copy (-want +got):\n%s", diff)
	}
	// Serial with batchSize 2: the third instance waits for the first two.
	want := []string{rgPrefix + "Microsoft.Network/publicIPAddresses/ip-10", rgPrefix + "Microsoft.Network/publicIPAddresses/ip-11"}
	if diff := cmp.Diff(want, third.DependsOn); diff != "" {
		t.Errorf("serial batch dependencies (-want +got):\n%s", diff)
	}
	if len(res.Resources[0].DependsOn) != 0 || len(res.Resources[1].DependsOn) != 0 {
		t.Errorf("first batch has dependencies: %v %v", res.Resources[0].DependsOn, res.Resources[1].DependsOn)
	}
}

func TestConditionAndChildren(t *testing.T) {
	res, w := deploy(t, `{
	  "Parameters": {"withStorage": {"type": "bool", "defaultValue": false}},
	  "Resources": [
	    {"condition": "[parameters('withStorage')]", "type": "Microsoft.Storage/storageAccounts", "apiVersion": "2023-01-01", "name": "st1",
	     "resources": [{"type": "blobServices", "apiVersion": "2023-01-01", "name": "default"}]},
	    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "vnet1", "location": "westus",
	     "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}},
	     "resources": [{"type": "subnets", "apiVersion": "2023-04-01", "name": "a", "properties": {"addressPrefix": "10.0.0.0/24"}},
	                   {"type": "Microsoft.Network/virtualNetworks/subnets", "apiVersion": "2023-04-01", "name": "vnet1/b", "dependsOn": ["vnet1/a"]}]}
	  ]
	}`, nil)
	if diff := cmp.Diff([]string{"vnet1", "vnet1/a", "vnet1/b"}, w.puts); diff != "" {
		t.Errorf("deployed (-want +got):\n%s", diff)
	}
	wantSkipped := []string{rgPrefix + "Microsoft.Storage/storageAccounts/st1", rgPrefix + "Microsoft.Storage/storageAccounts/st1/blobServices/default"}
	if diff := cmp.Diff(wantSkipped, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	sub := res.Resources[1]
	if sub.ID != rgPrefix+"Microsoft.Network/virtualNetworks/vnet1/subnets/a" || sub.Type != "Microsoft.Network/virtualNetworks/subnets" {
		t.Errorf("child flattened to %s (%s)", sub.ID, sub.Type)
	}
	if diff := cmp.Diff([]string{rgPrefix + "Microsoft.Network/virtualNetworks/vnet1"}, sub.DependsOn); diff != "" {
		t.Errorf("child's implicit dependency on its parent (-want +got):\n%s", diff)
	}
}

func TestDependencyOrder(t *testing.T) {
	// Declared in reverse; every form of dependency reorders them.
	src := `{
	  "resources": [
	    {"type": "Microsoft.Web/sites", "apiVersion": "2022-03-01", "name": "site",
	     "properties": {"serverFarmId": "[reference('plan').id]"}},
	    {"type": "Microsoft.Web/serverfarms", "apiVersion": "2022-03-01", "name": "plan",
	     "dependsOn": ["[resourceId('Microsoft.Storage/storageAccounts', 'st')]"]},
	    {"type": "Microsoft.Storage/storageAccounts", "apiVersion": "2023-01-01", "name": "st",
	     "dependsOn": ["Microsoft.Network/virtualNetworks/vnet", "workers"]},
	    {"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2023-03-01", "name": "[concat('w', copyIndex())]",
	     "copy": {"name": "workers", "count": 2}},
	    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "vnet"}
	  ]
	}`
	d, err := Prepare(context.Background(), mustParse(t, src), testScope, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.Steps() {
		got = append(got, s.Name)
	}
	if diff := cmp.Diff([]string{"w0", "w1", "vnet", "st", "plan", "site"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// The reference() made site wait for plan without a dependsOn.
	if site := d.Steps()[5]; len(site.DependsOn) != 1 || !strings.HasSuffix(site.DependsOn[0], "/serverfarms/plan") {
		t.Errorf("site depends on %v", site.DependsOn)
	}
}

func TestCircularDependency(t *testing.T) {
	src := `{
  "resources": [
    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "a", "dependsOn": ["b"]},
    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "b", "dependsOn": ["a"]}
  ]
}`
	_, err := Prepare(context.Background(), mustParse(t, src), testScope, nil, Options{})
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeInvalidTemplate {
		t.Fatalf("err = %v, want InvalidTemplate", err)
	}
	want := "Circular dependency detected on resource: '" + rgPrefix + "Microsoft.Network/virtualNetworks/a'. Please see https://aka.ms/arm-syntax-resources for usage details."
	if ae.Message != want || ae.Line != 3 {
		t.Errorf("got %q at line %d, want %q at line 3", ae.Message, ae.Line, want)
	}
}

func TestNestedDeployments(t *testing.T) {
	res, w := deploy(t, `{
	  "parameters": {"prefix": {"type": "string", "defaultValue": "parent"}},
	  "variables": {"where": "from parent template"},
	  "resources": [
	    {"type": "Microsoft.Resources/deployments", "apiVersion": "2022-09-01", "name": "innerDeploy",
	     "properties": {"mode": "Incremental", "expressionEvaluationOptions": {"scope": "inner"},
	       "parameters": {"prefix": {"value": "[concat(parameters('prefix'), '-inner')]"}},
	       "template": {
	         "parameters": {"prefix": {"type": "string"}},
	         "variables": {"where": "from nested template"},
	         "resources": [{"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "[concat(parameters('prefix'), '-vnet')]", "properties": {"note": "[variables('where')]"}}],
	         "outputs": {"where": {"type": "string", "value": "[variables('where')]"},
	                     "vnetNote": {"type": "string", "value": "[reference(resourceId('Microsoft.Network/virtualNetworks', concat(parameters('prefix'), '-vnet'))).note]"}}
	       }}},
	    {"type": "Microsoft.Resources/deployments", "apiVersion": "2022-09-01", "name": "outerDeploy",
	     "properties": {"mode": "Incremental",
	       "template": {
	         "variables": {"where": "from nested template"},
	         "resources": [],
	         "outputs": {"where": {"type": "string", "value": "[variables('where')]"}, "prefix": {"type": "string", "value": "[parameters('prefix')]"}}
	       }}}
	  ],
	  "outputs": {
	    "inner": {"type": "string", "value": "[reference('innerDeploy').outputs.where.value]"},
	    "innerNote": {"type": "string", "value": "[reference('innerDeploy').outputs.vnetNote.value]"},
	    "outer": {"type": "string", "value": "[reference('outerDeploy').outputs.where.value]"},
	    "outerPrefix": {"type": "string", "value": "[reference('outerDeploy').outputs.prefix.value]"}
	  }
	}`, nil)
	want := map[string]any{"inner": "from nested template", "innerNote": "from nested template", "outer": "from parent template", "outerPrefix": "parent"}
	if diff := cmp.Diff(want, outputs(res)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"parent-inner-vnet"}, w.puts); diff != "" {
		t.Errorf("deployed (-want +got):\n%s", diff)
	}
	if res.Resources[0].Deployment != "innerDeploy" {
		t.Errorf("nested resource's deployment = %q", res.Resources[0].Deployment)
	}
}

func TestReferenceAndLazyIf(t *testing.T) {
	w := newWorld()
	existing := rgPrefix + "Microsoft.Network/virtualNetworks/existing"
	w.states[strings.ToLower(existing)] = map[string]any{"id": existing, "name": "existing", "type": "Microsoft.Network/virtualNetworks",
		"location": "westus", "tags": map[string]any{"env": "test"}, "properties": map[string]any{"addressSpace": map[string]any{"addressPrefixes": []any{"10.1.0.0/16"}}}}
	src := `{
	  "resources": [],
	  "outputs": {
	    "prefix": {"type": "string", "value": "[reference(resourceId('Microsoft.Network/virtualNetworks', 'existing'), '2023-04-01').addressSpace.addressPrefixes[0]]"},
	    "full": {"type": "object", "value": "[reference(resourceId('Microsoft.Network/virtualNetworks', 'existing'), '2023-04-01', 'Full')]"},
	    "lazy": {"type": "object", "value": "[if(false(), reference('missing'), null())]"},
	    "taken": {"type": "string", "value": "[if(true(), 'yes', reference('missing'))]"}
	  }
	}`
	res, err := Deploy(context.Background(), mustParse(t, src), testScope, nil, Options{}, w)
	if err != nil {
		t.Fatal(err)
	}
	got := outputs(res)
	if got["prefix"] != "10.1.0.0/16" || got["lazy"] != nil || got["taken"] != "yes" {
		t.Errorf("outputs = %v", got)
	}
	full := got["full"].(map[string]any)
	if full["id"] != existing || full["location"] != "westus" || full["apiVersion"] != "2023-04-01" || full["tags"].(map[string]any)["env"] != "test" {
		t.Errorf("reference Full = %v", full)
	}
}

func TestWhatIfLeavesReferencesUnevaluated(t *testing.T) {
	src := `{
	  "resources": [
	    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "vnet", "location": "westus", "properties": {}},
	    {"type": "Microsoft.Network/networkInterfaces", "apiVersion": "2023-04-01", "name": "nic", "location": "[resourceGroup().location]",
	     "properties": {"vnetGuid": "[reference('vnet').resourceGuid]", "static": "[concat('a', 'b')]"}}
	  ],
	  "outputs": {"guid": {"type": "string", "value": "[reference('vnet').resourceGuid]"}}
	}`
	res, err := WhatIf(context.Background(), mustParse(t, src), testScope, nil, Options{}, newWorld())
	if err != nil {
		t.Fatal(err)
	}
	nic := res.Resources[1]
	want := map[string]any{"vnetGuid": "[reference('vnet').resourceGuid]", "static": "ab"}
	if diff := cmp.Diff(want, nic.Properties); diff != "" {
		t.Errorf("what-if properties (-want +got):\n%s", diff)
	}
	if nic.Location != "westus" || res.Outputs["guid"].Value != "[reference('vnet').resourceGuid]" {
		t.Errorf("location %q, output %v", nic.Location, res.Outputs["guid"])
	}
	if got := nic.DependsOn; len(got) != 1 || !strings.HasSuffix(got[0], "/virtualNetworks/vnet") {
		t.Errorf("nic depends on %v", got)
	}
}

func TestParameters(t *testing.T) {
	src := `{
	  "parameters": {
	    "size": {"type": "string", "allowedValues": ["small", "large"], "defaultValue": "small"},
	    "count": {"type": "int", "minValue": 1, "maxValue": 5, "defaultValue": "[length(parameters('size'))]"},
	    "name": {"type": "string", "minLength": 3, "maxLength": 5, "defaultValue": "abc"},
	    "id": {"type": "string", "defaultValue": "[newGuid()]"},
	    "tags": {"type": "object", "defaultValue": {"a": "b"}},
	    "flag": {"type": "bool", "defaultValue": true},
	    "list": {"type": "array", "defaultValue": [1]},
	    "secret": {"type": "secureString", "defaultValue": "s"}
	  },
	  "resources": [],
	  "outputs": {"count": {"type": "int", "value": "[parameters('count')]"}, "id": {"type": "string", "value": "[parameters('id')]"}}
	}`
	tmpl := mustParse(t, src)
	res, err := WhatIf(context.Background(), tmpl, testScope, Values(map[string]any{"size": "large"}), Options{NewGUID: func() string { return "fixed" }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := outputs(res); got["count"] != int64(5) || got["id"] != "fixed" {
		t.Errorf("outputs = %v", got)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		params    map[string]any
		want      string
		line, col int
	}{
		{"unknown function", `{"resources": [], "outputs": {"o": {"type": "string", "value": "[foo('x')]"}}}`, nil,
			"The template output 'o' is not valid: The template function 'foo' is not valid. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"json syntax", "{\n  \"resources\": [\n    {,}\n  ]\n}", nil, "Deployment template parse failed: 'Invalid property identifier character: ,. Line 3, position 6.'.", 3, 6},
		{"missing parameter", "{\n \"parameters\": {\n  \"x\": {\"type\": \"string\"}\n }\n}", nil,
			"The value for the template parameter 'x' at line '3' and column '8' is not provided. Please see https://aka.ms/arm-create-parameter-file for usage details.", 3, 8},
		{"not allowed", `{"parameters": {"x": {"type": "string", "allowedValues": ["a", "b"]}}}`, map[string]any{"x": "c"},
			"The provided value for the template parameter 'x' at line '1' and column '22' is not valid. The parameter value is not part of the allowed value(s): 'a,b'.", 1, 22},
		{"wrong type", `{"parameters": {"x": {"type": "int"}}}`, map[string]any{"x": []any{}},
			"The provided value for the template parameter 'x' at line '1' and column '22' is not valid. Template parameter JToken type is not valid. Expected 'Integer'. Actual 'Array'.", 1, 22},
		{"above max", `{"parameters": {"x": {"type": "int", "maxValue": 3}}}`, map[string]any{"x": 4},
			"The provided value for the template parameter 'x' at line '1' and column '22' is not valid. The provided value '4' is greater than the maximum value '3'.", 1, 22},
		{"unknown parameter", `{"parameters": {"a": {"type": "string", "defaultValue": ""}}}`, map[string]any{"zz": 1},
			"The template parameters 'zz' are not valid; they are not present in the original template and can therefore not be provided at deployment time. The only supported parameters for this template are 'a'. Please see https://aka.ms/arm-create-parameter-file for usage details.", 0, 0},
		{"newGuid outside defaults", `{"variables": {"v": "[newGuid()]"}}`, nil,
			"The template variable 'v' is not valid: The template function 'newGuid' is not expected at this location. It can only be used in the default value of a parameter. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"reference in variables", `{"variables": {"v": "[reference('x')]"}}`, nil,
			"The template variable 'v' is not valid: The template function 'reference' is not expected at this location. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"languageVersion 2.0", `{"languageVersion": "2.0", "resources": {"a": {}}}`, nil,
			"The template language version '2.0' is not supported by this engine: languageVersion 2.0 (symbolic-name resources, user-defined types) is not implemented; use a template without languageVersion.", 0, 0},
		{"user-defined function", `{"resources": [], "outputs": {"o": {"type": "string", "value": "[my.fn()]"}}}`, nil,
			"The template output 'o' is not valid: The template function 'my.fn' is not valid: user-defined functions are not supported by this engine. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"templateLink", "{\"resources\": [\n {\"type\": \"Microsoft.Resources/deployments\", \"apiVersion\": \"2022-09-01\", \"name\": \"d\", \"properties\": {\"templateLink\": {\"uri\": \"https://x\"}}}]}", nil,
			"The template resource 'd' at line '2' and column '2' is not valid: The nested deployment uses 'templateLink'; linked templates are not supported by this engine (they need the network). Use an inline 'template'.", 2, 2},
		{"unterminated string", `{"variables": {"v": "[concat('a)]"}}`, nil,
			"The template variable 'v' is not valid: The language expression 'concat('a)' is not valid: the string literal starting at position '7' is not terminated. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"missing property", `{"variables": {"o": {"a": 1}, "v": "[variables('o').b]"}}`, nil,
			"The template variable 'v' is not valid: The language expression property 'b' doesn't exist, available properties are 'a'.", 0, 0},
		{"unknown dependency", "{\"resources\": [\n {\"type\": \"Microsoft.Network/virtualNetworks\", \"apiVersion\": \"1\", \"name\": \"a\", \"dependsOn\": [\"nope\"]}]}", nil,
			"The resource 'nope' is not defined in the template. Please see https://aka.ms/arm-syntax for usage details.", 2, 2},
		{"empty name", "{\"resources\": [\n {\"type\": \"Microsoft.Network/virtualNetworks\", \"apiVersion\": \"1\", \"name\": \"\"}]}", nil,
			"The template resource '' at line '2' and column '2' is not valid. The name property cannot be null or empty.", 2, 2},
		{"segment lengths", "{\"resources\": [\n {\"type\": \"Microsoft.Network/virtualNetworks/subnets\", \"apiVersion\": \"1\", \"name\": \"a\"}]}", nil,
			"The template resource 'a' for type 'Microsoft.Network/virtualNetworks/subnets' at line '2' and column '2' has incorrect segment lengths. A nested resource type must have identical number of segments as its resource name. A root resource type must have segment length one greater than its resource name.", 2, 2},
		{"output type", `{"outputs": {"o": {"type": "int", "value": "x"}}}`, nil,
			"The template output 'o' is not valid: Template output JToken type is not valid. Expected 'Integer'. Actual 'String'.", 0, 0},
		{"arity", `{"outputs": {"o": {"type": "string", "value": "[toLower()]"}}}`, nil,
			"The template output 'o' is not valid: Unable to evaluate template language function 'toLower': function requires 1 argument(s) while 0 were provided. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
		{"substring range", `{"outputs": {"o": {"type": "string", "value": "[substring('1234567890', 0, 11)]"}}}`, nil,
			"The template output 'o' is not valid: The index and length parameters must refer to a location within the string. The index parameter: '0', the length parameter: '11', the length of the string parameter: '10'. Please see https://aka.ms/arm-template-expressions for usage details.", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			tmpl, err := Parse([]byte(tc.src))
			if err == nil {
				_, err = WhatIf(context.Background(), tmpl, testScope, Values(tc.params), Options{}, nil)
			}
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ae.Code != CodeInvalidTemplate || ae.Message != tc.want {
				t.Errorf("got  %s: %s\nwant InvalidTemplate: %s", ae.Code, ae.Message, tc.want)
			}
			if ae.Line != tc.line || ae.Column != tc.col {
				t.Errorf("at %d:%d, want %d:%d", ae.Line, ae.Column, tc.line, tc.col)
			}
		})
	}
}

func TestExpressionSyntax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"[[notAnExpression]", "[notAnExpression]"},
		{"plain", "plain"},
		{"[concat('it''s', ' ', 'ok')]", "it's ok"},
		{"[createObject('Key', 1).key]", int64(1)},
		{"[createObject('a', createArray(1, 2))['a'][1]]", int64(2)},
		{"[ add( -1 , 3 ) ]", int64(2)},
		{"[string(true())]", "True"},
		{"[json('{\"A\": {\"b\": [10]}}').a.B[0]]", int64(10)},
		{"[coalesce(null(), 'x')]", "x"},
		{"[format('{0,5}|{1:D3}|{2:X}', 'ab', 7, 255)]", "   ab|007|FF"},
		{"[guid('a', 'b')]", armGUID([]string{"a-b"})},
		{"[mod(-7, 3)]", int64(-1)},
		{"[div(-7, 2)]", int64(-3)},
		{"[float('1.5')]", 1.5},
		{"[indexOf(createArray('a', 'b'), 'b')]", int64(1)},
		{"[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', 'r')]", "/subscriptions/00000000-1111-2222-3333-444444444444/providers/Microsoft.Authorization/roleDefinitions/r"},
		{"[extensionResourceId(resourceGroup().id, 'Microsoft.Authorization/locks', 'l')]", "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/examplegroup/providers/Microsoft.Authorization/locks/l"},
		{"[resourceId('Microsoft.Network/virtualNetworks/subnets', 'v', 's')]", rgPrefix + "Microsoft.Network/virtualNetworks/v/subnets/s"},
		{"[uniqueString(resourceGroup().id)]", uniqueString([]string{"/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/examplegroup"})},
		{"[environment().suffixes.storage]", "core.windows.net"},
		{"[deployment().name]", "exampledeployment"},
		{"[subscription().subscriptionId]", "00000000-1111-2222-3333-444444444444"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f := newFrame(&Template{parameters: map[string]any{}, variables: map[string]any{}, raw: map[string]any{}}, testScope, Options{}, &run{}, nil)
			got, err := f.ev(context.Background(), modeStatic, "output").value(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStepwise drives a deployment step by step, as a provider that PUTs
// resources itself would.
func TestStepwise(t *testing.T) {
	src := `{
	  "resources": [
	    {"type": "Microsoft.Network/networkInterfaces", "apiVersion": "2023-04-01", "name": "nic",
	     "properties": {"subnet": "[reference('vnet').subnets[0].id]"}},
	    {"type": "Microsoft.Network/virtualNetworks", "apiVersion": "2023-04-01", "name": "vnet", "properties": {}}
	  ],
	  "outputs": {"subnet": {"type": "string", "value": "[reference('nic').subnet]"}}
	}`
	ctx := context.Background()
	d, err := Prepare(ctx, mustParse(t, src), testScope, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld()
	for _, s := range d.Steps() {
		r, err := d.Evaluate(ctx, s, w)
		if err != nil {
			t.Fatalf("Evaluate %s: %v", s.Name, err)
		}
		state, _ := w.Put(ctx, r)
		if r.Name == "vnet" { // the provider fills in what the service computes
			state["properties"].(map[string]any)["subnets"] = []any{map[string]any{"id": "sub-1"}}
		}
		d.Record(r.ID, state)
	}
	outs, err := d.Outputs(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if outs["subnet"].Value != "sub-1" || outs["subnet"].Type != "String" {
		t.Errorf("outputs = %v", outs)
	}
	if diff := cmp.Diff([]string{"vnet", "nic"}, w.puts); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestReferenceInNameIsRejected(t *testing.T) {
	src := `{"resources": [{"type": "A.B/c", "apiVersion": "1", "name": "[reference('x').name]"}]}`
	_, err := Prepare(context.Background(), mustParse(t, src), testScope, nil, Options{})
	var ae *Error
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "The template function 'reference' is not expected at this location.") {
		t.Fatalf("err = %v", err)
	}
}
