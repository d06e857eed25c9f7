package authz

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Role definitions and role assignments of Microsoft.Authorization
// (authz_api.go routes them).

// --- role definitions ---

// RoleDefinitionDoc is a role definition as ARM returns it.
type RoleDefinitionDoc struct {
	ID         string             `json:"id"`
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Properties roleDefinitionProp `json:"properties"`
}

type roleDefinitionProp struct {
	RoleName         string              `json:"roleName"`
	Type             string              `json:"type"`
	Description      string              `json:"description"`
	AssignableScopes []string            `json:"assignableScopes"`
	Permissions      []azrbac.Permission `json:"permissions"`
	CreatedOn        string              `json:"createdOn,omitempty"`
	UpdatedOn        string              `json:"updatedOn,omitempty"`
	CreatedBy        *string             `json:"createdBy"`
	UpdatedBy        *string             `json:"updatedBy"`
}

// RoleDoc renders a role definition under scope's subscription (built-ins
// are answered there, as ARM does).
func RoleDoc(d azrbac.RoleDefinition, scope string) RoleDefinitionDoc {
	id := "/providers/Microsoft.Authorization/roleDefinitions/" + d.Name
	if sub := api.SubscriptionOf(scope); sub != "" {
		id = "/subscriptions/" + sub + id
	}
	if d.RoleType == azrbac.TypeCustomRole && d.ID != "" {
		id = d.ID
	}
	perms := d.Permissions
	if perms == nil {
		perms = []azrbac.Permission{}
	}
	return RoleDefinitionDoc{ID: id, Name: d.Name, Type: "Microsoft.Authorization/roleDefinitions", Properties: roleDefinitionProp{
		RoleName: d.RoleName, Type: d.RoleType, Description: d.Description, AssignableScopes: d.AssignableScopes, Permissions: perms,
	}}
}

func (s *Provider) listRoleDefinitions(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.readState(ctx, func(st *authzState) (*api.Response, error) {
		f := parseFilter(q.Query.Get("$filter"))
		var out []any
		keep := func(d azrbac.RoleDefinition) bool {
			if v, ok := f["rolename"]; ok && !strings.EqualFold(v, d.RoleName) {
				return false
			}
			if v, ok := f["type"]; ok && !strings.EqualFold(v, d.RoleType) {
				return false
			}
			return true
		}
		for _, d := range azrbac.BuiltInRoles() {
			if keep(d) {
				out = append(out, RoleDoc(d, e.scope))
			}
		}
		for _, d := range sortedRoles(st) {
			visible := slices.ContainsFunc(d.AssignableScopes, func(a string) bool {
				return azrbac.ScopeContains(a, e.scope) || azrbac.ScopeContains(e.scope, a)
			})
			if visible && keep(d) {
				out = append(out, RoleDoc(d, e.scope))
			}
		}
		return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": nonNil(out)}}, nil
	})
}

func sortedRoles(st *authzState) []azrbac.RoleDefinition {
	var out []azrbac.RoleDefinition
	for _, d := range st.roles {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b azrbac.RoleDefinition) int {
		return strings.Compare(strings.ToLower(a.RoleName), strings.ToLower(b.RoleName))
	})
	return out
}

// parseFilter reads the simple OData filters az and the SDKs send:
// `name eq 'value'` joined by "and", and the functions atScope(),
// assignedTo('id') and principalId eq 'id'. Keys are lower case; a
// function's key is its name ("atscope", "assignedto").
func parseFilter(f string) map[string]string {
	out := map[string]string{}
	for _, part := range andRE.Split(strings.TrimSpace(f), -1) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if name, arg, ok := strings.Cut(part, "("); ok && !strings.Contains(name, " ") {
			out[strings.ToLower(name)] = strings.Trim(strings.TrimSuffix(strings.TrimSpace(arg), ")"), "' ")
			continue
		}
		k, v, ok := strings.Cut(part, " eq ")
		if !ok {
			continue
		}
		out[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), "'")
	}
	return out
}

var andRE = regexp.MustCompile(`(?i)\s+and\s+`)

