package azrbac

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, action string
		want            bool
	}{
		{"*", "Microsoft.Network/routeTables/write", true},
		{"*/read", "Microsoft.Network/routeTables/read", true},
		{"*/read", "Microsoft.Network/routeTables/write", false},
		{"*/read", "Microsoft.Network/routeTables/readers/write", false},
		{"Microsoft.Network/*", "Microsoft.Network/virtualNetworks/subnets/write", true},
		{"Microsoft.Network/*", "Microsoft.Compute/virtualMachines/read", false},
		{"microsoft.network/ROUTETABLES/Write", "Microsoft.Network/routeTables/write", true},
		{"Microsoft.Authorization/*/Write", "Microsoft.Authorization/roleAssignments/write", true},
		{"Microsoft.Authorization/*/Write", "Microsoft.Authorization/roleAssignments/read", false},
		{"Microsoft.Network/*/join/action", "Microsoft.Network/routeTables/join/action", true},
		{"Microsoft.Network/routeTables/*", "Microsoft.Network/routeTables", false},
		{"Microsoft.Network/routeTables/read", "Microsoft.Network/routeTables/read/extra", false},
		{"Microsoft.Network/*Tables/read", "Microsoft.Network/routeTables/read", true},
		{"Microsoft.Network/routeTables/read", "Microsoft.Network/routeTables/rea", false},
		{"**", "", true},
		{"", "", true},
		{"", "x", false},
		{" Microsoft.Network/* ", "Microsoft.Network/x", true},
	} {
		t.Run(tc.pattern+"~"+tc.action, func(t *testing.T) {
			if got := Match(tc.pattern, tc.action); got != tc.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.action, got, tc.want)
			}
		})
	}
}

