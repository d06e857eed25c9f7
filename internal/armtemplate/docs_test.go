package armtemplate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testScope is the deployment scope tests run in.
var testScope = Scope{
	TenantID:              "72f988bf-86f1-41af-91ab-2d7cd011db47",
	SubscriptionID:        "00000000-1111-2222-3333-444444444444",
	ResourceGroup:         "examplegroup",
	ResourceGroupLocation: "westus",
	DeploymentName:        "exampledeployment",
}

// TestDocumentedExamples evaluates the example templates of the ARM template
// function reference (testdata/docs, sources in testdata/docs/README.md) and
// compares their outputs with the values the reference documents.
func TestDocumentedExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/docs/*.outputs.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, out := range files {
		name := strings.TrimSuffix(filepath.Base(out), ".outputs.json")
		t.Run(name, func(t *testing.T) {
			tmplData, err := os.ReadFile(filepath.Join("testdata/docs", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			wantData, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			wantText := strings.ReplaceAll(string(wantData), "{current-sub-id}", testScope.SubscriptionID)
			var want map[string]any
			if err := json.Unmarshal([]byte(wantText), &want); err != nil {
				t.Fatal(err)
			}
			tmpl, err := Parse(tmplData)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			res, err := WhatIf(context.Background(), tmpl, testScope, nil, Options{}, nil)
			if err != nil {
				t.Fatalf("evaluate: %v", err)
			}
			got := map[string]any{}
			for k, o := range res.Outputs {
				got[k] = o.Value
			}
			if diff := cmp.Diff(normalize(want), got); diff != "" {
				t.Errorf("outputs (-documented +got):\n%s", diff)
			}
		})
	}
}
