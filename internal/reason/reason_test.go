package reason

import (
	"os"
	"strings"
	"testing"
)

// TestVocabularyIsDocumented keeps the package comment's table and All in
// step: every reason has a row, and every row is a reason.
func TestVocabularyIsDocumented(t *testing.T) {
	src, err := os.ReadFile("reason.go")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "//"))
		if strings.HasPrefix(line, "//\t") && len(f) > 2 && (f[1] == "yes" || f[1] == "no" || f[1] == "reach") {
			rows[f[0]] = true
		}
	}
	seen := map[Reason]bool{}
	for _, r := range All {
		if seen[r] {
			t.Errorf("%s is in All twice", r)
		}
		seen[r] = true
		if !r.Known() {
			t.Errorf("%s is not Known", r)
		}
		if r != TooManyDeletes && r != EmptySource && r != StandDownUnconfirmed && !rows[string(r)] {
			t.Errorf("%s has no row in the package comment's table", r)
		}
	}
	for row := range rows {
		if !seen[Reason(row)] {
			t.Errorf("the package comment has a row for %s, which is not in All", row)
		}
	}
	if Reason("Whatever").Known() {
		t.Error("an unknown word is Known")
	}
}

// The routed reasons are exactly the table's "yes" rows: a node that needs
// no host route any more counts as routed, so no status says otherwise.
func TestRoutedReasons(t *testing.T) {
	for _, r := range All {
		want := r == RouteCreated || r == RouteNotManaged || r == HostRoutesNotNeeded
		if r.Routed() != want {
			t.Errorf("%s.Routed() = %v, want %v", r, r.Routed(), want)
		}
	}
}
