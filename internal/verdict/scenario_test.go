package verdict_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/testutil/scenario"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/scenarios/*.txt with what the verdict says now")

// TestScenarios replays the scripts in testdata/scenarios: each is a
// sequence of steps — the configuration, what the cloud looks like, the
// nodes, the outcome of a write — and after each `judge` the verdict it
// expects, rendered as text. Run with -update when a change is intended,
// and read the diff.
//
// The steps (one command line, its input lines, "----", the expected
// output, a blank line):
//
//	config key=value...   cluster, cidrs, table, subnets, policy, restore,
//	                      create, mode, adopt, claim, limit, maxDeletes,
//	                      allowEmptySource, confirmStandDown, previous,
//	                      followedFrom, existed
//	cloud                 the whole cloud, replacing the last one:
//	                        vnet NAME PREFIX[,PREFIX]
//	                        subnet NAME PREFIX [vnet=V] [table=T] [missing] [unreadable]
//	                        table NAME [claim=C] [tag=K:V] [missing] [unreadable]
//	                          route NAME PREFIX HOP|TYPE [state=S]
//	                        peering NAME vnet=V remote=R space=PREFIX[,PREFIX] [state=S]
//	nodes                 NAME IP[,IP] [CIDR[,CIDR]] [problem=REASON] [available]
//	                      (available: its NetworkUnavailable condition is
//	                      False, the cluster holds it routed)
//	judge                 observe the cloud and judge with no outcome yet
//	outcome               the writes of the last judged verdict's actions:
//	                        table ok|412|denied|failed
//	                        subnet NAME ok|412|denied|failed
//	                      then judge again with that outcome (printed)
//	apply                 make the cloud what the last outcome wrote
//
// Names are short: table rt is .../routeTables/rt, subnet nodes in vnet
// v is .../virtualNetworks/v/subnets/nodes, all in one resource group.
// internal/testutil/scenario reads and replays them.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Errorf("%d scenario scripts, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScript(t, f)
		})
	}
}

// runScript replays the script at path and compares each step's output
// with the script's, or rewrites the script with them.
func runScript(t *testing.T, path string) {
	sc, err := scenario.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	w := scenario.New()
	outputs := make([]string, len(sc.Steps))
	for i, s := range sc.Steps {
		got, err := w.Do(s)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, s.Line, s.Cmd, err)
		}
		if !*update && got != s.Output {
			t.Errorf("%s:%d: %s:\n got:\n%s\nwant:\n%s", path, s.Line, s.Cmd, got, s.Output)
		}
		outputs[i] = got
	}
	if *update {
		if err := os.WriteFile(path, []byte(sc.Text(outputs)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
