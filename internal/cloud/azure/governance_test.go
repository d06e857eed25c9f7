package azure_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

const (
	govSub      = "/subscriptions/" + fabrictest.Sub
	govGroup    = govSub + "/resourceGroups/kubernetes"
	govOther    = govSub + "/resourceGroups/other"
	govTable2   = govGroup + "/providers/Microsoft.Network/routeTables/other-routes"
	allowedLocs = "/providers/Microsoft.Authorization/policyDefinitions/e56962a6-4747-49cd-b67b-bf8b01975c4c"
	noNVA       = govSub + "/providers/Microsoft.Authorization/policyDefinitions/no-nva"
)

// governanceTopology is the KTHW network with its route table and a second
// one, a group other, locks and policy assignments at every level (some
// that apply at the table and subnet, some that do not), and principals:
// a Reader of the subscription, a Reader of the group only, routekeeper's
// role on the group, and a principal with no role.
const governanceTopology = fabrictest.KTHW + `    routeTables:
      - name: kubernetes-routes
      - name: other-routes
  - name: other
    routeTables:
      - name: rt
authorization:
  principals:
    - {name: reader, clientId: reader-client}
    - {name: group-reader, clientId: group-reader-client}
    - {name: routekeeper, clientId: rk-client}
    - {name: nobody, clientId: nobody-client}
  roleDefinitions:
    - Name: routekeeper
      Actions: [Microsoft.Network/routeTables/read, Microsoft.Network/routeTables/write, Microsoft.Network/virtualNetworks/read,
        Microsoft.Network/virtualNetworks/subnets/read, Microsoft.Network/virtualNetworks/subnets/write]
      AssignableScopes: [/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes]
  roleAssignments:
    - {principal: reader, role: Reader}
    - {principal: group-reader, role: Reader, resourceGroup: kubernetes}
    - {principal: routekeeper, role: routekeeper, resourceGroup: kubernetes}
  locks:
    - {name: sub-keep, level: CanNotDelete, notes: subscription}
    - {name: group-keep, level: CanNotDelete, resourceGroup: kubernetes}
    - {name: frozen, level: ReadOnly, scope: ` + fabrictest.KTHWTable + `, notes: change freeze}
    - {name: subnet-frozen, level: ReadOnly, scope: ` + fabrictest.KTHWSubnet + `}
    - {name: other-table, level: ReadOnly, scope: ` + govTable2 + `}
    - {name: other-group, level: ReadOnly, resourceGroup: other}
  policyDefinitions:
    - name: no-nva
      displayName: No virtual appliance next hops
      mode: All
      policyRule:
        if: {allOf: [{field: type, equals: Microsoft.Network/routeTables},
                     {not: {field: "Microsoft.Network/routeTables/routes[*].nextHopType", notEquals: VirtualAppliance}}]}
        then: {effect: deny}
  policyAssignments:
    - {name: locations, definition: ` + allowedLocs + `, parameters: {listOfAllowedLocations: [eastus]}}
    - {name: no-nva, displayName: No NVA here, definition: no-nva, resourceGroup: kubernetes, notScopes: [` + govTable2 + `]}
    - {name: on-the-table, definition: no-nva, scope: ` + fabrictest.KTHWTable + `, enforcementMode: DoNotEnforce}
    - {name: other-group, definition: no-nva, resourceGroup: other}
    - {name: on-table-2, definition: no-nva, scope: ` + govTable2 + `}
`

