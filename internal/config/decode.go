package config

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// decode walks the YAML document in data against the settings table. It
// reports every unknown key (with a suggestion), every value of the wrong
// type and every value that cannot be parsed, each with its line.
func (c *Config) decode(file string, data []byte) error {
	root, err := yamlfile.Parse(data)
	if err != nil {
		return Problems{{Where: file, Reason: "not valid YAML: " + err.Error()}}
	}
	var probs Problems
	switch root.Kind {
	case yamlfile.Null: // an empty file sets nothing
	case yamlfile.Map:
		c.walk(root, "", file, filepath.Dir(file), &probs)
	default:
		probs.add(file, root.Line, "", "", "the file must be a mapping of settings (cluster:, routeTable:, ...), not a "+root.TypeName())
	}
	return probs.err()
}

func (c *Config) walk(m *yamlfile.Value, prefix, file, relDir string, probs *Problems) {
	for _, f := range m.Fields {
		path := f.Key
		if prefix != "" {
			path = prefix + "." + f.Key
		}
		v := f.Value
		if path == "mirrors" {
			c.decodeMirrors(v, file, f.Line, probs)
			continue
		}
		if s, ok := lookupSetting(path); ok {
			if v.IsNull() {
				continue // "key:" with no value leaves the setting unset
			}
			vals := yamlValues(s.Kind, v)
			before := len(*probs)
			s.assign(c, vals, origin{where: file, line: f.Line, file: true}, relDir, probs)
			if len(*probs) == before {
				o := origin{where: file, line: f.Line, file: true}
				for _, it := range vals {
					o.items = append(o.items, it.line)
				}
				c.origins[path] = o
			}
			continue
		}
		if children := sectionKeys(path); len(children) > 0 {
			identified := slices.Contains(children, "id")
			switch {
			case v.Kind == yamlfile.Null:
			case v.Kind == yamlfile.Map:
				c.walk(v, path, file, relDir, probs)
			case v.Kind == yamlfile.String && identified:
				// `routeTable: <ID>` is short for `routeTable: {id: <ID>}`,
				// as in a mirror (mirrors.go): one schema for both.
				short := &yamlfile.Value{Kind: yamlfile.Map, Line: v.Line, Fields: []yamlfile.Field{{Key: "id", Line: f.Line, Value: v}}}
				c.walk(short, path, file, relDir, probs)
			case identified:
				probs.add(file, f.Line, path, v.Render(), "must be the id alone or a mapping with the keys "+strings.Join(children, ", "))
			default:
				probs.add(file, f.Line, path, v.Render(), "must be a mapping with the keys "+strings.Join(children, ", "))
			}
			continue
		}
		keys := sectionKeys(prefix)
		if prefix == "" {
			keys = append(keys, "mirrors")
		}
		probs.add(file, f.Line, path, "", "unknown field"+yamlfile.Suggest(f.Key, keys))
	}
}

// yamlValues turns a decoded YAML value into the values of a setting of
// kind k, marking those of the wrong type.
func yamlValues(k Kind, v *yamlfile.Value) []value {
	if k.IsList() {
		switch v.Kind {
		case yamlfile.List:
			out := make([]value, 0, len(v.Items))
			for _, e := range v.Items {
				if e.Kind == yamlfile.String {
					out = append(out, value{text: e.Text, line: e.Line})
				} else {
					out = append(out, value{text: e.Render(), line: e.Line, bad: "must be a string, not a " + e.TypeName()})
				}
			}
			return out
		case yamlfile.String:
			return []value{{text: v.Text, line: v.Line}} // a single item may be written without brackets
		default:
			return []value{{text: v.Render(), line: v.Line, bad: "must be a list, not a " + v.TypeName()}}
		}
	}
	switch v.Kind {
	case yamlfile.String:
		return []value{{text: v.Text, line: v.Line}}
	case yamlfile.Number:
		if k == KindInt || k == KindDuration {
			return []value{{text: v.Text, line: v.Line}}
		}
		return []value{{text: v.Text, line: v.Line, bad: "must be text, not a number (put it in quotes)"}}
	case yamlfile.Bool:
		if k == KindBool {
			return []value{{text: v.Text, line: v.Line}}
		}
		return []value{{text: v.Text, line: v.Line, bad: "must be text, not true/false (put it in quotes)"}}
	default:
		return []value{{text: v.Render(), line: v.Line, bad: "must be a single value, not a " + v.TypeName()}}
	}
}

// sectionKeys returns the keys a mapping at path may hold, nil when path is
// not a section. The root is path "".
func sectionKeys(path string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, s := range settings {
		rest, ok := strings.CutPrefix(s.Path, path+".")
		if path == "" {
			rest, ok = s.Path, true
		}
		if !ok {
			continue
		}
		k, _, _ := strings.Cut(rest, ".")
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}
