package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// authzNetwork is the start of the authorization tests' topologies: group
// kubernetes with network vnet (10.240.0.0/16) and its subnet nodes
// (10.240.0.0/24), to which a test adds more subnets, its tables and its
// authorization.
const authzNetwork = `
location: eastus
resourceGroups:
  - name: kubernetes
    virtualNetworks:
      - name: vnet
        addressPrefixes: [10.240.0.0/16]
        subnets:
          - {name: nodes, addressPrefix: 10.240.0.0/24}
`

// rbacTopology: two groups; a reader at the subscription, a network
// contributor on group kubernetes, a contributor on one route table, a
// custom role without route table deletes, and routekeeper's own role
// from deploy/azure/routekeeper-role.json as is, at my-cluster-rg.
const rbacTopology = authzNetwork + `    routeTables:
      - name: rt
      - name: rt2
  - name: other
    routeTables:
      - name: rt
  - name: my-cluster-rg
    virtualNetworks:
      - name: vnet
        addressPrefixes: [10.250.0.0/16]
        subnets:
          - {name: nodes, addressPrefix: 10.250.0.0/24}
    routeTables:
      - name: routes
      - name: other-routes
authorization:
  principals:
    - {name: reader, clientId: reader-app, objectId: 00000000-0000-0000-0000-0000000000a1}
    - {name: netc, clientId: netc-app, objectId: 00000000-0000-0000-0000-0000000000a2}
    - {name: contrib, clientId: contrib-app}
    - {name: nodelete, clientId: nodelete-app}
    - {name: routekeeper, clientId: routekeeper-app, objectId: 00000000-0000-0000-0000-0000000000a5}
    - {name: owner, clientId: owner-app}
  roleDefinitions:
    - file: ../../deploy/azure/routekeeper-role.json
    - Name: network-no-delete
      Actions: ["Microsoft.Network/*", "Microsoft.Resources/subscriptions/resourceGroups/read"]
      NotActions: ["Microsoft.Network/routeTables/delete", "Microsoft.Network/*/join/action"]
      AssignableScopes: ["/subscriptions/00000000-0000-0000-0000-000000000000"]
  roleAssignments:
    - {principal: reader, role: Reader}
    - {principal: netc, role: Network Contributor, resourceGroup: kubernetes}
    - {principal: contrib, role: Contributor, scope: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/rt}
    - {principal: nodelete, role: network-no-delete, resourceGroup: kubernetes}
    - {principal: routekeeper, role: routekeeper, resourceGroup: my-cluster-rg}
    - {principal: owner-app, role: Owner}
`

func TestAuthorizationFailed(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	ctx := context.Background()
	tableScope := netID("kubernetes", api.TypeRouteTables, "rt")

	err := putTable(e.as("reader-app"), "kubernetes", "rt")
	status, code, msg, _ := armErr(t, err)
	want := fmt.Sprintf("The client 'reader-app' with object id '00000000-0000-0000-0000-0000000000a1' does not have authorization to perform action 'Microsoft.Network/routeTables/write' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.", tableScope)
	if status != http.StatusForbidden || code != "AuthorizationFailed" || msg != want {
		t.Fatalf("reader's PUT = %d %s %q\nwant 403 AuthorizationFailed %q", status, code, msg, want)
	}
	if _, err := e.as("reader-app").tables.Get(ctx, "kubernetes", "rt", nil); err != nil {
		t.Errorf("the reader cannot read: %v", err)
	}
	// A principal the fabric does not know has no role at all.
	_, code, msg, _ = armErr(t, func() error { _, err := e.as("stranger").tables.Get(ctx, "kubernetes", "rt", nil); return err }())
	if code != "AuthorizationFailed" || !strings.Contains(msg, "'Microsoft.Network/routeTables/read'") || !strings.Contains(msg, "object id 'stranger'") {
		t.Errorf("a stranger's GET: %s %s", code, msg)
	}
	// The administrator (Credential{}) holds Owner at the root scope.
	if err := putTable(e.as(""), "other", "rt"); err != nil {
		t.Errorf("the administrator's PUT: %v", err)
	}
}

