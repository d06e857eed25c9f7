package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// Mirror is another route table that routekeeper keeps the cluster's pod
// routes in, beside that table's own routes, for subnets that need routes
// of their own (an Application Gateway subnet cannot take the node
// subnet's 0.0.0.0/0 to a firewall). It is set in the config file only
// (`mirrors:`, a list): there is no flag or environment variable for it.
type Mirror struct {
	// RouteTable is the mirror table's ARM ID.
	RouteTable string
	// Subnets must stay associated with the mirror table.
	Subnets []string
	// Association is the mirror's own guard policy (default enforce).
	Association MirrorAssociation
	// Create allows creating the mirror table (tagged, filled, associated)
	// when it is missing.
	Create bool
	// Location of a created mirror table; "" means the main table's
	// location, else the first mirror subnet's virtual network's.
	Location string

	// lines are the lines of the item and of its fields, for problems;
	// at is where routeTable's ID, create and location were written
	// ("routeTable" or "routeTable.id", "create" or "routeTable.create"...).
	line  int
	lines map[string]int
	at    map[string]string
}

// field is the key a setting of the mirror was written as: name (one of
// routeTable, create, location) unless the routeTable mapping set it.
func (m Mirror) field(name string) string {
	if k := m.at[name]; k != "" {
		return k
	}
	return name
}

// MirrorAssociation is a mirror's association guard policy.
type MirrorAssociation struct {
	Policy  AssociationPolicy
	Restore bool
}

// mirrorKeys are the keys of a mirrors item, in documentation order.
var (
	mirrorKeys            = []string{"routeTable", "subnets", "association", "create", "location"}
	mirrorAssociationKeys = []string{"policy", "restore"}
	// mirrorTableKeys are the keys of the main `routeTable:` block that a
	// mirror's `routeTable:` mapping takes; notPerMirror says why it
	// takes none of the others.
	mirrorTableKeys = []string{"id", "create", "location"}
	notPerMirror    = map[string]string{
		"routeLimit": "not set per mirror: every mirror takes routeTable.routeLimit of the main table",
		"adopt":      "not set per mirror: every mirror takes routeTable.adopt of the main table",
		"claim":      "not set per mirror: a mirror is always claimed (its first write tags it as the cluster's)",
	}
)

// decodeMirrors reads the `mirrors:` list (v) written at line.
func (c *Config) decodeMirrors(v *yamlfile.Value, file string, line int, probs *Problems) {
	switch v.Kind {
	case yamlfile.Null:
		return
	case yamlfile.List:
	default:
		probs.add(file, line, "mirrors", v.Render(), "must be a list of route tables (each with routeTable:, subnets:, association:, create:), not a "+v.TypeName())
		return
	}
	before := len(*probs)
	var out []Mirror
	for i, it := range v.Items {
		field := fmt.Sprintf("mirrors[%d]", i)
		if it.Kind != yamlfile.Map {
			probs.add(file, it.Line, field, it.Render(), "must be a mapping with the keys "+strings.Join(mirrorKeys, ", ")+", not a "+it.TypeName())
			continue
		}
		m := Mirror{line: it.Line, lines: map[string]int{}, at: map[string]string{}}
		for _, f := range it.Fields {
			fv, path := f.Value, field+"."+f.Key
			m.lines[f.Key] = f.Line
			if fv.IsNull() {
				continue
			}
			switch f.Key {
			case "routeTable":
				m.decodeTable(fv, file, path, probs)
			case "location":
				m.setOnce("location", "location", fv, file, field, probs)
				m.Location = scalarString(fv, file, path, probs)
			case "create":
				m.setOnce("create", "create", fv, file, field, probs)
				m.Create = scalarBool(fv, file, path, probs)
			case "subnets":
				for _, val := range yamlValues(KindStrings, fv) {
					if val.bad != "" {
						probs.add(file, val.line, path, val.text, val.bad)
						continue
					}
					m.Subnets = append(m.Subnets, strings.TrimSpace(val.text))
				}
			case "association":
				if fv.Kind != yamlfile.Map {
					probs.add(file, f.Line, path, fv.Render(), "must be a mapping with the keys "+strings.Join(mirrorAssociationKeys, ", "))
					continue
				}
				for _, af := range fv.Fields {
					apath := path + "." + af.Key
					m.lines["association."+af.Key] = af.Line
					if af.Value.IsNull() {
						continue
					}
					switch af.Key {
					case "policy":
						m.Association.Policy = AssociationPolicy(strings.ToLower(scalarString(af.Value, file, apath, probs)))
					case "restore":
						m.Association.Restore = scalarBool(af.Value, file, apath, probs)
					default:
						probs.add(file, af.Line, apath, "", "unknown field"+yamlfile.Suggest(af.Key, mirrorAssociationKeys))
					}
				}
			default:
				probs.add(file, f.Line, path, "", "unknown field"+yamlfile.Suggest(f.Key, mirrorKeys))
			}
		}
		out = append(out, m)
	}
	if len(*probs) == before {
		c.Mirrors = out
		c.origins["mirrors"] = origin{where: file, line: line, file: true}
	}
}

