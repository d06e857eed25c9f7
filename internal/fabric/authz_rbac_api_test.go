package fabric

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// TestRoleDefinitionsAPI: what az role assignment create and az role
// definition create/list read and write.
func TestRoleDefinitionsAPI(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	sub := "/subscriptions/" + sub0
	status, body := e.raw("reader-app", "GET", sub+"/providers/Microsoft.Authorization/roleDefinitions?$filter="+url.QueryEscape("roleName eq 'Network Contributor'"), nil)
	v, _ := body["value"].([]any)
	if status != 200 || len(v) != 1 {
		t.Fatalf("list by roleName = %d %v", status, body)
	}
	nc, _ := v[0].(map[string]any)
	props, _ := nc["properties"].(map[string]any)
	if nc["id"] != sub+"/providers/Microsoft.Authorization/roleDefinitions/"+azrbac.NetworkContributorID || props["type"] != "BuiltInRole" ||
		!strings.Contains(fmt.Sprint(props["permissions"]), "Microsoft.Network/*") {
		t.Errorf("Network Contributor = %v", nc)
	}
	// Custom roles are listed where they are assignable.
	status, body = e.raw("reader-app", "GET", sub+"/resourceGroups/my-cluster-rg/providers/Microsoft.Authorization/roleDefinitions?$filter="+url.QueryEscape("type eq 'CustomRole'"), nil)
	if v, _ := body["value"].([]any); status != 200 || len(v) != 2 {
		t.Errorf("custom roles at my-cluster-rg = %d %v", status, body)
	}
	status, body = e.raw("reader-app", "GET", sub+"/resourceGroups/other/providers/Microsoft.Authorization/roleDefinitions?$filter="+url.QueryEscape("roleName eq 'routekeeper'"), nil)
	if v, _ := body["value"].([]any); status != 200 || len(v) != 0 {
		t.Errorf("routekeeper role listed at group other, where it is not assignable: %v", body)
	}
	status, body = e.raw("", "GET", "/providers/Microsoft.Authorization/roleDefinitions/"+azrbac.OwnerID, nil)
	if status != 200 || body["id"] != "/providers/Microsoft.Authorization/roleDefinitions/"+azrbac.OwnerID {
		t.Errorf("GET Owner at the root = %d %v", status, body)
	}
	status, body = e.raw("", "GET", sub+"/providers/Microsoft.Authorization/roleDefinitions/11111111-1111-1111-1111-111111111111", nil)
	if er, _ := body["error"].(map[string]any); status != 404 || er["code"] != "RoleDefinitionDoesNotExist" {
		t.Errorf("GET unknown role = %d %v", status, body)
	}
	// Create a custom role as az role definition create does.
	custom := map[string]any{"name": "22222222-2222-2222-2222-222222222222", "properties": map[string]any{
		"roleName": "table-reader", "description": "reads tables", "type": "CustomRole",
		"permissions":      []any{map[string]any{"actions": []string{"Microsoft.Network/routeTables/read"}}},
		"assignableScopes": []string{sub}}}
	path := sub + "/providers/Microsoft.Authorization/roleDefinitions/22222222-2222-2222-2222-222222222222"
	if status, body := e.raw("", "PUT", path, custom); status != 201 || body["id"] != path {
		t.Fatalf("PUT custom role = %d %v", status, body)
	}
	if status, body := e.raw("contrib-app", "PUT", path, custom); status != 403 {
		t.Errorf("a Contributor writing a role definition = %d %v", status, body)
	}
	custom["name"] = "33333333-3333-3333-3333-333333333333"
	if status, body := e.raw("", "PUT", sub+"/providers/Microsoft.Authorization/roleDefinitions/33333333-3333-3333-3333-333333333333", custom); status != 409 {
		t.Errorf("a second role of the same name = %d %v", status, body)
	}
}

