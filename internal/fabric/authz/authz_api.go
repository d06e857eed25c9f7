package authz

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Microsoft.Authorization at every scope: role definitions, role
// assignments, management locks, policy definitions and assignments, and
// the permissions API, with the paths, bodies and status codes of ARM
// (azure-rest-api-specs, specification/authorization and
// specification/resources: locks and policy). Lists are not paged.

const authorizationNamespace = "Microsoft.Authorization"

// extRequest is a parsed Microsoft.Authorization request:
// {scope}/providers/Microsoft.Authorization/{kind}[/{name}].
type extRequest struct {
	scope string // "/" or the path before /providers/Microsoft.Authorization
	kind  string // roleDefinitions, roleAssignments, locks, ... as spelled by typeSpelling
	name  string // "" for the collection
}

func (e extRequest) id() string {
	return strings.TrimRight(e.scope, "/") + "/providers/" + authorizationNamespace + "/" + e.kind + "/" + e.name
}

// AuthorizationAPI routes a Microsoft.Authorization request.
func (s *Provider) AuthorizationAPI(ctx context.Context, q *api.Request) (*api.Response, error) {
	i := AuthorizationIndex(q.Segs)
	n := len(q.Segs)
	if n < i+3 || n > i+4 {
		return nil, api.NoRoute(q)
	}
	e := extRequest{scope: "/" + strings.Join(q.Segs[:i], "/"), kind: api.Spell(q.Segs[i+2])}
	if n == i+4 {
		e.name = q.Segs[i+3]
	}
	if err := checkExtScope(q, e); err != nil {
		return nil, err
	}
	one := func(hs map[string]api.Handler) (*api.Response, error) {
		if e.name == "" {
			return nil, api.NoRoute(q)
		}
		return api.Methods(q, hs)(ctx, q)
	}
	list := func(h api.Handler) (*api.Response, error) {
		if e.name != "" {
			return nil, api.NoRoute(q)
		}
		return api.Methods(q, map[string]api.Handler{"GET": h})(ctx, q)
	}
	with := func(f func(context.Context, *api.Request, extRequest) (*api.Response, error)) api.Handler {
		return func(ctx context.Context, q *api.Request) (*api.Response, error) { return f(ctx, q, e) }
	}
	switch e.kind {
	case "roleDefinitions":
		if e.name == "" {
			return list(with(s.listRoleDefinitions))
		}
		return one(map[string]api.Handler{"GET": with(s.getRoleDefinition), "PUT": with(s.putRoleDefinition), "DELETE": with(s.deleteRoleDefinition)})
	case "roleAssignments":
		if e.name == "" {
			return list(with(s.listRoleAssignments))
		}
		return one(map[string]api.Handler{"GET": with(s.getRoleAssignment), "PUT": with(s.putRoleAssignment), "DELETE": with(s.deleteRoleAssignment)})
	case "locks":
		if e.name == "" {
			return list(with(s.listLocks))
		}
		return one(map[string]api.Handler{"GET": with(s.getLock), "PUT": with(s.putLock), "DELETE": with(s.deleteLock)})
	case "policyDefinitions":
		if e.name == "" {
			return list(with(s.listPolicyDefinitions))
		}
		return one(map[string]api.Handler{"GET": with(s.getPolicyDefinition), "PUT": with(s.putPolicyDefinition), "DELETE": with(s.deletePolicyDefinition)})
	case "policyAssignments":
		if e.name == "" {
			return list(with(s.listPolicyAssignments))
		}
		return one(map[string]api.Handler{"GET": with(s.getPolicyAssignment), "PUT": with(s.putPolicyAssignment), "DELETE": with(s.deletePolicyAssignment)})
	case "permissions":
		return list(with(s.listPermissions))
	}
	return nil, api.NewError(http.StatusNotFound, "InvalidResourceType",
		"The resource type '%s' could not be found in the namespace 'Microsoft.Authorization' for api version '%s'.", q.Segs[i+2], q.APIVersion)
}

