package fabric

import (
	"context"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// TestApplyAuthorization: a topology file's authorization, with a role
// file relative to it, applied through the REST API, then applied again
// without a write.
func TestApplyAuthorization(t *testing.T) {
	top, err := topology.LoadTopology("testdata/topology/governed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := newAuthzEnv(t, "")
	ctx := context.Background()
	res, err := topology.Apply(ctx, top, e.srv.ClientOptions(), identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range res.Changes {
		if c.Action == topology.ActionCreate {
			kinds[c.Kind]++
		}
	}
	for _, k := range []string{"principal", "roleDefinition", "roleAssignment", "lock", "policyDefinition", "policyAssignment"} {
		if kinds[k] != 1 {
			t.Errorf("created %d %s, want 1: %+v", kinds[k], k, res.Changes)
		}
	}
	again, err := topology.Apply(ctx, top, e.srv.ClientOptions(), identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Writes != 0 || again.Count(topology.ActionUnchanged) != len(again.Changes) {
		t.Errorf("second apply: %d writes, changes %+v", again.Writes, again.Changes)
	}
	// What it declared is in force.
	if err := putTable(e.as("routekeeper-app"), "my-cluster-rg", "routes", vaRoute("r", "10.244.0.0/24", "10.240.0.9")); err != nil {
		t.Errorf("routekeeper's role: %v", err)
	}
	status, body := e.raw("", "DELETE", netID("my-cluster-rg", api.TypeVirtualNetworks, "vnet")+"?api-version=2024-05-01", nil)
	if er, _ := body["error"].(map[string]any); status != 409 || er["code"] != "ScopeLocked" {
		t.Errorf("deleting the locked VNet = %d %v", status, body)
	}
	status, body = e.raw("", "PUT", netID("my-cluster-rg", api.TypeRouteTables, "routes")+"/routes/i?api-version=2024-05-01", routeBodyHop("0.0.0.0/0", "Internet"))
	if er, _ := body["error"].(map[string]any); status != 403 || er["code"] != "RequestDisallowedByPolicy" {
		t.Errorf("an Internet route = %d %v", status, body)
	}
}

func routeBodyHop(prefix, hop string) map[string]any {
	return map[string]any{"properties": map[string]any{"addressPrefix": prefix, "nextHopType": hop}}
}

// TestTopologyAuthorizationErrors: what a topology's authorization must
// get right, each problem named by its field.
func TestTopologyAuthorizationErrors(t *testing.T) {
	const base = `location: eastus
resourceGroups:
  - name: kubernetes
authorization:
`
	for _, tc := range []struct{ name, authz, want string }{
		{"unknown role", "  roleAssignments:\n    - {principal: 00000000-0000-0000-0000-000000000001, role: Network Admin}\n",
			`authorization.roleAssignments[0].role: "Network Admin" is neither a built-in role`},
		{"unknown principal", "  roleAssignments:\n    - {principal: nobody, role: Reader}\n",
			`authorization.roleAssignments[0].principal: "nobody" is not a declared principal`},
		{"role not assignable", "  roleDefinitions:\n    - {Name: r, Actions: [a/read], AssignableScopes: [/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/other]}\n  roleAssignments:\n    - {principal: 00000000-0000-0000-0000-000000000001, role: r, resourceGroup: kubernetes}\n",
			`authorization.roleAssignments[0].role: role "r" is not assignable at /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes`},
		{"group not in the topology", "  locks:\n    - {name: l, level: ReadOnly, resourceGroup: nope}\n",
			`authorization.locks[0].resourceGroup: "nope" is not a resource group of the topology`},
		{"scope and group", "  locks:\n    - {name: l, level: ReadOnly, resourceGroup: kubernetes, scope: /subscriptions/x}\n",
			"authorization.locks[0]: give scope or resourceGroup, not both"},
		{"lock level", "  locks:\n    - {name: l, level: Frozen}\n", `authorization.locks[0].level: "Frozen" is not CanNotDelete or ReadOnly`},
		{"administrator reserved", "  principals:\n    - {name: me, clientId: routekeeper-fabric}\n", "authorization.principals[0]: \"routekeeper-fabric\" is the fabric administrator's"},
		{"principal twice", "  principals:\n    - {name: a, clientId: c1}\n    - {name: a, clientId: c2}\n", `authorization.principals[1]: "a" is declared twice`},
		{"role file missing", "  roleDefinitions:\n    - file: nope.json\n", "authorization.roleDefinitions[0]: reading nope.json"},
		{"inline role unknown property", "  roleDefinitions:\n    - {Name: r, Actionz: [a], AssignableScopes: [/]}\n", "authorization.roleDefinitions[0]: actionz: not a property"},
		{"built-in name", "  roleDefinitions:\n    - {Name: Reader, Actions: [a], AssignableScopes: [/]}\n", `authorization.roleDefinitions[0].Name: "Reader" is a built-in role`},
		{"policy alias", "  policyDefinitions:\n    - {name: p, policyRule: {if: {field: Microsoft.Network/routeTables/colour, equals: red}, then: {effect: deny}}}\n",
			"authorization.policyDefinitions[0].policyRule: The policy definition 'p' rule is invalid. if.field: the 'field' property 'Microsoft.Network/routeTables/colour'"},
		{"policy operator", "  policyDefinitions:\n    - {name: p, policyRule: {if: {field: name, greaterOrEquals: a}, then: {effect: deny}}}\n",
			`authorization.policyDefinitions[0].policyRule: Failed to parse policy rule: if: "greaterOrEquals" is not supported`},
		{"policy definition unknown", "  policyAssignments:\n    - {name: a, definition: nope}\n", `authorization.policyAssignments[0].definition: "nope" is not one of policyDefinitions`},
		{"unknown field", "  rolez: []\n", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topology.ParseTopology([]byte(base + tc.authz))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}
