package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// policyTopology assigns, on group kubernetes, a deny of VirtualAppliance
// next hops in route tables (the idiom for "any member": not all members
// differ) and in routes, and a deny of subnets associated with a table
// other than the allowed one, with the table as a parameter.
const policyTopology = authzNetwork + `          - {name: excluded, addressPrefix: 10.240.1.0/24}
    routeTables:
      - name: rt
      - name: allowed
  - name: other
authorization:
  policyDefinitions:
    - name: no-appliance-hops
      displayName: No virtual appliance next hops
      mode: All
      policyRule:
        if:
          anyOf:
            - allOf:
                - {field: type, equals: Microsoft.Network/routeTables}
                - not: {field: "Microsoft.Network/routeTables/routes[*].nextHopType", notEquals: VirtualAppliance}
            - allOf:
                - {field: type, equals: Microsoft.Network/routeTables/routes}
                - {field: Microsoft.Network/routeTables/routes/nextHopType, equals: VirtualAppliance}
        then: {effect: deny}
    - name: only-allowed-table
      mode: All
      parameters:
        tableId: {type: String}
        effect: {type: String, defaultValue: Deny}
      policyRule:
        if:
          allOf:
            - {field: type, equals: Microsoft.Network/virtualNetworks/subnets}
            - {field: Microsoft.Network/virtualNetworks/subnets/routeTable.id, exists: true}
            - {field: Microsoft.Network/virtualNetworks/subnets/routeTable.id, notEquals: "[parameters('tableId')]"}
        then: {effect: "[parameters('effect')]"}
  policyAssignments:
    - {name: no-nva, displayName: Route tables must not use appliances, definition: no-appliance-hops, resourceGroup: kubernetes}
    - name: allowed-table
      definition: only-allowed-table
      resourceGroup: kubernetes
      notScopes: [/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/vnet/subnets/excluded]
      parameters:
        tableId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/allowed
`

func TestDenyPolicy(t *testing.T) {
	e := newAuthzEnv(t, policyTopology)
	ctx := context.Background()
	admin := e.as("")
	assignment := "/subscriptions/" + sub0 + "/resourceGroups/kubernetes/providers/Microsoft.Authorization/policyAssignments/no-nva"
	definition := "/subscriptions/" + sub0 + "/providers/Microsoft.Authorization/policyDefinitions/no-appliance-hops"

	err := putTable(admin, "kubernetes", "rt", vaRoute("worker-0____102440024", "10.244.0.0/24", "10.240.0.20"))
	status, code, msg, body := armErr(t, err)
	want := `Resource 'rt' was disallowed by policy. Policy identifiers: '[{"policyAssignment":{"name":"Route tables must not use appliances","id":"` + assignment +
		`"},"policyDefinition":{"name":"No virtual appliance next hops","id":"` + definition + `"}}]'.`
	if status != http.StatusForbidden || code != "RequestDisallowedByPolicy" || msg != want || body["target"] != "rt" {
		t.Fatalf("table PUT with a VirtualAppliance route = %d %s %q target %v\nwant 403 RequestDisallowedByPolicy %q", status, code, msg, body["target"], want)
	}
	info, _ := body["additionalInfo"].([]any)
	if b, _ := json.Marshal(info); len(info) != 1 || !strings.Contains(string(b), `"type":"PolicyViolation"`) ||
		!strings.Contains(string(b), `"policyAssignmentId":"`+assignment+`"`) || !strings.Contains(string(b), `"policyDefinitionId":"`+definition+`"`) {
		t.Errorf("additionalInfo = %s", b)
	}
	for _, tc := range []struct {
		name  string
		write func() error
		deny  bool
	}{
		{"table without routes", func() error { return putTable(admin, "kubernetes", "rt") }, false},
		{"table with other next hops", func() error {
			return putTable(admin, "kubernetes", "rt", &armnetwork.Route{Name: to.Ptr("i"), Properties: &armnetwork.RoutePropertiesFormat{
				AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeInternet)}})
		}, false},
		{"table with an appliance among others", func() error {
			return putTable(admin, "kubernetes", "rt", &armnetwork.Route{Name: to.Ptr("i"), Properties: &armnetwork.RoutePropertiesFormat{
				AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeInternet)}}, vaRoute("v", "10.244.0.0/24", "10.240.0.4"))
		}, true},
		{"route (child) with an appliance", func() error {
			err := done(admin.routes.BeginCreateOrUpdate(ctx, "kubernetes", "rt", "v", *vaRoute("v", "10.244.0.0/24", "10.240.0.4"), nil))
			return err
		}, true},
		{"outside the assignment's scope", func() error { return putTable(admin, "other", "rt", vaRoute("v", "10.244.0.0/24", "10.240.0.4")) }, false},
		{"subnet on the allowed table", func() error {
			return putSubnet(admin, "kubernetes", "vnet", "nodes", "10.240.0.0/24", func(p *armnetwork.SubnetPropertiesFormat) {
				p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(netID("kubernetes", api.TypeRouteTables, "allowed"))}
			})
		}, false},
		{"subnet on another table (parameter)", func() error {
			return putSubnet(admin, "kubernetes", "vnet", "nodes", "10.240.0.0/24", func(p *armnetwork.SubnetPropertiesFormat) {
				p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(netID("kubernetes", api.TypeRouteTables, "rt"))}
			})
		}, true},
		{"subnet without a table (exists: true fails)", func() error {
			return putSubnet(admin, "kubernetes", "vnet", "nodes", "10.240.0.0/24", nil)
		}, false},
		{"subnet in notScopes", func() error {
			return putSubnet(admin, "kubernetes", "vnet", "excluded", "10.240.1.0/24", func(p *armnetwork.SubnetPropertiesFormat) {
				p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(netID("kubernetes", api.TypeRouteTables, "rt"))}
			})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if !tc.deny {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if _, code, _, _ := armErr(t, err); code != "RequestDisallowedByPolicy" {
				t.Fatalf("code %s, want RequestDisallowedByPolicy", code)
			}
		})
	}
	// DoNotEnforce turns the assignment off.
	status, body2 := e.raw("", "PUT", assignment+"?api-version=2023-04-01", map[string]any{"properties": map[string]any{
		"policyDefinitionId": definition, "enforcementMode": "DoNotEnforce"}})
	if status != 200 {
		t.Fatalf("updating the assignment: %d %v", status, body2)
	}
	if err := putTable(admin, "kubernetes", "rt", vaRoute("v", "10.244.0.0/24", "10.240.0.4")); err != nil {
		t.Errorf("with DoNotEnforce: %v", err)
	}
}