// checkExtScope accepts the scopes ARM serves extension resources at:
// the root (role and policy definitions only), a subscription, a resource
// group, or a resource under a resource group.
func checkExtScope(q *api.Request, e extRequest) error {
	segs := strings.Split(strings.Trim(e.scope, "/"), "/")
	switch {
	case e.scope == "/":
		if e.kind == "roleDefinitions" || e.kind == "policyDefinitions" || (e.kind == "roleAssignments" && e.name == "") {
			return nil
		}
	case len(segs) == 2 && strings.EqualFold(segs[0], "subscriptions"):
		return nil
	case len(segs) == 4 && strings.EqualFold(segs[0], "subscriptions") && strings.EqualFold(segs[2], "resourceGroups"):
		return nil
	case len(segs) >= 8 && len(segs)%2 == 0 && strings.EqualFold(segs[0], "subscriptions") &&
		strings.EqualFold(segs[2], "resourceGroups") && strings.EqualFold(segs[4], "providers"):
		return nil
	}
	return api.BadRequest("InvalidScope", "The scope '%s' is not valid for %s: use a subscription, resource group or resource ID.", e.scope, e.kind)
}

// requireScope checks that the scope of an extension resource being
// written exists: its resource group, and for a resource scope the
// resource (a top-level resource, or a route or subnet of one).
func (s *Provider) requireScope(tx *store.Txn, scope string) error {
	segs := strings.Split(strings.Trim(scope, "/"), "/")
	if len(segs) < 4 {
		return nil
	}
	if _, err := s.groups.Require(tx, segs[1], segs[3], true); err != nil {
		return err
	}
	if len(segs) < 8 {
		return nil
	}
	top := "/" + strings.Join(segs[:8], "/")
	row, err := tx.GetResource(api.Key(top))
	if err != nil {
		return err
	}
	if row == nil {
		return api.ResourceNotFound(segs[5]+"/"+segs[6], segs[7], segs[3])
	}
	if len(segs) >= 10 {
		var doc map[string]any
		if err := json.Unmarshal(row.Doc, &doc); err != nil {
			return err
		}
		props, _ := azpolicy.Field(doc, "properties").(map[string]any)
		children, _ := azpolicy.Field(props, segs[8]).([]any)
		if !slices.ContainsFunc(children, func(c any) bool {
			m, _ := c.(map[string]any)
			name, _ := azpolicy.Field(m, "name").(string)
			return strings.EqualFold(name, segs[9])
		}) {
			return api.ChildNotFound(segs[6], segs[7], segs[8], segs[9], segs[3])
		}
	}
	return nil
}

// ExtNameRE is what ARM accepts as the name of a lock or policy
// assignment: no < > * % & : \ ? / + and not ending with a space or '.'.
var ExtNameRE = regexp.MustCompile(`^[^<>*%&:\\?/+]{0,259}[^<>*%&:\\?/+ .]$`)

func nowStamp(s *Provider) string { return s.now().UTC().Format(time.RFC3339Nano) }

// readState runs fn with the authorization state read in a fresh snapshot
// (so that a list sees this process's own last write).
func (s *Provider) readState(ctx context.Context, fn func(*authzState) (*api.Response, error)) (*api.Response, error) {
	st, err := s.authzState(ctx)
	if err != nil {
		return nil, err
	}
	return fn(st)
}

// --- permissions ---

// listPermissions is ARM's permissions API: the caller's permission
// blocks that apply at the scope, one per role assignment (Owner's for the
// fabric's administrator, everything while the fabric enforces no RBAC).
func (s *Provider) listPermissions(ctx context.Context, q *api.Request, e extRequest) (*api.Response, error) {
	st, _ := q.Authz.(*authzState)
	if st == nil {
		var err error
		if st, err = s.authzState(ctx); err != nil {
			return nil, err
		}
	}
	var set azrbac.Set
	if st.enforced() && !q.Caller.Admin() {
		set = azrbac.Effective(q.Caller.ObjectID, e.scope, st.assignments, st.role)
	} else {
		owner, _ := azrbac.BuiltInRole(azrbac.OwnerID)
		set = owner.Set()
	}
	out := []any{}
	for _, p := range set {
		out = append(out, p)
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": out}}, nil
}
