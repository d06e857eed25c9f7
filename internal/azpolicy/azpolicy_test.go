package azpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	sub    = "/subscriptions/00000000-0000-0000-0000-000000000000"
	rg     = sub + "/resourceGroups/kubernetes"
	net    = rg + "/providers/Microsoft.Network"
	table  = net + "/routeTables/rt"
	vnet   = net + "/virtualNetworks/vnet"
	subnet = vnet + "/subnets/nodes"
	defID  = sub + "/providers/Microsoft.Authorization/policyDefinitions/p"
)

// mustDefinition compiles a definition of mode with rule ({"if", "then"})
// and parameters (JSON, "" for none).
func mustDefinition(t *testing.T, mode, rule, params string) *Definition {
	t.Helper()
	if params == "" {
		params = "{}"
	}
	doc := fmt.Sprintf(`{"id":%q,"name":"p","properties":{"mode":%q,"parameters":%s,"policyRule":%s}}`, defID, mode, params, rule)
	d, err := ParseDefinition([]byte(doc))
	if err != nil {
		t.Fatalf("ParseDefinition(%s): %v", doc, err)
	}
	return d
}

// assignment at scope of the definition p with parameters.
func assignment(scope string, params map[string]any, notScopes ...string) *Assignment {
	return &Assignment{ID: scope + "/providers/Microsoft.Authorization/policyAssignments/a", Name: "a", Scope: scope,
		DefinitionID: defID, NotScopes: notScopes, Parameters: params, EnforcementMode: EnforcementDefault}
}

// doc decodes a resource document.
func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// routeTable is a route table document with routes given as
// name=prefix>hop pairs.
func routeTable(t *testing.T, extra string, routes ...string) map[string]any {
	t.Helper()
	var rs []string
	for _, r := range routes {
		name, rest, _ := strings.Cut(r, "=")
		prefix, hop, _ := strings.Cut(rest, ">")
		rs = append(rs, fmt.Sprintf(`{"name":%q,"properties":{"addressPrefix":%q,"nextHopType":%q,"nextHopIpAddress":"10.240.0.4"}}`, name, prefix, hop))
	}
	return doc(t, fmt.Sprintf(`{"id":%q,"name":"rt","type":"Microsoft.Network/routeTables","location":"East US",
		"tags":{"Env":"prod","owner":"team-a"},%s"properties":{"disableBgpRoutePropagation":false,"routes":[%s]}}`, table, extra, strings.Join(rs, ",")))
}