// TestLocks: Locks lists the locks at a scope and above it, with their
// own scope, level and notes, for a Reader; a principal without a read
// right gets a DeniedError.
func TestLocks(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, governanceTopology)
	ctx := context.Background()
	reader := env.As(t, "reader-client")
	lock := func(name, level, scope, notes string) observe.Lock {
		return observe.Lock{ID: scope + "/providers/Microsoft.Authorization/locks/" + name, Name: name, Level: level, Scope: scope, Notes: notes}
	}
	subKeep := lock("sub-keep", observe.LockCanNotDelete, govSub, "subscription")
	groupKeep := lock("group-keep", observe.LockCanNotDelete, govGroup, "")
	for _, tc := range []struct {
		name   string
		client *azure.Client
		scope  string
		want   []observe.Lock
	}{
		{"subscription", reader, govSub, []observe.Lock{subKeep}},
		{"group", reader, govGroup, []observe.Lock{subKeep, groupKeep}},
		{"route table", reader, fabrictest.KTHWTable, []observe.Lock{subKeep, groupKeep, lock("frozen", observe.LockReadOnly, fabrictest.KTHWTable, "change freeze")}},
		{"subnet", reader, fabrictest.KTHWSubnet, []observe.Lock{subKeep, groupKeep, lock("subnet-frozen", observe.LockReadOnly, fabrictest.KTHWSubnet, "")}},
		{"the VNet holds a locked subnet: not listed", reader, fabrictest.KTHWVNet, []observe.Lock{subKeep, groupKeep}},
		{"a route of the table", reader, fabrictest.KTHWTable + "/routes/r", []observe.Lock{subKeep, groupKeep, lock("frozen", observe.LockReadOnly, fabrictest.KTHWTable, "change freeze")}},
		{"a Reader of the group only", env.As(t, "group-reader-client"), fabrictest.KTHWTable + "/", []observe.Lock{subKeep, groupKeep, lock("frozen", observe.LockReadOnly, fabrictest.KTHWTable, "change freeze")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.client.Locks(ctx, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b observe.Lock) int { return strings.Compare(a.ID, b.ID) })
			slices.SortFunc(tc.want, func(a, b observe.Lock) int { return strings.Compare(a.ID, b.ID) })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("locks (-want +got):\n%s", diff)
			}
		})
	}
	if l := lock("x", "readonly", govSub, ""); !l.RefusesWrites() || subKeep.RefusesWrites() {
		t.Error("RefusesWrites: ReadOnly must refuse writes, CanNotDelete must not")
	}
	if _, err := reader.Locks(ctx, "kubernetes"); err == nil {
		t.Error("a scope that is no ID is accepted")
	}
}

