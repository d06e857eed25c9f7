package observe

import (
	"encoding/json"
	"strings"
)

// The governance of a scope, which doctor reads to tell before writing
// which of routekeeper's writes a management lock or a deny policy would
// refuse: the locks that apply at a scope, the policy assignments that
// apply there and their definitions. internal/azpolicy evaluates the
// policies (azpolicy.ParseAssignment(a.Document),
// azpolicy.ParseDefinition(d.Document)).

// Lock levels.
const (
	LockCanNotDelete = "CanNotDelete"
	LockReadOnly     = "ReadOnly"
)

// Lock is a management lock (Microsoft.Authorization/locks). It applies
// at its scope and below, to every principal: any lock refuses a DELETE
// there (and of anything that holds a locked scope); a ReadOnly lock also
// refuses every PUT, PATCH and POST there.
type Lock struct {
	ID, Name string
	// Level is LockCanNotDelete or LockReadOnly (as ARM spells it).
	Level string
	// Scope is the lock's own scope, from its ID: the subscription,
	// resource group or resource it was put on.
	Scope string
	Notes string
}

// RefusesWrites reports whether the lock refuses writes (PUT, PATCH,
// POST) at and under its scope: a ReadOnly lock. Every lock refuses
// deletes.
func (l Lock) RefusesWrites() bool { return strings.EqualFold(l.Level, LockReadOnly) }

// PolicyAssignment is a policy assignment as ARM answers it.
type PolicyAssignment struct {
	ID, Name, DisplayName string
	// Scope is where it applies (there and below), except NotScopes.
	Scope     string
	NotScopes []string
	// DefinitionID is the assigned policy definition, or a policy set
	// definition (an initiative), which internal/azpolicy does not read.
	DefinitionID string
	// EnforcementMode is Default or DoNotEnforce.
	EnforcementMode string
	// Document is the assignment's ARM JSON as read, parameters included.
	Document json.RawMessage
}

// PolicyDefinition is a policy definition as ARM answers it.
type PolicyDefinition struct {
	ID, Name, DisplayName string
	// PolicyType is BuiltIn, Custom or Static; Mode All, Indexed or a
	// resource provider mode.
	PolicyType, Mode string
	// Document is the definition's ARM JSON as read, policyRule included.
	Document json.RawMessage
}