func nonNil(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

func errRoleDefinitionNotFound(name string) *api.Error {
	return api.NewError(http.StatusNotFound, "RoleDefinitionDoesNotExist", "The specified role definition with ID '%s' does not exist.", name)
}

func (s *Provider) getRoleDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.readState(ctx, func(st *authzState) (*api.Response, error) {
		d, ok := st.role(e.name)
		if !ok {
			return nil, errRoleDefinitionNotFound(e.name)
		}
		return &api.Response{Status: http.StatusOK, Body: RoleDoc(d, e.scope)}, nil
	})
}

// putRoleDefinition creates or updates a custom role (az role definition
// create/update).
func (s *Provider) putRoleDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	if _, ok := azrbac.BuiltInRole(e.name); ok {
		return nil, api.NewError(http.StatusForbidden, "RoleDefinitionUpdateNotAllowed", "The built-in role definition '%s' cannot be changed.", e.name)
	}
	if _, err := uuid.Parse(e.name); err != nil {
		return nil, api.BadRequest("InvalidRoleDefinitionId", "The role definition ID '%s' is not valid: it must be a GUID.", e.name)
	}
	var in struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := api.DecodeObject(q.Body, &in); err != nil {
		return nil, err
	}
	if len(in.Properties) == 0 {
		return nil, api.BadRequest("InvalidRoleDefinition", "The role definition has no properties.")
	}
	d, err := azrbac.ParseRoleDefinition(append(append([]byte(`{"properties":`), in.Properties...), '}'))
	if err != nil {
		return nil, api.BadRequest("InvalidRoleDefinition", "The role definition is not valid: %v.", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	d.Name, d.RoleType = strings.ToLower(e.name), azrbac.TypeCustomRole
	d.ID = strings.TrimRight(e.scope, "/") + "/providers/Microsoft.Authorization/roleDefinitions/" + d.Name
	if e.scope == "/" {
		return nil, api.BadRequest("InvalidScope", "Custom role definitions are created under a subscription.")
	}
	for _, p := range d.Permissions {
		if len(p.Actions) == 0 && len(p.DataActions) == 0 {
			return nil, api.BadRequest("InvalidRoleDefinition", "The role definition '%s' grants no action: give Actions or DataActions.", d.RoleName)
		}
	}
	var resp *api.Response
	err = s.store.Write(ctx, func(tx *store.Txn) error {
		prev, err := tx.GetAuthz(roleDefinitionKey(d.Name))
		if err != nil {
			return err
		}
		st, err := loadAuthz(tx, 0)
		if err != nil {
			return err
		}
		for _, o := range st.roles {
			if strings.EqualFold(o.RoleName, d.RoleName) && !strings.EqualFold(o.Name, d.Name) {
				return api.NewError(http.StatusConflict, "RoleDefinitionWithSameNameExists", "A custom role with the same name '%s' already exists in this directory. Use a different name.", d.RoleName)
			}
		}
		if _, ok := azrbac.BuiltInRole(d.RoleName); ok {
			return api.NewError(http.StatusConflict, "RoleDefinitionWithSameNameExists", "A role with the same name '%s' already exists: it is a built-in role.", d.RoleName)
		}
		doc := RoleDoc(d, e.scope)
		now, by := nowStamp(s), q.Caller.ObjectID
		doc.Properties.CreatedOn, doc.Properties.UpdatedOn = now, now
		doc.Properties.CreatedBy, doc.Properties.UpdatedBy = &by, &by
		if prev != nil {
			var old RoleDefinitionDoc
			if json.Unmarshal(prev.Doc, &old) == nil {
				doc.Properties.CreatedOn, doc.Properties.CreatedBy = old.Properties.CreatedOn, old.Properties.CreatedBy
			}
		}
		resp, err = storeExt(tx, roleDefinitionKey(d.Name), kindRoleDefinition, doc.ID, e.scope, doc, prev == nil)
		return err
	})
	return resp, err
}

func roleDefinitionKey(guid string) string { return "roledefinition:" + strings.ToLower(guid) }

func (s *Provider) deleteRoleDefinition(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	if _, ok := azrbac.BuiltInRole(e.name); ok {
		return nil, api.NewError(http.StatusForbidden, "RoleDefinitionUpdateNotAllowed", "The built-in role definition '%s' cannot be deleted.", e.name)
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		row, err := tx.GetAuthz(roleDefinitionKey(e.name))
		if err != nil {
			return err
		}
		if row == nil {
			resp = &api.Response{Status: http.StatusNoContent}
			return nil
		}
		st, err := loadAuthz(tx, 0)
		if err != nil {
			return err
		}
		for _, a := range st.assignments {
			if strings.EqualFold(azrbac.DefinitionName(a.RoleDefinitionID), e.name) {
				return api.BadRequest("RoleDefinitionHasAssignments", "There are existing role assignments referencing role '%s'; delete them first.", e.name)
			}
		}
		if err := tx.DeleteAuthz(row.Key); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusOK, Body: json.RawMessage(row.Doc)}
		return nil
	})
	return resp, err
}

