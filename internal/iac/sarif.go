package iac

import (
	"fmt"
	"maps"
	"slices"
)

// SARIF is the report as a SARIF 2.1.0 log, for code-scanning UIs (GitHub
// code scanning, Azure DevOps): one rule per kind of hazard, one result
// per finding, located at the plan file and named by its resource
// address.
func (r *Report) SARIF(planFile, version string) map[string]any {
	rules := map[string]map[string]any{}
	var results []any
	for _, f := range r.Findings {
		if _, ok := rules[f.Rule]; !ok {
			rules[f.Rule] = map[string]any{
				"id":               f.Rule,
				"name":             f.Rule,
				"shortDescription": map[string]any{"text": ruleText[f.Rule]},
				"helpUri":          "https://github.com/routekeeper/routekeeper/blob/main/docs/iac.md",
				"help":             map[string]any{"text": f.Fix},
			}
		}
		level := "error"
		if f.Severity == SeverityWarning {
			level = "warning"
		}
		results = append(results, map[string]any{
			"ruleId":  f.Rule,
			"level":   level,
			"message": map[string]any{"text": f.Message + "\nFix:\n" + f.Fix},
			"locations": []any{map[string]any{
				"physicalLocation": map[string]any{"artifactLocation": map[string]any{"uri": planFile}},
				"logicalLocations": []any{map[string]any{"fullyQualifiedName": f.Address, "kind": "resource"}},
			}},
			"properties": map[string]any{"subnet": f.Subnet, "routeTable": f.Table, "nodes": f.Nodes, "podCIDRs": f.PodCIDRs, "reason": string(f.Reason)},
		})
	}
	var rs []any
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		rs = append(rs, rules[k])
	}
	if results == nil {
		results = []any{}
	}
	if rs == nil {
		rs = []any{}
	}
	return map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "routekeeper iac check",
				"version":        version,
				"informationUri": "https://github.com/routekeeper/routekeeper/blob/main/docs/iac.md",
				"rules":          rs,
			}},
			"results": results,
		}},
	}
}

// ruleText says what each rule finds.
var ruleText = map[string]string{
	RuleInlineSubnet:        "A virtual network's inline subnet block without route_table_id detaches the route table from a node subnet",
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

// Rules are the rule IDs with what each finds, sorted.
func Rules() []string { return slices.Sorted(maps.Keys(ruleText)) }

// RuleText says what a rule finds.
func RuleText(rule string) string {
	if t, ok := ruleText[rule]; ok {
		return t
	}
	return fmt.Sprintf("rule %s", rule)
}
