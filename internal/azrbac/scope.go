package azrbac

import (
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// RootScope is the scope above every management group and subscription.
const RootScope = "/"

// NormalizeScope trims a scope: surrounding spaces and a trailing '/' go,
// "" becomes the root scope. The case is kept (ARM keeps the spelling of
// IDs); compare scopes with SameScope and ScopeContains.
func NormalizeScope(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, "/")
	if s == "" {
		return RootScope
	}
	if !strings.HasPrefix(s, "/") {
		s = "/" + s
	}
	return s
}

// SameScope reports whether two scopes name the same thing: normalized,
// they compare as ARM IDs do (armid.Same).
func SameScope(a, b string) bool { return armid.Same(NormalizeScope(a), NormalizeScope(b)) }

// ScopeContains reports whether inner is at or under outer: the root scope
// contains every scope, /subscriptions/s contains its resource groups and
// everything in them, a resource contains its child resources. Segments
// compare whole ("/subscriptions/s" does not contain "/subscriptions/s2")
// and without regard to case.
func ScopeContains(outer, inner string) bool {
	o, i := strings.ToLower(NormalizeScope(outer)), strings.ToLower(NormalizeScope(inner))
	if o == RootScope || o == i {
		return true
	}
	return strings.HasPrefix(i, o+"/")
}

// Assignment is a role assignment: a role definition given to a principal
// at a scope.
type Assignment struct {
	ID               string `json:"id,omitempty"`
	Name             string `json:"name,omitempty"`
	Scope            string `json:"scope"`
	RoleDefinitionID string `json:"roleDefinitionId"`
	PrincipalID      string `json:"principalId"`
	PrincipalType    string `json:"principalType,omitempty"`
}

// AppliesAt reports whether the assignment applies at scope: it is
// assigned there or above (assignments are inherited downwards).
func (a Assignment) AppliesAt(scope string) bool { return ScopeContains(a.Scope, scope) }

// DefinitionName is the name (the GUID) of a role definition from its ID,
// /subscriptions/{s}/providers/Microsoft.Authorization/roleDefinitions/{guid}
// or /providers/Microsoft.Authorization/roleDefinitions/{guid}; a bare
// GUID is returned as it is.
func DefinitionName(id string) string {
	id = strings.TrimRight(strings.TrimSpace(id), "/")
	return id[strings.LastIndex(id, "/")+1:]
}

// Effective returns the permission blocks that apply to principalID at
// scope: those of every role assigned to the principal at the scope or
// above. role resolves a role definition ID; assignments to roles it does
// not know grant nothing. The result is what ARM's permissions API lists
// for the principal at that scope.
func Effective(principalID, scope string, assignments []Assignment, role func(definitionID string) (RoleDefinition, bool)) Set {
	var out Set
	for _, a := range assignments {
		if !strings.EqualFold(a.PrincipalID, principalID) || !a.AppliesAt(scope) {
			continue
		}
		d, ok := role(a.RoleDefinitionID)
		if !ok {
			continue
		}
		out = append(out, d.Permissions...)
	}
	return out
}