// TestMatchProperty compares Match with a regular expression built from
// the pattern, on random patterns and actions over a small alphabet (so
// that they often match).
func TestMatchProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alpha := "aAb/*"
	gen := func(n int, star bool) string {
		var b strings.Builder
		for range r.IntN(n) {
			c := alpha[r.IntN(len(alpha))]
			if c == '*' && !star {
				c = 'a'
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	for i := range 20000 {
		p, a := gen(8, true), gen(10, false)
		var re strings.Builder
		re.WriteString("(?is)^")
		for _, part := range strings.Split(p, "*") {
			re.WriteString(regexp.QuoteMeta(part))
			re.WriteString(".*")
		}
		want := regexp.MustCompile(strings.TrimSuffix(re.String(), ".*") + "$").MatchString(a)
		if got := Match(p, a); got != want {
			t.Fatalf("case %d: Match(%q, %q) = %v, the reference says %v", i, p, a, got, want)
		}
		// An action always matches itself, in any case.
		if !Match(strings.ToUpper(a), a) {
			t.Fatalf("Match(%q, %q) is false", strings.ToUpper(a), a)
		}
	}
}

func TestPermissionAndSet(t *testing.T) {
	contributor, _ := BuiltInRole("Contributor")
	netContrib, _ := BuiltInRole("network contributor")
	reader, _ := BuiltInRole(ReaderID)
	owner, _ := BuiltInRole("/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/" + OwnerID)
	custom := Permission{Actions: []string{"Microsoft.Network/*"}, NotActions: []string{"Microsoft.Network/routeTables/delete", "*/join/action"}}
	for _, tc := range []struct {
		name   string
		set    Set
		action string
		want   bool
	}{
		{"owner may assign roles", owner.Set(), "Microsoft.Authorization/roleAssignments/write", true},
		{"contributor may write a table", contributor.Set(), "Microsoft.Network/routeTables/write", true},
		{"contributor may not assign roles (NotActions)", contributor.Set(), "Microsoft.Authorization/roleAssignments/write", false},
		{"contributor may not create locks", contributor.Set(), "Microsoft.Authorization/locks/write", false},
		{"contributor may read role assignments", contributor.Set(), "Microsoft.Authorization/roleAssignments/read", true},
		{"reader reads", reader.Set(), "Microsoft.Network/virtualNetworks/subnets/read", true},
		{"reader does not write", reader.Set(), "Microsoft.Network/virtualNetworks/subnets/write", false},
		{"reader does not join", reader.Set(), "Microsoft.Network/routeTables/join/action", false},
		{"network contributor joins", netContrib.Set(), "Microsoft.Network/routeTables/join/action", true},
		{"network contributor reads groups", netContrib.Set(), "Microsoft.Resources/subscriptions/resourceGroups/read", true},
		{"network contributor does not write groups", netContrib.Set(), "Microsoft.Resources/subscriptions/resourceGroups/write", false},
		{"network contributor does not touch compute", netContrib.Set(), "Microsoft.Compute/virtualMachines/read", false},
		{"custom NotActions", Set{custom}, "Microsoft.Network/routeTables/delete", false},
		{"custom wildcard NotActions", Set{custom}, "Microsoft.Network/networkSecurityGroups/join/action", false},
		{"custom grants the rest", Set{custom}, "Microsoft.Network/routeTables/write", true},
		{"union: another block grants what one excludes", Set{custom, reader.Permissions[0], netContrib.Permissions[0]}, "Microsoft.Network/routeTables/delete", true},
		{"empty set grants nothing", nil, "Microsoft.Network/routeTables/read", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.set.Allows(tc.action); got != tc.want {
				t.Errorf("Allows(%s) = %v, want %v", tc.action, got, tc.want)
			}
		})
	}
	got := reader.Set().Missing("Microsoft.Network/routeTables/read", "Microsoft.Network/routeTables/write",
		"microsoft.network/routetables/WRITE", "Microsoft.Network/routeTables/join/action")
	if diff := cmp.Diff([]string{"Microsoft.Network/routeTables/write", "Microsoft.Network/routeTables/join/action"}, got); diff != "" {
		t.Errorf("Missing (-want +got):\n%s", diff)
	}
	if !(Set{{DataActions: []string{"Microsoft.Storage/*"}, NotDataActions: []string{"*/delete"}}}).AllowsData("Microsoft.Storage/x/read") {
		t.Error("AllowsData: a data action granted by DataActions is refused")
	}
}

func TestScopeContains(t *testing.T) {
	const sub = "/subscriptions/00000000-0000-0000-0000-000000000000"
	rg := sub + "/resourceGroups/kubernetes"
	table := rg + "/providers/Microsoft.Network/routeTables/kubernetes-routes"
	for _, tc := range []struct {
		outer, inner string
		want         bool
	}{
		{"/", table, true},
		{"", sub, true},
		{sub, sub, true},
		{sub, rg, true},
		{sub + "/", strings.ToUpper(table), true},
		{strings.ReplaceAll(rg, "resourceGroups", "resourcegroups"), table, true},
		{rg, table + "/routes/r1", true},
		{table, rg, false},
		{rg, sub, false},
		{sub + "/resourceGroups/kube", table, false},
		{"/subscriptions/0", sub, false},
		{table, table + "x", false},
		{rg, rg + "/providers/Microsoft.Network", true},
	} {
		t.Run(tc.outer+"⊇"+tc.inner, func(t *testing.T) {
			if got := ScopeContains(tc.outer, tc.inner); got != tc.want {
				t.Errorf("ScopeContains(%q, %q) = %v, want %v", tc.outer, tc.inner, got, tc.want)
			}
		})
	}
	if !SameScope(sub+"/", strings.ToUpper(sub)) || NormalizeScope("") != "/" || NormalizeScope(" subscriptions/x/ ") != "/subscriptions/x" {
		t.Error("NormalizeScope/SameScope")
	}
}

func TestEffectiveInheritance(t *testing.T) {
	const sub = "/subscriptions/s"
	rg := sub + "/resourceGroups/kubernetes"
	table := rg + "/providers/Microsoft.Network/routeTables/t"
	custom := RoleDefinition{ID: sub + "/providers/Microsoft.Authorization/roleDefinitions/c", Name: "c", RoleName: "custom",
		Permissions: []Permission{{Actions: []string{"Microsoft.Network/routeTables/write"}}}, AssignableScopes: []string{rg}}
	roles := func(id string) (RoleDefinition, bool) {
		if DefinitionName(id) == "c" {
			return custom, true
		}
		return BuiltInRole(id)
	}
	as := []Assignment{
		{Scope: sub, RoleDefinitionID: sub + "/providers/Microsoft.Authorization/roleDefinitions/" + ReaderID, PrincipalID: "p1"},
		{Scope: rg, RoleDefinitionID: custom.ID, PrincipalID: "P1"},
		{Scope: table, RoleDefinitionID: "/providers/Microsoft.Authorization/roleDefinitions/" + NetworkContributorID, PrincipalID: "p2"},
		{Scope: sub, RoleDefinitionID: "unknown-role", PrincipalID: "p2"},
	}
	for _, tc := range []struct {
		name, principal, scope, action string
		want                           bool
	}{
		{"subscription reader reads a table", "p1", table, "Microsoft.Network/routeTables/read", true},
		{"group role applies to the table in it", "p1", table, "Microsoft.Network/routeTables/write", true},
		{"group role does not apply above the group", "p1", sub + "/resourceGroups/other/providers/Microsoft.Network/routeTables/t", "Microsoft.Network/routeTables/write", false},
		{"resource role applies to its children", "p2", table + "/routes/r", "Microsoft.Network/routeTables/routes/write", true},
		{"resource role does not apply to the group", "p2", rg, "Microsoft.Network/routeTables/read", false},
		{"unknown role grants nothing", "p2", sub, "Microsoft.Network/routeTables/read", false},
		{"other principal", "p3", table, "Microsoft.Network/routeTables/read", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Effective(tc.principal, tc.scope, as, roles).Allows(tc.action); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
	if !custom.AssignableAt(table) || custom.AssignableAt(sub) {
		t.Error("AssignableAt")
	}
}

func TestParseRoleDefinition(t *testing.T) {
	b, err := os.ReadFile("../../deploy/azure/routekeeper-role.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseRoleDefinition(b)
	if err != nil {
		t.Fatalf("routekeeper-role.json does not load as is: %v", err)
	}
	if d.RoleName != "routekeeper" || d.RoleType != TypeCustomRole || len(d.Permissions) != 1 || len(d.AssignableScopes) != 1 {
		t.Fatalf("routekeeper-role.json = %+v", d)
	}
	if !d.Set().Allows("Microsoft.Network/routeTables/join/action") || d.Set().Allows("Microsoft.Network/routeTables/delete") {
		t.Errorf("routekeeper-role.json permissions = %+v", d.Permissions)
	}
	for _, tc := range []struct {
		name, json string
		want       RoleDefinition
		err        string
	}{
		{name: "ARM resource", json: `{"id":"/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/g","name":"g","type":"Microsoft.Authorization/roleDefinitions",
			"properties":{"roleName":"r","type":"CustomRole","permissions":[{"actions":["a/b"],"notActions":[]}],"assignableScopes":["/subscriptions/s"]}}`,
			want: RoleDefinition{ID: "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/g", Name: "g", RoleName: "r", RoleType: TypeCustomRole,
				Permissions: []Permission{{Actions: []string{"a/b"}, NotActions: []string{}, DataActions: []string{}, NotDataActions: []string{}}}, AssignableScopes: []string{"/subscriptions/s"}}},
		{name: "az list output", json: `{"roleName":"r","roleType":"BuiltInRole","name":"g","id":"/providers/x/g","type":"Microsoft.Authorization/roleDefinitions","permissions":[{"Actions":["*"]}],"assignableScopes":["/"]}`,
			want: RoleDefinition{ID: "/providers/x/g", Name: "g", RoleName: "r", RoleType: TypeBuiltInRole,
				Permissions: []Permission{{Actions: []string{"*"}, NotActions: []string{}, DataActions: []string{}, NotDataActions: []string{}}}, AssignableScopes: []string{"/"}}},
		{name: "file, lower case", json: `{"name":"r","actions":["x/read"],"assignableScopes":["/subscriptions/s/resourceGroups/g"]}`,
			want: RoleDefinition{RoleName: "r", RoleType: TypeCustomRole,
				Permissions: []Permission{{Actions: []string{"x/read"}, NotActions: []string{}, DataActions: []string{}, NotDataActions: []string{}}}, AssignableScopes: []string{"/subscriptions/s/resourceGroups/g"}}},
		{name: "unknown property", json: `{"Name":"r","Actionz":["x"],"AssignableScopes":["/"]}`, err: "actionz: not a property"},
		{name: "no scope", json: `{"Name":"r","Actions":["x"]}`, err: "AssignableScopes: missing"},
		{name: "bad scope", json: `{"Name":"r","Actions":["x"],"AssignableScopes":["my-rg"]}`, err: `"my-rg" is not a scope`},
		{name: "no name", json: `{"Actions":["x"],"AssignableScopes":["/"]}`, err: "Name (roleName): missing"},
		{name: "actions not a list", json: `{"Name":"r","Actions":"x","AssignableScopes":["/"]}`, err: "actions: \"x\" is not a list"},
		{name: "not JSON", json: `Name: r`, err: "not a role definition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRoleDefinition([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