// TestInheritance: a role assigned at a scope applies there and below,
// nowhere else.
func TestInheritance(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	ctx := context.Background()
	for _, tc := range []struct {
		name, client, rg, table string
		allowed                 bool
	}{
		{"group role, table in the group", "netc-app", "kubernetes", "rt", true},
		{"group role, another table in the group", "netc-app", "kubernetes", "rt2", true},
		{"group role, table in another group", "netc-app", "other", "rt", false},
		{"resource role on that table", "contrib-app", "kubernetes", "rt", true},
		{"resource role, sibling table", "contrib-app", "kubernetes", "rt2", false},
		{"subscription role applies everywhere", "owner-app", "other", "rt", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := putTable(e.as(tc.client), tc.rg, tc.table, vaRoute("r1", "10.244.0.0/24", "10.240.0.4"))
			if tc.allowed && err != nil {
				t.Fatalf("PUT refused: %v", err)
			}
			if !tc.allowed {
				if _, code, _, _ := armErr(t, err); code != "AuthorizationFailed" {
					t.Fatalf("PUT = %v, want AuthorizationFailed", err)
				}
			}
		})
	}
	// A role on a table applies to its routes (child resources): the PUT
	// is accepted. But tracking the operation needs a role at the
	// resource group (Track asynchronous Azure operations, "Permission
	// for tracking async status"): the poll is refused, naming the action.
	p, err := e.as("contrib-app").routes.BeginCreateOrUpdate(ctx, "kubernetes", "rt", "r2", armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.244.1.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVnetLocal)}}, nil)
	if err != nil {
		t.Fatalf("route PUT under a table-scoped role: %v", err)
	}
	_, err = p.PollUntilDone(ctx, authzPoll)
	if _, code, msg, _ := armErr(t, err); code != "AuthorizationFailed" || !strings.Contains(msg, "'Microsoft.Network/locations/operations/read'") {
		t.Errorf("polling the route PUT with a role on the table only: %v; want AuthorizationFailed on Microsoft.Network/locations/operations/read", err)
	}
	if _, err := e.as("netc-app").routes.Get(ctx, "kubernetes", "rt", "r2", nil); err != nil {
		t.Errorf("the route written under a table-scoped role does not exist: %v", err)
	}
	// ... and not to listing the group.
	pager := e.as("contrib-app").tables.NewListPager("kubernetes", nil)
	_, err = pager.NextPage(ctx)
	if _, code, msg, _ := armErr(t, err); code != "AuthorizationFailed" || !strings.Contains(msg, "over scope '/subscriptions/"+sub0+"/resourceGroups/kubernetes/providers/Microsoft.Network'") {
		t.Errorf("list by a table-scoped principal: %s %s", code, msg)
	}
}