func TestOperators(t *testing.T) {
	rt := routeTable(t, `"kind":"k1",`)
	for _, tc := range []struct {
		name, cond string
		want       bool
	}{
		{"equals, any case", `{"field":"type","equals":"microsoft.network/ROUTETABLES"}`, true},
		{"equals other", `{"field":"name","equals":"other"}`, false},
		{"equals missing field", `{"field":"tags['nope']","equals":""}`, false},
		{"notEquals", `{"field":"name","notEquals":"other"}`, true},
		{"notEquals same", `{"field":"name","notEquals":"RT"}`, false},
		{"notEquals missing field", `{"field":"tags.nope","notEquals":"x"}`, true},
		{"in", `{"field":"location","in":["westus","eastus"]}`, true},
		{"in not", `{"field":"location","in":["westus"]}`, false},
		{"in missing field", `{"field":"tags.nope","in":["x"]}`, false},
		{"notIn", `{"field":"location","notIn":["westus"]}`, true},
		{"notIn not", `{"field":"location","notIn":["EastUS"]}`, false},
		{"exists true", `{"field":"tags['env']","exists":true}`, true},
		{"exists true missing", `{"field":"tags['nope']","exists":"true"}`, false},
		{"exists false missing", `{"field":"tags.nope","exists":false}`, true},
		{"exists false present", `{"field":"kind","exists":"False"}`, false},
		{"like", `{"field":"tags.owner","like":"team-*"}`, true},
		{"like not", `{"field":"tags.owner","like":"ops-*"}`, false},
		{"like missing", `{"field":"tags.nope","like":"*"}`, false},
		{"notLike", `{"field":"tags.owner","notLike":"ops-*"}`, true},
		{"notLike missing", `{"field":"tags.nope","notLike":"*"}`, true},
		{"contains", `{"field":"id","contains":"/RESOURCEGROUPS/kubernetes/"}`, true},
		{"contains not", `{"field":"id","contains":"other"}`, false},
		{"notContains", `{"field":"id","notContains":"other"}`, true},
		{"notContains not", `{"field":"name","notContains":"r"}`, false},
		{"kind", `{"field":"kind","equals":"K1"}`, true},
		{"tags exists", `{"field":"tags","exists":true}`, true},
		{"bool equals string", `{"field":"Microsoft.Network/routeTables/disableBgpRoutePropagation","equals":"false"}`, true},
		{"allOf", `{"allOf":[{"field":"name","equals":"rt"},{"field":"location","equals":"eastus"}]}`, true},
		{"allOf one fails", `{"allOf":[{"field":"name","equals":"rt"},{"field":"location","equals":"westus"}]}`, false},
		{"anyOf", `{"anyOf":[{"field":"name","equals":"x"},{"field":"location","equals":"eastus"}]}`, true},
		{"anyOf none", `{"anyOf":[{"field":"name","equals":"x"},{"field":"location","equals":"westus"}]}`, false},
		{"not", `{"not":{"field":"name","equals":"x"}}`, true},
		{"alias of another type reads missing", `{"field":"Microsoft.Network/virtualNetworks/subnets/routeTable.id","exists":true}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDefinition(t, "All", `{"if":`+tc.cond+`,"then":{"effect":"deny"}}`, "")
			got, err := Denies(d, assignment(rg, nil), rt)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Denies = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestArrayAliases: a [*] alias holds when the condition holds for every
// member, so for an empty array; "any member" is not(all members differ).
func TestArrayAliases(t *testing.T) {
	anyAppliance := `{"if":{"allOf":[{"field":"type","equals":"Microsoft.Network/routeTables"},
		{"not":{"field":"Microsoft.Network/routeTables/routes[*].nextHopType","notEquals":"VirtualAppliance"}}]},"then":{"effect":"deny"}}`
	allInPods := `{"if":{"field":"Microsoft.Network/routeTables/routes[*].addressPrefix","like":"10.244.*"},"then":{"effect":"deny"}}`
	names := `{"if":{"field":"Microsoft.Network/routeTables/routes[*].name","like":"worker-*"},"then":{"effect":"deny"}}`
	routes := `{"if":{"field":"Microsoft.Network/routeTables/routes[*]","exists":true},"then":{"effect":"deny"}}`
	for _, tc := range []struct {
		name, rule string
		routes     []string
		want       bool
	}{
		{"any appliance: none", anyAppliance, nil, false},
		{"any appliance: internet only", anyAppliance, []string{"i=0.0.0.0/0>Internet"}, false},
		{"any appliance: one among others", anyAppliance, []string{"i=0.0.0.0/0>Internet", "worker-0=10.244.0.0/24>VirtualAppliance"}, true},
		{"any appliance: case", anyAppliance, []string{"w=10.244.0.0/24>virtualappliance"}, true},
		{"every prefix: empty holds", allInPods, nil, true},
		{"every prefix: all", allInPods, []string{"a=10.244.0.0/24>VirtualAppliance", "b=10.244.1.0/24>VirtualAppliance"}, true},
		{"every prefix: one outside", allInPods, []string{"a=10.244.0.0/24>VirtualAppliance", "i=0.0.0.0/0>Internet"}, false},
		{"names", names, []string{"worker-0____102440024=10.244.0.0/24>VirtualAppliance"}, true},
		{"names: one other", names, []string{"worker-0=10.244.0.0/24>VirtualAppliance", "default=0.0.0.0/0>Internet"}, false},
		{"members exist", routes, []string{"a=10.244.0.0/24>VirtualAppliance"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDefinition(t, "All", tc.rule, "")
			got, err := Denies(d, assignment(rg, nil), routeTable(t, "", tc.routes...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Denies = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSubnetAndRouteAliases: the aliases of a subnet and of a route
// written alone, and of a VNet's inline subnets.
func TestSubnetAndRouteAliases(t *testing.T) {
	sn := doc(t, `{"id":"`+subnet+`","name":"nodes","type":"Microsoft.Network/virtualNetworks/subnets",
		"properties":{"addressPrefix":"10.240.0.0/24","routeTable":{"id":"`+table+`"},"networkSecurityGroup":{"id":"`+net+`/networkSecurityGroups/nsg"}}}`)
	route := doc(t, `{"id":"`+table+`/routes/r","name":"r","type":"Microsoft.Network/routeTables/routes",
		"properties":{"addressPrefix":"10.244.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.4"}}`)
	vn := doc(t, `{"id":"`+vnet+`","name":"vnet","type":"Microsoft.Network/virtualNetworks","location":"eastus",
		"properties":{"addressSpace":{"addressPrefixes":["10.240.0.0/16"]},"subnets":[{"name":"nodes","properties":{"addressPrefix":"10.240.0.0/24","routeTable":{"id":"`+table+`"}}}]}}`)
	for _, tc := range []struct {
		name, cond string
		res        map[string]any
		want       bool
	}{
		{"subnet routeTable.id", `{"field":"Microsoft.Network/virtualNetworks/subnets/routeTable.id","equals":"` + strings.ToUpper(table) + `"}`, sn, true},
		{"subnet nsg", `{"field":"Microsoft.Network/virtualNetworks/subnets/networkSecurityGroup.id","like":"*/nsg"}`, sn, true},
		{"subnet natGateway missing", `{"field":"Microsoft.Network/virtualNetworks/subnets/natGateway.id","exists":false}`, sn, true},
		{"subnet prefix", `{"field":"Microsoft.Network/virtualNetworks/subnets/addressPrefix","equals":"10.240.0.0/24"}`, sn, true},
		{"route next hop", `{"field":"Microsoft.Network/routeTables/routes/nextHopType","equals":"VirtualAppliance"}`, route, true},
		{"route ip", `{"field":"Microsoft.Network/routeTables/routes/nextHopIpAddress","in":["10.240.0.4"]}`, route, true},
		{"vnet subnets[*].routeTable.id", `{"field":"Microsoft.Network/virtualNetworks/subnets[*].routeTable.id","exists":true}`, vn, true},
		{"vnet address space", `{"field":"Microsoft.Network/virtualNetworks/addressSpace.addressPrefixes[*]","like":"10.*"}`, vn, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDefinition(t, "All", `{"if":`+tc.cond+`,"then":{"effect":"deny"}}`, "")
			got, err := Denies(d, assignment(rg, nil), tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Denies = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParameters(t *testing.T) {
	params := `{"allowed":{"type":"Array","defaultValue":["eastus"]},"effect":{"type":"String","defaultValue":"Deny","allowedValues":["Deny","Audit","Disabled"]},"table":{"type":"String"}}`
	rule := `{"if":{"anyOf":[{"field":"location","notIn":"[parameters('allowed')]"},{"field":"name","equals":"[parameters('table')]"}]},"then":{"effect":"[parameters('effect')]"}}`
	d := mustDefinition(t, "Indexed", rule, params)
	rt := routeTable(t, "")
	for _, tc := range []struct {
		name   string
		params map[string]any
		effect string
		deny   bool
		err    error
	}{
		{"defaults, name matches", map[string]any{"table": "rt"}, "Deny", true, nil},
		{"defaults, name differs", map[string]any{"table": "x"}, "Deny", false, nil},
		{"allowed given", map[string]any{"table": "x", "allowed": []any{"westus"}}, "Deny", true, nil},
		{"effect Audit matches but does not deny", map[string]any{"table": "rt", "EFFECT": "audit"}, "Audit", false, nil},
		{"effect Disabled", map[string]any{"table": "rt", "effect": "Disabled"}, "Disabled", false, nil},
		{"missing parameter", nil, "Deny", false, ErrMissingParameter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Evaluate(d, assignment(rg, tc.params), rt)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if r.Effect != tc.effect || r.Denied() != tc.deny {
				t.Errorf("effect %q denied %v, want %q %v", r.Effect, r.Denied(), tc.effect, tc.deny)
			}
		})
	}
	missing, undefined := d.CheckParameters(assignment(rg, map[string]any{"Allowed": []any{}, "colour": "red"}))
	if diff := cmp.Diff([]string{"table"}, missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"colour"}, undefined); diff != "" {
		t.Errorf("undefined (-want +got):\n%s", diff)
	}
	if _, err := Evaluate(d, assignment(rg, map[string]any{"table": "x", "effect": "forbid"}), rt); err == nil {
		t.Error("an effect parameter that is no effect: no error")
	}
}

// TestScopeAndMode: assignments apply at and under their scope, not
// under notScopes, not when DoNotEnforce; mode Indexed skips child types
// and resource groups.
func TestScopeAndMode(t *testing.T) {
	anyName := `{"if":{"field":"name","exists":true},"then":{"effect":"deny"}}`
	group := doc(t, `{"id":"`+rg+`","name":"kubernetes","type":"Microsoft.Resources/subscriptions/resourceGroups","location":"eastus"}`)
	sn := doc(t, `{"id":"`+subnet+`","name":"nodes","type":"Microsoft.Network/virtualNetworks/subnets","properties":{}}`)
	route := doc(t, `{"id":"`+table+`/routes/r","name":"r","type":"Microsoft.Network/routeTables/routes","properties":{}}`)
	other := doc(t, `{"id":"`+sub+`/resourceGroups/other/providers/Microsoft.Network/routeTables/rt","name":"rt","type":"Microsoft.Network/routeTables"}`)
	dnd := assignment(rg, nil)
	dnd.EnforcementMode = EnforcementDoNotEnforce
	for _, tc := range []struct {
		name, mode string
		a          *Assignment
		res        map[string]any
		skip       string // substring of Result.Skip, "" when evaluated
	}{
		{"table, group scope", "All", assignment(rg, nil), routeTable(t, ""), ""},
		{"table, subscription scope", "Indexed", assignment(sub, nil), routeTable(t, ""), ""},
		{"table, its own scope", "All", assignment(table, nil), routeTable(t, ""), ""},
		{"table, scope spelled in another case", "All", assignment(strings.ToUpper(rg), nil), routeTable(t, ""), ""},
		{"table in another group", "All", assignment(rg, nil), other, "not at or under"},
		{"a group name prefix is not a parent", "All", assignment(rg+"-2", nil), routeTable(t, ""), "not at or under"},
		{"notScopes: the table", "All", assignment(rg, nil, table), routeTable(t, ""), "notScopes"},
		{"notScopes: its VNet holds the subnet", "All", assignment(rg, nil, vnet), sn, "notScopes"},
		{"notScopes: another", "All", assignment(rg, nil, vnet), routeTable(t, ""), ""},
		{"DoNotEnforce", "All", dnd, routeTable(t, ""), "DoNotEnforce"},
		{"All: subnet", "All", assignment(rg, nil), sn, ""},
		{"Indexed: subnet", "Indexed", assignment(rg, nil), sn, "mode Indexed"},
		{"Indexed: route", "Indexed", assignment(rg, nil), route, "mode Indexed"},
		{"Indexed: resource group", "Indexed", assignment(sub, nil), group, "mode Indexed"},
		{"All: resource group", "All", assignment(sub, nil), group, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDefinition(t, tc.mode, anyName, "")
			r, err := Evaluate(d, tc.a, tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if tc.skip == "" {
				if r.Skip != "" || !r.Denied() {
					t.Errorf("skip %q denied %v, want evaluated and denied", r.Skip, r.Denied())
				}
				return
			}
			if !strings.Contains(r.Skip, tc.skip) || r.Denied() {
				t.Errorf("skip %q denied %v, want skip containing %q", r.Skip, r.Denied(), tc.skip)
			}
			id, _ := tc.res["id"].(string)
			if applies := strings.HasPrefix(tc.skip, "mode"); tc.a.Applies(id) != applies {
				t.Errorf("Applies(%s) = %v with skip %q", id, tc.a.Applies(id), r.Skip)
			}
		})
	}
}

func TestEvaluatedExpressions(t *testing.T) {
	d := mustDefinition(t, "All", `{"if":{"allOf":[{"field":"type","equals":"Microsoft.Network/routeTables"},
		{"field":"Microsoft.Network/routeTables/routes[*].nextHopType","in":["VirtualAppliance","Internet"]},{"field":"name","equals":"never"}]},"then":{"effect":"Deny"}}`, "")
	r, err := Evaluate(d, assignment(rg, nil), routeTable(t, "", "a=10.244.0.0/24>VirtualAppliance", "b=0.0.0.0/0>Internet"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Expression{
		{Field: "type", Path: "type", Operator: "Equals", Value: "Microsoft.Network/routeTables", Target: "Microsoft.Network/routeTables", Result: true},
		{Field: "Microsoft.Network/routeTables/routes[*].nextHopType", Path: "properties.routes[*].properties.nextHopType", Operator: "In",
			Value: []any{"VirtualAppliance", "Internet"}, Target: []any{"VirtualAppliance", "Internet"}, Result: true},
		{Field: "name", Path: "name", Operator: "Equals", Value: "rt", Target: "never", Result: false},
	}
	if diff := cmp.Diff(want, r.Expressions); diff != "" {
		t.Errorf("expressions (-want +got):\n%s", diff)
	}
	if r.Match || r.Denied() || r.Effect != "Deny" {
		t.Errorf("result %+v", r)
	}
}

func TestParseDefinitionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		path      string // RuleError.Path; "-" for an error that is no RuleError
		alias     bool
	}{
		{"unknown operator", `{"properties":{"policyRule":{"if":{"field":"name","greater":"a"},"then":{"effect":"deny"}}}}`, "if", false},
		{"count", `{"properties":{"policyRule":{"if":{"allOf":[{"field":"name","equals":"a"},{"count":{"field":"Microsoft.Network/routeTables/routes[*]"},"greater":0}]},"then":{"effect":"deny"}}}}`, "if.allOf[1]", false},
		{"unknown alias", `{"properties":{"policyRule":{"if":{"anyOf":[{"not":{"field":"Microsoft.Network/routeTables/colour","equals":"red"}}]},"then":{"effect":"deny"}}}}`, "if.anyOf[0].not.field", true},
		{"expression field", `{"properties":{"policyRule":{"if":{"field":"[concat('a')]","equals":"a"},"then":{"effect":"deny"}}}}`, "if.field", false},
		{"two operators", `{"properties":{"policyRule":{"if":{"field":"name","equals":"a","notEquals":"b"},"then":{"effect":"deny"}}}}`, "if", false},
		{"field without operator", `{"properties":{"policyRule":{"if":{"field":"name"},"then":{"effect":"deny"}}}}`, "if", false},
		{"empty allOf", `{"properties":{"policyRule":{"if":{"allOf":[]},"then":{"effect":"deny"}}}}`, "if.allOf", false},
		{"in not a list", `{"properties":{"policyRule":{"if":{"field":"name","in":"a"},"then":{"effect":"deny"}}}}`, "if.in", false},
		{"exists not a bool", `{"properties":{"policyRule":{"if":{"field":"name","exists":"maybe"},"then":{"effect":"deny"}}}}`, "if.exists", false},
		{"no then", `{"properties":{"policyRule":{"if":{"field":"name","equals":"a"}}}}`, "", false},
		{"other key", `{"properties":{"policyRule":{"if":{"field":"name","equals":"a"},"then":{"effect":"deny"},"else":{}}}}`, "policyRule.else", false},
		{"bad effect", `{"properties":{"policyRule":{"if":{"field":"name","equals":"a"},"then":{"effect":"forbid"}}}}`, "then.effect", false},
		{"undeclared parameter", `{"properties":{"policyRule":{"if":{"field":"name","equals":"[parameters('x')]"},"then":{"effect":"deny"}}}}`, "if.equals", false},
		{"undeclared effect parameter", `{"properties":{"policyRule":{"if":{"field":"name","equals":"a"},"then":{"effect":"[parameters('effect')]"}}}}`, "then.effect", false},
		{"bad parameter type", `{"properties":{"parameters":{"x":{"type":"Text"}},"policyRule":{"if":{"field":"name","equals":"a"},"then":{"effect":"deny"}}}}`, "parameters.x.type", false},
		{"provider mode", `{"properties":{"mode":"Microsoft.Kubernetes.Data","policyRule":{"if":{"field":"name","equals":"a"},"then":{"effect":"deny"}}}}`, "mode", false},
		{"initiative", `{"id":"/providers/Microsoft.Authorization/policySetDefinitions/x","properties":{"policyDefinitions":[{"policyDefinitionId":"x"}]}}`, "-", false},
		{"not JSON", `{`, "-", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDefinition([]byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			var re *RuleError
			if !errors.As(err, &re) {
				if tc.path != "-" {
					t.Fatalf("%v is no RuleError", err)
				}
				return
			}
			if tc.path == "-" || re.Path != tc.path || (re.Alias != "") != tc.alias {
				t.Errorf("%v: path %q alias %q, want path %q alias %v", err, re.Path, re.Alias, tc.path, tc.alias)
			}
		})
	}
}

func TestParseDefinition(t *testing.T) {
	// The properties alone, names in another case, mode defaulted.
	d, err := ParseDefinition([]byte(`{"DisplayName":"x","Parameters":{"e":{"type":"string","defaultValue":"Audit"}},"PolicyRule":{"If":{"Field":"name","Equals":"a"},"Then":{"Effect":"[parameters('e')]"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode != ModeIndexed || d.DisplayName != "x" || !d.Parameters["e"].HasDefault {
		t.Errorf("%+v", d)
	}
	if e, err := d.Effect(nil); err != nil || e != "Audit" {
		t.Errorf("Effect = %q, %v", e, err)
	}
	// A built-in as ARM returns it.
	d, err = ParseDefinition([]byte(`{"id":"/providers/Microsoft.Authorization/policyDefinitions/e56962a6-4747-49cd-b67b-bf8b01975c4c",
		"properties":{"policyType":"BuiltIn","mode":"indexed","parameters":{"listOfAllowedLocations":{"type":"Array"}},
		"policyRule":{"if":{"allOf":[{"field":"location","notIn":"[parameters('listOfAllowedLocations')]"},{"field":"location","notEquals":"global"}]},"then":{"effect":"deny"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "e56962a6-4747-49cd-b67b-bf8b01975c4c" || d.Mode != ModeIndexed || d.PolicyType != "BuiltIn" {
		t.Errorf("%+v", d)
	}
	a := &Assignment{Scope: rg, DefinitionID: strings.ToUpper(d.ID), Parameters: map[string]any{"listOfAllowedLocations": []any{"westeurope"}}}
	if deny, err := Denies(d, a, routeTable(t, "")); err != nil || !deny {
		t.Errorf("a table in East US under allowed westeurope: deny %v, %v", deny, err)
	}
	a.DefinitionID = defID
	if _, err := Denies(d, a, routeTable(t, "")); err == nil {
		t.Error("an assignment of another definition: no error")
	}
}

func TestParseAssignment(t *testing.T) {
	id := rg + "/providers/Microsoft.Authorization/policyAssignments/no-nva"
	for _, tc := range []struct {
		name, doc string
		want      *Assignment
	}{
		{"ARM answer", `{"id":"` + id + `","name":"no-nva","type":"Microsoft.Authorization/policyAssignments","properties":{"displayName":"No NVA",
			"policyDefinitionId":"` + defID + `","scope":"` + rg + `","notScopes":["` + subnet + `"],"parameters":{"tableId":{"value":"x"},"n":{"value":3}},"enforcementMode":"DoNotEnforce"}}`,
			&Assignment{ID: id, Name: "no-nva", DisplayName: "No NVA", Scope: rg, DefinitionID: defID, NotScopes: []string{subnet},
				Parameters: map[string]any{"tableId": "x", "n": 3.0}, EnforcementMode: EnforcementDoNotEnforce}},
		{"scope from the ID, defaults", `{"id":"` + id + `","Properties":{"PolicyDefinitionId":"` + defID + `"}}`,
			&Assignment{ID: id, Name: "no-nva", Scope: rg, DefinitionID: defID, Parameters: map[string]any{}, EnforcementMode: EnforcementDefault}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAssignment([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`{"id":"x"}`, `{"properties":{"scope":"/subscriptions/s"}}`, `{"properties":{"policyDefinitionId":"d"}}`,
		`{"id":"` + id + `","properties":{"policyDefinitionId":"d","enforcementMode":"Sometimes"}}`,
		`{"id":"` + id + `","properties":{"policyDefinitionId":"d","parameters":{"x":3}}}`} {
		if _, err := ParseAssignment([]byte(bad)); err == nil {
			t.Errorf("ParseAssignment(%s): no error", bad)
		}
	}
}

func TestResource(t *testing.T) {
	type props struct {
		AddressPrefix string `json:"addressPrefix"`
	}
	for _, tc := range []struct {
		id, typ, name string
		body          any
	}{
		{table, "Microsoft.Network/routeTables", "rt", map[string]any{"location": "eastus", "ID": "stale"}},
		{subnet, "Microsoft.Network/virtualNetworks/subnets", "nodes", struct {
			Properties props `json:"properties"`
		}{props{"10.240.0.0/24"}}},
		{table + "/routes/r", "Microsoft.Network/routeTables/routes", "r", json.RawMessage(`{"properties":{}}`)},
		{rg + "/", "Microsoft.Resources/subscriptions/resourceGroups", "kubernetes", nil},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			doc, err := Resource(tc.id, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if doc["id"] != tc.id || doc["type"] != tc.typ || doc["name"] != tc.name || doc["ID"] != nil {
				t.Errorf("%v", doc)
			}
		})
	}
	for _, bad := range []string{"", "/subscriptions/s", sub + "/resourceGroups/g/providers/Microsoft.Network/routeTables", "/foo/bar/baz/qux"} {
		if _, err := Resource(bad, nil); err == nil {
			t.Errorf("Resource(%q): no error", bad)
		}
	}
	if _, err := Resource(table, []byte(`[1]`)); err == nil {
		t.Error("a body that is not an object: no error")
	}
}
