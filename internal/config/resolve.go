package config

import (
	"fmt"
	"strings"
)

// LocalSubscription is the subscription of the embedded local fabric (the
// fabric's DefaultSubscription): resources named without an ID live there
// when the cloud is local.
const LocalSubscription = "00000000-0000-0000-0000-000000000000"

// Scope is where a resource given by name rather than by ARM ID lives: the
// subscription and resource group, as the Azure CLI takes them from
// --subscription and --resource-group/-g.
type Scope struct {
	Subscription  string
	ResourceGroup string
	// subscriptionFrom and groupFrom name the settings to give in an error.
	subscriptionFrom, groupFrom string
}

// Scope returns where names resolve: the resourceGroup setting (-g), else
// azure.json's resourceGroup; the subscription of cloud.azure.subscriptionID
// (--subscription, azure.json), else with the local cloud the fabric's.
func (c *Config) Scope() Scope {
	s := Scope{ResourceGroup: c.ResourceGroup, Subscription: c.Cloud.Azure.SubscriptionID,
		groupFrom: "--resource-group/-g or resourceGroup", subscriptionFrom: "--subscription or cloud.azure.subscriptionID"}
	if s.ResourceGroup == "" && c.AzureJSON != nil {
		s.ResourceGroup = c.AzureJSON.ResourceGroup
	}
	if s.Subscription == "" && c.Cloud.Type == CloudLocal {
		s.Subscription = LocalSubscription
	}
	return s
}

// isID reports whether s is meant as an ARM ID rather than a name.
func isID(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "/") }

// need says what is missing to resolve a name, or "" when nothing is.
func (s Scope) need() string {
	var missing []string
	if s.ResourceGroup == "" {
		missing = append(missing, "a resource group ("+s.groupFrom+")")
	}
	if s.Subscription == "" {
		missing = append(missing, "a subscription ("+s.subscriptionFrom+")")
	}
	return strings.Join(missing, " and ")
}

// RouteTableID returns the ARM ID of a route table given as an ID (returned
// as it is) or by name. The error says what is missing or wrong, without
// the field: callers name it.
func (s Scope) RouteTableID(v string) (string, error) {
	if isID(v) {
		return v, nil
	}
	if v == "" || strings.Contains(v, "/") {
		return "", fmt.Errorf("not a route table name or ARM ID; want a name (with -g) or %s", routeTableIDExample)
	}
	if need := s.need(); need != "" {
		return "", fmt.Errorf("a route table name needs %s; or give the ARM ID %s", need, routeTableIDExample)
	}
	return RouteTableID(s.Subscription, s.ResourceGroup, v), nil
}

// SubnetID returns the ARM ID of a subnet given as an ID or as
// <vnet>/<subnet> in the scope's resource group.
func (s Scope) SubnetID(v string) (string, error) {
	if isID(v) {
		return v, nil
	}
	vnet, subnet, ok := strings.Cut(v, "/")
	if !ok || vnet == "" || subnet == "" || strings.Contains(subnet, "/") {
		return "", fmt.Errorf("not a subnet ARM ID or <vnet>/<subnet>; want <vnet>/<subnet> (with -g) or %s", subnetIDExample)
	}
	if need := s.need(); need != "" {
		return "", fmt.Errorf("a subnet given as <vnet>/<subnet> needs %s; or give the ARM ID %s", need, subnetIDExample)
	}
	return SubnetID(s.Subscription, s.ResourceGroup, vnet, subnet), nil
}

// resolveNames turns the route table and subnets given by name into ARM
// IDs. Names that cannot be resolved are left for Validate to report.
func (c *Config) resolveNames() {
	s := c.Scope()
	if id, err := s.RouteTableID(c.RouteTable.ID); err == nil && c.RouteTable.ID != "" {
		c.RouteTable.ID = id
	}
	for i, v := range c.Subnets {
		if id, err := s.SubnetID(v); err == nil {
			c.Subnets[i] = id
		}
	}
}
