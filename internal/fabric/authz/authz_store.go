package authz

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Kinds of authorization rows.
const (
	kindPrincipal        = "principal"
	kindRoleDefinition   = "roleDefinition"
	kindRoleAssignment   = "roleAssignment"
	kindLock             = "lock"
	kindPolicyDefinition = "policyDefinition"
	kindPolicyAssignment = "policyAssignment"
)

// PrincipalDoc is a principal the topology (or /_fabric/principals)
// declared: the client ID tokens are asked for and the object ID they name.
type PrincipalDoc struct {
	ClientID      string `json:"clientId"`
	ObjectID      string `json:"objectId"`
	DisplayName   string `json:"displayName,omitempty"`
	PrincipalType string `json:"principalType,omitempty"`
}

// lockDoc is a management lock as ARM returns it.
type lockDoc struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Properties lockProps `json:"properties"`
}

type lockProps struct {
	Level  string      `json:"level"`
	Notes  string      `json:"notes,omitempty"`
	Owners []lockOwner `json:"owners,omitempty"`
}

type lockOwner struct {
	ApplicationID string `json:"applicationId,omitempty"`
}

// scope is the scope a lock is at: its ID without the lock part.
func (l lockDoc) scope() string { return scopeOfExtension(l.ID) }

// authzState is the authorization state as a Server uses it.
type authzState struct {
	rev         int64
	principals  map[string]PrincipalDoc // by lower client ID
	roles       map[string]azrbac.RoleDefinition
	assignments []azrbac.Assignment
	locks       []lockDoc
	policyDefs  map[string]*PolicyDefinition // by lower ID; the built-ins too
	policies    []*policyAssignment
}

// empty reports whether the fabric holds no authorization at all: today's
// behaviour, everyone may do everything.
func (st *authzState) empty() bool {
	return len(st.assignments) == 0 && len(st.locks) == 0 && len(st.policies) == 0
}

// enforced reports whether role-based access control is on: as soon as the
// fabric holds one role assignment. Locks and policies apply regardless.
func (st *authzState) enforced() bool { return len(st.assignments) > 0 }

// role resolves a role definition ID (or GUID): built-in or custom.
func (st *authzState) role(id string) (azrbac.RoleDefinition, bool) {
	if d, ok := azrbac.BuiltInRole(azrbac.DefinitionName(id)); ok {
		return d, true
	}
	d, ok := st.roles[strings.ToLower(azrbac.DefinitionName(id))]
	return d, ok
}

// authzCache keeps a Server's copy of the authorization state.
type authzCache struct {
	mu sync.Mutex
	st *authzState
}

// authzState returns the current authorization state, reloading it when
// another writer (this process or another) changed it.
func (s *Provider) authzState(ctx context.Context) (*authzState, error) {
	var st *authzState
	err := s.store.Read(ctx, func(tx *store.Txn) error {
		rev, err := tx.AuthzRev()
		if err != nil {
			return err
		}
		s.authz.mu.Lock()
		cur := s.authz.st
		s.authz.mu.Unlock()
		if cur != nil && cur.rev == rev {
			st = cur
			return nil
		}
		if st, err = loadAuthz(tx, rev); err != nil {
			return err
		}
		s.authz.mu.Lock()
		s.authz.st = st
		s.authz.mu.Unlock()
		return nil
	})
	return st, err
}

func loadAuthz(tx *store.Txn, rev int64) (*authzState, error) {
	st := &authzState{rev: rev, principals: map[string]PrincipalDoc{}, roles: map[string]azrbac.RoleDefinition{},
		policyDefs: maps.Clone(builtinPolicyDefinitions())}
	rows, err := tx.AllAuthz()
	if err != nil {
		return nil, err
	}
	var assignments []*policyAssignment
	for _, r := range rows {
		var err error
		switch r.Kind {
		case kindPrincipal:
			var p PrincipalDoc
			if err = json.Unmarshal(r.Doc, &p); err == nil {
				st.principals[strings.ToLower(p.ClientID)] = p
			}
		case kindRoleDefinition:
			var d azrbac.RoleDefinition
			if d, err = azrbac.ParseRoleDefinition(r.Doc); err == nil {
				st.roles[strings.ToLower(d.Name)] = d
			}
		case kindRoleAssignment:
			var a RoleAssignmentDoc
			if err = json.Unmarshal(r.Doc, &a); err == nil {
				st.assignments = append(st.assignments, a.assignment())
			}
		case kindLock:
			var l lockDoc
			if err = json.Unmarshal(r.Doc, &l); err == nil {
				st.locks = append(st.locks, l)
			}
		case kindPolicyDefinition:
			var d *PolicyDefinition
			if d, err = decodePolicyDefinition(r.Doc); err == nil {
				st.policyDefs[strings.ToLower(d.ID)] = d
			}
		case kindPolicyAssignment:
			var a policyAssignment
			if err = json.Unmarshal(r.Doc, &a); err == nil {
				if err = a.compile(); err == nil {
					assignments = append(assignments, &a)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("stored %s %s: %w", r.Kind, r.ID, err)
		}
	}
	st.policies = assignments
	return st, nil
}
