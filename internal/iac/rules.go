package iac

import "fmt"

// ruleText says what each rule finds.
var ruleText = map[string]string{
	RuleInlineSubnet:        "A virtual network's inline subnet without its route table (route_table_id, routeTable) detaches the route table from a node subnet",
	RuleVNetDestroyed:       "The virtual network of a node subnet is destroyed",
	RuleSubnetDestroyed:     "A node subnet is destroyed or replaced",
	RuleSubnetTable:         "A node subnet is pointed to another route table",
	RuleSubnetPrefix:        "A node subnet's prefixes change under its nodes",
	RuleAssociationRemoved:  "The association of a node subnet with routekeeper's route table is destroyed",
	RuleAssociationReplaced: "The association of a node subnet is destroyed and created again",
	RuleTableDestroyed:      "routekeeper's route table is destroyed",
	RuleTableReplaced:       "routekeeper's route table is replaced",
	RuleInlineRoutes:        "A route table with inline routes deletes routekeeper's pod routes",
	RuleRouteDestroyed:      "A pod route routekeeper keeps is destroyed",
	RuleAddressSpace:        "A virtual network's address space overlaps the pod CIDRs",
	"node-unrouted":         "A node loses its route",
}

// RuleText says what a rule finds (the SARIF rule's description).
func RuleText(rule string) string {
	if t, ok := ruleText[rule]; ok {
		return t
	}
	return fmt.Sprintf("rule %s", rule)
}
