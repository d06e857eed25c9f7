package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// decode walks the YAML document in data against the settings table. It
// reports every unknown key (with a suggestion), every value of the wrong
// type and every value that cannot be parsed.
func (c *Config) decode(file string, data []byte) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Problems{{Where: file, Reason: "not valid YAML: " + cleanYAMLError(err)}}
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return Problems{{Where: file, Reason: "not valid YAML: " + err.Error()}}
	}
	var probs Problems
	switch d := doc.(type) {
	case nil: // an empty file sets nothing
	case map[string]any:
		c.walk(d, "", file, filepath.Dir(file), &probs)
	default:
		probs.add(file, "", "", "the file must be a mapping of settings (cluster:, routeTable:, ...), not a "+typeName(doc))
	}
	return probs.err()
}

func (c *Config) walk(m map[string]any, prefix, file, relDir string, probs *Problems) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		v := m[k]
		if s, ok := lookupSetting(path); ok {
			if v == nil {
				continue // "key:" with no value leaves the setting unset
			}
			before := len(*probs)
			s.assign(c, yamlValues(s.Kind, v), file, relDir, probs)
			if len(*probs) == before {
				c.origins[path] = origin{where: file, file: true}
			}
			continue
		}
		if children := sectionKeys(path); len(children) > 0 {
			switch sub := v.(type) {
			case nil:
			case map[string]any:
				c.walk(sub, path, file, relDir, probs)
			default:
				probs.add(file, path, render(v), "must be a mapping with the keys "+strings.Join(children, ", "))
			}
			continue
		}
		probs.add(file, path, "", "unknown field"+suggest(k, sectionKeys(prefix)))
	}
}

// yamlValues turns a decoded YAML value into the values of a setting of
// kind k, marking those of the wrong type.
func yamlValues(k Kind, v any) []value {
	if k.IsList() {
		switch l := v.(type) {
		case []any:
			out := make([]value, 0, len(l))
			for _, e := range l {
				if s, ok := e.(string); ok {
					out = append(out, value{text: s})
				} else {
					out = append(out, value{text: render(e), bad: "must be a string, not a " + typeName(e)})
				}
			}
			return out
		case string:
			return []value{{text: l}} // a single item may be written without brackets
		default:
			return []value{{text: render(v), bad: "must be a list, not a " + typeName(v)}}
		}
	}
	switch x := v.(type) {
	case string:
		return []value{{text: x}}
	case json.Number:
		if k == KindInt || k == KindDuration {
			return []value{{text: x.String()}}
		}
		return []value{{text: x.String(), bad: "must be text, not a number (put it in quotes)"}}
	case bool:
		if k == KindBool {
			return []value{{text: fmt.Sprint(x)}}
		}
		return []value{{text: fmt.Sprint(x), bad: "must be text, not true/false (put it in quotes)"}}
	default:
		return []value{{text: render(v), bad: "must be a single value, not a " + typeName(v)}}
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

// suggest returns " (did you mean X?)" for a near miss, else the valid keys.
func suggest(key string, valid []string) string {
	best, bestDist := "", 3
	for _, v := range valid {
		if strings.EqualFold(v, key) {
			return fmt.Sprintf(" (did you mean %s?)", v)
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(v)); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(valid) == 0 {
		return ""
	}
	return " (valid here: " + strings.Join(valid, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// render prints a decoded YAML value compactly, for messages.
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// cleanYAMLError drops the decoder's "error converting YAML to JSON:"
// prefixes, keeping the line number and the reason.
func cleanYAMLError(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "yaml: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	lines := strings.Fields(strings.ReplaceAll(msg, "\n", " \n "))
	return strings.TrimSuffix(strings.Join(lines, " "), ":")
}