// TestPolicyAPI: definitions and assignments through the REST API, and
// what the fabric refuses of the policy language.
func TestPolicyAPI(t *testing.T) {
	e := newAuthzEnv(t, lockTopology)
	sub := "/subscriptions/" + sub0
	def := func(rule string) map[string]any {
		var r any
		if err := json.Unmarshal([]byte(rule), &r); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"properties": map[string]any{"mode": "All", "policyRule": r}}
	}
	for _, tc := range []struct {
		name, rule string
		status     int
		code       string
	}{
		{"location deny", `{"if":{"field":"location","notIn":["eastus"]},"then":{"effect":"deny"}}`, 201, ""},
		{"tags", `{"if":{"anyOf":[{"field":"tags['env']","exists":false},{"field":"tags.owner","like":"x*"}]},"then":{"effect":"Deny"}}`, 201, ""},
		{"unknown operator", `{"if":{"field":"name","greater":"a"},"then":{"effect":"deny"}}`, 400, "InvalidPolicyRule"},
		{"unknown alias", `{"if":{"field":"Microsoft.Network/routeTables/foo","equals":"a"},"then":{"effect":"deny"}}`, 400, "InvalidPolicyAlias"},
		{"two operators", `{"if":{"field":"name","equals":"a","notEquals":"b"},"then":{"effect":"deny"}}`, 400, "InvalidPolicyRule"},
		{"no then", `{"if":{"field":"name","equals":"a"}}`, 400, "InvalidPolicyRule"},
		{"count is not supported", `{"if":{"count":{"field":"Microsoft.Network/routeTables/routes[*]"},"greater":0},"then":{"effect":"deny"}}`, 400, "InvalidPolicyRule"},
		{"bad effect", `{"if":{"field":"name","equals":"a"},"then":{"effect":"forbid"}}`, 400, "InvalidPolicyRule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := sub + "/providers/Microsoft.Authorization/policyDefinitions/" + strings.ReplaceAll(tc.name, " ", "-") + "?api-version=2023-04-01"
			status, body := e.raw("", "PUT", path, def(tc.rule))
			er, _ := body["error"].(map[string]any)
			if status != tc.status || (tc.code != "" && er["code"] != tc.code) {
				t.Fatalf("= %d %v, want %d %s", status, body, tc.status, tc.code)
			}
		})
	}
	// An assignment: the definition must exist, parameters must be given.
	rg := sub + "/resourceGroups/kubernetes"
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"missing definition", map[string]any{"properties": map[string]any{"policyDefinitionId": sub + "/providers/Microsoft.Authorization/policyDefinitions/nope"}}, 404, "PolicyDefinitionNotFound"},
		{"ok", map[string]any{"properties": map[string]any{"policyDefinitionId": sub + "/providers/Microsoft.Authorization/policyDefinitions/location-deny"}}, 201, ""},
	} {
		t.Run("assignment "+tc.name, func(t *testing.T) {
			status, body := e.raw("", "PUT", rg+"/providers/Microsoft.Authorization/policyAssignments/a1?api-version=2023-04-01", tc.body)
			er, _ := body["error"].(map[string]any)
			if status != tc.status || (tc.code != "" && er["code"] != tc.code) {
				t.Fatalf("= %d %v, want %d %s", status, body, tc.status, tc.code)
			}
		})
	}
	status, body := e.raw("", "GET", rg+"/providers/Microsoft.Authorization/policyAssignments/a1?api-version=2023-04-01", nil)
	props, _ := body["properties"].(map[string]any)
	if status != 200 || props["scope"] != rg || props["enforcementMode"] != "Default" || fmt.Sprint(props["notScopes"]) != "[]" {
		t.Errorf("GET assignment = %d %v", status, body)
	}
	// The location policy refuses a table elsewhere.
	err := done(e.as("").tables.BeginCreateOrUpdate(context.Background(), "kubernetes", "west", armnetwork.RouteTable{Location: to.Ptr("westus")}, nil))
	if _, code, _, _ := armErr(t, err); code != "RequestDisallowedByPolicy" {
		t.Errorf("table in westus: %s", code)
	}
	if status, _ := e.raw("", "DELETE", rg+"/providers/Microsoft.Authorization/policyAssignments/a1?api-version=2023-04-01", nil); status != 200 {
		t.Errorf("DELETE assignment = %d", status)
	}
}

