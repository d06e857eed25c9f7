// Package output renders a command's result the way the Azure CLI does:
// -o table (columns laid out like `az ... -o table`), json, yaml and tsv,
// with --query (JMESPath) applied to the result's JSON form first, keeping
// the key order az keeps. Errors that are the caller's (a bad format or
// query) wrap ErrUsage.
package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	jmespath "github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// Formats are the output formats of -o, as the Azure CLI names them, and
// sarif (SARIF 2.1.0, for code-scanning UIs), which only commands that
// report findings print (internal/finding).
var Formats = []string{"table", "json", "yaml", "tsv", "sarif"}

// ErrUsage marks an error in the caller's -o or --query.
var ErrUsage = errors.New("usage")

// usageErrorf formats an error of the caller's flags; it wraps ErrUsage.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

type usageError struct{ err error }

func (e *usageError) Error() string   { return e.err.Error() }
func (e *usageError) Unwrap() []error { return []error{e.err, ErrUsage} }

// Table is what a command prints with -o table: a header and rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// Options are the global -o and --query flags.
type Options struct {
	Format string // table, json, yaml, tsv or sarif
	Query  string // JMESPath, "" for none

	compiled jmespath.JMESPath
	// queryKeys are the keys of the query's multiselect hashes ({a: x, b:
	// y}) in the order written: az keeps that order in its output.
	queryKeys []string
}

// Compile checks -o and --query; both errors name the flag and the value.
func (o *Options) Compile() error {
	if !slices.Contains(Formats, o.Format) {
		return usageErrorf("flag --output: %q is not one of %s", o.Format, strings.Join(Formats, ", "))
	}
	if o.Query == "" {
		return nil
	}
	ast, err := jmespath.NewParser().Parse(o.Query)
	if err != nil {
		return usageErrorf("flag --query: %q is not a valid JMESPath expression: %v", o.Query, err)
	}
	c, err := jmespath.Compile(o.Query)
	if err != nil {
		return usageErrorf("flag --query: %q is not a valid JMESPath expression: %v", o.Query, err)
	}
	o.compiled = c
	o.queryKeys = nil
	var walk func(n parsing.ASTNode)
	walk = func(n parsing.ASTNode) {
		if n.NodeType == parsing.ASTKeyValPair {
			if k, ok := n.Value.(string); ok && !slices.Contains(o.queryKeys, k) {
				o.queryKeys = append(o.queryKeys, k)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(ast)
	return nil
}

// Write writes v, the command's result, as -o and --query ask, with the
// Azure CLI's semantics: the query applies to v's JSON form, then the
// chosen format renders what the query returned. For json and yaml without
// a query, v is marshalled as it is (struct tags name the fields); for table
// without a query, tbl lays it out like `az ... -o table` (nil: a generic
// table of v's JSON form).
func Write(w io.Writer, o Options, v any, tbl func() Table) error {
	if o.compiled == nil {
		switch o.Format {
		case "json":
			return WriteJSON(w, v)
		case "yaml":
			return writeYAML(w, v)
		case "table":
			if tbl != nil {
				return WriteTable(w, tbl())
			}
		}
	}
	doc, err := jsonForm(v)
	if err != nil {
		return err
	}
	rank := map[string]int{}
	for _, k := range o.queryKeys {
		rank[k] = len(rank)
	}
	for _, k := range doc.keys {
		if _, ok := rank[k]; !ok {
			rank[k] = len(rank)
		}
	}
	res := doc.value
	if o.compiled != nil {
		if res, err = o.compiled.Search(doc.value); err != nil {
			return usageErrorf("flag --query: %q: %w", o.Query, err)
		}
	}
	res = ordered(res, rank)
	switch o.Format {
	case "sarif":
		return usageErrorf("flag --output: sarif is the format of the commands that report findings (doctor, iac check, ipplan)")
	case "json":
		return WriteJSON(w, res)
	case "yaml":
		return writeOrderedYAML(w, res)
	case "tsv":
		return writeTSV(w, res)
	default:
		return WriteTable(w, genericTable(res))
	}
}

func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "->" in messages stays readable
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON output: %w", err)
	}
	return nil
}

func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding YAML output: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// writeOrderedYAML writes a query's result keeping its key order
// (sigs.k8s.io/yaml sorts the keys of maps).
func writeOrderedYAML(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(yamlNode(v)); err != nil {
		return fmt.Errorf("encoding YAML output: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encoding YAML output: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func yamlNode(v any) *yamlv3.Node {
	switch t := v.(type) {
	case object:
		n := &yamlv3.Node{Kind: yamlv3.MappingNode}
		for _, k := range t.keys {
			n.Content = append(n.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: k}, yamlNode(t.m[k]))
		}
		return n
	case []any:
		n := &yamlv3.Node{Kind: yamlv3.SequenceNode}
		for _, x := range t {
			n.Content = append(n.Content, yamlNode(x))
		}
		return n
	case string:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: t}
	case nil:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!null", Value: "null"}
	default:
		s, _ := scalar(t)
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: s}
	}
}

// jsonDoc is a value's JSON form decoded into the types JMESPath works on
// (map[string]any, []any, string, float64, bool, nil), with its object
// keys in the order of first appearance.
type jsonDoc struct {
	value any
	keys  []string
}

