package fabric

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// nsgClients are the SDK's clients of network security groups.
type nsgClients struct {
	groups   *armnetwork.SecurityGroupsClient
	rules    *armnetwork.SecurityRulesClient
	defaults *armnetwork.DefaultSecurityRulesClient
}

func (e *env) nsgClients() nsgClients {
	e.t.Helper()
	g, err := armnetwork.NewSecurityGroupsClient(testSub, identity.Credential{}, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := armnetwork.NewSecurityRulesClient(testSub, identity.Credential{}, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := armnetwork.NewDefaultSecurityRulesClient(testSub, identity.Credential{}, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return nsgClients{g, r, d}
}

func (c nsgClients) put(ctx context.Context, name string, g armnetwork.SecurityGroup) (armnetwork.SecurityGroup, error) {
	p, err := c.groups.BeginCreateOrUpdate(ctx, testRG, name, g, nil)
	res, err := await(ctx, p, err)
	return res.SecurityGroup, err
}

// kthwRule is one of the lab's rules (kubernetes-allow-ssh, -api-server).
func kthwRule(name string, prio int32, port string) *armnetwork.SecurityRule {
	return &armnetwork.SecurityRule{Name: api.Ptr(name), Properties: &armnetwork.SecurityRulePropertiesFormat{
		Protocol: api.Ptr(armnetwork.SecurityRuleProtocolTCP), Access: api.Ptr(armnetwork.SecurityRuleAccessAllow),
		Direction: api.Ptr(armnetwork.SecurityRuleDirectionInbound), Priority: api.Ptr(prio),
		SourcePortRange: api.Ptr("*"), DestinationPortRange: api.Ptr(port),
		SourceAddressPrefix: api.Ptr("*"), DestinationAddressPrefix: api.Ptr("*"),
	}}
}

func kthwNSG(rules ...*armnetwork.SecurityRule) armnetwork.SecurityGroup {
	return armnetwork.SecurityGroup{Location: api.Ptr(testLoc), Properties: &armnetwork.SecurityGroupPropertiesFormat{SecurityRules: rules}}
}

// TestNSGCRUD: the lab's kubernetes-nsg through the SDK: created with its
// two rules and the six default rules, read back, updated with If-Match
// (a stale etag gets 412), a no-op PUT keeps the etag, rules as child
// resources change the group's etag, and the group is deleted.
func TestNSGCRUD(t *testing.T) {
	eachTransport(t, Options{}, func(ctx context.Context, t *testing.T, e *env) {
		c := e.nsgClients()

		g, err := c.put(ctx, "kubernetes-nsg", kthwNSG(kthwRule("kubernetes-allow-ssh", 1000, "22"), kthwRule("kubernetes-allow-api-server", 1001, "6443")))
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(g.ID) != api.ResourceID(testSub, testRG, network.TypeNetworkSecurityGroups, "kubernetes-nsg") || api.Str(g.Type) != network.ARMTypeNSG {
			t.Errorf("id %s type %s", api.Str(g.ID), api.Str(g.Type))
		}
		if *g.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded || len(g.Properties.SecurityRules) != 2 {
			t.Fatalf("created group = %+v", g.Properties)
		}
		var defaults []string
		for _, r := range g.Properties.DefaultSecurityRules {
			defaults = append(defaults, api.Str(r.Name))
		}
		want := []string{"AllowVnetInBound", "AllowAzureLoadBalancerInBound", "DenyAllInBound", "AllowVnetOutBound", "AllowInternetOutBound", "DenyAllOutBound"}
		if !slices.Equal(defaults, want) {
			t.Errorf("default rules = %v, want %v", defaults, want)
		}
		etag := api.Str(g.Etag)
		if !strings.HasPrefix(etag, `W/"`) {
			t.Errorf("etag %q", etag)
		}

		// A no-op PUT: 200, same etag.
		same, err := c.put(ctx, "kubernetes-nsg", kthwNSG(kthwRule("kubernetes-allow-ssh", 1000, "22"), kthwRule("kubernetes-allow-api-server", 1001, "6443")))
		if err != nil || api.Str(same.Etag) != etag {
			t.Fatalf("no-op PUT: etag %s (was %s), %v", api.Str(same.Etag), etag, err)
		}

		// A stale If-Match is refused; the current one is accepted.
		_, err = c.put(withHeader(ctx, "If-Match", `W/"stale"`), "kubernetes-nsg", kthwNSG(kthwRule("kubernetes-allow-ssh", 1000, "22")))
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		g2, err := c.put(withHeader(ctx, "If-Match", etag), "kubernetes-nsg", kthwNSG(kthwRule("kubernetes-allow-ssh", 1000, "22")))
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(g2.Etag) == etag || len(g2.Properties.SecurityRules) != 1 {
			t.Fatalf("update: etag %s, rules %d", api.Str(g2.Etag), len(g2.Properties.SecurityRules))
		}

		// Rules as children.
		p, err := c.rules.BeginCreateOrUpdate(ctx, testRG, "kubernetes-nsg", "kubernetes-allow-api-server", *kthwRule("", 1001, "6443"), nil)
		if err != nil {
			t.Fatal(err)
		}
		rule, err := p.PollUntilDone(ctx, fastPoll)
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(rule.Name) != "kubernetes-allow-api-server" || api.Str(rule.Properties.DestinationPortRange) != "6443" {
			t.Errorf("rule = %+v", rule.SecurityRule)
		}
		got, err := c.groups.Get(ctx, testRG, "kubernetes-nsg", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Properties.SecurityRules) != 2 || api.Str(got.Etag) == api.Str(g2.Etag) {
			t.Errorf("after a rule PUT the group has %d rules, etag %s (was %s)", len(got.Properties.SecurityRules), api.Str(got.Etag), api.Str(g2.Etag))
		}
		d, err := c.defaults.Get(ctx, testRG, "kubernetes-nsg", "DenyAllInBound", nil)
		if err != nil || *d.Properties.Access != armnetwork.SecurityRuleAccessDeny || *d.Properties.Priority != 65500 {
			t.Errorf("default rule DenyAllInBound = %+v, %v", d.SecurityRule, err)
		}
		dp, err := c.rules.BeginDelete(ctx, testRG, "kubernetes-nsg", "kubernetes-allow-ssh", nil)
		mustPoll(ctx, t, dp, err)
		_, err = c.rules.Get(ctx, testRG, "kubernetes-nsg", "kubernetes-allow-ssh", nil)
		respErr(t, err, http.StatusNotFound, "NotFound")

		gp, err := c.groups.BeginDelete(ctx, testRG, "kubernetes-nsg", nil)
		mustPoll(ctx, t, gp, err)
		_, err = c.groups.Get(ctx, testRG, "kubernetes-nsg", nil)
		respErr(t, err, http.StatusNotFound, "ResourceNotFound")
	})
}

// TestNSGValidation: Azure's refusals of bad rules.
func TestNSGValidation(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	c := e.nsgClients()
	badPort := kthwRule("bad-port", 1000, "70000")
	noProto := kthwRule("no-proto", 1000, "22")
	noProto.Properties.Protocol = nil
	for _, tc := range []struct {
		name  string
		rules []*armnetwork.SecurityRule
		code  string
	}{
		{"priority below 100", []*armnetwork.SecurityRule{kthwRule("r", 99, "22")}, "SecurityRuleInvalidPriority"},
		{"priority above 4096", []*armnetwork.SecurityRule{kthwRule("r", 4097, "22")}, "SecurityRuleInvalidPriority"},
		{"same priority and direction", []*armnetwork.SecurityRule{kthwRule("a", 1000, "22"), kthwRule("b", 1000, "443")}, "SecurityRuleConflict"},
		{"port out of range", []*armnetwork.SecurityRule{badPort}, "SecurityRuleInvalidPortRange"},
		{"no protocol", []*armnetwork.SecurityRule{noProto}, "InvalidRequestFormat"},
		{"bad name", []*armnetwork.SecurityRule{kthwRule("-x", 1000, "22")}, "InvalidResourceName"},
		{"duplicate name", []*armnetwork.SecurityRule{kthwRule("a", 1000, "22"), kthwRule("A", 1001, "443")}, "DuplicateResourceName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.put(ctx, "nsg", kthwNSG(tc.rules...))
			respErr(t, err, http.StatusBadRequest, tc.code)
		})
	}
	// The same priority in both directions is fine.
	out := kthwRule("out", 1000, "22")
	out.Properties.Direction = api.Ptr(armnetwork.SecurityRuleDirectionOutbound)
	if _, err := c.put(ctx, "nsg", kthwNSG(kthwRule("in", 1000, "22"), out)); err != nil {
		t.Fatal(err)
	}
}

// TestSubnetNSGAssociation: a subnet names its NSG; the NSG lists the
// subnet and cannot be deleted while the subnet uses it; an NSG in another
// location is refused, and a VNet PUT without the reference drops it.
func TestSubnetNSGAssociation(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	c := e.nsgClients()
	g, err := c.put(ctx, "kubernetes-nsg", kthwNSG(kthwRule("kubernetes-allow-ssh", 1000, "22")))
	if err != nil {
		t.Fatal(err)
	}
	e.seedVNet(ctx, testRG)
	sn, err := e.subnets.Get(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The reference in another case: stored as the NSG's own ID.
	sn.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: api.Ptr(strings.ToUpper(api.Str(g.ID)))}
	got, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", sn.Subnet)
	if err != nil {
		t.Fatal(err)
	}
	if api.Str(got.Properties.NetworkSecurityGroup.ID) != api.Str(g.ID) {
		t.Errorf("subnet's NSG = %s, want %s", api.Str(got.Properties.NetworkSecurityGroup.ID), api.Str(g.ID))
	}
	rg, err := c.groups.Get(ctx, testRG, "kubernetes-nsg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rg.Properties.Subnets) != 1 || !strings.EqualFold(api.Str(rg.Properties.Subnets[0].ID), api.Str(sn.ID)) {
		t.Errorf("NSG subnets = %v", rg.Properties.Subnets)
	}
	_, err = c.groups.BeginDelete(ctx, testRG, "kubernetes-nsg", nil)
	respErr(t, err, http.StatusBadRequest, "InUseNetworkSecurityGroupCannotBeDeleted")

	west := kthwNSG()
	west.Location = api.Ptr("westeurope")
	wg, err := c.put(ctx, "west-nsg", west)
	if err != nil {
		t.Fatal(err)
	}
	sn.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: wg.ID}
	_, err = e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", sn.Subnet)
	respErr(t, err, http.StatusBadRequest, "InvalidResourceReference")

	// A redeploy of the VNet whose inline subnet has no NSG drops it.
	e.seedVNet(ctx, testRG)
	rg, err = c.groups.Get(ctx, testRG, "kubernetes-nsg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rg.Properties.Subnets) != 0 {
		t.Errorf("after the redeploy the NSG still lists %v", rg.Properties.Subnets)
	}
	gp, err := c.groups.BeginDelete(ctx, testRG, "kubernetes-nsg", nil)
	mustPoll(ctx, t, gp, err)
}

// TestNSGListsAndPaths: lists by group and subscription, and the 404s of
// unknown child types.
func TestNSGListsAndPaths(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{})
	c := e.nsgClients()
	for _, n := range []string{"a", "b"} {
		if _, err := c.put(ctx, n, kthwNSG()); err != nil {
			t.Fatal(err)
		}
	}
	names := pageNames(ctx, t, c.groups.NewListAllPager(nil))
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("list all = %v", names)
	}
	rules := pageNames(ctx, t, c.defaults.NewListPager(testRG, "a", nil))
	if len(rules) != 6 {
		t.Errorf("default rules = %v", rules)
	}
	resp, _ := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/"+testRG+"/providers/Microsoft.Network/networkSecurityGroups/a/flowLogs", "")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown child type: %d", resp.StatusCode)
	}
}
