package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Diff is routekeeper diff: what run --once would do to each table of
// cfg, from a dry run with the caller's access read. The main table's
// error, if any, is returned beside the result (run would fail with it
// after deciding), unless it is a decision of the verdict its findings
// report (verdict.Decided); a mirror's is in its diff.
func (a *App) Diff(ctx context.Context, cfg *config.Config) (*DiffResult, error) {
	s, err := a.OpenSession(ctx, cfg, ConnectOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	all := s.Set.DryRun(ctx, judgeScope(cfg, true))
	res := all[0]
	if res.Decision == nil && res.Err != nil {
		return nil, res.Err
	}
	out := newDiffResult(res, s.Set.Main.Config().Mode == verdict.Observe)
	for _, r := range all[1:] {
		out.Mirrors = append(out.Mirrors, newDiffResult(r, false))
	}
	out.Findings = Findings(cfg, all)
	return &out, failed(res.Err)
}

// failed is err unless it is a decision of the verdict (verdict.Decided),
// which the verdict's findings report: then nil, so that the command exits
// on the findings, as every command does on that state.
func failed(err error) error {
	if verdict.Decided(err) {
		return nil
	}
	return err
}

// DiffResult is what run --once would do: what `diff -o json|yaml` prints.
type DiffResult struct {
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
	Unrouted    []UnroutedNode `json:"unrouted,omitempty"`
	// Refused are the actions routekeeper needs that the identity may
	// not do (the permissions API), with the grant that fixes each.
	Refused []verdict.Access `json:"refused,omitempty"`
	Error   string           `json:"error,omitempty"`
	// err is the dry run's error (Error).
	err error
	// Mirrors are the mirror tables' diffs (config mirrors:).
	Mirrors []DiffResult `json:"mirrors,omitempty"`
	// Findings are what the verdicts leave to do (every table's; diff
	// exits 3 when there is one, as run --once would leave them).
	Findings []finding.Finding `json:"findings,omitempty"`
}

type UnroutedNode struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// newDiffResult is the diff of one table's dry run; observe: the
// platform writes the routes, so no route change is routekeeper's.
func newDiffResult(res *controller.Result, observe bool) DiffResult {
	out := DiffResult{RouteTable: res.TableID, Changes: []plan.Change{}, Conflicts: []plan.Conflict{}, Associations: []verdict.Subnet{}}
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
		out.Unrouted = append(out.Unrouted, UnroutedNode{Node: name, Reason: string(nr.Reason), Message: nr.Message})
	}
	if res.Verdict != nil {
		for _, a := range res.Verdict.Access {
			if refused, _ := a.Refused(); refused {
				out.Refused = append(out.Refused, a)
			}
		}
	}
	if res.Err != nil {
		out.Error, out.err = res.Err.Error(), res.Err
	}
	return out
}

// Empty reports whether the diff of its own table (not its mirrors')
// shows nothing: no write, no association, no node or write left with a
// finding.
func (d DiffResult) Empty() bool {
	if d.Create || d.Claim || len(d.Changes) > 0 || len(d.Conflicts) > 0 || len(d.Unrouted) > 0 ||
		len(d.HeldDeletes) > 0 || len(d.Unclaimed) > 0 || len(d.Refused) > 0 {
		return false
	}
	for _, a := range d.Associations {
		// Adopting a table is bookkeeping: what it writes is in Changes.
		if a.Action != assoc.None && a.Action != assoc.Adopt || a.Problem() {
			return false
		}
	}
	return true
}

// MirrorErr is the mirrors' errors, each naming its mirror; a decision of
// a mirror's verdict (verdict.Decided) is one of the findings instead.
func (d DiffResult) MirrorErr() error {
	var errs []error
	for _, m := range d.Mirrors {
		if err := failed(m.err); err != nil {
			errs = append(errs, fmt.Errorf("mirror route table %s: %w", controller.TableName(m.RouteTable), err))
		}
	}
	return errors.Join(errs...)
}
