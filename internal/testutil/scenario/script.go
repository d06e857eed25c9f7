// Package scenario reads and replays the scenario scripts of
// internal/verdict/testdata/scenarios: plain-text scripts that set up a
// configuration, a cloud and the nodes, judge them with the one verdict
// (internal/verdict) and show what it says. The format is documented at
// TestScenarios (internal/verdict/scenario_test.go), the driver that
// replays and regenerates them; the agreement test of internal/cli replays
// the same scripts and runs the real commands on every state they judge.
//
// A World is a script's state between steps; Do runs one step and returns
// what it prints. Every verdict is held to internal/reason's vocabulary.
package scenario

import (
	"fmt"
	"os"
	"strings"
)

// Script is a parsed scenario script.
type Script struct {
	Path string
	// Head is the comment at the top of the file, kept as it is.
	Head  []string
	Steps []Step
}

// Step is one command of a script: the command line, its input lines, and
// after "----" the output it expects.
type Step struct {
	// Line is the line of the command in the file.
	Line   int
	Cmd    string
	Args   []string
	Input  []string
	Output string
}

// String is the step's command line.
func (s Step) String() string { return strings.Join(append([]string{s.Cmd}, s.Args...), " ") }

// Parse reads the script at path.
func Parse(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	sc := &Script{Path: path}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == "") {
		sc.Head = append(sc.Head, lines[i])
		i++
	}
	for i < len(lines) {
		if strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#") {
			i++
			continue
		}
		f := strings.Fields(lines[i])
		s := Step{Line: i + 1, Cmd: f[0], Args: f[1:]}
		i++
		for i < len(lines) && lines[i] != "----" {
			s.Input = append(s.Input, lines[i])
			i++
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: %s has no ---- line", path, s.Line, s.Cmd)
		}
		i++ // ----
		var out []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
			i++
		}
		s.Output = strings.Join(out, "\n")
		sc.Steps = append(sc.Steps, s)
	}
	return sc, nil
}

// Text is the script with outputs (one per step) as the expected output
// of its steps: what -update writes.
func (sc *Script) Text(outputs []string) string {
	var b strings.Builder
	for _, l := range sc.Head {
		b.WriteString(l + "\n")
	}
	for i, s := range sc.Steps {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.String() + "\n")
		for _, l := range s.Input {
			b.WriteString(l + "\n")
		}
		b.WriteString("----\n")
		if outputs[i] != "" {
			b.WriteString(outputs[i] + "\n")
		}
	}
	return b.String()
}
