package iac

import (
	"fmt"
	"strings"
)

// fix is the HCL that avoids a rule's hazard, for the resource at address
// (see docs/iac.md for each with its source).
func (p *Plan) fix(rule, address string) string { return hclFix(rule, address) }

func (p *Plan) next() string { return "plan" }

func hclFix(rule, address string) string {
	typ, name, _ := strings.Cut(address, ".")
	block := func(body string) string {
		return fmt.Sprintf("resource %q %q {\n  # ...\n%s}", typ, name, body)
	}
	switch rule {
	case RuleInlineSubnet:
		return block("  lifecycle {\n    ignore_changes = [subnet]\n  }\n") +
			"\n# or declare the subnet as azurerm_subnet and its table as azurerm_subnet_route_table_association"
	case RuleSubnetTable:
		return "keep the subnet's route table routekeeper's: an azurerm_subnet_route_table_association naming routekeeper's table, or " +
			block("  lifecycle {\n    ignore_changes = [route_table_id]\n  }\n")
	case RuleAssociationRemoved, RuleAssociationReplaced:
		return "keep the association (do not remove it from the code or change what forces its replacement), and protect it:\n" +
			block("  lifecycle {\n    prevent_destroy = true\n  }\n")
	case RuleTableDestroyed, RuleTableReplaced:
		return "keep the table (a change of name, location or resource group replaces it), and protect it:\n" +
			block("  lifecycle {\n    prevent_destroy = true\n    ignore_changes  = [route, tags[\"routekeeper-cluster\"], tags[\"routekeeper-cluster-cidrs\"]]\n  }\n")
	case RuleInlineRoutes:
		return "leave routekeeper's routes out of the code: no inline route blocks (declare other routes as azurerm_route), and\n" +
			block("  lifecycle {\n    ignore_changes = [route]\n  }\n")
	case RuleRouteDestroyed:
		return "do not manage routekeeper's routes (<node>____<pod CIDR>) in code: remove them from the state with `tofu state rm " + address + "` instead of destroying them"
	case RuleVNetDestroyed, RuleSubnetDestroyed:
		return "keep the node subnet (a change that forces its replacement destroys it), and protect it:\n" +
			block("  lifecycle {\n    prevent_destroy = true\n  }\n")
	case RuleSubnetPrefix:
		return "keep the node subnet's prefixes while nodes use addresses in them; move the nodes to a new subnet first"
	case RuleAddressSpace:
		return "choose an address space that does not overlap the cluster's pod CIDRs (routekeeper ipplan checks a plan)"
	}
	return ""
}
