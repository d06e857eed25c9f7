package armid

import "testing"

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