// TestPolicyOnPatchAndGroups: a PATCH is evaluated on the stored resource
// with its new tags; resource groups are evaluated as
// Microsoft.Resources/subscriptions/resourceGroups; mode Indexed skips
// child resources and resource groups (Azure's built-in "Allowed
// locations", of mode Indexed, says it excludes resource groups).
func TestPolicyOnPatchAndGroups(t *testing.T) {
	e := newAuthzEnv(t, authzNetwork+`    routeTables:
      - {name: rt, tags: {env: dev}}
authorization:
  policyDefinitions:
    - name: no-prod-tables
      mode: Indexed
      policyRule:
        if: {allOf: [{field: type, equals: Microsoft.Network/routeTables}, {field: "tags['env']", equals: prod}]}
        then: {effect: deny}
    - name: no-frozen-groups
      mode: All
      policyRule:
        if: {allOf: [{field: type, equals: Microsoft.Resources/subscriptions/resourceGroups}, {field: tags.state, in: [frozen, gone]}]}
        then: {effect: deny}
    - name: indexed-subnets
      policyRule:
        if: {field: type, equals: Microsoft.Network/virtualNetworks/subnets}
        then: {effect: deny}
    - name: indexed-groups
      mode: Indexed
      policyRule:
        if: {allOf: [{field: type, equals: Microsoft.Resources/subscriptions/resourceGroups}, {field: tags.state, equals: indexed}]}
        then: {effect: deny}
  policyAssignments:
    - {name: a1, definition: no-prod-tables}
    - {name: a2, definition: no-frozen-groups}
    - {name: a3, definition: indexed-subnets}
    - {name: a4, definition: indexed-groups}
`)
	sub := "/subscriptions/" + sub0
	for _, tc := range []struct {
		name, method, path string
		body               any
		deny               bool
	}{
		{"PATCH to prod", "PATCH", netID("kubernetes", api.TypeRouteTables, "rt"), map[string]any{"tags": map[string]string{"env": "PROD"}}, true},
		{"PATCH to test", "PATCH", netID("kubernetes", api.TypeRouteTables, "rt"), map[string]any{"tags": map[string]string{"env": "test"}}, false},
		{"group frozen", "PUT", sub + "/resourcegroups/kubernetes", map[string]any{"location": "eastus", "tags": map[string]string{"state": "frozen"}}, true},
		{"group fine", "PUT", sub + "/resourcegroups/new", map[string]any{"location": "eastus", "tags": map[string]string{"state": "ok"}}, false},
		{"Indexed skips resource groups", "PUT", sub + "/resourcegroups/kubernetes", map[string]any{"location": "eastus", "tags": map[string]string{"state": "indexed"}}, false},
		{"Indexed skips subnets", "PUT", netID("kubernetes", api.TypeVirtualNetworks, "vnet") + "/subnets/nodes", map[string]any{"properties": map[string]any{"addressPrefix": "10.240.0.0/24"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.raw("", tc.method, tc.path+"?api-version=2024-05-01", tc.body)
			er, _ := body["error"].(map[string]any)
			if denied := status == 403 && er["code"] == "RequestDisallowedByPolicy"; denied != tc.deny {
				t.Fatalf("= %d %v, want denied %v", status, body, tc.deny)
			}
		})
	}
}

// TestBuiltinPolicies: Azure's built-in definitions are served at the
// tenant scope to anyone, listed with a subscription's custom ones, can
// be assigned, and are enforced like custom ones.
func TestBuiltinPolicies(t *testing.T) {
	const allowed = "/providers/Microsoft.Authorization/policyDefinitions/e56962a6-4747-49cd-b67b-bf8b01975c4c"
	e := newAuthzEnv(t, `
location: eastus
resourceGroups:
  - name: kubernetes
authorization:
  principals:
    - {name: nobody, clientId: nobody-client}
  roleAssignments:
    - {principal: nobody, role: Reader, resourceGroup: kubernetes}
  policyDefinitions:
    - name: custom
      policyRule: {if: {field: name, equals: never}, then: {effect: deny}}
  policyAssignments:
    - {name: locations, definition: `+allowed+`, resourceGroup: kubernetes, parameters: {listOfAllowedLocations: [eastus]}}
`)
	sub := "/subscriptions/" + sub0
	names := func(body map[string]any) []string {
		var out []string
		list, _ := body["value"].([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			out = append(out, fmt.Sprint(m["name"]))
		}
		return out
	}
	for _, tc := range []struct {
		name, client, method, path string
		status                     int
		check                      func(map[string]any) bool
	}{
		{"GET at the tenant by a Reader of a group", "nobody-client", "GET", allowed, 200, func(b map[string]any) bool {
			p, _ := b["properties"].(map[string]any)
			return p["policyType"] == "BuiltIn" && p["mode"] == "Indexed" && p["displayName"] == "Allowed locations"
		}},
		{"a missing built-in", "", "GET", "/providers/Microsoft.Authorization/policyDefinitions/nope", 404, nil},
		{"the tenant lists built-ins only", "", "GET", "/providers/Microsoft.Authorization/policyDefinitions", 200, func(b map[string]any) bool {
			n := names(b)
			return len(n) == 2 && !strings.Contains(fmt.Sprint(n), "custom")
		}},
		{"a subscription lists both", "", "GET", sub + "/providers/Microsoft.Authorization/policyDefinitions", 200, func(b map[string]any) bool {
			return len(names(b)) == 3
		}},
		{"a built-in cannot be deleted", "", "DELETE", allowed, 400, nil},
		{"nor written", "", "PUT", allowed, 400, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "PUT" {
				body = map[string]any{"properties": map[string]any{"mode": "All", "policyRule": map[string]any{"if": map[string]any{"field": "name", "equals": "x"}, "then": map[string]any{"effect": "deny"}}}}
			}
			status, got := e.raw(tc.client, tc.method, tc.path+"?api-version=2023-04-01", body)
			if status != tc.status || (tc.check != nil && !tc.check(got)) {
				t.Fatalf("= %d %v, want %d", status, got, tc.status)
			}
		})
	}
	err := done(e.as("").tables.BeginCreateOrUpdate(context.Background(), "kubernetes", "west", armnetwork.RouteTable{Location: to.Ptr("westus")}, nil))
	if _, code, msg, _ := armErr(t, err); code != "RequestDisallowedByPolicy" || !strings.Contains(msg, allowed) {
		t.Errorf("a table in westus: %s %s", code, msg)
	}
	if err := putTable(e.as(""), "kubernetes", "east"); err != nil {
		t.Errorf("a table in eastus: %v", err)
	}
}
