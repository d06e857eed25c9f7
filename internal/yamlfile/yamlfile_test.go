package yamlfile

import (
	"strings"
	"testing"
)

func TestParseKeepsTextAndLines(t *testing.T) {
	v, err := Parse([]byte("# comment\nname: n\nflags: [no, on, yes, 'true', true, 010, 1.5, ~]\nnested:\n  a: &x {b: c}\n  d: *x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if name := v.Get("name"); name.Kind != String || name.Text != "n" || name.Line != 2 {
		t.Errorf("name = %+v: YAML 1.2 keeps n as text", name)
	}
	flags := v.Get("flags").Items
	wantKinds := []Kind{String, String, String, String, Bool, Number, Number, Null}
	for i, k := range wantKinds {
		if flags[i].Kind != k {
			t.Errorf("flags[%d] %q: kind %v, want %v", i, flags[i].Text, flags[i].Kind, k)
		}
	}
	if flags[5].Text != "010" {
		t.Errorf("a number keeps its text: %q", flags[5].Text)
	}
	if got := v.Get("nested").Get("d").Get("b"); got == nil || got.Text != "c" {
		t.Errorf("alias not resolved: %+v", v.Get("nested").Get("d"))
	}
	if got := v.Get("flags").Render(); got != `["no", "on", "yes", "true", true, 010, 1.5, null]` {
		t.Errorf("Render = %s", got)
	}
	if f := v.Fields[2]; f.Key != "nested" || f.Line != 4 {
		t.Errorf("field order or line: %+v", f)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"duplicate key":   {"a: 1\nb: 2\na: 3\n", `line 3: key "a" is already set on line 1`},
		"second document": {"a: 1\n---\nb: 2\n", "line 2: a second YAML document"},
		"syntax":          {"a: [1, 2\n", "line"},
		"merge key":       {"x: &x {a: 1}\ny:\n  <<: *x\n", "merge keys"},
		"mapping key":     {"? [a]\n: 1\n", "a key must be text"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "yaml: ") {
			t.Errorf("%s: decoder prefix left in %q", name, err)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "---\n"} {
		v, err := Parse([]byte(in))
		if err != nil || !v.IsNull() {
			t.Errorf("%q: %+v, %v", in, v, err)
		}
	}
}

func TestAliasBomb(t *testing.T) {
	in := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		in += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	if _, err := Parse([]byte(in)); err == nil {
		t.Error("an alias bomb was expanded")
	}
}
