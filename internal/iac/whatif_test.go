package iac

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/finding"
)

const (
	kthwVNet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet"
)

func loadWhatIf(t *testing.T, name string) *WhatIf {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "whatif", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := c.(*WhatIf)
	if !ok {
		t.Fatalf("Parse(%s) = %T, want a what-if", name, c)
	}
	return w
}

// The what-ifs recorded from the real az runs (test/e2e/armaz), checked
// from the what-if alone: each hazard is flagged with the ARM resource,
// the subnet or table, the nodes and the ARM JSON that avoids it; each fix
// is clear.
func TestRecordedWhatIfs(t *testing.T) {
	type want struct {
		rule, address, subnet string
		nodes                 int
		fix                   string
	}
	for _, tc := range []struct {
		whatIf string
		want   []want
	}{
		{"detach-inline-subnet", []want{{RuleInlineSubnet, kthwVNet, kthwSubnet, 2, "routeTableId"}}},
		{"fix-route-table-parameter", nil},
		{"fix-nested-reference", nil},
		{"inline-routes", []want{{RuleInlineRoutes, kthwTable, "", 2, "Microsoft.Network/routeTables/routes"}}},
		{"fix-route-child-resource", nil},
		{"complete-mode", []want{{RuleInlineSubnet, kthwVNet, kthwSubnet, 2, "routeTableId"}, {RuleTableDestroyed, kthwTable, "", 0, "Incremental mode"}}},
	} {
		t.Run(tc.whatIf, func(t *testing.T) {
			rep, err := Check(context.Background(), loadWhatIf(t, tc.whatIf), kthwInput())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != len(tc.want) {
				t.Fatalf("%d findings, want %d: %+v", len(rep.Findings), len(tc.want), rep.Findings)
			}
			for i, w := range tc.want {
				f := rep.Findings[i]
				if f.Rule != w.rule || !strings.EqualFold(f.Resource, w.address) || !strings.EqualFold(f.Evidence.Subnet, w.subnet) ||
					len(f.Evidence.Nodes) != w.nodes || !strings.Contains(f.Fix, w.fix) || f.Severity != finding.Error {
					t.Errorf("finding %d: %+v\nwant rule %s on %s, subnet %q, %d nodes, fix with %q", i, f, w.rule, w.address, w.subnet, w.nodes, w.fix)
				}
			}
		})
	}
}

// mutateWhatIf derives a what-if from a recorded one.
func mutateWhatIf(t *testing.T, name string, f func(w *WhatIf)) *WhatIf {
	t.Helper()
	w := loadWhatIf(t, name)
	f(w)
	return w
}

func changeOf(t *testing.T, w *WhatIf, id string) *WhatIfChange {
	t.Helper()
	for i := range w.Changes {
		if strings.EqualFold(w.Changes[i].ResourceID, id) {
			return &w.Changes[i]
		}
	}
	t.Fatalf("no change of %s", id)
	return nil
}

func firstSubnet(t *testing.T, c *WhatIfChange) map[string]any {
	t.Helper()
	return props(list(props(c.After), "subnets")[0].(map[string]any))
}

