package finding

import (
	"maps"
	"slices"
)

// Tool names what produced a SARIF log.
type Tool struct {
	Name    string // e.g. "routekeeper iac check"
	Version string
	// InformationURI is the tool's documentation; rules link to it.
	InformationURI string
	// RuleText says what a rule finds; nil or "" leaves the rule's
	// description out.
	RuleText func(rule string) string
}

// SARIF is findings as a SARIF 2.1.0 log, for code-scanning UIs (GitHub
// code scanning, Azure DevOps): one rule per rule ID, one result per
// finding, located at artifact (the file that was checked: a plan, a
// what-if result, a configuration; "" for none) and named by its
// resource.
func SARIF(fs []Finding, tool Tool, artifact string) map[string]any {
	rules := map[string]map[string]any{}
	results := []any{}
	for _, f := range fs {
		if _, ok := rules[f.Rule]; !ok {
			r := map[string]any{"id": f.Rule, "name": f.Rule, "helpUri": tool.InformationURI}
			if tool.RuleText != nil {
				if t := tool.RuleText(f.Rule); t != "" {
					r["shortDescription"] = map[string]any{"text": t}
				}
			}
			if f.Fix != "" {
				r["help"] = map[string]any{"text": f.Fix}
			}
			rules[f.Rule] = r
		}
		text := f.Message
		if f.Fix != "" {
			text += "\nFix:\n" + f.Fix
		}
		res := map[string]any{
			"ruleId":  f.Rule,
			"level":   sarifLevel(f.Severity),
			"message": map[string]any{"text": text},
		}
		loc := map[string]any{}
		if artifact != "" {
			loc["physicalLocation"] = map[string]any{"artifactLocation": map[string]any{"uri": artifact}}
		}
		if f.Resource != "" {
			loc["logicalLocations"] = []any{map[string]any{"fullyQualifiedName": f.Resource, "kind": "resource"}}
		}
		if len(loc) > 0 {
			res["locations"] = []any{loc}
		}
		if f.Evidence != nil {
			res["properties"] = f.Evidence
		}
		results = append(results, res)
	}
	rs := []any{}
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		rs = append(rs, rules[k])
	}
	return map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           tool.Name,
				"version":        tool.Version,
				"informationUri": tool.InformationURI,
				"rules":          rs,
			}},
			"results": results,
		}},
	}
}

// sarifLevel is SARIF's word for a severity.
func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}
