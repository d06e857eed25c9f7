package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// outcome turns the outcome lines into the writes' outcome, checking
// that each write is one the verdict called for.
func outcomeOf(last *verdict.Verdict, lines []string) (*verdict.Outcome, error) {
	out := &verdict.Outcome{Subnets: map[string]verdict.Write{}}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "table" && len(f) >= 2:
			t, _, ok := last.TableWrite()
			if !ok {
				return nil, errors.New("outcome table: the verdict writes no table")
			}
			tw := &verdict.TableWrite{}
			if f[1] == "ok" {
				// ok [state=S] [drop=ROUTE]: read back Succeeded (or S),
				// without ROUTE.
				rb := t.Clone()
				rb.Etag = `W/"written"`
				state := "Succeeded"
				for _, x := range f[2:] {
					k, v, _ := strings.Cut(x, "=")
					switch k {
					case "state":
						state = v
					case "drop":
						rb.Routes = slices.DeleteFunc(rb.Routes, func(r route.Route) bool { return r.Name == v })
					default:
						return nil, fmt.Errorf("outcome %q: unknown %q", l, x)
					}
				}
				for i := range rb.Routes {
					rb.Routes[i].ProvisioningState = state
				}
				tw.ReadBack = rb
			} else if w, ok := writeOutcome(f[1], t.ID); ok {
				tw.Write = w
			} else {
				return nil, fmt.Errorf("outcome %q: want ok, 412, lost, failed, denied, linked, locked or policy", l)
			}
			out.Table = tw
		case f[0] == "subnet" && len(f) == 3:
			id := subnetRef(f[1])
			if !slices.ContainsFunc(last.Associations(), func(s verdict.Subnet) bool { return armid.Same(s.Subnet, id) }) {
				return nil, fmt.Errorf("outcome %q: the verdict does not associate that subnet", l)
			}
			var w verdict.Write
			if f[2] != "ok" {
				var ok bool
				if w, ok = writeOutcome(f[2], id); !ok {
					return nil, fmt.Errorf("outcome %q: want ok, 412, lost, failed, denied, linked, locked or policy", l)
				}
			}
			out.Subnets[armid.Key(id)] = w
		default:
			return nil, fmt.Errorf("outcome line %q", l)
		}
	}
	return out, nil
}

// writeOutcome is the outcome of a write of id that ended as kind: 412,
// lost (sent, its answer lost: outcome unknown), failed (500), or one of ARM's refusals (denied, linked, locked, policy)
// with what its message names, as the controller hands them over.
func writeOutcome(kind, id string) (verdict.Write, bool) {
	const oid = "11111111-2222-3333-4444-555555555555"
	action := "Microsoft.Network/routeTables/write"
	if strings.Contains(id, "/subnets/") {
		action = "Microsoft.Network/virtualNetworks/subnets/write"
	}
	var r observe.Refusal
	switch kind {
	case "412":
		return verdict.Write{Err: fmt.Errorf("writing %s: 412 PreconditionFailed", Short(id)), Raced: true}, true
	case "lost":
		return verdict.Write{Err: fmt.Errorf("writing %s: outcome unknown, the answer was lost (read: connection reset by peer)", Short(id)), Lost: true}, true
	case "failed":
		return verdict.Write{Err: fmt.Errorf("writing %s: 500 InternalServerError", Short(id))}, true
	case "denied":
		r = observe.Refusal{Code: observe.CodeAuthorizationFailed, Principal: oid, Action: action, Scope: id}
	case "linked":
		r = observe.Refusal{Code: observe.CodeLinkedAuthorizationFailed, Principal: oid, Action: action, Scope: id,
			LinkedActions: []string{"Microsoft.Network/routeTables/join/action"}, LinkedScopes: []string{TableID("rt")}}
	case "locked":
		r = observe.Refusal{Code: observe.CodeScopeLocked, Scope: id, Operation: "write", Lock: "/subscriptions/s/resourceGroups/rg"}
	case "policy":
		r = observe.Refusal{Code: observe.CodeRequestDisallowedByPolicy,
			PolicyAssignment: "/subscriptions/s/providers/Microsoft.Authorization/policyAssignments/no-nva",
			PolicyDefinition: "/subscriptions/s/providers/Microsoft.Authorization/policyDefinitions/deny-nva"}
	default:
		return verdict.Write{}, false
	}
	status := 403
	if r.Code == observe.CodeScopeLocked {
		status = 409
	}
	return verdict.Write{Err: fmt.Errorf("writing %s: %d %s", Short(id), status, r.Code), Refused: &r}, true
}
