package azure_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// deniedTopology is the KTHW network with its route table, routekeeper's
// role from deploy/azure/routekeeper-role.json on the group kubernetes
// (the role file names my-cluster-rg; this copy is inline with the
// kubernetes group as assignable scope), a reader, and a deny policy on
// VirtualAppliance routes in group other.
const deniedTopology = fabrictest.KTHW + `    routeTables:
      - name: kubernetes-routes
      - name: locked-routes
  - name: other
    routeTables:
      - name: rt
authorization:
  principals:
    - {name: routekeeper, clientId: rk-client, objectId: 00000000-0000-0000-0000-00000000a001}
    - {name: reader, clientId: reader-client}
  roleDefinitions:
    - Name: routekeeper
      Actions: [Microsoft.Network/routeTables/read, Microsoft.Network/routeTables/write, Microsoft.Network/virtualNetworks/read,
        Microsoft.Network/virtualNetworks/subnets/read, Microsoft.Network/virtualNetworks/subnets/write, Microsoft.Network/locations/operations/read]
      AssignableScopes: [/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes]
  roleAssignments:
    - {principal: routekeeper, role: routekeeper, resourceGroup: kubernetes}
    - {principal: reader, role: Reader}
  locks:
    - {name: frozen, level: ReadOnly, scope: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/locked-routes}
  policyDefinitions:
    - name: no-nva
      mode: All
      policyRule:
        if: {not: {field: "Microsoft.Network/routeTables/routes[*].nextHopType", notEquals: VirtualAppliance}}
        then: {effect: deny}
  policyAssignments:
    - {name: no-nva, definition: no-nva, resourceGroup: other}
`