// --- role assignments ---

// RoleAssignmentDoc is a role assignment as ARM returns it.
type RoleAssignmentDoc struct {
	ID         string             `json:"id"`
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Properties roleAssignmentProp `json:"properties"`
}

type roleAssignmentProp struct {
	RoleDefinitionID                   string  `json:"roleDefinitionId"`
	PrincipalID                        string  `json:"principalId"`
	PrincipalType                      string  `json:"principalType"`
	Scope                              string  `json:"scope"`
	Description                        *string `json:"description"`
	Condition                          *string `json:"condition"`
	ConditionVersion                   *string `json:"conditionVersion"`
	CreatedOn                          string  `json:"createdOn,omitempty"`
	UpdatedOn                          string  `json:"updatedOn,omitempty"`
	CreatedBy                          *string `json:"createdBy"`
	UpdatedBy                          *string `json:"updatedBy"`
	DelegatedManagedIdentityResourceID *string `json:"delegatedManagedIdentityResourceId"`
}

func (d RoleAssignmentDoc) assignment() azrbac.Assignment {
	return azrbac.Assignment{ID: d.ID, Name: d.Name, Scope: d.Properties.Scope, RoleDefinitionID: d.Properties.RoleDefinitionID,
		PrincipalID: d.Properties.PrincipalID, PrincipalType: d.Properties.PrincipalType}
}

