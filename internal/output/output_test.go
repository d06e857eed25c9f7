package output

import (
	"strings"
	"testing"
)

// TestQueryKeepsTextReadable: after a query, JSON output does not escape
// "<", ">" and "&" (messages such as "podCIDR -> node IP" stay readable),
// and objects keep their key order.
func TestQueryKeepsTextReadable(t *testing.T) {
	var b strings.Builder
	o := Options{Format: "json", Query: "[0]"}
	if err := o.Compile(); err != nil {
		t.Fatal(err)
	}
	v := []struct {
		Message string `json:"message"`
		A       int    `json:"a"`
	}{{Message: "10.200.0.0/24 -> 10.240.0.20 & more", A: 1}}
	if err := Write(&b, o, v, nil); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"message\": \"10.200.0.0/24 -> 10.240.0.20 & more\",\n  \"a\": 1\n}\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
