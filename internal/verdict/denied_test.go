package verdict

import (
	"strings"
	"testing"
)

// TestUnlockNeverDeletesUnseenLocks: a ScopeLocked refusal names the
// locked scopes, not the lock; the fix lists the locks placed at exactly
// those scopes and deletes only a lock it knows by ID.
func TestUnlockNeverDeletesUnseenLocks(t *testing.T) {
	const (
		rg   = "/subscriptions/s1/resourceGroups/net"
		vnet = rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	)
	for _, tc := range []struct {
		name, scope, lockID string
		want                []string
	}{
		{"a known lock is deleted by its ID", rg, rg + "/providers/Microsoft.Authorization/locks/ro", []string{"az lock delete --ids " + rg + "/providers/Microsoft.Authorization/locks/ro"}},
		{"a resource group's locks are listed, not deleted", rg, "", []string{
			`az lock list --resource-group net --subscription s1 --query "[?starts_with(id, '` + rg + `/providers/Microsoft.Authorization/locks/')]`,
			"then az lock delete --ids <the lock's id>"}},
		{"a subscription's locks", "/subscriptions/s1", "", []string{
			`az lock list --subscription s1 --query "[?starts_with(id, '/subscriptions/s1/providers/Microsoft.Authorization/locks/')]`}},
		{"a resource's locks: vnet, not vnet2", vnet, "", []string{
			`az lock list --resource ` + vnet + ` --query "[?starts_with(id, '` + vnet + `/providers/Microsoft.Authorization/locks/')]`}},
		{"two locked scopes, as ARM joins them", rg + "," + vnet, "", []string{
			`--resource-group net --subscription s1`, ` && az lock list --resource ` + vnet}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Unlock(tc.scope, tc.lockID)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Unlock(%q, %q) = %s\nwant it to contain %s", tc.scope, tc.lockID, got, w)
				}
			}
			if tc.lockID == "" && strings.Contains(got, "$(") {
				t.Errorf("Unlock(%q) = %s: deletes whatever a listing returns", tc.scope, got)
			}
		})
	}
}
