// Package azrbac is Azure role-based access control's semantics, without
// I/O: action patterns with '*' wildcards (compared without regard to case),
// permission blocks (Actions minus NotActions), their union over role
// assignments, scope containment of ARM IDs, and the effective permissions
// of a principal at a scope.
//
// The fabric authorizes every request with it, and routekeeper's doctor
// uses it on the answer of ARM's permissions API
// ({scope}/providers/Microsoft.Authorization/permissions) to name the
// actions a principal lacks. The rules follow Azure's documentation of role
// definitions: an action is granted by a permission block when it matches
// one of the block's Actions and none of its NotActions; a principal may do
// what any of the blocks that apply to it grants (NotActions are not deny
// rules: another assignment may grant what one block excludes); a role
// assigned at a scope applies there and at every scope below it.
package azrbac

import (
	"slices"
	"strings"
)

// Permission is one permission block of a role definition, in the shape
// of ARM's JSON (roleDefinitions and the permissions API).
type Permission struct {
	Actions        []string `json:"actions"`
	NotActions     []string `json:"notActions"`
	DataActions    []string `json:"dataActions"`
	NotDataActions []string `json:"notDataActions"`
}

// Allows reports whether the block grants a control-plane action: it
// matches one of Actions and none of NotActions.
func (p Permission) Allows(action string) bool {
	return matchAny(p.Actions, action) && !matchAny(p.NotActions, action)
}

// AllowsData is Allows for data actions (DataActions minus NotDataActions).
func (p Permission) AllowsData(action string) bool {
	return matchAny(p.DataActions, action) && !matchAny(p.NotDataActions, action)
}

func matchAny(patterns []string, action string) bool {
	for _, p := range patterns {
		if Match(p, action) {
			return true
		}
	}
	return false
}

// Match reports whether an action such as
// "Microsoft.Network/routeTables/write" matches a pattern of a role
// definition, such as "Microsoft.Network/*" or "*/read". '*' stands for
// any run of characters, '/' included, anywhere in the pattern; letters
// compare without regard to case.
func Match(pattern, action string) bool {
	return globFold(strings.ToLower(strings.TrimSpace(pattern)), strings.ToLower(strings.TrimSpace(action)))
}

// globFold matches s against p where '*' is any run of bytes; both are
// already lower case. Iterative with one backtrack point, so linear in
// practice and never exponential.
func globFold(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Set is the permission blocks that apply to a principal at a scope: the
// blocks of every role assigned to it there or above. An action is allowed
// when any block allows it.
type Set []Permission

// Allows reports whether any block grants the action.
func (s Set) Allows(action string) bool {
	return slices.ContainsFunc(s, func(p Permission) bool { return p.Allows(action) })
}

// AllowsData reports whether any block grants the data action.
func (s Set) AllowsData(action string) bool {
	return slices.ContainsFunc(s, func(p Permission) bool { return p.AllowsData(action) })
}

// Missing returns the actions the set does not grant, in the order given,
// each once.
func (s Set) Missing(actions ...string) []string {
	var out []string
	for _, a := range actions {
		if !s.Allows(a) && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, a) }) {
			out = append(out, a)
		}
	}
	return out
}