// TestRoleAssignmentsAPI: create, read, list with az's filters, refuse
// duplicates and unknown roles, delete; and the effect on access.
func TestRoleAssignmentsAPI(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	sub := "/subscriptions/" + sub0
	rg := sub + "/resourceGroups/other"
	path := rg + "/providers/Microsoft.Authorization/roleAssignments/44444444-4444-4444-4444-444444444444"
	body := map[string]any{"properties": map[string]any{
		"roleDefinitionId": sub + "/providers/Microsoft.Authorization/roleDefinitions/" + azrbac.NetworkContributorID,
		"principalId":      "00000000-0000-0000-0000-0000000000a1", "principalType": "ServicePrincipal"}}
	if err := putTable(e.as("reader-app"), "other", "rt"); err == nil {
		t.Fatal("the reader writes before any assignment")
	}
	if status, got := e.raw("netc-app", "PUT", path, body); status != 403 {
		t.Errorf("a Network Contributor assigning roles = %d %v", status, got)
	}
	status, got := e.raw("owner-app", "PUT", path, body)
	props, _ := got["properties"].(map[string]any)
	if status != 201 || got["id"] != path || got["type"] != "Microsoft.Authorization/roleAssignments" || props["scope"] != rg ||
		props["principalId"] != "00000000-0000-0000-0000-0000000000a1" || props["principalType"] != "ServicePrincipal" {
		t.Fatalf("PUT assignment = %d %v", status, got)
	}
	if err := putTable(e.as("reader-app"), "other", "rt"); err != nil {
		t.Errorf("the reader after the assignment: %v", err)
	}
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		status     int
		code       string
	}{
		{"duplicate under another name", rg + "/providers/Microsoft.Authorization/roleAssignments/55555555-5555-5555-5555-555555555555", body, 409, "RoleAssignmentExists"},
		{"unknown role", rg + "/providers/Microsoft.Authorization/roleAssignments/66666666-6666-6666-6666-666666666666", map[string]any{"properties": map[string]any{
			"roleDefinitionId": sub + "/providers/Microsoft.Authorization/roleDefinitions/77777777-7777-7777-7777-777777777777", "principalId": "x"}}, 400, "RoleDefinitionDoesNotExist"},
		{"role not assignable there", rg + "/providers/Microsoft.Authorization/roleAssignments/66666666-6666-6666-6666-666666666666", map[string]any{"properties": map[string]any{
			"roleDefinitionId": uuid.NewSHA1(topology.TopologyNamespace, []byte("role:routekeeper")).String(), "principalId": "x"}}, 400, "RoleAssignmentScopeNotAssignable"},
		{"name not a GUID", rg + "/providers/Microsoft.Authorization/roleAssignments/x", body, 400, "InvalidRoleAssignmentId"},
		{"missing group", sub + "/resourceGroups/nope/providers/Microsoft.Authorization/roleAssignments/66666666-6666-6666-6666-666666666666", body, 404, "ResourceGroupNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := e.raw("", "PUT", tc.path, tc.body)
			er, _ := got["error"].(map[string]any)
			if status != tc.status || er["code"] != tc.code {
				t.Errorf("= %d %v, want %d %s", status, got, tc.status, tc.code)
			}
		})
	}
	list := func(scope, filter string) int {
		p := scope + "/providers/Microsoft.Authorization/roleAssignments"
		if filter != "" {
			p += "?$filter=" + url.QueryEscape(filter)
		}
		status, got := e.raw("reader-app", "GET", p, nil)
		if status != 200 {
			t.Fatalf("GET %s = %d %v", p, status, got)
		}
		v, _ := got["value"].([]any)
		return len(v)
	}
	for _, tc := range []struct {
		scope, filter string
		want          int
	}{
		{sub, "", 7},
		{rg, "atScope()", 3}, // reader and owner at the subscription, the new one
		{sub, "principalId eq '00000000-0000-0000-0000-0000000000a1'", 2},
		{sub, "assignedTo('00000000-0000-0000-0000-0000000000a1')", 2},
		{netID("kubernetes", api.TypeRouteTables, "rt"), "atScope()", 5},
	} {
		if got := list(tc.scope, tc.filter); got != tc.want {
			t.Errorf("list at %s with %q: %d assignments, want %d", tc.scope, tc.filter, got, tc.want)
		}
	}
	if status, _ := e.raw("owner-app", "DELETE", path, nil); status != 200 {
		t.Errorf("DELETE assignment = %d", status)
	}
	if status, _ := e.raw("owner-app", "DELETE", path, nil); status != 204 {
		t.Errorf("DELETE again = %d, want 204", status)
	}
	if err := putTable(e.as("reader-app"), "other", "rt"); err == nil {
		t.Error("the reader still writes after the assignment is deleted")
	}
}

// TestPermissionsAPI: the caller's permission blocks at a scope, as ARM's
// permissions API answers them.
func TestPermissionsAPI(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	sub := "/subscriptions/" + sub0
	for _, tc := range []struct {
		name, client, scope string
		want                []string // the actions of each block
		allows, refuses     string
	}{
		{"reader at a table", "reader-app", netID("kubernetes", api.TypeRouteTables, "rt"), []string{"[*/read]"}, "Microsoft.Network/routeTables/read", "Microsoft.Network/routeTables/write"},
		{"network contributor in its group", "netc-app", sub + "/resourceGroups/kubernetes", []string{"[Microsoft.Authorization/*/read Microsoft.Insights/alertRules/* Microsoft.Network/* Microsoft.ResourceHealth/availabilityStatuses/read Microsoft.Resources/deployments/* Microsoft.Resources/subscriptions/resourceGroups/read Microsoft.Support/*]"}, "Microsoft.Network/routeTables/join/action", "Microsoft.Compute/virtualMachines/read"},
		{"network contributor elsewhere", "netc-app", sub + "/resourceGroups/other", nil, "", "Microsoft.Network/routeTables/read"},
		{"at a subnet", "netc-app", netID("kubernetes", api.TypeVirtualNetworks, "vnet") + "/subnets/nodes", []string{"[Microsoft.Authorization/*/read Microsoft.Insights/alertRules/* Microsoft.Network/* Microsoft.ResourceHealth/availabilityStatuses/read Microsoft.Resources/deployments/* Microsoft.Resources/subscriptions/resourceGroups/read Microsoft.Support/*]"}, "Microsoft.Network/virtualNetworks/subnets/write", ""},
		{"administrator", "", sub, []string{"[*]"}, "Microsoft.Authorization/roleAssignments/write", ""},
		{"stranger", "stranger", sub, nil, "", "Microsoft.Network/routeTables/read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.raw(tc.client, "GET", tc.scope+"/providers/Microsoft.Authorization/permissions", nil)
			if status != 200 {
				t.Fatalf("= %d %v", status, body)
			}
			b, _ := json.Marshal(body["value"])
			var set azrbac.Set
			if err := json.Unmarshal(b, &set); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range set {
				got = append(got, fmt.Sprint(p.Actions))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("actions = %v, want %v", got, tc.want)
			}
			if tc.allows != "" && !set.Allows(tc.allows) || tc.refuses != "" && set.Allows(tc.refuses) {
				t.Errorf("set %v: allows %s? refuses %s?", set, tc.allows, tc.refuses)
			}
		})
	}
}