// TestBuiltInsAndNotActions: the built-in roles' and a custom role's
// actions minus notActions.
func TestBuiltInsAndNotActions(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	rg := "/subscriptions/" + sub0 + "/resourceGroups/kubernetes"
	lock := rg + "/providers/Microsoft.Authorization/locks/l1"
	lockBody := map[string]any{"properties": map[string]any{"level": "CanNotDelete"}}
	for _, tc := range []struct {
		name, client, method, path string
		body                       any
		wantStatus                 int
		wantAction                 string
	}{
		{"contributor may not create locks (NotActions Microsoft.Authorization/*/Write)", "contrib-app", "PUT", netID("kubernetes", api.TypeRouteTables, "rt") + "/providers/Microsoft.Authorization/locks/l0", lockBody, 403, "Microsoft.Authorization/locks/write"},
		{"network contributor may not create locks", "netc-app", "PUT", lock, lockBody, 403, "Microsoft.Authorization/locks/write"},
		{"network contributor reads locks (Microsoft.Authorization/*/read)", "netc-app", "GET", rg + "/providers/Microsoft.Authorization/locks", nil, 200, ""},
		{"network contributor may not write its resource group", "netc-app", "PATCH", rg + "?api-version=2021-04-01", map[string]any{"tags": map[string]string{"a": "b"}}, 403, "Microsoft.Resources/subscriptions/resourceGroups/write"},
		{"network contributor reads its resource group", "netc-app", "GET", rg + "?api-version=2021-04-01", nil, 200, ""},
		{"reader may not delete", "reader-app", "DELETE", netID("kubernetes", api.TypeRouteTables, "rt2") + "?api-version=2024-05-01", nil, 403, "Microsoft.Network/routeTables/delete"},
		{"custom role's NotActions refuse the delete", "nodelete-app", "DELETE", netID("kubernetes", api.TypeRouteTables, "rt2") + "?api-version=2024-05-01", nil, 403, "Microsoft.Network/routeTables/delete"},
		{"owner may create locks", "owner-app", "PUT", lock, lockBody, 201, ""},
		{"reader lists resource groups (*/read)", "reader-app", "GET", "/subscriptions/" + sub0 + "/resourcegroups?api-version=2021-04-01", nil, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.raw(tc.client, tc.method, tc.path, tc.body)
			if status != tc.wantStatus {
				t.Fatalf("%s %s = %d %v, want %d", tc.method, tc.path, status, body, tc.wantStatus)
			}
			if tc.wantAction != "" {
				er, _ := body["error"].(map[string]any)
				if er["code"] != "AuthorizationFailed" || !strings.Contains(fmt.Sprint(er["message"]), "perform action '"+tc.wantAction+"'") {
					t.Errorf("error = %v, want AuthorizationFailed naming %s", er, tc.wantAction)
				}
			}
		})
	}
	// The custom role grants what its NotActions leave.
	if err := putTable(e.as("nodelete-app"), "kubernetes", "rt2"); err != nil {
		t.Errorf("network-no-delete cannot write a table: %v", err)
	}
}

// TestRoutekeeperRole proves what deploy/azure/routekeeper-role.json,
// loaded as is, lets routekeeper do: keep its routes and the subnet's
// association; not delete tables, not touch anything outside its group.
func TestRoutekeeperRole(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	ctx := context.Background()
	rk := e.as("routekeeper-app")
	if err := putTable(rk, "my-cluster-rg", "routes", vaRoute("worker-0____102440024", "10.244.0.0/24", "10.250.0.20")); err != nil {
		t.Fatalf("routekeeper cannot write its table: %v", err)
	}
	if _, err := rk.vnets.Get(ctx, "my-cluster-rg", "vnet", nil); err != nil {
		t.Errorf("routekeeper cannot read the VNet: %v", err)
	}
	tableID := netID("my-cluster-rg", api.TypeRouteTables, "routes")
	err := putSubnet(rk, "my-cluster-rg", "vnet", "nodes", "10.250.0.0/24", func(p *armnetwork.SubnetPropertiesFormat) {
		p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
	})
	if err != nil {
		t.Fatalf("routekeeper cannot associate its table: %v", err)
	}
	got, err := rk.subnets.Get(ctx, "my-cluster-rg", "vnet", "nodes", nil)
	if err != nil || !strings.EqualFold(*got.Properties.RouteTable.ID, tableID) {
		t.Fatalf("subnet after the association: %v %v", err, got)
	}
	if _, code, msg, _ := armErr(t, deleteTable(rk, "my-cluster-rg", "other-routes")); code != "AuthorizationFailed" || !strings.Contains(msg, "Microsoft.Network/routeTables/delete") {
		t.Errorf("routekeeper deleting a table: %s %s (the role has no routeTables/delete)", code, msg)
	}
	if _, code, _, _ := armErr(t, putTable(rk, "kubernetes", "rt")); code != "AuthorizationFailed" {
		t.Errorf("routekeeper writing outside my-cluster-rg: %s", code)
	}
	// Its permissions as the permissions API tells them.
	status, body := e.raw("routekeeper-app", "GET", "/subscriptions/"+sub0+"/resourceGroups/my-cluster-rg/providers/Microsoft.Authorization/permissions", nil)
	if status != 200 {
		t.Fatalf("permissions = %d %v", status, body)
	}
	value, _ := body["value"].([]any)
	if len(value) != 1 || !strings.Contains(fmt.Sprint(value[0]), "Microsoft.Network/routeTables/join/action") {
		t.Errorf("permissions = %v", body)
	}
}

