package authz

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// ARM's checks before a request reaches a resource provider, in ARM's
// order: role-based access control (403 AuthorizationFailed), the linked
// access checks of the resources a write references (403
// LinkedAuthorizationFailed), management locks (409 ScopeLocked) and deny
// policies (403 RequestDisallowedByPolicy). A fabric with no role
// assignment, lock or policy assignment checks nothing. See docs/fabric.md,
// "Identity and authorization".

// armOp is what ARM checks of a request.
type armOp struct {
	// action is the RBAC action: {type}/read, /write, /delete or
	// /{action}/action. "" means no role is needed.
	action string
	// scope is the request's path: the resource (or the list's parent).
	scope string
	// change is "write" or "delete" for what locks and policies consider,
	// "" for a read.
	change string
	// resourceType and name are the resource a PUT or PATCH writes, for
	// policies ("" when none).
	resourceType, name string
	// authorization marks Microsoft.Authorization requests: locks and
	// policies do not apply to them (a lock could not be removed else).
	authorization bool
}

// classifyRequest returns what ARM checks of a request; nil for requests
// that need nothing: the tenant and subscription lists, the async-operation
// status endpoints (anyone holding an operation's URL may poll it), the
// permissions API (it answers for the caller), the built-in policy
// definitions (public in the tenant), and paths the router refuses anyway.
func classifyRequest(q *api.Request) *armOp {
	seg := q.Segs
	n := len(seg)
	is := func(i int, want string) bool { return i < n && strings.EqualFold(seg[i], want) }
	path := "/" + strings.Join(seg, "/")
	verb := func(typ string) *armOp {
		op := &armOp{scope: path}
		switch q.Method {
		case http.MethodGet, http.MethodHead:
			op.action = typ + "/read"
		case http.MethodPut, http.MethodPatch:
			op.action, op.change = typ+"/write", "write"
		case http.MethodDelete:
			op.action, op.change = typ+"/delete", "delete"
		default:
			return nil
		}
		return op
	}
	if i := AuthorizationIndex(seg); i >= 0 {
		if i+2 >= n || is(i+2, "permissions") || isBuiltinPolicyRead(q.Method, seg) {
			return nil
		}
		op := verb("Microsoft.Authorization/" + api.Spell(seg[i+2]))
		if op != nil {
			op.authorization = true
		}
		return op
	}
	if !is(0, "subscriptions") || n < 2 {
		return nil
	}
	switch {
	case n == 2:
		return verb("Microsoft.Resources/subscriptions")
	case n == 3 && is(2, "resourcegroups"):
		return verb("Microsoft.Resources/subscriptions/resourceGroups")
	case n == 3 && (is(2, "locations") || is(2, "resources") || is(2, "providers")):
		return verb("Microsoft.Resources/subscriptions/" + api.Spell(seg[2]))
	case n == 4 && is(2, "providers"):
		return verb("Microsoft.Resources/subscriptions/providers")
	case n == 4 && is(2, "resourcegroups"):
		op := verb("Microsoft.Resources/subscriptions/resourceGroups")
		if op != nil && op.change == "write" {
			op.resourceType, op.name = "Microsoft.Resources/subscriptions/resourceGroups", seg[3]
		}
		return op
	case n == 5 && is(2, "resourcegroups") && is(4, "resources"):
		return verb("Microsoft.Resources/subscriptions/resourceGroups/resources")
	case n >= 5 && is(2, "providers"):
		if n == 7 && is(4, "locations") && is(6, "usages") {
			// Checked on the subscription, as ARM does for
			// Microsoft.Network/locations/usages/read.
			op := verb(seg[3] + "/locations/usages")
			if op != nil {
				op.scope = "/" + strings.Join(seg[:2], "/")
			}
			return op
		}
		if is(4, "locations") {
			return nil // operations and operationResults
		}
		op := verb(seg[3] + "/" + api.Spell(seg[4]))
		if op != nil {
			op.scope = "/" + strings.Join(seg[:4], "/")
		}
		return op
	case n >= 7 && is(2, "resourcegroups") && is(4, "providers"):
		return classifyProvider(q, seg, verb)
	case (n == 7 || n == 8) && is(2, "resourcegroups") && is(4, "deployments") && is(6, "operations"):
		// ARM's older path of a deployment's operations, which the SDKs
		// call: the action of the provider path's.
		return verb("Microsoft.Resources/deployments/operations")
	}
	return nil
}

