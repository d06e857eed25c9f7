package authz

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Lock levels.
const (
	LockCanNotDelete = "CanNotDelete"
	LockReadOnly     = "ReadOnly"
)

// --- management locks ---

// listLocks lists the locks at the scope and below it (a subscription's
// list holds every lock in it, as `az lock delete` expects); with
// $filter=atScope() the locks at the scope and above, those that apply
// to it.
func (s *Provider) listLocks(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	_, atScope := parseFilter(q.Query.Get("$filter"))["atscope"]
	return s.readState(ctx, func(st *authzState) (*api.Response, error) {
		out := []any{}
		for _, l := range st.locks {
			ls := l.scope()
			if (atScope && azrbac.ScopeContains(ls, e.scope)) || (!atScope && azrbac.ScopeContains(e.scope, ls)) {
				out = append(out, l)
			}
		}
		return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": out}}, nil
	})
}

func (s *Provider) getLock(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.getExt(ctx, e, kindLock, func() *api.Error {
		return api.NewError(http.StatusNotFound, "LockNotFound", "The lock '%s' could not be found.", e.name)
	})
}

// getExt answers the stored document of an extension resource.
func (s *Provider) getExt(ctx context.Context, e extRequest, kind string, notFound func() *api.Error) (*api.Response, error) {
	var resp *api.Response
	err := s.store.Read(ctx, func(tx *store.Txn) error {
		row, err := tx.GetAuthz(api.Key(e.id()))
		if err != nil {
			return err
		}
		if row == nil || row.Kind != kind {
			return notFound()
		}
		resp = &api.Response{Status: http.StatusOK, Body: json.RawMessage(row.Doc)}
		return nil
	})
	return resp, err
}

// putLock creates or updates a management lock (az lock create).
func (s *Provider) putLock(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	var in struct {
		Properties *lockProps `json:"properties"`
	}
	if err := api.DecodeObject(q.Body, &in); err != nil {
		return nil, err
	}
	if !ExtNameRE.MatchString(e.name) {
		return nil, api.BadRequest("InvalidLockName", "The lock name '%s' is invalid: at most 260 characters, none of <, >, *, %%, &, :, \\, ?, /, +, not ending with a space or '.'.", e.name)
	}
	if in.Properties == nil {
		return nil, api.BadRequest("InvalidRequestContent", "The lock has no properties: give properties.level (CanNotDelete or ReadOnly).")
	}
	p := *in.Properties
	switch {
	case strings.EqualFold(p.Level, LockCanNotDelete):
		p.Level = LockCanNotDelete
	case strings.EqualFold(p.Level, LockReadOnly):
		p.Level = LockReadOnly
	default:
		return nil, api.BadRequest("LockLevelInvalid", "The lock level '%s' is invalid: it must be CanNotDelete or ReadOnly.", p.Level)
	}
	if len(p.Notes) > 512 {
		return nil, api.BadRequest("LockNotesTooLong", "The notes of lock '%s' are longer than 512 characters.", e.name)
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.requireScope(tx, e.scope); err != nil {
			return err
		}
		prev, err := tx.GetAuthz(api.Key(e.id()))
		if err != nil {
			return err
		}
		l := lockDoc{ID: e.id(), Name: e.name, Type: "Microsoft.Authorization/locks", Properties: p}
		resp, err = storeExt(tx, api.Key(l.ID), kindLock, l.ID, e.scope, l, prev == nil)
		return err
	})
	return resp, err
}

func (s *Provider) deleteLock(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.deleteExt(ctx, e, kindLock)
}

// --- policy definitions ---

func policyDefinitionsAt(scope string) bool {
	segs := strings.Split(strings.Trim(scope, "/"), "/")
	return len(segs) == 2 && strings.EqualFold(segs[0], "subscriptions")
}

func (s *Provider) listPolicyDefinitions(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.readState(ctx, func(st *authzState) (*api.Response, error) {
		var defs []*PolicyDefinition
		for _, d := range st.policyDefs {
			at := scopeOfExtension(d.ID)
			switch {
			case at == azrbac.RootScope: // built-ins, listed everywhere
			case e.scope == azrbac.RootScope: // the tenant lists its built-ins only
				continue
			case !azrbac.ScopeContains(at, e.scope) && !azrbac.ScopeContains(e.scope, at):
				continue
			}
			defs = append(defs, d)
		}
		slices.SortFunc(defs, func(a, b *PolicyDefinition) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
		out := []any{}
		for _, d := range defs {
			out = append(out, d)
		}
		return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": out}}, nil
	})
}

func errPolicyDefinitionNotFound(name string) *api.Error {
	return api.NewError(http.StatusNotFound, "PolicyDefinitionNotFound", "The policy definition '%s' could not be found.", name)
}

// getPolicyDefinition answers a definition: a custom one at a
// subscription, a built-in at the tenant scope.
func (s *Provider) getPolicyDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	if e.scope == azrbac.RootScope {
		d := builtinPolicyDefinition(e.id())
		if d == nil {
			return nil, errPolicyDefinitionNotFound(e.name)
		}
		return &api.Response{Status: http.StatusOK, Body: d}, nil
	}
	return s.getExt(ctx, e, kindPolicyDefinition, func() *api.Error { return errPolicyDefinitionNotFound(e.name) })
}

