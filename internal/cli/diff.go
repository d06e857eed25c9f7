package cli

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// diffOutput is what `diff -o json|yaml` prints.
type diffOutput struct {
	// RouteTable is the table run would keep (after a migration or a
	// followed swap).
	RouteTable   string           `json:"routeTable"`
	Create       bool             `json:"createTable,omitempty"`
	Claim        bool             `json:"claimTable,omitempty"`
	Changes      []plan.Change    `json:"changes"`
	Conflicts    []plan.Conflict  `json:"conflicts"`
	Associations []verdict.Subnet `json:"associations"`
	// HeldDeletes are the deletions the guard holds back, HeldMessage
	// why and the override; Unclaimed the routes of unknown nodes left in
	// an unclaimed table.
	HeldDeletes []plan.Change  `json:"heldDeletes,omitempty"`
	HeldMessage string         `json:"heldMessage,omitempty"`
	Unclaimed   []plan.Change  `json:"unclaimed,omitempty"`
	Unrouted    []unroutedNode `json:"unrouted,omitempty"`
	// Refused are the actions routekeeper needs that the identity may
	// not do (the permissions API), with the grant that fixes each.
	Refused []verdict.Access `json:"refused,omitempty"`
	Error   string           `json:"error,omitempty"`
	// Mirrors are the mirror tables' diffs (config mirrors:, mirrors.go).
	Mirrors []diffOutput `json:"mirrors,omitempty"`
}

type unroutedNode struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// pending reports whether run --once would change something or leave a
// finding: diff then exits 3, as run --once would.
func (d diffOutput) pending() bool {
	if d.Create || d.Claim || len(d.Changes) > 0 || len(d.Conflicts) > 0 || len(d.Unrouted) > 0 ||
		len(d.HeldDeletes) > 0 || len(d.Unclaimed) > 0 || len(d.Refused) > 0 {
		return true
	}
	for _, m := range d.Mirrors {
		if m.pending() {
			return true
		}
	}
	for _, a := range d.Associations {
		// Adopting a table is bookkeeping: what it writes is in Changes.
		if a.Action != assoc.None && a.Action != assoc.Adopt || a.Problem() {
			return true
		}
	}
	return false
}

func newDiffOutput(res *controller.Result, observe bool) diffOutput {
	out := diffOutput{RouteTable: res.TableID, Changes: []plan.Change{}, Conflicts: []plan.Conflict{}, Associations: []verdict.Subnet{}}
	if p := res.Plan; p != nil {
		out.Conflicts = p.Conflicts
		out.HeldDeletes, out.HeldMessage, out.Unclaimed = p.HeldDeletes, p.HeldMessage, p.Unclaimed
		if !observe {
			out.Create, out.Claim, out.Changes = p.Create, p.Claim, p.Changes
		}
		if p.Refused != "" {
			out.Create, out.Claim, out.Changes = false, false, []plan.Change{}
		}
	}
	if res.Decision != nil {
		out.Associations = res.Associations
		if !res.Decision.TableExists && !res.Decision.Create {
			out.Create = false
		}
	}
	// Nodes the actions above would not route (the planner's reasons, a
	// subnet left on another table...).
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		if nr.Routed || nr.Actionable || nr.Reason == reason.RouteTableMissing {
			continue // routed, routed by the changes above, or the table is the problem
		}
		if slices.ContainsFunc(out.Conflicts, func(c plan.Conflict) bool { return c.Node == name }) {
			continue
		}
		out.Unrouted = append(out.Unrouted, unroutedNode{Node: name, Reason: string(nr.Reason), Message: nr.Message})
	}
	if res.Verdict != nil {
		for _, a := range res.Verdict.Access {
			if refused, _ := a.Refused(); refused {
				out.Refused = append(out.Refused, a)
			}
		}
	}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	return out
}

