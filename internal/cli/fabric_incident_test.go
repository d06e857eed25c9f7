package cli

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// showState returns the route table (by name) of the KTHW subnet in the
// JSON of fabric show.
func showState(t *testing.T, out string) string {
	t.Helper()
	var st network.State
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("fabric show -o json: %v", err)
	}
	for _, v := range st.VirtualNetworks {
		for _, sn := range v.Subnets {
			if sn.Name == "kubernetes-subnet" && sn.RouteTable != "" {
				return path.Base(sn.RouteTable)
			}
		}
	}
	return ""
}

// TestFabricIncidentsGolden runs every incident verb on a state file and
// checks what it printed and what the fabric then holds.
func TestFabricIncidentsGolden(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fabric.db")
	apply := func() {
		t.Helper()
		wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw.yaml", "--state", state)
	}
	apply()
	wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw-v2.yaml", "--state", state)
	tests := []struct {
		name  string
		args  []string
		table string // the subnet's route table afterwards
		gone  string // a table that must no longer exist
	}{
		{"redeploy", []string{"redeploy", "kubernetes-vnet"}, "", ""},
		{"detach-nothing", []string{"detach", "kubernetes-vnet/kubernetes-subnet"}, "", ""},
		{"swap", []string{"swap", "kubernetes-vnet/kubernetes-subnet", "--to", "kubernetes-routes"}, "kubernetes-routes", ""},
		{"detach", []string{"detach", "/subscriptions/" + fabric.DefaultSubscription + "/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"}, "", ""},
		{"swap-delete-old", []string{"swap", "kubernetes-vnet/kubernetes-subnet", "--to", "kubernetes-routes-v2", "--delete-old"}, "kubernetes-routes-v2", "kubernetes-routes"},
		{"delete-table", []string{"delete-table", "kubernetes-routes-v2"}, "", "kubernetes-routes-v2"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "swap-delete-old" {
				// swap back to kubernetes-routes first so that there is an old table to delete
				wantExit(t, ExitOK, "fabric", "incident", "swap", "kubernetes-vnet/kubernetes-subnet", "--to", "kubernetes-routes", "--state", state)
			}
			res := wantExit(t, ExitOK, append(append([]string{"fabric", "incident"}, tc.args...), "--state", state)...)
			golden(t, filepath.Join("testdata", "fabric", "incident-"+tc.name+".golden"), []byte(res.stdout))
			show := wantExit(t, ExitOK, "fabric", "show", "--state", state, "-o", "json")
			if tc.gone != "" && strings.Contains(show.stdout, "/routeTables/"+tc.gone+`"`) {
				t.Errorf("step %d: table %s still exists", i, tc.gone)
			}
			if got := showState(t, show.stdout); got != tc.table {
				t.Errorf("step %d: subnet's route table = %q, want %q", i, got, tc.table)
			}
		})
	}
}