// classifyProvider classifies the paths under a resource group's
// providers/{namespace}: lists, resources, child resources and POST
// actions.
func classifyProvider(q *api.Request, seg []string, verb func(string) *armOp) *armOp {
	n := len(seg)
	ns, typ := seg[5], api.Spell(seg[6])
	switch {
	case n == 7: // list in a group: checked on .../providers/{namespace}
		op := verb(ns + "/" + typ)
		if op != nil {
			op.scope = "/" + strings.Join(seg[:6], "/")
		}
		return op
	case n == 8:
		op := verb(ns + "/" + typ)
		if op != nil && op.change == "write" {
			op.resourceType, op.name = ns+"/"+typ, seg[7]
		}
		return op
	case n == 9 && q.Method == http.MethodPost: // a POST action on a resource
		return &armOp{action: ns + "/" + typ + "/" + seg[8] + "/action", scope: "/" + strings.Join(seg, "/"), change: "write"}
	case n == 9 || n == 10:
		op := verb(ns + "/" + typ + "/" + api.Spell(seg[8]))
		if op != nil && n == 10 && op.change == "write" {
			op.resourceType, op.name = ns+"/"+typ+"/"+api.Spell(seg[8]), seg[9]
		}
		return op
	}
	return nil
}

// AuthorizationIndex is the index of "providers" in a
// .../providers/Microsoft.Authorization/... path, -1 when there is none.
func AuthorizationIndex(seg []string) int {
	for i := 0; i+1 < len(seg); i++ {
		if strings.EqualFold(seg[i], "providers") && strings.EqualFold(seg[i+1], "Microsoft.Authorization") {
			return i
		}
	}
	return -1
}

// Authorize runs ARM's checks for a request and records its caller.
func (s *Provider) Authorize(ctx context.Context, q *api.Request) error {
	st, err := s.authzState(ctx)
	if err != nil {
		return err
	}
	q.Caller = st.callerOf(q.HTTP)
	q.Authz = st
	if st.empty() {
		return nil
	}
	op := classifyRequest(q)
	if st.enforced() && !q.Caller.Known {
		return api.NewError(http.StatusUnauthorized, "InvalidAuthenticationToken",
			"The access token is invalid. The fabric enforces role-based access control: use a token of its token endpoint, or fabric.Credential.")
	}
	if op == nil {
		return nil
	}
	if st.enforced() && op.action != "" {
		if !st.permissions(q.Caller, op.scope).Allows(op.action) {
			return errAuthorizationFailed(q.Caller, op.action, op.scope)
		}
		if op.change == "write" && q.Method != http.MethodPost {
			if err := st.checkLinked(q, op); err != nil {
				return err
			}
		}
	}
	if op.authorization || op.change == "" {
		return nil
	}
	if err := st.checkLocks(op); err != nil {
		return err
	}
	if op.resourceType != "" && (q.Method == http.MethodPut || q.Method == http.MethodPatch) {
		return s.checkPolicies(ctx, st, q, op)
	}
	return nil
}

// permissions are the permission blocks that apply to a caller at scope:
// its role assignments' (the administrator holds Owner at "/"), or, while
// the fabric enforces no RBAC, everything.
func (st *authzState) permissions(c api.Caller, scope string) azrbac.Set {
	all := azrbac.Set{{Actions: []string{"*"}, NotActions: []string{}, DataActions: []string{}, NotDataActions: []string{}}}
	if !st.enforced() || c.Admin() {
		return all
	}
	return azrbac.Effective(c.ObjectID, scope, st.assignments, st.role)
}

