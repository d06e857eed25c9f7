package config

import (
	"strings"

	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// Problem is one thing wrong with the configuration.
type Problem struct {
	// Where is the file or flag the value came from.
	Where string
	// Line is the line in the file, 0 when unknown or not a file.
	Line int
	// Field is the setting's YAML path, with an index for list items:
	// cluster.clusterCIDRs[0].
	Field string
	// Value is the offending value as written, quoted when it is text.
	Value string
	// Reason says what is wrong and, where possible, what would be right.
	Reason string
}

func (p Problem) String() string {
	return yamlfile.Problem(p.Where, p.Line, p.Field, p.Value, p.Reason)
}

// Problems is every problem found; it is the error Read, Set and Validate
// return, one problem per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps *Problems) add(where string, line int, field, value, reason string) {
	*ps = append(*ps, Problem{Where: where, Line: line, Field: field, Value: value, Reason: reason})
}

// err returns ps as an error, nil when there is no problem.
func (ps Problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
