package observe

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// GovernanceReader is the optional part of a Reader that reads the
// governance of a scope: the management locks and the policy assignments
// that apply there, and policy definitions (internal/cloud/azure has it).
// Reading them takes Microsoft.Authorization/*/read, which a Reader has
// and routekeeper's own role does not: a refusal is noted, not fatal.
type GovernanceReader interface {
	Locks(ctx context.Context, scope string) ([]Lock, error)
	PolicyAssignments(ctx context.Context, scope string) ([]PolicyAssignment, error)
	PolicyDefinition(ctx context.Context, id string) (*PolicyDefinition, error)
}

// GovernanceRead is what was read of the governance at one scope.
type GovernanceRead struct {
	Scope string
	Locks []Lock
	// Policies are the policy assignments that apply at Scope, each with
	// its definition (nil when it could not be read: DefinitionErr).
	Policies []PolicyRead
	// LocksErr and PoliciesErr say why the locks or the assignments could
	// not be read.
	LocksErr, PoliciesErr error
}

// PolicyRead is a policy assignment with its definition.
type PolicyRead struct {
	Assignment    PolicyAssignment
	Definition    *PolicyDefinition
	DefinitionErr error
}

// readGovernance reads, for Scope.Access, the locks and policies that
// apply where routekeeper writes: the table (or its resource group when
// it does not exist) and each guarded subnet.
func (o *Observation) readGovernance(ctx context.Context, c Reader) {
	gr, ok := c.(GovernanceReader)
	if !ok {
		return
	}
	o.governance = map[string]GovernanceRead{}
	defs := map[string]PolicyRead{}
	scopes := []string{o.scope.Table}
	if t, _ := o.Table(o.scope.Table); !t.Exists() && t.Err == nil {
		scopes[0] = armid.ResourceGroupID(o.scope.Table)
	}
	for _, s := range o.Subnets() {
		if !s.NotFound {
			scopes = append(scopes, s.ID)
		}
	}
	for _, scope := range scopes {
		if _, done := o.governance[armid.Key(scope)]; done || scope == "" {
			continue
		}
		g := GovernanceRead{Scope: scope}
		g.Locks, g.LocksErr = gr.Locks(ctx, scope)
		var as []PolicyAssignment
		as, g.PoliciesErr = gr.PolicyAssignments(ctx, scope)
		for _, a := range as {
			p, seen := defs[armid.Key(a.DefinitionID)]
			if !seen {
				p.Definition, p.DefinitionErr = gr.PolicyDefinition(ctx, a.DefinitionID)
				defs[armid.Key(a.DefinitionID)] = p
			}
			p.Assignment = a
			g.Policies = append(g.Policies, p)
		}
		o.governance[armid.Key(scope)] = g
	}
}

// Governance returns what was read of the governance at scope; ok is false
// when it was not read.
func (o *Observation) Governance(scope string) (GovernanceRead, bool) {
	if o.governance == nil {
		return GovernanceRead{}, false
	}
	g, ok := o.governance[armid.Key(scope)]
	return g, ok
}