// TestPolicyAssignments: PolicyAssignments lists what applies at a
// scope (at it and above, notScopes and DoNotEnforce included, as ARM
// lists them), and each definition is read by its ID, custom or built-in,
// and evaluated with azpolicy: doctor's way to predict a refusal.
func TestPolicyAssignments(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, governanceTopology)
	ctx := context.Background()
	reader := env.As(t, "reader-client")
	assignment := func(name, scope string) string {
		return strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/policyAssignments/" + name
	}
	for _, tc := range []struct {
		scope string
		want  []string // assignment IDs
	}{
		{govSub, []string{assignment("locations", govSub)}},
		{govOther, []string{assignment("locations", govSub), assignment("other-group", govOther)}},
		{fabrictest.KTHWTable, []string{assignment("locations", govSub), assignment("no-nva", govGroup), assignment("on-the-table", fabrictest.KTHWTable)}},
		{govTable2, []string{assignment("locations", govSub), assignment("no-nva", govGroup), assignment("on-table-2", govTable2)}},
		{fabrictest.KTHWSubnet, []string{assignment("locations", govSub), assignment("no-nva", govGroup)}},
	} {
		t.Run(armid.Name(tc.scope), func(t *testing.T) {
			got, err := reader.PolicyAssignments(ctx, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			slices.Sort(ids)
			slices.Sort(tc.want)
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("assignment IDs (-want +got):\n%s", diff)
			}
		})
	}

	got, err := reader.PolicyAssignments(ctx, fabrictest.KTHWTable)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]observe.PolicyAssignment{}
	for _, a := range got {
		byName[a.Name] = a
	}
	want := observe.PolicyAssignment{ID: assignment("no-nva", govGroup), Name: "no-nva", DisplayName: "No NVA here", Scope: govGroup,
		NotScopes: []string{govTable2}, DefinitionID: noNVA, EnforcementMode: "Default"}
	gotNoNVA := byName["no-nva"]
	gotNoNVA.Document = nil
	if diff := cmp.Diff(want, gotNoNVA); diff != "" {
		t.Errorf("no-nva (-want +got):\n%s", diff)
	}
	if m := byName["on-the-table"].EnforcementMode; m != "DoNotEnforce" {
		t.Errorf("on-the-table enforcement mode %q", m)
	}

	// Doctor's way: every assignment with its definition, evaluated on the
	// table routekeeper would write.
	write := func(location, hop string) map[string]any {
		doc, err := azpolicy.Resource(fabrictest.KTHWTable, map[string]any{"location": location, "properties": map[string]any{"routes": []any{
			map[string]any{"name": "worker-0____102440024", "properties": map[string]any{"addressPrefix": "10.244.0.0/24", "nextHopType": hop, "nextHopIpAddress": "10.240.0.20"}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	for _, tc := range []struct {
		name   string
		doc    map[string]any
		denied []string // assignment names
	}{
		{"appliance routes in eastus", write("eastus", "VirtualAppliance"), []string{"no-nva"}},
		{"appliance routes in westus", write("westus", "VirtualAppliance"), []string{"locations", "no-nva"}},
		{"internet routes in East US", write("East US", "Internet"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var denied []string
			for _, pa := range got {
				def, err := reader.PolicyDefinition(ctx, pa.DefinitionID)
				if err != nil {
					t.Fatalf("definition of %s: %v", pa.Name, err)
				}
				d, err := azpolicy.ParseDefinition(def.Document)
				if err != nil {
					t.Fatalf("parsing %s: %v", def.ID, err)
				}
				a, err := azpolicy.ParseAssignment(pa.Document)
				if err != nil {
					t.Fatalf("parsing %s: %v", pa.ID, err)
				}
				deny, err := azpolicy.Denies(d, a, tc.doc)
				if err != nil {
					t.Fatalf("evaluating %s: %v", pa.Name, err)
				}
				if deny {
					denied = append(denied, pa.Name)
				}
			}
			slices.Sort(denied)
			if diff := cmp.Diff(tc.denied, denied); diff != "" {
				t.Errorf("denied by (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyDefinition: definitions by ID, custom and built-in, and what
// comes back when one is missing or may not be read.
func TestPolicyDefinition(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, governanceTopology)
	ctx := context.Background()
	for _, tc := range []struct {
		name, client, id string
		want             *observe.PolicyDefinition // Document not compared
		err              error
		code             string // DeniedError code
	}{
		{"custom, by a Reader", "reader-client", noNVA,
			&observe.PolicyDefinition{ID: noNVA, Name: "no-nva", DisplayName: "No virtual appliance next hops", PolicyType: "Custom", Mode: "All"}, nil, ""},
		{"built-in, by a Reader", "reader-client", allowedLocs,
			&observe.PolicyDefinition{ID: allowedLocs, Name: "e56962a6-4747-49cd-b67b-bf8b01975c4c", DisplayName: "Allowed locations", PolicyType: "BuiltIn", Mode: "Indexed"}, nil, ""},
		{"built-in, by a principal with no role", "nobody-client", strings.ToLower(allowedLocs),
			&observe.PolicyDefinition{ID: allowedLocs, Name: "e56962a6-4747-49cd-b67b-bf8b01975c4c", DisplayName: "Allowed locations", PolicyType: "BuiltIn", Mode: "Indexed"}, nil, ""},
		{"custom at the subscription, by a Reader of the group", "group-reader-client", noNVA, nil, armerr.ErrDenied, armerr.CodeAuthorizationFailed},
		{"missing custom", "reader-client", govSub + "/providers/Microsoft.Authorization/policyDefinitions/nope", nil, armerr.ErrNotFound, ""},
		{"missing built-in", "reader-client", "/providers/Microsoft.Authorization/policyDefinitions/00000000-0000-0000-0000-000000000000", nil, armerr.ErrNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := env.As(t, tc.client).PolicyDefinition(ctx, tc.id)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			var d *armerr.DeniedError
			if tc.code != "" && (!errors.As(err, &d) || d.Code != tc.code) {
				t.Fatalf("err = %v, want a DeniedError %s", err, tc.code)
			}
			if err != nil {
				return
			}
			if _, perr := azpolicy.ParseDefinition(got.Document); perr != nil {
				t.Errorf("the document does not parse: %v", perr)
			}
			got.Document = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := env.Client.PolicyDefinition(ctx, govSub+"/providers/Microsoft.Authorization/policySetDefinitions/x"); err == nil {
		t.Error("a policy set definition ID is accepted")
	}
}

// TestGovernanceDenied: without a read right on Microsoft.Authorization
// (routekeeper's own role, no role at all) the readers return a
// DeniedError naming the action, not a crash.
func TestGovernanceDenied(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, governanceTopology)
	ctx := context.Background()
	for _, client := range []string{"rk-client", "nobody-client"} {
		c := env.As(t, client)
		for _, tc := range []struct {
			name, action string
			call         func() error
		}{
			{"locks", "Microsoft.Authorization/locks/read", func() error { _, err := c.Locks(ctx, fabrictest.KTHWTable); return err }},
			{"policy assignments", "Microsoft.Authorization/policyAssignments/read", func() error {
				_, err := c.PolicyAssignments(ctx, fabrictest.KTHWSubnet)
				return err
			}},
			{"policy definition", "Microsoft.Authorization/policyDefinitions/read", func() error { _, err := c.PolicyDefinition(ctx, noNVA); return err }},
		} {
			t.Run(client+" "+tc.name, func(t *testing.T) {
				err := tc.call()
				var d *armerr.DeniedError
				if !errors.As(err, &d) || d.Code != armerr.CodeAuthorizationFailed || d.Action != tc.action {
					t.Fatalf("err = %v, want AuthorizationFailed on %s", err, tc.action)
				}
			})
		}
	}
}
