// Package problemtest checks the problems the readers of routekeeper's
// input files (the configuration, the node inventory) report, one a line
// as yamlfile.Problem formats them.
package problemtest

import (
	"regexp"
	"strings"
	"testing"
)

// Check fails t unless msg holds every one of want and each of its lines
// starts with file ("file: " or "file:line: ").
func Check(t testing.TB, msg, file string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	fileLine := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `(:\d+)?: `)
	for _, line := range strings.Split(msg, "\n") {
		if !fileLine.MatchString(line) {
			t.Errorf("line does not start with the file name %s: %q", file, line)
		}
	}
}