// assignmentDocs are the stored role assignments, decoded.
func assignmentDocs(tx *store.Txn) ([]RoleAssignmentDoc, error) {
	rows, err := tx.AllAuthz()
	if err != nil {
		return nil, err
	}
	var out []RoleAssignmentDoc
	for _, r := range rows {
		if r.Kind != kindRoleAssignment {
			continue
		}
		var d RoleAssignmentDoc
		if err := json.Unmarshal(r.Doc, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (s *Provider) listRoleAssignments(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	f := parseFilter(q.Query.Get("$filter"))
	principal := cmp.Or(f["principalid"], f["assignedto"])
	_, atScope := f["atscope"]
	var out []any
	err := s.store.Read(ctx, func(tx *store.Txn) error {
		docs, err := assignmentDocs(tx)
		if err != nil {
			return err
		}
		for _, d := range docs {
			above := azrbac.ScopeContains(d.Properties.Scope, e.scope)
			below := azrbac.ScopeContains(e.scope, d.Properties.Scope)
			if !above && (atScope || !below) {
				continue
			}
			if principal != "" && !strings.EqualFold(principal, d.Properties.PrincipalID) {
				continue
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": nonNil(out)}}, nil
}

func (s *Provider) getRoleAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.getExt(ctx, e, kindRoleAssignment, func() *api.Error {
		return api.NewError(http.StatusNotFound, "RoleAssignmentNotFound", "The role assignment '%s' is not found.", e.name)
	})
}

// putRoleAssignment creates a role assignment (az role assignment create).
func (s *Provider) putRoleAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	var in struct {
		Properties struct {
			RoleDefinitionID string  `json:"roleDefinitionId"`
			PrincipalID      string  `json:"principalId"`
			PrincipalType    string  `json:"principalType"`
			Description      *string `json:"description"`
			Condition        *string `json:"condition"`
			ConditionVersion *string `json:"conditionVersion"`
		} `json:"properties"`
	}
	if err := api.DecodeObject(q.Body, &in); err != nil {
		return nil, err
	}
	p := in.Properties
	if _, err := uuid.Parse(e.name); err != nil {
		return nil, api.BadRequest("InvalidRoleAssignmentId", "The role assignment ID '%s' is not valid. The role assignment ID must be a GUID.", e.name)
	}
	if strings.TrimSpace(p.PrincipalID) == "" {
		return nil, api.BadRequest("InvalidPrincipalId", "A valid principal ID must be provided for role assignment.")
	}
	if p.PrincipalType == "" {
		p.PrincipalType = "User" // ARM's default when none is given
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.requireScope(tx, e.scope); err != nil {
			return err
		}
		st, err := loadAuthz(tx, 0)
		if err != nil {
			return err
		}
		role, ok := st.role(p.RoleDefinitionID)
		if !ok {
			return api.BadRequest("RoleDefinitionDoesNotExist", "The specified role definition with ID '%s' does not exist.", azrbac.DefinitionName(p.RoleDefinitionID))
		}
		if !role.AssignableAt(e.scope) {
			return api.BadRequest("RoleAssignmentScopeNotAssignable", "The role '%s' is not available for assignment at the requested scope '%s': its assignable scopes are %s.",
				role.RoleName, e.scope, strings.Join(role.AssignableScopes, ", "))
		}
		roleID := RoleDoc(role, e.scope).ID
		docs, err := assignmentDocs(tx)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if armid.Same(d.ID, e.id()) {
				if !strings.EqualFold(d.Properties.PrincipalID, p.PrincipalID) || !strings.EqualFold(azrbac.DefinitionName(d.Properties.RoleDefinitionID), role.Name) {
					return api.BadRequest("RoleAssignmentUpdateNotPermitted", "Tenant ID, application ID, principal ID, and scope are not allowed to be updated.")
				}
				resp = &api.Response{Status: http.StatusCreated, Body: d}
				return nil
			}
			if azrbac.SameScope(d.Properties.Scope, e.scope) && strings.EqualFold(d.Properties.PrincipalID, p.PrincipalID) &&
				strings.EqualFold(azrbac.DefinitionName(d.Properties.RoleDefinitionID), role.Name) {
				return api.NewError(http.StatusConflict, "RoleAssignmentExists", "The role assignment already exists.")
			}
		}
		now, by := nowStamp(s), q.Caller.ObjectID
		d := RoleAssignmentDoc{ID: e.id(), Name: strings.ToLower(e.name), Type: "Microsoft.Authorization/roleAssignments", Properties: roleAssignmentProp{
			RoleDefinitionID: roleID, PrincipalID: p.PrincipalID, PrincipalType: p.PrincipalType, Scope: e.scope,
			Description: p.Description, Condition: p.Condition, ConditionVersion: p.ConditionVersion,
			CreatedOn: now, UpdatedOn: now, CreatedBy: &by, UpdatedBy: &by,
		}}
		resp, err = storeExt(tx, api.Key(d.ID), kindRoleAssignment, d.ID, e.scope, d, true)
		return err
	})
	return resp, err
}

func (s *Provider) deleteRoleAssignment(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	return s.deleteExt(ctx, e, kindRoleAssignment)
}

// storeExt stores v as the document of an extension resource (of kind,
// with its ID and scope, under k) and answers it: 201 when it is new,
// else 200.
func storeExt(tx *store.Txn, k, kind, id, scope string, v any, created bool) (*api.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := tx.PutAuthz(&store.AuthzRow{Key: k, Kind: kind, ID: id, Scope: scope, Doc: b}); err != nil {
		return nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return &api.Response{Status: status, Body: json.RawMessage(b)}, nil
}

// deleteExt deletes an extension resource: 200 with what it was, 204
// when there was none.
func (s *Provider) deleteExt(ctx context.Context, e extRequest, kind string) (*api.Response, error) {
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		row, err := tx.GetAuthz(api.Key(e.id()))
		if err != nil {
			return err
		}
		if row == nil || row.Kind != kind {
			resp = &api.Response{Status: http.StatusNoContent}
			return nil
		}
		if err := tx.DeleteAuthz(row.Key); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusOK, Body: json.RawMessage(row.Doc)}
		return nil
	})
	return resp, err
}
