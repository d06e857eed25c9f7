package armtemplate

import (
	"context"
	"testing"
)

// FuzzExpression parses and evaluates arbitrary expression text: any input
// must end in a value or an *Error, never a panic. Seeds are in
// testdata/fuzz/FuzzExpression.
func FuzzExpression(f *testing.F) {
	for _, s := range []string{
		"concat('a', 'b')", "createObject('a', createArray(1, 2))['a'][1]", "if(true(), 1, reference('x'))",
		"format('{0:N2}', 1234)", "json('{\"a\": [1, {\"b\": null}]}').a[1].b", "padLeft('1', 5, '0')",
		"substring('abc', 1)", "range(1, 3)[2]", "union(json('{}'), createObject('x', 1)).x", "'it''s'",
		"resourceId('a', 'b', 'Microsoft.X/y', 'n')", "copyIndex()", "add(9223372036854775807, 1)", "((", "a.b.c()",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		e, err := parseExpr(text)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("parse error of type %T: %v", err, err)
			}
			return
		}
		_ = e.String()
		fr := newFrame(&Template{parameters: map[string]any{}, variables: map[string]any{}, raw: map[string]any{}}, testScope, Options{}, &run{mode: modeWhatIf, states: map[string]map[string]any{}, declared: map[string]bool{}}, nil)
		_, _ = fr.ev(context.Background(), modeWhatIf, "output").value("[" + text + "]")
	})
}

// FuzzTemplate parses arbitrary template text and, when it parses, plans
// it.
func FuzzTemplate(f *testing.F) {
	f.Add(`{"resources": [{"type": "A/b", "apiVersion": "1", "name": "n", "copy": {"name": "c", "count": 2}}]}`)
	f.Add("{\"parameters\": {\"p\": {\"type\": \"string\", \"defaultValue\": \"[concat('a')]\"}}, // c\n \"outputs\": {}}")
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse([]byte(src))
		if err != nil {
			return
		}
		_, _ = WhatIf(context.Background(), tmpl, testScope, nil, Options{NewGUID: func() string { return "g" }}, nil)
	})
}