// TestAuthorizationPersistence: two Servers on one state file share the
// authorization state, each seeing the other's writes at once.
func TestAuthorizationPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fabric.db")
	st1 := openStore(t, path)
	defer st1.Close()
	st2 := openStore(t, path)
	defer st2.Close()
	a := newAuthzEnvOn(t, st1, rbacTopology)
	b := newAuthzEnvOn(t, st2, "")
	if _, code, _, _ := armErr(t, putTable(b.as("reader-app"), "other", "rt")); code != "AuthorizationFailed" {
		t.Fatalf("server B does not enforce what server A's topology declared: %s", code)
	}
	// A lock made through B refuses a delete through A.
	rg := "/subscriptions/" + sub0 + "/resourceGroups/other"
	if status, body := b.raw("", "PUT", lockPath(rg, "l"), map[string]any{"properties": map[string]any{"level": "CanNotDelete"}}); status != 201 {
		t.Fatalf("lock through B = %d %v", status, body)
	}
	if _, code, _, _ := armErr(t, deleteTable(a.as(""), "other", "rt")); code != "ScopeLocked" {
		t.Errorf("delete through A under B's lock: %s", code)
	}
	// A role assignment made through A lets the reader write through B.
	status, body := a.raw("", "PUT", rg+"/providers/Microsoft.Authorization/roleAssignments/88888888-8888-8888-8888-888888888888", map[string]any{"properties": map[string]any{
		"roleDefinitionId": azrbac.ContributorID, "principalId": "00000000-0000-0000-0000-0000000000a1", "principalType": "ServicePrincipal"}})
	if status != 201 {
		t.Fatalf("assignment through A = %d %v", status, body)
	}
	if err := putTable(b.as("reader-app"), "other", "rt"); err != nil {
		t.Errorf("through B after A's assignment: %v", err)
	}
	// After a restart (a new store on the file), all of it is still there.
	st3 := openStore(t, path)
	defer st3.Close()
	c := newAuthzEnvOn(t, st3, "")
	if _, code, _, _ := armErr(t, putTable(c.as("netc-app"), "other", "rt")); code != "AuthorizationFailed" {
		t.Errorf("after reopening: %s", code)
	}
}

// TestTokenNamesThePrincipal: the token endpoint puts the requested client
// into appid, and the object ID the topology declares for it into oid and
// sub (the client ID when none is declared).
func TestTokenNamesThePrincipal(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	for _, tc := range []struct{ client, oid string }{
		{"reader-app", "00000000-0000-0000-0000-0000000000a1"},
		{"undeclared", "undeclared"},
	} {
		t.Run(tc.client, func(t *testing.T) {
			resp, err := ts.Client().PostForm(ts.URL+"/adfs/oauth2/token", url.Values{
				"grant_type": {"client_credentials"}, "client_id": {tc.client}, "client_secret": {"x"}, "resource": {"https://management.core.windows.net/"}})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(tok.AccessToken, ".")
			b, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var claims map[string]any
			_ = json.Unmarshal(b, &claims)
			if claims["appid"] != tc.client || claims["oid"] != tc.oid || claims["sub"] != tc.oid {
				t.Errorf("claims = %v", claims)
			}
			// The token is what the fabric authorizes by.
			req, _ := http.NewRequest("GET", ts.URL+"/subscriptions/"+sub0+"/resourcegroups/kubernetes?api-version=2021-04-01", nil)
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			r, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			want := http.StatusOK
			if tc.client == "undeclared" {
				want = http.StatusForbidden
			}
			if r.StatusCode != want {
				t.Errorf("GET with the token = %d, want %d", r.StatusCode, want)
			}
		})
	}
}
