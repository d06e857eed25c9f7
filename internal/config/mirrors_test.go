package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	appgwTable  = "/subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/routeTables/appgw"
	appgwSubnet = "/subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/appgw"
	hubTable    = "/subscriptions/" + sub0 + "/resourceGroups/rg/providers/Microsoft.Network/routeTables/hub"
)

func TestMirrorsDecode(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "c.yaml", base+`subnets: [`+subnet0+`]
mirrors:
  - routeTable: `+appgwTable+`
    subnets: [`+appgwSubnet+`]
    association:
      policy: Report
      restore: true
    create: true
    location: westeurope
  - routeTable: `+hubTable+`
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid mirrors refused:\n%v", err)
	}
	want := []Mirror{
		{RouteTable: appgwTable, Subnets: []string{appgwSubnet}, Association: MirrorAssociation{Policy: PolicyReport, Restore: true}, Create: true, Location: "westeurope"},
		{RouteTable: hubTable, Association: MirrorAssociation{Policy: PolicyEnforce}},
	}
	if diff := cmp.Diff(want, c.Mirrors, cmpopts.IgnoreUnexported(Mirror{})); diff != "" {
		t.Errorf("mirrors (-want +got):\n%s", diff)
	}

	// The dump reads back to the same mirrors, and JSON carries them.
	back := writeFile(t, dir, "dump.yaml", string(c.Dump()))
	c2, err := Load(back)
	if err != nil {
		t.Fatalf("reading the dump back: %v\n%s", err, c.Dump())
	}
	if diff := cmp.Diff(c.Mirrors, c2.Mirrors, cmpopts.IgnoreUnexported(Mirror{})); diff != "" {
		t.Errorf("mirrors after a dump round trip (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Mirrors []struct {
			RouteTable  string
			Association struct{ Policy string }
		}
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("JSON of the config: %v\n%s", err, b)
	}
	if len(j.Mirrors) != 2 || j.Mirrors[0].RouteTable != appgwTable || j.Mirrors[0].Association.Policy != "report" {
		t.Errorf("JSON mirrors = %+v", j.Mirrors)
	}
}

// TestMirrorTableForms: a mirror's routeTable is the table's ARM ID, or
// the mapping of the main routeTable: block (id, create, location); both
// forms, and the older create:/location: beside routeTable:, are one mirror.
func TestMirrorTableForms(t *testing.T) {
	want := Mirror{RouteTable: appgwTable, Subnets: []string{appgwSubnet}, Association: MirrorAssociation{Policy: PolicyEnforce}, Create: true, Location: "westeurope"}
	cases := []struct{ name, item string }{
		{"ID", "  - routeTable: " + appgwTable + "\n    create: true\n    location: westeurope\n"},
		{"mapping", "  - routeTable:\n      id: " + appgwTable + "\n      create: true\n      location: westeurope\n"},
		{"flow mapping", "  - routeTable: {id: " + appgwTable + ", create: true, location: westeurope}\n"},
		{"mapping and item keys", "  - routeTable: {id: " + appgwTable + ", create: true}\n    location: westeurope\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.yaml", base+"mirrors:\n"+tc.item+"    subnets: ["+appgwSubnet+"]\n")
			c, err := Load(p)
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				t.Fatalf("refused:\n%v", err)
			}
			if diff := cmp.Diff([]Mirror{want}, c.Mirrors, cmpopts.IgnoreUnexported(Mirror{})); diff != "" {
				t.Errorf("mirrors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRouteTableShortForm: the main routeTable: takes the table's ID alone
// too, as a mirror's does (one schema for both).
func TestRouteTableShortForm(t *testing.T) {
	cases := []struct {
		name, yaml string
		problem    string // "" when valid
	}{
		{"ID", "routeTable: " + tableID + "\n", ""},
		{"mapping", "routeTable:\n  id: " + tableID + "\n", ""},
		{"bad ID", "routeTable: pods/extra/x\n", `c.yaml:4: routeTable.id: "pods/extra/x": `},
		{"list", "routeTable: [" + tableID + "]\n", `c.yaml:4: routeTable: `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.yaml", "\ncluster: {name: test, clusterCIDRs: [10.244.0.0/16]}\n\n"+tc.yaml)
			c, err := Load(p)
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.problem == "" && err != nil:
				t.Fatalf("refused:\n%v", err)
			case tc.problem == "" && c.RouteTable.ID != tableID:
				t.Errorf("routeTable.id = %q, want %q", c.RouteTable.ID, tableID)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("problems:\n%v\nwant one containing %q", err, tc.problem)
			}
		})
	}
}

// TestMirrorsProblems: every bad mirror setting is reported with the file,
// the line, the field (mirrors[i]...) and the value.
func TestMirrorsProblems(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string // substrings of the problems, in order
	}{
		{"not a list", "mirrors: " + appgwTable + "\n", []string{`c.yaml:7: mirrors: "` + appgwTable + `": must be a list`}},
		{"item not a mapping", "mirrors:\n  - " + appgwTable + "\n", []string{`c.yaml:8: mirrors[0]: "` + appgwTable + `": must be a mapping`}},
		{"unknown key", "mirrors:\n  - routeTable: " + appgwTable + "\n    subnet: [" + appgwSubnet + "]\n",
			[]string{`c.yaml:9: mirrors[0].subnet: unknown field (did you mean subnets?)`}},
		{"unknown association key", "mirrors:\n  - routeTable: " + appgwTable + "\n    association: {polcy: report}\n",
			[]string{`mirrors[0].association.polcy: unknown field (did you mean policy?)`}},
		{"create not a bool", "mirrors:\n  - routeTable: " + appgwTable + "\n    create: maybe\n", []string{`c.yaml:9: mirrors[0].create: "maybe": not true or false`}},
		{"missing table", "mirrors:\n  - subnets: [" + appgwSubnet + "]\n", []string{`c.yaml:8: mirrors[0].routeTable: "": required`}},
		{"bad table ID", "mirrors:\n  - routeTable: appgw\n", []string{`c.yaml:8: mirrors[0].routeTable: "appgw": not an ARM resource ID`}},
		{"subnet ID as table", "mirrors:\n  - routeTable: " + appgwSubnet + "\n", []string{`mirrors[0].routeTable: "` + appgwSubnet + `": an ARM ID of a Microsoft.Network/routeTables`}},
		{"the main table", "mirrors:\n  - routeTable: " + tableID + "\n", []string{`mirrors[0].routeTable: "` + tableID + `": the same route table as routeTable.id`}},
		{"twice the same mirror", "mirrors:\n  - routeTable: " + appgwTable + "\n  - routeTable: " + strings.ToUpper(appgwTable[:20]) + appgwTable[20:] + "\n",
			[]string{`c.yaml:9: mirrors[1].routeTable: `, `the same route table as mirrors[0].routeTable`}},
		{"node subnet", "subnets: [" + subnet0 + "]\nmirrors:\n  - routeTable: " + appgwTable + "\n    subnets: [" + subnet0 + "]\n",
			[]string{`c.yaml:10: mirrors[0].subnets[0]: "` + subnet0 + `": already listed as subnets[0]`}},
		{"subnet of two mirrors", "mirrors:\n  - routeTable: " + appgwTable + "\n    subnets: [" + appgwSubnet + "]\n  - routeTable: " + hubTable + "\n    subnets: [" + appgwSubnet + "]\n",
			[]string{`mirrors[1].subnets[0]: "` + appgwSubnet + `": already listed as mirrors[0].subnets[0]`}},
		{"bad policy", "mirrors:\n  - routeTable: " + appgwTable + "\n    association: {policy: adopt}\n", []string{`c.yaml:9: mirrors[0].association.policy: "adopt": must be one of enforce, follow, report`}},
		{"create without subnets", "mirrors:\n  - routeTable: " + appgwTable + "\n    create: true\n", []string{`mirrors[0].create: true: needs at least one subnet in mirrors[0].subnets`}},
		{"other subscription", "mirrors:\n  - routeTable: " + appgwTable + "\n    subnets: [" + strings.Replace(appgwSubnet, sub0, "11111111-1111-1111-1111-111111111111", 1) + "]\n",
			[]string{`mirrors[0].subnets[0]: `, `Azure associates a route table only with subnets of its own subscription`}},
		{"typo at the root", "mirror:\n  - routeTable: " + appgwTable + "\n", []string{`mirror: unknown field (did you mean mirrors?)`}},
		// The mapping form of routeTable: each bad value names its own key and line.
		{"bad table ID in the mapping", "mirrors:\n  - routeTable:\n      id: appgw\n", []string{`c.yaml:9: mirrors[0].routeTable.id: "appgw": not an ARM resource ID`}},
		{"mapping without an ID", "mirrors:\n  - routeTable: {create: false}\n", []string{`c.yaml:8: mirrors[0].routeTable.id: "": required`}},
		{"create not a bool in the mapping", "mirrors:\n  - routeTable:\n      id: " + appgwTable + "\n      create: maybe\n",
			[]string{`c.yaml:10: mirrors[0].routeTable.create: "maybe": not true or false`}},
		{"bad location in the mapping", "mirrors:\n  - routeTable:\n      id: " + appgwTable + "\n      location: West Europe!\n",
			[]string{`c.yaml:10: mirrors[0].routeTable.location: "West Europe!": not an Azure location name`}},
		{"create without subnets in the mapping", "mirrors:\n  - routeTable: {id: " + appgwTable + ", create: true}\n",
			[]string{`c.yaml:8: mirrors[0].routeTable.create: true: needs at least one subnet in mirrors[0].subnets`}},
		{"the main table in the mapping", "mirrors:\n  - routeTable: {id: " + tableID + "}\n", []string{`mirrors[0].routeTable.id: "` + tableID + `": the same route table as routeTable.id`}},
		{"unknown key in the mapping", "mirrors:\n  - routeTable: {ID: " + appgwTable + "}\n", []string{`c.yaml:8: mirrors[0].routeTable.ID: unknown field (did you mean id?)`}},
		{"main-table key in the mapping", "mirrors:\n  - routeTable: {id: " + appgwTable + ", routeLimit: 100}\n",
			[]string{`mirrors[0].routeTable.routeLimit: not set per mirror: every mirror takes routeTable.routeLimit of the main table`}},
		{"create twice", "mirrors:\n  - routeTable: {id: " + appgwTable + ", create: true}\n    subnets: [" + appgwSubnet + "]\n    create: false\n",
			[]string{`c.yaml:10: mirrors[0].create: false: set twice: also as mirrors[0].routeTable.create; keep one`}},
		{"routeTable a list", "mirrors:\n  - routeTable: [" + appgwTable + "]\n", []string{`c.yaml:8: mirrors[0].routeTable: `, `must be the route table's ARM ID or a mapping with the keys id, create, location, not a list`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.yaml", base+tc.yaml)
			c, err := Load(p)
			if err == nil {
				err = c.Validate()
			}
			if err == nil {
				t.Fatal("no problem reported")
			}
			got := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("problems:\n%s\nwant one containing %q", got, w)
				}
			}
		})
	}
}
