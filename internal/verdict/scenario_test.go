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
// expects, rendered as text, ending with the state's one answer: its
// findings and the exit code every command gives on it (run --once, diff,
// doctor, trace, iac check; internal/cli's agreement test runs them all on
// each state). Run with -update when a change is intended, and read the
// diff.
//
// The steps (one command line, its input lines, "----", the expected
// output, a blank line):
//
//	config key=value...   the configuration: cluster, cidrs, table, subnets,
//	                      policy, restore, create, mode, adopt, claim, limit,
//	                      maxDeletes, allowEmptySource, confirmStandDown;
//	                      and what the controller remembers of earlier
//	                      passes: kept, previous, followedFrom, existed
//	  mirror TABLE SUBNET[,SUBNET] [policy=P] [restore=B] [create=B] [location=L]
//	                      a mirror table, as the configuration's mirrors:
//	                      lists it; it is judged with the Desired of a
//	                      controller made by controller.MirrorConfig from
//	                      the main table's configuration, as run does
//	cloud                 the whole cloud, replacing the last one:
//	                        vnet NAME PREFIX[,PREFIX]
//	                        subnet NAME PREFIX [vnet=V] [table=T] [missing] [unreadable]
//	                        table NAME [claim=C] [tag=K:V] [missing] [unreadable]
//	                          route NAME PREFIX HOP|TYPE [state=S]
//	                        peering NAME vnet=V remote=R space=PREFIX[,PREFIX] [state=S]
//	                        nic NAME IP[,IP] [forwarding=false]   (a node's NIC, in the
//	                          subnet of its first address; IP forwarding on by default)
//	nodes                 NAME IP[,IP] [CIDR[,CIDR]] [problem=REASON] [available]
//	                      (available: its NetworkUnavailable condition is
//	                      False, the cluster holds it routed)
//	judge [routing]       observe the cloud and judge every table (the main
//	                      one, then each mirror, under "mirror TABLE") with
//	                      no outcome yet; routing: the main table's
//	                      observation reads what the commands that give an
//	                      exit code read (app's judgeScope: the network
//	                      around, the table every subnet uses, the NICs), so
//	                      that reachability is judged
//	outcome [TABLE]       the writes of the last judged verdict's actions of
//	                      the main table (or of mirror TABLE):
//	                        table ok|412|lost|failed|denied|linked|locked|policy
//	                        subnet NAME ok|412|lost|failed|denied|linked|locked|policy
//	                      then that table judged again with that outcome
//	apply                 make the cloud what the last outcome wrote
//	trace SRC DST         where Azure sends a packet from SRC to DST (an
//	                      address, a node, node/pod-ip) on the network the
//	                      main table's last verdict read (judge routing),
//	                      with the reasons, and the exit code trace gives
//	                      (the state's, whatever the packet does)
//	reservations          what the inventory source's IPAM keeps pod CIDRs
//	                      away from (inventory.Reservations of the
//	                      observation it makes before an allocation pass),
//	                      and the pod CIDRs it then gives the nodes that
//	                      have none: they keep them from now on
//	iac PLAN.json         iac.Check of a recorded OpenTofu plan
//	                      (internal/iac/testdata; its IDs moved into the
//	                      script's resource group) against the cloud as it
//	                      stands, observed as iac check observes it: the
//	                      plan's findings (rule, resource, message; subnet,
//	                      table, nodes, reason), the findings of the state
//	                      the apply leaves standing (remaining:) and the
//	                      exit code of iac check
//
// A verdict is printed as: the table kept, its write and changes, held and
// unclaimed routes, each guarded subnet, each denial, each node; the
// access needs refused or unknown (when access was read); the route
// counts; the groups of nodes by reason. The state's findings follow (one
// line each: severity rule resource: message, a mirror's naming it) and
// "exit 0" or "exit 3".
//
// Names are short: table rt is .../routeTables/rt, subnet nodes in vnet
// v is .../virtualNetworks/v/subnets/nodes (VNET/NAME elsewhere), all in
// one resource group. internal/testutil/scenario reads and replays them.
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