// putPolicyDefinition creates or updates a custom policy definition at a
// subscription; the rule must keep to the subset policy.go supports.
func (s *Provider) putPolicyDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	if !policyDefinitionsAt(e.scope) {
		return nil, api.BadRequest("InvalidScope", "The fabric keeps policy definitions at subscriptions, not at '%s'.", e.scope)
	}
	var d PolicyDefinition
	if err := api.DecodeObject(q.Body, &d); err != nil {
		return nil, err
	}
	if !ExtNameRE.MatchString(e.name) {
		return nil, api.BadRequest("InvalidPolicyDefinitionName", "The policy definition name '%s' is invalid.", e.name)
	}
	d.ID, d.Name, d.Type = e.id(), e.name, "Microsoft.Authorization/policyDefinitions"
	if d.Properties.PolicyType == "" {
		d.Properties.PolicyType = "Custom"
	}
	if d.Properties.Mode == "" {
		d.Properties.Mode = "Indexed" // ARM's default
	}
	switch {
	case strings.EqualFold(d.Properties.Mode, "All"):
		d.Properties.Mode = "All"
	case strings.EqualFold(d.Properties.Mode, "Indexed"):
		d.Properties.Mode = "Indexed"
	default:
		return nil, errPolicyRule("mode %q is not All or Indexed", d.Properties.Mode)
	}
	if err := d.Compile(); err != nil {
		return nil, err
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		prev, err := tx.GetAuthz(api.Key(d.ID))
		if err != nil {
			return err
		}
		resp, err = storeExt(tx, api.Key(d.ID), kindPolicyDefinition, d.ID, e.scope, &d, prev == nil)
		return err
	})
	return resp, err
}

func (s *Provider) deletePolicyDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	if !policyDefinitionsAt(e.scope) {
		return nil, api.BadRequest("InvalidScope", "The fabric keeps policy definitions at subscriptions, not at '%s'; built-in definitions cannot be deleted.", e.scope)
	}
	return s.deleteExt(ctx, e, kindPolicyDefinition)
}

// --- policy assignments ---

// listPolicyAssignments lists the assignments that apply at the scope
// (at or above it) and those below it; $filter=atScope() keeps the first.
func (s *Provider) listPolicyAssignments(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	_, atScope := parseFilter(q.Query.Get("$filter"))["atscope"]
	return s.readState(ctx, func(st *authzState) (*api.Response, error) {
		out := []any{}
		for _, a := range st.policies {
			above := azrbac.ScopeContains(a.Properties.Scope, e.scope)
			below := azrbac.ScopeContains(e.scope, a.Properties.Scope)
			if above || (!atScope && below) {
				out = append(out, a)
			}
		}
		return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": out}}, nil
	})
}

func (s *Provider) getPolicyAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.getExt(ctx, e, kindPolicyAssignment, func() *api.Error {
		return api.NewError(http.StatusNotFound, "PolicyAssignmentNotFound", "The policy assignment '%s' is not found.", e.name)
	})
}

// putPolicyAssignment assigns a policy definition at a scope (az policy
// assignment create).
func (s *Provider) putPolicyAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	var a policyAssignment
	if err := api.DecodeObject(q.Body, &a); err != nil {
		return nil, err
	}
	if !ExtNameRE.MatchString(e.name) || len(e.name) > 64 {
		return nil, api.BadRequest("InvalidPolicyAssignmentName", "The policy assignment name '%s' is invalid: at most 64 characters, none of <, >, *, %%, &, :, \\, ?, /, +.", e.name)
	}
	a.ID, a.Name, a.Type = e.id(), e.name, "Microsoft.Authorization/policyAssignments"
	a.Properties.Scope = e.scope
	if a.Properties.NotScopes == nil {
		a.Properties.NotScopes = []string{}
	}
	switch {
	case a.Properties.EnforcementMode == "" || strings.EqualFold(a.Properties.EnforcementMode, "Default"):
		a.Properties.EnforcementMode = "Default"
	case strings.EqualFold(a.Properties.EnforcementMode, "DoNotEnforce"):
		a.Properties.EnforcementMode = "DoNotEnforce"
	default:
		return nil, api.BadRequest("InvalidPolicyAssignment", "enforcementMode '%s' is not Default or DoNotEnforce.", a.Properties.EnforcementMode)
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.requireScope(tx, e.scope); err != nil {
			return err
		}
		d := builtinPolicyDefinition(a.Properties.PolicyDefinitionID)
		if d == nil {
			row, err := tx.GetAuthz(api.Key(a.Properties.PolicyDefinitionID))
			if err != nil {
				return err
			}
			if row == nil || row.Kind != kindPolicyDefinition {
				return errPolicyDefinitionNotFound(a.Properties.PolicyDefinitionID)
			}
			if d, err = decodePolicyDefinition(row.Doc); err != nil {
				return err
			}
		}
		a.Properties.PolicyDefinitionID = d.ID
		if err := a.compile(); err != nil {
			return err
		}
		missing, undefined := d.compiled.CheckParameters(a.compiled)
		if len(missing) > 0 {
			return api.BadRequest("MissingPolicyParameter", "The policy assignment '%s' is missing the parameter(s) '%s' as defined in the policy definition '%s'.",
				a.Name, strings.Join(missing, ", "), d.Name)
		}
		if len(undefined) > 0 {
			return api.BadRequest("UndefinedPolicyParameter", "The policy assignment '%s' has the parameter '%s' which is not defined in the policy definition '%s'.", a.Name, undefined[0], d.Name)
		}
		prev, err := tx.GetAuthz(api.Key(a.ID))
		if err != nil {
			return err
		}
		resp, err = storeExt(tx, api.Key(a.ID), kindPolicyAssignment, a.ID, e.scope, &a, prev == nil)
		return err
	})
	return resp, err
}

func (s *Provider) deletePolicyAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.deleteExt(ctx, e, kindPolicyAssignment)
}