func clientAs(t *testing.T, env *fabrictest.Env, clientID string) *azure.Client {
	t.Helper()
	c, err := azure.New(azure.Options{Credential: fabric.Credential{ClientID: clientID}, ClientOptions: env.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDeniedErrors: each refusal of ARM, through the real SDK, comes back
// as a *armerr.DeniedError with what ARM's message names.
func TestDeniedErrors(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, deniedTopology)
	ctx := context.Background()
	rk, reader := clientAs(t, env, "rk-client"), clientAs(t, env, "reader-client")
	other := strings.Replace(fabrictest.KTHWTable, "/kubernetes/", "/other/", 1)
	other = strings.Replace(other, "kubernetes-routes", "rt", 1)
	locked := strings.Replace(fabrictest.KTHWTable, "kubernetes-routes", "locked-routes", 1)
	tbl := func(id string, routes ...route.Route) *route.Table {
		return &route.Table{ID: id, Location: "eastus", Routes: routes}
	}
	read := func(c *azure.Client, id string) error { _, err := c.GetRouteTable(ctx, id); return err }
	for _, tc := range []struct {
		name string
		call func() error
		want armerr.DeniedError
	}{
		{"GET without read", func() error { return read(rk, other) }, armerr.DeniedError{Status: 403, Code: armerr.CodeAuthorizationFailed,
			Client: "rk-client", Principal: "00000000-0000-0000-0000-00000000a001", Action: "Microsoft.Network/routeTables/read", Scope: other}},
		{"PUT without write", func() error {
			cur, err := reader.GetRouteTable(ctx, fabrictest.KTHWTable)
			if err != nil {
				return err
			}
			_, err = reader.PutRouteTable(ctx, cur, cur.Etag)
			return err
		}, armerr.DeniedError{Status: 403, Code: armerr.CodeAuthorizationFailed, Client: "reader-client", Principal: "reader-client",
			Action: "Microsoft.Network/routeTables/write", Scope: fabrictest.KTHWTable}},
		{"association without join", func() error {
			sn, err := rk.GetSubnet(ctx, fabrictest.KTHWSubnet)
			if err != nil {
				return err
			}
			_, err = rk.SetSubnetRouteTable(ctx, fabrictest.KTHWSubnet, fabrictest.KTHWTable, sn.Etag)
			return err
		}, armerr.DeniedError{Status: 403, Code: armerr.CodeLinkedAuthorizationFailed, Client: "rk-client", Principal: "00000000-0000-0000-0000-00000000a001",
			Action: "Microsoft.Network/virtualNetworks/subnets/write", Scope: fabrictest.KTHWSubnet,
			LinkedAction: "Microsoft.Network/routeTables/join/action", LinkedScope: fabrictest.KTHWTable}},
		{"write under a ReadOnly lock", func() error {
			cur, err := env.Client.GetRouteTable(ctx, locked)
			if err != nil {
				return err
			}
			_, err = env.Client.PutRouteTable(ctx, cur, cur.Etag)
			return err
		}, armerr.DeniedError{Status: 409, Code: armerr.CodeScopeLocked, Operation: "write", Scope: locked, Lock: locked}},
		{"delete under a ReadOnly lock", func() error { return env.Client.DeleteRouteTable(ctx, locked, "") },
			armerr.DeniedError{Status: 409, Code: armerr.CodeScopeLocked, Operation: "delete", Scope: locked, Lock: locked}},
		{"deny policy", func() error {
			_, err := env.Client.PutRouteTable(ctx, tbl(other, va("r", "10.244.0.0/24", "10.240.0.4")), "")
			return err
		}, armerr.DeniedError{Status: 403, Code: armerr.CodeRequestDisallowedByPolicy, Target: "rt",
			PolicyAssignment: "/subscriptions/" + fabrictest.Sub + "/resourceGroups/other/providers/Microsoft.Authorization/policyAssignments/no-nva",
			PolicyDefinition: "/subscriptions/" + fabrictest.Sub + "/providers/Microsoft.Authorization/policyDefinitions/no-nva"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var d *armerr.DeniedError
			if !errors.Is(err, armerr.ErrDenied) || !errors.As(err, &d) {
				t.Fatalf("err = %v, want a DeniedError", err)
			}
			got := *d
			got.Message, got.Err = "", nil
			if got != tc.want {
				t.Errorf("DeniedError\n got %+v\nwant %+v", got, tc.want)
			}
			if d.Message == "" || !strings.Contains(err.Error(), d.Code) {
				t.Errorf("Error() = %q: should carry ARM's code and the message %q", err, d.Message)
			}
		})
	}
	// A refusal that ends a long-running operation (injected here) is a
	// DeniedError too, wrapping the OperationFailedError.
	env.Server.SetFaults(fabric.Faults{FailNextOperations: 1, FailCode: "ScopeLocked"})
	cur, err := env.Client.GetRouteTable(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	cur.Tags = map[string]string{"x": "y"}
	_, err = env.Client.PutRouteTable(ctx, cur, cur.Etag)
	var d *armerr.DeniedError
	var of *armerr.OperationFailedError
	if !errors.As(err, &d) || d.Code != armerr.CodeScopeLocked || d.Status != 0 || !errors.As(err, &of) {
		t.Errorf("failed operation with ScopeLocked: %v", err)
	}
}

// TestPermissions: the client reads the permissions API at any scope and
// azrbac names what is missing.
func TestPermissions(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, deniedTopology)
	ctx := context.Background()
	rk := clientAs(t, env, "rk-client")
	set, err := rk.Permissions(ctx, fabrictest.KTHWSubnet)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 1 {
		t.Fatalf("permission blocks = %v, want routekeeper's one", set)
	}
	missing := set.Missing("Microsoft.Network/routeTables/write", "Microsoft.Network/virtualNetworks/subnets/write", "Microsoft.Network/routeTables/join/action")
	if len(missing) != 1 || missing[0] != "Microsoft.Network/routeTables/join/action" {
		t.Errorf("missing = %v, want the join action only", missing)
	}
	set, err = rk.Permissions(ctx, "/subscriptions/"+fabrictest.Sub+"/resourceGroups/other")
	if err != nil || len(set) != 0 {
		t.Errorf("at group other: %v %v, want no block", set, err)
	}
	set, err = env.Client.Permissions(ctx, "/subscriptions/"+fabrictest.Sub)
	owner, _ := azrbac.BuiltInRole("Owner")
	if err != nil || len(set) != 1 || !set.Allows("Microsoft.Authorization/locks/write") || set[0].Actions[0] != owner.Permissions[0].Actions[0] {
		t.Errorf("administrator at the subscription: %v %v", set, err)
	}
	if _, err := rk.Permissions(ctx, "not-a-scope"); err == nil {
		t.Error("a bad scope is accepted")
	}
}
