package armid

import (
	"strings"
	"testing"
)

func TestSame(t *testing.T) {
	const id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt"
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"identical", id, id, true},
		{"case", id, "/SUBSCRIPTIONS/s/resourcegroups/RG/providers/microsoft.network/routetables/RT", true},
		{"trailing slash", id, id + "/", true},
		{"other name", id, id + "2", false},
		{"empty", id, "", false},
		{"both empty", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Same(tc.a, tc.b); got != tc.want {
				t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := Key(tc.a) == Key(tc.b); got != tc.want {
				t.Errorf("Key(%q) == Key(%q) is %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestVNetOfSubnet(t *testing.T) {
	got, err := VNetOfSubnet("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/sn")
	if err != nil || got != "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v" {
		t.Fatalf("VNetOfSubnet = %q, %v", got, err)
	}
	for _, bad := range []string{"", "nonsense", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt"} {
		if _, err := VNetOfSubnet(bad); err == nil {
			t.Errorf("VNetOfSubnet(%q): no error", bad)
		}
	}
}

func TestNameAndMatches(t *testing.T) {
	const id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/kubernetes-routes"
	if Name(id) != "kubernetes-routes" || Name(id+"/") != "kubernetes-routes" {
		t.Errorf("Name(%q) = %q", id, Name(id))
	}
	for sel, want := range map[string]bool{"kubernetes-routes": true, "KUBERNETES-ROUTES": true, id: true, id + "/": true, "other": false, "": false} {
		if got := Matches(id, sel); got != want {
			t.Errorf("Matches(%q) = %v, want %v", sel, got, want)
		}
	}
}

func TestResourceGroupID(t *testing.T) {
	for id, want := range map[string]string{
		"/subscriptions/s/resourceGroups/Net/providers/Microsoft.Network/virtualNetworks/v/subnets/sn": "/subscriptions/s/resourceGroups/Net",
		"/subscriptions/s/resourceGroups/rg":  "/subscriptions/s/resourceGroups/rg",
		"/subscriptions/s/resourceGroups/rg/": "/subscriptions/s/resourceGroups/rg",
		"/subscriptions/s":                    "",
		"nonsense":                            "",
	} {
		if got := ResourceGroupID(id); got != want {
			t.Errorf("ResourceGroupID(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	const table = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt"
	const subnet = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/sn"
	for _, tc := range []struct {
		id, typ string
		err     string // a substring; "" when valid
	}{
		{table, RouteTable, ""},
		{strings.ToLower(table), RouteTable, ""},
		{subnet, Subnet, ""},
		{subnet, RouteTable, `route table ID "` + subnet + `": want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<name>`},
		{table, Subnet, `subnet ID "` + table + `": want`},
		{"rt", RouteTable, `route table ID "rt": `},
		{"/subscriptions/s/providers/Microsoft.Network/routeTables/rt", RouteTable, "want"},
		{table, "Microsoft.Network/natGateways", `Microsoft.Network/natGateways ID "` + table + `": want an ID of a Microsoft.Network/natGateways`},
	} {
		r, err := Parse(tc.id, tc.typ)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q, %s): %v", tc.id, tc.typ, err)
		case tc.err == "" && !strings.EqualFold(r.Type(), tc.typ):
			t.Errorf("Parse(%q, %s) is a %s", tc.id, tc.typ, r.Type())
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q, %s) = %v, want an error containing %q", tc.id, tc.typ, err, tc.err)
		}
	}
}

func TestScopeOf(t *testing.T) {
	for _, tc := range []struct {
		id, provider, scope string
		ok                  bool
	}{
		{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Authorization/locks/l", "Microsoft.Authorization", "/subscriptions/s/resourceGroups/rg", true},
		{"/subscriptions/s/providers/microsoft.authorization/policyAssignments/a", "Microsoft.Authorization/policyAssignments", "/subscriptions/s", true},
		{"/providers/Microsoft.Authorization/roleDefinitions/g", "Microsoft.Authorization", "/", true},
		{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt/providers/Microsoft.Authorization/locks/l", "Microsoft.Authorization/locks",
			"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt", true},
		{"/subscriptions/s/providers/Microsoft.Authorization/locks/l", "Microsoft.Authorization/policyAssignments", "", false},
		{"/subscriptions/s/resourceGroups/rg", "Microsoft.Authorization", "", false},
	} {
		scope, ok := ScopeOf(tc.id, tc.provider)
		if scope != tc.scope || ok != tc.ok {
			t.Errorf("ScopeOf(%q, %s) = %q, %v; want %q, %v", tc.id, tc.provider, scope, ok, tc.scope, tc.ok)
		}
	}
}
