package finding

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTableColumnsFollowTheFindings(t *testing.T) {
	tests := []struct {
		name   string
		in     []Finding
		header []string
		long   int
	}{
		{"doctor: resources and one-line fixes", []Finding{
			{Severity: Error, Rule: "subnet-association", Resource: "/a/subnets/s", Message: "m", Fix: "routekeeper run"},
			{Severity: Warning, Rule: "shadowing-route", Resource: "inspect", Message: "m"},
		}, []string{"Severity", "Rule", "Resource", "Message", "Fix"}, 0},
		{"iac: evidence columns and a fix that spans lines", []Finding{
			{Severity: Error, Rule: "r", Resource: "azurerm_virtual_network.k", Message: "m", Fix: "lifecycle {\n}",
				Evidence: &Evidence{Subnet: "/s", Nodes: []string{"a"}, Reason: "RouteTableDetached"}},
		}, []string{"Severity", "Rule", "Resource", "Subnet", "Nodes", "Reason", "Message"}, 1},
		{"ipplan: no resource, plugins", []Finding{
			{Severity: Info, Rule: "nodes-not-given", Message: "m"},
			{Severity: Error, Rule: "subnet-too-small", Message: "m", Evidence: &Evidence{Plugins: []string{"azure"}}},
		}, []string{"Severity", "Rule", "Plugins", "Message"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, rows, long := Table(tt.in, nil)
			if diff := cmp.Diff(tt.header, header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			for _, r := range rows {
				if len(r) != len(header) {
					t.Errorf("row %q has %d cells, header %d", r, len(r), len(header))
				}
			}
			if len(long) != tt.long {
				t.Errorf("%d long fixes, want %d", len(long), tt.long)
			}
		})
	}
}

func TestSortKeepsOrderWithinASeverity(t *testing.T) {
	fs := []Finding{{Severity: Info, Rule: "a"}, {Severity: Error, Rule: "b"}, {Severity: Warning, Rule: "c"}, {Severity: Error, Rule: "d"}}
	Sort(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Rule)
	}
	if strings.Join(got, "") != "bdca" || Errors(fs) != 2 {
		t.Errorf("sorted %v, %d errors", got, Errors(fs))
	}
}

func TestSARIF(t *testing.T) {
	fs := []Finding{
		{Severity: Error, Rule: "r1", Resource: "addr", Message: "m", Fix: "f", Evidence: &Evidence{Nodes: []string{"n"}}},
		{Severity: Info, Rule: "r2", Message: "remark"},
	}
	log := SARIF(fs, Tool{Name: "t", Version: "v", InformationURI: "u", RuleText: func(r string) string { return "text of " + r }}, "plan.json")
	b, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID               string
						ShortDescription struct{ Text string }
					}
				}
			}
			Results []struct {
				RuleID, Level string
				Message       struct{ Text string }
				Locations     []map[string]any
				Properties    map[string]any
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Runs[0]
	if got.Version != "2.1.0" || len(r.Tool.Driver.Rules) != 2 || r.Tool.Driver.Rules[0].ShortDescription.Text != "text of r1" {
		t.Fatalf("rules: %s", b)
	}
	if r.Results[0].Level != "error" || r.Results[1].Level != "note" || r.Results[0].Message.Text != "m\nFix:\nf" ||
		len(r.Results[0].Locations) != 1 || r.Results[0].Properties["nodes"] == nil || r.Results[1].Properties != nil {
		t.Errorf("results: %s", b)
	}
}