// What what-if could not evaluate is unknown, not a removal; the other
// kinds of change are judged as ARM applies them.
func TestDerivedWhatIfs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		whatIf string
		mutate func(t *testing.T, w *WhatIf)
		rule   string
	}{
		{"a routeTable left as reference() is unknown", "detach-inline-subnet", func(t *testing.T, w *WhatIf) {
			firstSubnet(t, changeOf(t, w, kthwVNet))["routeTable"] = "[reference('current-subnet').outputs.routeTable.value]"
		}, ""},
		{"a routeTable id left as an expression is unknown", "detach-inline-subnet", func(t *testing.T, w *WhatIf) {
			firstSubnet(t, changeOf(t, w, kthwVNet))["routeTable"] = map[string]any{"id": "[parameters('routeTableId')]"}
		}, ""},
		{"subnets left as an expression are unknown", "detach-inline-subnet", func(t *testing.T, w *WhatIf) {
			props(changeOf(t, w, kthwVNet).After)["subnets"] = "[variables('subnets')]"
		}, ""},
		{"the subnet left out of the inline subnets is deleted", "fix-route-table-parameter", func(t *testing.T, w *WhatIf) {
			c := changeOf(t, w, kthwVNet)
			c.ChangeType = whatIfModify
			props(c.After)["subnets"] = []any{}
		}, RuleInlineSubnet},
		{"the virtual network deleted", "detach-inline-subnet", func(t *testing.T, w *WhatIf) {
			c := changeOf(t, w, kthwVNet)
			c.ChangeType, c.After = whatIfDelete, nil
		}, RuleVNetDestroyed},
		{"the node subnet moved away from its nodes", "fix-route-table-parameter", func(t *testing.T, w *WhatIf) {
			c := changeOf(t, w, kthwVNet)
			c.ChangeType = whatIfModify
			firstSubnet(t, c)["addressPrefix"] = "10.240.9.0/24"
		}, RuleSubnetPrefix},
		{"Ignore changes nothing", "detach-inline-subnet", func(t *testing.T, w *WhatIf) {
			changeOf(t, w, kthwVNet).ChangeType = whatIfIgnore
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mutateWhatIf(t, tc.whatIf, func(w *WhatIf) { tc.mutate(t, w) })
			rep, err := Check(context.Background(), w, kthwInput())
			if err != nil {
				t.Fatal(err)
			}
			if tc.rule == "" {
				if len(rep.Findings) != 0 {
					t.Errorf("findings: %+v", rep.Findings)
				}
				return
			}
			if len(rep.Findings) == 0 || rep.Findings[0].Rule != tc.rule || rep.Findings[0].Fix == "" {
				t.Errorf("findings %+v; want %s with a fix", rep.Findings, tc.rule)
			}
		})
	}
}

// The REST API's and PowerShell's forms of the same result are read as
// az's; a failed what-if and foreign JSON are errors that say what they are.
func TestWhatIfForms(t *testing.T) {
	rest := `{"status": "Succeeded", "properties": {"changes": [{"resourceId": "` + kthwVNet + `", "changeType": "Modify",
	  "before": {"properties": {"subnets": [{"name": "kubernetes-subnet", "properties": {"addressPrefix": "10.240.0.0/24", "routeTable": {"id": "` + kthwTable + `"}}}]}},
	  "after": {"properties": {"subnets": [{"name": "kubernetes-subnet", "properties": {"addressPrefix": "10.240.0.0/24"}}]}}}]}}`
	powershell := `{"Status": "Succeeded", "Changes": [{"ResourceId": "` + kthwVNet + `", "ChangeType": 5,
	  "Before": {"properties": {"subnets": [{"name": "kubernetes-subnet", "properties": {"addressPrefix": "10.240.0.0/24", "routeTable": {"id": "` + kthwTable + `"}}}]}},
	  "After": {"properties": {"subnets": [{"name": "kubernetes-subnet", "properties": {"addressPrefix": "10.240.0.0/24"}}]}}}]}`
	for name, in := range map[string]string{"REST API": rest, "PowerShell": powershell} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(context.Background(), c, kthwInput())
			if err != nil || len(rep.Findings) != 1 || rep.Findings[0].Rule != RuleInlineSubnet {
				t.Errorf("Check = %+v, %v; want one %s", rep, err, RuleInlineSubnet)
			}
		})
	}
	for name, in := range map[string]string{
		"a failed what-if":       `{"status": "Failed", "error": {"code": "InvalidTemplate", "message": "bad"}, "changes": []}`,
		"no change type":         `{"changes": [{"resourceId": "` + kthwVNet + `"}]}`,
		"an unknown number":      `{"changes": [{"resourceId": "` + kthwVNet + `", "changeType": 9}]}`,
		"a change not an object": `{"changes": [1]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); !errors.Is(err, ErrNotAWhatIf) {
				t.Errorf("Parse = %v, want ErrNotAWhatIf", err)
			}
		})
	}
	for name, in := range map[string]string{"foreign JSON": `{"foo": 1}`, "not JSON": `changes`, "a list": `[]`} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			if !errors.Is(err, ErrNotAPlan) {
				t.Errorf("Parse = %v, want ErrNotAPlan", err)
			}
			if name == "foreign JSON" && !strings.Contains(err.Error(), "what-if") {
				t.Errorf("the error does not say a what-if is read too: %v", err)
			}
		})
	}
}