// TestLinkedAuthorization: a subnet write needs join/action on the route
// table, NSG and NAT gateway it references; a NIC write on its subnet.
func TestLinkedAuthorization(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	ctx := context.Background()
	admin := e.as("")
	p, err := admin.nats.BeginCreateOrUpdate(ctx, "kubernetes", "nat", armnetwork.NatGateway{Location: to.Ptr("eastus"),
		SKU: &armnetwork.NatGatewaySKU{Name: to.Ptr(armnetwork.NatGatewaySKUNameStandard)}}, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, authzPoll)
	}
	if err != nil {
		t.Fatalf("creating a NAT gateway: %v", err)
	}
	subnetID := netID("kubernetes", api.TypeVirtualNetworks, "vnet") + "/subnets/nodes"
	tableID, natID := netID("kubernetes", api.TypeRouteTables, "rt"), netID("kubernetes", network.TypeNatGateways, "nat")
	nsgID := netID("kubernetes", "networkSecurityGroups", "nsg")
	for _, tc := range []struct {
		name    string
		props   func(*armnetwork.SubnetPropertiesFormat)
		message string
	}{
		{"route table", func(p *armnetwork.SubnetPropertiesFormat) { p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)} },
			"does not have permission to perform action 'Microsoft.Network/routeTables/join/action' on the linked scope(s) '" + tableID + "' or the linked scope(s) are invalid."},
		{"network security group", func(p *armnetwork.SubnetPropertiesFormat) {
			p.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
		}, "does not have permission to perform action 'Microsoft.Network/networkSecurityGroups/join/action' on the linked scope(s) '" + nsgID + "'"},
		{"NAT gateway", func(p *armnetwork.SubnetPropertiesFormat) { p.NatGateway = &armnetwork.SubResource{ID: to.Ptr(natID)} },
			"does not have permission to perform action 'Microsoft.Network/natGateways/join/action' on the linked scope(s) '" + natID + "'"},
		{"two of them", func(p *armnetwork.SubnetPropertiesFormat) {
			p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
			p.NatGateway = &armnetwork.SubResource{ID: to.Ptr(natID)}
		}, "does not have permission to perform action(s) 'Microsoft.Network/routeTables/join/action,Microsoft.Network/natGateways/join/action' on the linked scope(s) '" + tableID + "," + natID + "' (respectively) or the linked scope(s) are invalid."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := putSubnet(e.as("nodelete-app"), "kubernetes", "vnet", "nodes", "10.240.0.0/24", tc.props)
			status, code, msg, _ := armErr(t, err)
			prefix := "The client 'nodelete-app' with object id 'nodelete-app' has permission to perform action 'Microsoft.Network/virtualNetworks/subnets/write' on scope '" + subnetID + "'; however, it "
			if status != 403 || code != "LinkedAuthorizationFailed" || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.message) {
				t.Fatalf("got %d %s %q\nwant 403 LinkedAuthorizationFailed %q...%q", status, code, msg, prefix, tc.message)
			}
		})
	}
	// With join/action (Network Contributor) the same write succeeds and
	// the subnet carries the NAT gateway.
	err = putSubnet(e.as("netc-app"), "kubernetes", "vnet", "nodes", "10.240.0.0/24", func(p *armnetwork.SubnetPropertiesFormat) {
		p.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
		p.NatGateway = &armnetwork.SubResource{ID: to.Ptr(natID)}
	})
	if err != nil {
		t.Fatalf("network contributor's subnet write: %v", err)
	}
	g, err := admin.nats.Get(ctx, "kubernetes", "nat", nil)
	if err != nil || len(g.Properties.Subnets) != 1 || !strings.EqualFold(*g.Properties.Subnets[0].ID, subnetID) {
		t.Fatalf("NAT gateway's subnets = %v %v", err, g.Properties)
	}
	// A VNet PUT carries its subnets' references: checked the same way.
	v, _ := admin.vnets.Get(ctx, "kubernetes", "vnet", nil)
	err = done(e.as("nodelete-app").vnets.BeginCreateOrUpdate(ctx, "kubernetes", "vnet", v.VirtualNetwork, nil))
	if _, code, _, _ := armErr(t, err); code != "LinkedAuthorizationFailed" {
		t.Errorf("VNet PUT carrying a route table without join: %s", code)
	}
	// A NIC needs join on its subnet.
	np, err := e.as("nodelete-app").nics.BeginCreateOrUpdate(ctx, "kubernetes", "nic", armnetwork.Interface{Location: to.Ptr("eastus"),
		Properties: &armnetwork.InterfacePropertiesFormat{IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{Name: to.Ptr("ip"),
			Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: to.Ptr(subnetID)},
				PrivateIPAddress: to.Ptr("10.240.0.9"), PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic)}}}}}, nil)
	if err == nil {
		_, err = np.PollUntilDone(ctx, authzPoll)
	}
	if _, code, msg, _ := armErr(t, err); code != "LinkedAuthorizationFailed" || !strings.Contains(msg, "'Microsoft.Network/virtualNetworks/subnets/join/action'") {
		t.Errorf("NIC PUT without subnets/join: %s %s", code, msg)
	}
	// A NAT gateway in use cannot be deleted.
	err = done(admin.nats.BeginDelete(ctx, "kubernetes", "nat", nil))
	if _, code, _, _ := armErr(t, err); code != "InUseNatGatewayCannotBeDeleted" {
		t.Errorf("deleting a NAT gateway in use: %s", code)
	}
}