// decodeTable reads a mirror's `routeTable:` (v, at path): the table's
// ARM ID, or the mapping of the main `routeTable:` block with the keys a
// mirror takes (id, create, location).
func (m *Mirror) decodeTable(v *yamlfile.Value, file, path string, probs *Problems) {
	switch v.Kind {
	case yamlfile.String:
		m.RouteTable = strings.TrimSpace(v.Text)
		return
	case yamlfile.Map:
	default:
		probs.add(file, v.Line, path, v.Render(), "must be the route table's ARM ID or a mapping with the keys "+strings.Join(mirrorTableKeys, ", ")+", not a "+v.TypeName())
		return
	}
	m.at["routeTable"] = "routeTable.id" // also when id is missing: "routeTable.id: required"
	item := strings.TrimSuffix(path, ".routeTable")
	for _, f := range v.Fields {
		key, fv, fpath := "routeTable."+f.Key, f.Value, path+"."+f.Key
		m.lines[key] = f.Line
		if fv.IsNull() {
			continue
		}
		switch f.Key {
		case "id":
			m.RouteTable = scalarString(fv, file, fpath, probs)
		case "create":
			m.setOnce("create", key, fv, file, item, probs)
			m.Create = scalarBool(fv, file, fpath, probs)
		case "location":
			m.setOnce("location", key, fv, file, item, probs)
			m.Location = scalarString(fv, file, fpath, probs)
		default:
			why, ok := notPerMirror[f.Key]
			if !ok {
				why = "unknown field" + yamlfile.Suggest(f.Key, mirrorTableKeys)
			}
			probs.add(file, f.Line, fpath, "", why)
		}
	}
}

// setOnce records that the mirror's setting name (create or location) is
// written as key (under item, "mirrors[i]"); a second spelling of the same
// setting in one item is a problem, since only one of them could win.
func (m *Mirror) setOnce(name, key string, v *yamlfile.Value, file, item string, probs *Problems) {
	if first, ok := m.at[name]; ok {
		probs.add(file, v.Line, item+"."+key, v.Render(), "set twice: also as "+item+"."+first+"; keep one")
		return
	}
	m.at[name] = key
}

func scalarString(v *yamlfile.Value, file, path string, probs *Problems) string {
	if v.Kind != yamlfile.String {
		probs.add(file, v.Line, path, v.Render(), "must be text, not a "+v.TypeName())
		return ""
	}
	return strings.TrimSpace(v.Text)
}

func scalarBool(v *yamlfile.Value, file, path string, probs *Problems) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v.Text))
	if (v.Kind != yamlfile.Bool && v.Kind != yamlfile.String) || err != nil {
		probs.add(file, v.Line, path, v.Render(), "not true or false")
		return false
	}
	return b
}

// fillMirrorDefaults gives each mirror the default policy.
func (c *Config) fillMirrorDefaults() {
	for i := range c.Mirrors {
		if c.Mirrors[i].Association.Policy == "" {
			c.Mirrors[i].Association.Policy = PolicyEnforce
		}
	}
}

// badMirror records a problem with field (for example "routeTable" or
// "subnets[1]") of mirror i.
func (v *validator) badMirror(i int, field, key string, val any, why string) {
	m := v.c.Mirrors[i]
	where, line := v.c.where("mirrors", -1)
	outer, _, _ := strings.Cut(key, ".") // routeTable.id missing: routeTable's line
	switch {
	case m.lines[key] > 0:
		line = m.lines[key]
	case m.lines[outer] > 0:
		line = m.lines[outer]
	case m.line > 0:
		line = m.line
	}
	v.probs.add(where, line, fmt.Sprintf("mirrors[%d].%s", i, field), formatValue(val), why)
}