func (a *shell) newDiffCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Print the changes `run` would make, without making them",
		Long: `Observe and decide like 'routekeeper run --once' and print what it would do:
the route changes it would write to the table it keeps (following a migration
or, under association policy follow, a swap), the subnet associations it
would make, and the nodes and subnets it would leave with a finding. Nothing
is written.

Exit status: what 'run --once' would give: 0 when there is nothing to do,
3 when there are changes to make or findings, 1 on errors (the error run
would fail with, after printing what was decided), 2 for bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, set, closeConn, err := a.sessionSet(cmd, &cf, connectOptions{readOnly: true})
			if err != nil {
				return err
			}
			defer closeConn()
			ctx := cmd.Context()
			ctrl := set.Main
			all := set.DryRun(ctx, observe.Scope{Access: true})
			res := all[0]
			if res.Decision == nil && res.Err != nil {
				return res.Err
			}
			out := newDiffOutput(res, ctrl.Config().Mode == verdict.Observe)
			out.Mirrors = mirrorDiffs(all[1:])
			if a.humanOutput() && !out.pending() && res.Err == nil && mirrorErr(all[1:]) == nil {
				_, err := fmt.Fprintf(a.stdout, "No changes: route table %s is up to date and every subnet is on it.\n", out.RouteTable)
				return err
			}
			if err := a.print(out, func() output.Table { return diffTable(out) }); err != nil {
				return err
			}
			if a.humanOutput() {
				if err := a.printMirrorDiffs(out.Mirrors); err != nil {
					return err
				}
			}
			if res.Err != nil {
				return res.Err
			}
			if err := mirrorErr(all[1:]); err != nil {
				return err
			}
			if out.pending() {
				return findings()
			}
			return nil
		},
	}
	cf.register(cmd.Flags(), diffSettings)
	return cmd
}

func diffTable(d diffOutput) output.Table {
	t := output.Table{Header: []string{"Action", "Name", "AddressPrefix", "NextHop", "Node", "Reason"}}
	if d.Create {
		t.Rows = append(t.Rows, []string{"create-table", d.RouteTable, "", "", "", "the route table does not exist"})
	} else if d.Claim {
		t.Rows = append(t.Rows, []string{"claim-table", d.RouteTable, "", "", "", "tag the table as this cluster's"})
	}
	adopted := map[string]bool{}
	for _, c := range d.Changes {
		if c.Adopts != "" {
			adopted[c.Adopts] = true
		}
	}
	hopOf := func(c plan.Change) string {
		if c.Route.NextHopIP.IsValid() {
			return c.Route.NextHopIP.String()
		}
		return string(c.Route.NextHopType)
	}
	for _, c := range d.Changes {
		switch {
		case c.Adopts != "":
			// An adoption is one rename: the old route goes in the same
			// write that adds the new one.
			t.Rows = append(t.Rows, []string{"rename", c.Adopts + " -> " + c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
		case c.Kind == plan.Delete && adopted[c.Route.Name]:
		default:
			t.Rows = append(t.Rows, []string{c.Kind.String(), c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
		}
	}
	for _, c := range d.HeldDeletes {
		t.Rows = append(t.Rows, []string{"held-delete", c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
	}
	for _, c := range d.Unclaimed {
		t.Rows = append(t.Rows, []string{"keep-unclaimed", c.Route.Name, c.Route.AddressPrefix, hopOf(c), c.Node, c.Reason})
	}
	for _, s := range d.Associations {
		if s.State == assoc.Associated && s.Action == assoc.None {
			continue
		}
		action := string(s.Action)
		if s.Action == assoc.None {
			action = "finding"
		}
		reason := s.Message
		if s.Fix != "" {
			reason += ". Fix: " + s.Fix
		}
		t.Rows = append(t.Rows, []string{action, shortID(s.Subnet), "", "", "", string(s.State) + ": " + reason})
	}
	for _, c := range d.Conflicts {
		prefix := ""
		if c.Prefix.IsValid() {
			prefix = c.Prefix.String()
		}
		t.Rows = append(t.Rows, []string{"not-routed", "", prefix, "", c.Node, string(c.Reason) + ": " + c.Message})
	}
	for _, u := range d.Unrouted {
		t.Rows = append(t.Rows, []string{"not-routed", "", "", "", u.Node, u.Reason + ": " + u.Message})
	}
	for _, a := range d.Refused {
		_, why := a.Refused()
		t.Rows = append(t.Rows, []string{"refused", a.Action, "", "", "", fmt.Sprintf("cannot %s: %s. Fix: %s", a.For, why, a.Fix)})
	}
	return t
}
