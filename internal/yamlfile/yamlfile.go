// Package yamlfile reads routekeeper's hand-written input files (the
// configuration and the node inventory) into a small tree that remembers
// the line of every value, so that a problem can point at it, and keeps
// scalars as they were written. It follows YAML 1.2: `no`, `on` or `n` are
// text, not booleans, so a node called "n" stays "n". Duplicate keys are an
// error, as are documents after the first.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Kind is the type of a value.
type Kind int

// The kinds of values.
const (
	Null Kind = iota
	String
	Number
	Bool
	List
	Map
)

// Value is a decoded YAML value.
type Value struct {
	Kind Kind
	// Line is where the value starts (1-based).
	Line int
	// Text is a scalar as written, without quotes.
	Text string
	// Items are a list's values.
	Items []*Value
	// Fields are a mapping's entries, in file order.
	Fields []Field
}

// Field is one entry of a mapping.
type Field struct {
	Key   string
	Line  int
	Value *Value
}

// Get returns the value of key in a mapping, nil when absent.
func (v *Value) Get(key string) *Value {
	if v == nil {
		return nil
	}
	for _, f := range v.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// IsNull reports whether v is absent or null.
func (v *Value) IsNull() bool { return v == nil || v.Kind == Null }

// TypeName names v's kind for messages: "string", "number", "list"...
func (v *Value) TypeName() string {
	if v == nil {
		return "null"
	}
	switch v.Kind {
	case String:
		return "string"
	case Number:
		return "number"
	case Bool:
		return "boolean"
	case List:
		return "list"
	case Map:
		return "mapping"
	default:
		return "null"
	}
}

// Render prints v compactly for messages: strings quoted, numbers and
// booleans as written, lists and mappings in flow style.
func (v *Value) Render() string {
	if v == nil {
		return "null"
	}
	switch v.Kind {
	case String:
		return strconv.Quote(v.Text)
	case Number, Bool:
		return v.Text
	case List:
		s := make([]string, len(v.Items))
		for i, it := range v.Items {
			s[i] = it.Render()
		}
		return "[" + strings.Join(s, ", ") + "]"
	case Map:
		s := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			s[i] = f.Key + ": " + f.Value.Render()
		}
		return "{" + strings.Join(s, ", ") + "}"
	default:
		return "null"
	}
}

// maxValues bounds the tree, so that aliases cannot blow it up.
const maxValues = 1 << 20

// Parse decodes one YAML document. An empty document is a Null value. The
// error of malformed YAML names the line.
func Parse(data []byte) (*Value, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Value{Kind: Null, Line: 1}, nil
		}
		return nil, cleanError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("line %d: a second YAML document (---): the file must hold one", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, cleanError(err)
	}
	n := &doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return &Value{Kind: Null, Line: 1}, nil
		}
		n = n.Content[0]
	}
	count := 0
	return convert(n, &count, 0)
}

func convert(n *yaml.Node, count *int, depth int) (*Value, error) {
	*count++
	if *count > maxValues || depth > 100 {
		return nil, fmt.Errorf("line %d: too many or too deeply nested values", n.Line)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return convert(n.Alias, count, depth+1)
	case yaml.ScalarNode:
		v := &Value{Line: n.Line, Text: n.Value}
		switch n.ShortTag() {
		case "!!null":
			v.Kind = Null
		case "!!bool":
			v.Kind = Bool
		case "!!int", "!!float":
			v.Kind = Number
		default:
			v.Kind = String
		}
		return v, nil
	case yaml.SequenceNode:
		v := &Value{Kind: List, Line: n.Line, Items: make([]*Value, 0, len(n.Content))}
		for _, c := range n.Content {
			it, err := convert(c, count, depth+1)
			if err != nil {
				return nil, err
			}
			v.Items = append(v.Items, it)
		}
		return v, nil
	case yaml.MappingNode:
		v := &Value{Kind: Map, Line: n.Line}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be text, not a %s", k.Line, kindName(k.Kind))
			}
			if k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if first, dup := seen[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q is already set on line %d", k.Line, k.Value, first)
			}
			seen[k.Value] = k.Line
			cv, err := convert(val, count, depth+1)
			if err != nil {
				return nil, err
			}
			v.Fields = append(v.Fields, Field{Key: k.Value, Line: k.Line, Value: cv})
		}
		return v, nil
	default:
		return &Value{Kind: Null, Line: n.Line}, nil
	}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	default:
		return "value"
	}
}

// cleanError drops the "yaml: " prefixes and joins the lines of a decoder
// error.
func cleanError(err error) error {
	msg := strings.ReplaceAll(err.Error(), "yaml: ", "")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " \n ")), " ")
	return errors.New(msg)
}

// Problem formats one problem found in a file (or a flag) the way every
// reader of these files reports it: "where:line: field: value: reason",
// leaving out the line when it is 0 and any other part that is empty.
func Problem(where string, line int, field, value, reason string) string {
	var b strings.Builder
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	for _, s := range []string{where, field, value} {
		if s != "" {
			b.WriteString(s)
			b.WriteString(": ")
		}
	}
	b.WriteString(reason)
	return b.String()
}

// Suggest helps with an unknown key: " (did you mean X?)" for a near miss
// among valid (same letters in another case, or at most two edits away),
// else " (valid here: a, b)", or "" when nothing is valid there.
func Suggest(key string, valid []string) string {
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