// TestNoAuthorizationAllowsAll: a topology without authorization keeps
// the fabric open, whatever token (or principal) comes.
func TestNoAuthorizationAllowsAll(t *testing.T) {
	e := newAuthzEnv(t, `
location: eastus
resourceGroups:
  - name: kubernetes
`)
	for _, client := range []string{"", "anyone", "reader-app"} {
		if err := putTable(e.as(client), "kubernetes", "rt-"+client+"x"); err != nil {
			t.Errorf("%q: %v", client, err)
		}
	}
	// A token that is not a JWT is fine too.
	req, _ := http.NewRequest("GET", InProcessEndpoint+"/subscriptions/"+sub0+"/resourcegroups/kubernetes?api-version=2021-04-01", nil)
	req.Header.Set("Authorization", "Bearer test")
	resp, err := e.srv.RoundTripper().RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("plain token: %v %v", err, resp)
	}
	status, body := e.raw("anyone", "GET", "/subscriptions/"+sub0+"/providers/Microsoft.Authorization/permissions", nil)
	if b, _ := json.Marshal(body); status != 200 || string(b) != `{"value":[{"actions":["*"],"dataActions":[],"notActions":[],"notDataActions":[]}]}` {
		t.Errorf("permissions without authorization = %d %s", status, b)
	}
}

func TestEnforcedRefusesAnonymousTokens(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	req, _ := http.NewRequest("GET", InProcessEndpoint+"/subscriptions/"+sub0+"/resourcegroups/kubernetes?api-version=2021-04-01", nil)
	req.Header.Set("Authorization", "Bearer test")
	resp, err := e.srv.RoundTripper().RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a token naming nobody under RBAC: %v %v, want 401", err, resp.Status)
	}
}