func errAuthorizationFailed(c api.Caller, action, scope string) *api.Error {
	return api.NewError(http.StatusForbidden, "AuthorizationFailed",
		"The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		c.Display(), c.ObjectID, action, scope)
}

// linkedRef is a resource a write references, and the action ARM checks
// on it.
type linkedRef struct{ action, scope string }

// checkLinked is ARM's linked access check: a write that references
// another resource needs its join action (a subnet's route table, network
// security group and NAT gateway; a network interface's subnets and
// security group), whether the reference is new or sent again as it was.
func (st *authzState) checkLinked(q *api.Request, op *armOp) error {
	var missing []linkedRef
	for _, ref := range linkedRefs(q, op) {
		if !st.permissions(q.Caller, ref.scope).Allows(ref.action) {
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var actions, scopes []string
	for _, m := range missing {
		if !slices.Contains(actions, m.action) {
			actions = append(actions, m.action)
		}
		scopes = append(scopes, m.scope)
	}
	what := fmt.Sprintf("action '%s' on the linked scope(s) '%s'", actions[0], strings.Join(scopes, ","))
	if len(actions) > 1 {
		actions = actions[:0]
		for _, m := range missing {
			actions = append(actions, m.action)
		}
		what = fmt.Sprintf("action(s) '%s' on the linked scope(s) '%s' (respectively)", strings.Join(actions, ","), strings.Join(scopes, ","))
	}
	return api.NewError(http.StatusForbidden, "LinkedAuthorizationFailed",
		"The client '%s' with object id '%s' has permission to perform action '%s' on scope '%s'; however, it does not have permission to perform %s or the linked scope(s) are invalid.",
		q.Caller.Display(), q.Caller.ObjectID, op.action, op.scope, what)
}

// linkedRefs reads the references of a write's body.
func linkedRefs(q *api.Request, op *armOp) []linkedRef {
	var body map[string]any
	if json.Unmarshal(q.Body, &body) != nil {
		return nil
	}
	var out []linkedRef
	add := func(id string) {
		id = strings.TrimSpace(id)
		typ, ok := api.ReferencedType(id)
		if !ok {
			return
		}
		ref := linkedRef{action: typ + "/join/action", scope: id}
		if !slices.ContainsFunc(out, func(r linkedRef) bool { return strings.EqualFold(r.scope, ref.scope) }) {
			out = append(out, ref)
		}
	}
	subnetRefs := func(props map[string]any) {
		for _, k := range []string{"routeTable", "networkSecurityGroup", "natGateway"} {
			add(api.IDOf(azpolicy.Field(props, k)))
		}
	}
	props, _ := azpolicy.Field(body, "properties").(map[string]any)
	switch strings.ToLower(op.resourceType) {
	case "microsoft.network/virtualnetworks/subnets":
		subnetRefs(props)
	case "microsoft.network/virtualnetworks":
		subnets, _ := azpolicy.Field(props, "subnets").([]any)
		for _, sn := range subnets {
			m, _ := sn.(map[string]any)
			p, _ := azpolicy.Field(m, "properties").(map[string]any)
			subnetRefs(p)
		}
	case "microsoft.network/networkinterfaces":
		add(api.IDOf(azpolicy.Field(props, "networkSecurityGroup")))
		cfgs, _ := azpolicy.Field(props, "ipConfigurations").([]any)
		for _, c := range cfgs {
			m, _ := c.(map[string]any)
			p, _ := azpolicy.Field(m, "properties").(map[string]any)
			add(api.IDOf(azpolicy.Field(p, "subnet")))
		}
	}
	return out
}

// checkLocks applies management locks: a CanNotDelete or ReadOnly lock at
// or above the scope refuses a delete, and so does a lock below it (a
// resource group holding a locked resource cannot be deleted); a ReadOnly
// lock at or above the scope refuses a write — PUT, PATCH, and every POST,
// which ARM counts as writes.
func (st *authzState) checkLocks(op *armOp) error {
	var locked []string
	for _, l := range st.locks {
		ls := l.scope()
		above := azrbac.ScopeContains(ls, op.scope)
		below := azrbac.ScopeContains(op.scope, ls)
		var blocks bool
		switch op.change {
		case "delete":
			blocks = above || below
		case "write":
			blocks = above && strings.EqualFold(l.Properties.Level, LockReadOnly)
		}
		if blocks && !slices.ContainsFunc(locked, func(s string) bool { return strings.EqualFold(s, ls) }) {
			locked = append(locked, ls)
		}
	}
	if len(locked) == 0 {
		return nil
	}
	return api.NewError(http.StatusConflict, "ScopeLocked",
		"The scope '%s' cannot perform %s operation because following scope(s) are locked: '%s'. Please remove the lock and try again.",
		op.scope, op.change, strings.Join(locked, ","))
}

// scopeOfExtension is the scope of an extension resource (a lock, role
// assignment or policy assignment) from its ID: the part before
// /providers/Microsoft.Authorization/, "/" when that is empty.
func scopeOfExtension(id string) string {
	i := strings.LastIndex(strings.ToLower(id), "/providers/microsoft.authorization/")
	if i <= 0 {
		return azrbac.RootScope
	}
	return id[:i]
}

// AuthorizePoll is ARM's check on the status URL of an asynchronous
// operation: the caller needs {namespace}/locations/operations/read (or
// operationResults/read) at the resource group of the resource the
// operation is about. "To track the status of an asynchronous operation,
// you need sufficient permission at the level of the resource group. If
// you only have permission at the level of the resource, you can start
// the operation but you can't track its status" (Azure Resource Manager,
// Track asynchronous Azure operations, "Permission for tracking async
// status"). A role at the resource alone thus writes but cannot see the
// write finish.
func (s *Provider) AuthorizePoll(q *api.Request, o *store.Operation, kind string) error {
	st, _ := q.Authz.(*authzState)
	if st == nil || !st.enforced() || q.Caller.Admin() {
		return nil
	}
	scope := "/subscriptions/" + o.Sub
	if id, err := parseResourceGroupOf(o.ResourceID); err == nil {
		scope = id
	}
	action := api.NetworkNamespace + "/locations/" + kind + "/read"
	if st.permissions(q.Caller, scope).Allows(action) {
		return nil
	}
	return errAuthorizationFailed(q.Caller, action, "/"+strings.Join(q.Segs, "/"))
}

// parseResourceGroupOf returns the ID of the resource group of a resource
// ID ("/subscriptions/s/resourceGroups/g").
func parseResourceGroupOf(id string) (string, error) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) < 4 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") {
		return "", fmt.Errorf("%q names no resource group", id)
	}
	return api.RGID(segs[1], segs[3]), nil
}
