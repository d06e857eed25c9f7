package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// table is what a command prints with -o table: a header and rows of cells.
type table struct {
	header []string
	rows   [][]string
}

// print writes v in the format chosen with -o. For json and yaml, v is
// marshalled as it is (use struct tags for field names); for table, tbl is
// called to lay it out like `az ... -o table`.
func (a *app) print(v any, tbl func() table) error {
	return writeOutput(a.stdout, a.output, v, tbl)
}

func writeOutput(w io.Writer, format string, v any, tbl func() table) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "->" in messages stays readable
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encoding JSON output: %w", err)
		}
		return nil
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML output: %w", err)
		}
		_, err = w.Write(b)
		return err
	default:
		return writeTable(w, tbl())
	}
}

// writeTable lays out t the way the Azure CLI does for -o table: columns
// separated by two spaces, the header underlined with dashes.
func writeTable(w io.Writer, t table) error {
	if len(t.header) == 0 {
		return nil
	}
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = len(h)
	}
	for _, r := range t.rows {
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
	line(t.header)
	dashes := make([]string, len(widths))
	for i, wd := range widths {
		dashes[i] = strings.Repeat("-", wd)
	}
	line(dashes)
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
