package iac

import "strings"

// fix is the ARM template (JSON) that avoids a rule's hazard, for the
// resource with ID address; docs/iac.md has each with its Bicep form, and
// examples/kthw/arm the templates whole.
func (w *WhatIf) fix(rule, address string) string {
	name := address[strings.LastIndex(address, "/")+1:]
	switch rule {
	case RuleInlineSubnet:
		return "give the inline subnet the route table it has now, so the PUT keeps it (examples/kthw/arm/fix-route-table-parameter.json):\n" +
			`  "parameters": {"routeTableId": {"type": "string", "defaultValue": ""}},` + "\n" +
			`  ... "subnets": [{"name": "<subnet>", "properties": {"addressPrefix": "...",` + "\n" +
			`        "routeTable": "[if(empty(parameters('routeTableId')), null(), createObject('id', parameters('routeTableId')))]"}}]` + "\n" +
			"and deploy with -p routeTableId=\"$(az network vnet subnet show -g <group> --vnet-name " + name + " -n <subnet> --query routeTable.id -o tsv)\";\n" +
			"or read it in the template with a nested deployment's reference() (examples/kthw/arm/fix-nested-reference.json)"
	case RuleSubnetTable:
		return `keep the subnet's route table routekeeper's: the subnet resource carries "routeTable": {"id": "<routekeeper's table>"} (a subnet PUT without routeTable detaches it)`
	case RuleAssociationRemoved, RuleAssociationReplaced:
		return "keep the subnet's routeTable in the template"
	case RuleTableDestroyed, RuleTableReplaced:
		return "deploy in Incremental mode (Complete mode deletes every resource the template does not declare), or declare the route table " + name +
			" in the template with routekeeper's tags and without inline routes (its routes as Microsoft.Network/routeTables/routes resources of their own)"
	case RuleInlineRoutes:
		return "leave the routes out of the route table's properties (a route table PUT replaces every route, routekeeper's included); declare the template's own routes as child resources (examples/kthw/arm/fix-route-child-resource.json):\n" +
			`  {"type": "Microsoft.Network/routeTables/routes", "apiVersion": "2023-09-01", "name": "` + name + `/default-egress",` + "\n" +
			`   "properties": {"addressPrefix": "0.0.0.0/0", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.240.0.4"}}` + "\n" +
			"and leave the table itself out of the template, or deploy it once without routes"
	case RuleRouteDestroyed:
		return "leave routekeeper's routes (<node>____<pod CIDR>) out of the template"
	case RuleVNetDestroyed, RuleSubnetDestroyed:
		return "keep the node subnet in the template: a virtual network's inline subnets are all its subnets (one left out is deleted), and Complete mode deletes what the template does not declare"
	case RuleSubnetPrefix:
		return "keep the node subnet's prefixes while nodes use addresses in them; move the nodes to a new subnet first"
	case RuleAddressSpace:
		return "choose an address space that does not overlap the cluster's pod CIDRs (routekeeper ipplan checks a plan)"
	}
	return ""
}

func (w *WhatIf) next() string { return "deployment" }
