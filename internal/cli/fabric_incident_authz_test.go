package cli

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// TestFabricAuthzIncidents: the operator mistakes revoke-role, lock and
// deny-policy, on a state file, as routekeeper's own principal then
// meets them through the real SDK.
func TestFabricAuthzIncidents(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fabric.db")
	wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw-authz.yaml", "--state", state)
	ctx := context.Background()
	table := "/subscriptions/" + fabric.DefaultSubscription + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
	// rewrite writes the table back as routekeeper's principal would, with
	// a route of next hop hop, and returns the refusal, if any.
	rewrite := func(t *testing.T, hop string) error {
		t.Helper()
		srv, closeStore := openFabric(t, state)
		defer closeStore()
		f, err := armnetwork.NewClientFactory(fabric.DefaultSubscription, identity.Credential{ClientID: "routekeeper-app"}, srv.ClientOptions())
		if err != nil {
			t.Fatal(err)
		}
		tables := f.NewRouteTablesClient()
		cur, err := tables.Get(ctx, "kubernetes", "kubernetes-routes", nil)
		if err != nil {
			return err
		}
		cur.Properties.Routes = []*armnetwork.Route{{Name: to.Ptr("r"), Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr("10.200.0.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopType(hop))}}}
		if hop == "VirtualAppliance" {
			cur.Properties.Routes[0].Properties.NextHopIPAddress = to.Ptr("10.240.0.20")
		}
		p, err := tables.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", cur.RouteTable, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, nil)
		}
		return err
	}
	code := func(err error) string {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			return re.ErrorCode
		}
		return ""
	}
	if err := rewrite(t, "VirtualAppliance"); err != nil {
		t.Fatalf("routekeeper's principal before any incident: %v", err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		hop      string // the next hop the rewrite after it uses
		wantCode string // the refusal the rewrite meets, "" for none
		undo     []string
	}{
		{"deny-policy", []string{"deny-policy", "--next-hop", "VirtualAppliance"}, "VirtualAppliance", armerr.CodeRequestDisallowedByPolicy, nil},
		{"deny-policy-other-hop", nil, "VnetLocal", "", nil},
		{"lock", []string{"lock", table, "--level", "ReadOnly", "--name", "freeze"}, "VnetLocal", armerr.CodeScopeLocked,
			[]string{"DELETE", table + "/providers/Microsoft.Authorization/locks/freeze?api-version=2016-09-01"}},
		{"revoke-role", []string{"revoke-role", "routekeeper-app", "--role", "routekeeper"}, "VnetLocal", armerr.CodeAuthorizationFailed, nil},
		{"revoke-role-nothing", []string{"revoke-role", "routekeeper", "--role", "routekeeper"}, "VnetLocal", armerr.CodeAuthorizationFailed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args != nil {
				res := wantExit(t, ExitOK, append(append([]string{"fabric", "incident"}, tc.args...), "--state", state)...)
				golden(t, filepath.Join("testdata", "fabric", "incident-"+tc.name+".golden"), []byte(res.stdout))
			}
			err := rewrite(t, tc.hop)
			if got := code(err); got != tc.wantCode || (tc.wantCode == "" && err != nil) {
				t.Fatalf("rewrite after %s: %v (code %q), want %q", tc.name, err, got, tc.wantCode)
			}
			if tc.undo != nil {
				undo(t, state, tc.undo[0], tc.undo[1])
			}
		})
	}
	// Usage errors name the flag.
	for _, args := range [][]string{
		{"deny-policy"},
		{"deny-policy", "--next-hop", "Teleport"},
		{"lock", "not/a/scope"},
	} {
		res := runCLI(t, nil, "", append(append([]string{"fabric", "incident"}, args...), "--state", state)...)
		if res.code != ExitUsage {
			t.Errorf("incident %v = %d %s, want a usage error", args, res.code, res.stderr)
		}
	}
	res := runCLI(t, nil, "", "fabric", "incident", "lock", "--level", "Frozen", "--state", state)
	if res.code != ExitError || !strings.Contains(res.stderr, "CanNotDelete or ReadOnly") {
		t.Errorf("lock --level Frozen = %d %s", res.code, res.stderr)
	}
}

// undo sends a request to the fabric on the state file as its
// administrator.
func undo(t *testing.T, state, method, path string) {
	t.Helper()
	srv, closeStore := openFabric(t, state)
	defer closeStore()
	req, _ := http.NewRequest(method, fabric.InProcessEndpoint+path, nil)
	tok, _ := identity.Credential{}.GetToken(context.Background(), policy.TokenRequestOptions{})
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := srv.RoundTripper().RoundTrip(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %v %v", method, path, err, resp)
	}
}