func jsonForm(v any) (jsonDoc, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return jsonDoc{}, fmt.Errorf("encoding output: %w", err)
	}
	var doc jsonDoc
	if err := json.Unmarshal(b, &doc.value); err != nil {
		return jsonDoc{}, fmt.Errorf("decoding output: %w", err)
	}
	// A second pass over the tokens finds the keys in document order:
	// Go's maps do not keep it, and az prints fields in the order of the
	// resource's JSON.
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []bool // per open container: is it an object expecting a key?
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, true)
				expectKey = true
				continue
			case '[':
				stack = append(stack, false)
				expectKey = false
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if expectKey {
				if !seen[t] {
					seen[t] = true
					doc.keys = append(doc.keys, t)
				}
				expectKey = false
				continue
			}
		}
		// a value ended: in an object, a key comes next
		expectKey = len(stack) > 0 && stack[len(stack)-1]
	}
	return doc, nil
}

// object is a JSON object whose keys keep an order, so that json, yaml, tsv
// and table print fields as az does (in the order of the query's
// multiselect hash, else of the resource's JSON) rather than sorted.
type object struct {
	keys []string
	m    map[string]any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalText(k)
		if err != nil {
			return nil, err
		}
		vb, err := marshalText(o.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalText is json.Marshal without HTML escaping, so that "->" in a
// message stays readable after a query as it does without one.
func marshalText(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ordered turns the maps of v into objects with keys ordered by rank
// (unranked keys last, alphabetically).
func ordered(v any, rank map[string]int) any {
	switch t := v.(type) {
	case map[string]any:
		o := object{m: make(map[string]any, len(t))}
		for k, x := range t {
			o.keys = append(o.keys, k)
			o.m[k] = ordered(x, rank)
		}
		sort.Slice(o.keys, func(i, j int) bool {
			ri, iok := rank[o.keys[i]]
			rj, jok := rank[o.keys[j]]
			switch {
			case iok && jok:
				return ri < rj
			case iok != jok:
				return iok
			default:
				return o.keys[i] < o.keys[j]
			}
		})
		return o
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = ordered(x, rank)
		}
		return out
	default:
		return v
	}
}

// scalar formats a JSON scalar for tsv and table cells: strings as they
// are, numbers without a needless exponent, booleans as true/false, null as
// nothing. ok is false for objects and arrays.
func scalar(v any) (s string, ok bool) {
	switch t := v.(type) {
	case nil:
		return "", true
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	default:
		return "", false
	}
}

// writeTSV prints v as `az -o tsv` does: a list prints one line per item,
// anything else one line; an object's values (in key order) and a list's
// items are separated by tabs; in a line, a nested list prints as its
// length and a nested object as an empty cell. There is no header.
func writeTSV(w io.Writer, v any) error {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	var b strings.Builder
	cell := func(x any) string {
		if s, ok := scalar(x); ok {
			return s
		}
		if l, ok := x.([]any); ok {
			return strconv.Itoa(len(l))
		}
		return ""
	}
	for _, it := range items {
		var cells []string
		switch t := it.(type) {
		case object:
			for _, k := range t.keys {
				cells = append(cells, cell(t.m[k]))
			}
		case []any:
			for _, x := range t {
				cells = append(cells, cell(x))
			}
		default:
			cells = append(cells, cell(t))
		}
		b.WriteString(strings.Join(cells, "\t"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// genericTable lays out a query's result as `az ... --query ... -o table`
// does: a list of objects gets a column per key (the key with its first
// letter upper-cased), nested objects and lists are left out; a scalar or a
// list of scalars is one "Result" column.
func genericTable(v any) Table {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	var t Table
	var cols []string
	for _, it := range items {
		o, ok := it.(object)
		if !ok {
			continue
		}
		for _, k := range o.keys {
			if _, ok := scalar(o.m[k]); ok && !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
	}
	if len(cols) == 0 {
		t.Header = []string{"Result"}
		for _, it := range items {
			if s, ok := scalar(it); ok {
				t.Rows = append(t.Rows, []string{s})
			}
		}
		return t
	}
	for _, c := range cols {
		t.Header = append(t.Header, strings.ToUpper(c[:1])+c[1:])
	}
	for _, it := range items {
		o, ok := it.(object)
		if !ok {
			continue
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i], _ = scalar(o.m[c])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// WriteTable lays out t the way the Azure CLI does for -o table: columns
// separated by two spaces, the header underlined with dashes.
func WriteTable(w io.Writer, t Table) error {
	if len(t.Header) == 0 {
		return nil
	}
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = len(h)
	}
	for _, r := range t.Rows {
		for i := 0; i < len(r) && i < len(widths); i++ {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var l strings.Builder
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			if i > 0 {
				l.WriteString("  ")
			}
			l.WriteString(c)
			l.WriteString(strings.Repeat(" ", widths[i]-len(c)))
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line(t.Header)
	dashes := make([]string, len(widths))
	for i, wd := range widths {
		dashes[i] = strings.Repeat("-", wd)
	}
	line(dashes)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Human reports whether the output is for people (-o table without
// --query): only then may a command add prose around its result ("No
// changes", totals). Everything else prints the result alone, for scripts.
func (o Options) Human() bool { return o.Format == "table" && o.Query == "" }