// mirrors checks the mirror tables: valid IDs, none the main table or
// another mirror, subnets of their own (a subnet has one route table, so
// it cannot be guarded for two), a known policy.
func (v *validator) mirrors() {
	c := v.c
	tables := map[string]string{armid.Key(c.RouteTable.ID): "routeTable.id"}
	subnets := map[string]string{}
	for j, s := range c.Subnets {
		subnets[armid.Key(s)] = fmt.Sprintf("subnets[%d]", j)
	}
	for i, m := range c.Mirrors {
		var table *arm.ResourceID
		tableKey := m.field("routeTable")
		switch {
		case m.RouteTable == "":
			v.badMirror(i, tableKey, tableKey, m.RouteTable, "required: the mirror route table's ARM ID, "+routeTableIDExample)
		default:
			r, why := armID(m.RouteTable, "Microsoft.Network/routeTables", routeTableIDExample)
			if why != "" {
				v.badMirror(i, tableKey, tableKey, m.RouteTable, why)
				break
			}
			table = r
			key := armid.Key(m.RouteTable)
			if other, dup := tables[key]; dup && c.RouteTable.ID != "" {
				v.badMirror(i, tableKey, tableKey, m.RouteTable, "the same route table as "+other+": a mirror is another table")
				break
			}
			tables[key] = fmt.Sprintf("mirrors[%d].%s", i, tableKey)
		}
		for j, s := range m.Subnets {
			field := fmt.Sprintf("subnets[%d]", j)
			r, why := armID(s, "Microsoft.Network/virtualNetworks/subnets", subnetIDExample)
			if why != "" {
				v.badMirror(i, field, "subnets", s, why)
				continue
			}
			key := armid.Key(s)
			if other, dup := subnets[key]; dup {
				v.badMirror(i, field, "subnets", s, "already listed as "+other+": a subnet has one route table, so only one table can be guarded on it")
				continue
			}
			subnets[key] = fmt.Sprintf("mirrors[%d].subnets[%d]", i, j)
			if table != nil && !strings.EqualFold(r.SubscriptionID, table.SubscriptionID) {
				v.badMirror(i, field, "subnets", s, fmt.Sprintf("in subscription %s, but the mirror route table is in %s: Azure associates a route table only with subnets of its own subscription", r.SubscriptionID, table.SubscriptionID))
			}
		}
		switch m.Association.Policy {
		case PolicyEnforce, PolicyFollow, PolicyReport:
		default:
			v.badMirror(i, "association.policy", "association.policy", string(m.Association.Policy), "must be one of enforce, follow, report")
		}
		if m.Create && len(m.Subnets) == 0 {
			k := m.field("create")
			v.badMirror(i, k, k, m.Create, "needs at least one subnet in mirrors["+strconv.Itoa(i)+"].subnets: a created table must be associated, never left detached")
		}
		if m.Location != "" && !location.MatchString(m.Location) {
			k := m.field("location")
			v.badMirror(i, k, k, m.Location, "not an Azure location name (for example eastus)")
		}
	}
}

// mirrorsYAML is the `mirrors:` block of the dump ("" when there is none).
func (c *Config) mirrorsYAML() string {
	if len(c.Mirrors) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("mirrors:\n")
	for _, m := range c.Mirrors {
		b.WriteString("  - routeTable: " + yamlString(m.RouteTable) + "\n")
		if len(m.Subnets) == 0 {
			b.WriteString("    subnets: []\n")
		} else {
			b.WriteString("    subnets:\n")
			for _, s := range m.Subnets {
				b.WriteString("      - " + yamlString(s) + "\n")
			}
		}
		b.WriteString("    association:\n")
		b.WriteString("      policy: " + yamlString(string(m.Association.Policy)) + "\n")
		b.WriteString("      restore: " + strconv.FormatBool(m.Association.Restore) + "\n")
		b.WriteString("    create: " + strconv.FormatBool(m.Create) + "\n")
		if m.Location != "" {
			b.WriteString("    location: " + yamlString(m.Location) + "\n")
		}
	}
	return b.String()
}

// mirrorJSON is a mirror in the file's layout, for -o json and -o yaml.
type mirrorJSON struct {
	RouteTable  string   `json:"routeTable"`
	Subnets     []string `json:"subnets"`
	Association struct {
		Policy  string `json:"policy"`
		Restore bool   `json:"restore"`
	} `json:"association"`
	Create   bool   `json:"create"`
	Location string `json:"location,omitempty"`
}

// appendMirrorsJSON adds "mirrors" to the JSON object in b (which ends
// with '}'), when there are mirrors.
func (c *Config) appendMirrorsJSON(b []byte) ([]byte, error) {
	if len(c.Mirrors) == 0 || !bytes.HasSuffix(b, []byte("}")) {
		return b, nil
	}
	list := make([]mirrorJSON, 0, len(c.Mirrors))
	for _, m := range c.Mirrors {
		j := mirrorJSON{RouteTable: m.RouteTable, Subnets: append([]string{}, m.Subnets...), Create: m.Create, Location: m.Location}
		j.Association.Policy, j.Association.Restore = string(m.Association.Policy), m.Association.Restore
		list = append(list, j)
	}
	v, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], []byte(`,"mirrors":`)...)
	out = append(out, v...)
	return append(out, '}'), nil
}
