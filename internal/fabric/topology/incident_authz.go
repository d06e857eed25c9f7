package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/authz"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// The operator mistakes of authorization, replayed through ARM's
// Microsoft.Authorization API as the fabric's administrator: a role
// assignment removed, a management lock added, a deny policy assigned.

// Actions of the authorization incidents' changes.
const (
	ActionRevoke = "revoke"
	ActionLock   = "lock"
	ActionAssign = "assign"
)

// ResolveScope turns what a user typed into a scope: a full ID is kept,
// "" is resource group rg, and a name is the resource group of that name.
func (in *Incidents) ResolveScope(rg, arg string) (string, error) {
	switch {
	case strings.HasPrefix(arg, "/"):
		if !strings.HasPrefix(strings.ToLower(arg), "/subscriptions/") {
			return "", fmt.Errorf("%q is not a scope: /subscriptions/<id>[/resourceGroups/<name>[/providers/...]]", arg)
		}
		return azrbac.NormalizeScope(arg), nil
	case arg != "":
		rg = arg
	}
	if rg == "" || strings.Contains(rg, "/") {
		return "", fmt.Errorf("%q is not a resource group name: give a group or a full scope ID", rg)
	}
	return api.RGID(in.sub, rg), nil
}

// RevokeRole removes the role assignments of a principal (its object ID,
// or the client ID or name of a principal the fabric knows): all of them,
// or those of one role (name or GUID) and at one scope when given.
func (in *Incidents) RevokeRole(ctx context.Context, principal, role, scope string) ([]Change, error) {
	oid, err := in.objectID(ctx, principal)
	if err != nil {
		return nil, err
	}
	sub := "/subscriptions/" + in.sub
	var list struct {
		Value []authz.RoleAssignmentDoc `json:"value"`
	}
	filter := url.QueryEscape("principalId eq '" + oid + "'")
	if _, err := in.arm.do(ctx, http.MethodGet, sub+"/providers/Microsoft.Authorization/roleAssignments?$filter="+filter+"&api-version="+rbacAPIVersion, nil, &list); err != nil {
		return nil, fmt.Errorf("listing the role assignments of %s: %w", principal, err)
	}
	var changes []Change
	for _, a := range list.Value {
		if scope != "" && !azrbac.SameScope(a.Properties.Scope, scope) {
			continue
		}
		var def authz.RoleDefinitionDoc
		if _, err := in.arm.do(ctx, http.MethodGet, a.Properties.RoleDefinitionID+"?api-version="+rbacAPIVersion, nil, &def); err != nil {
			return changes, fmt.Errorf("reading role definition %s: %w", a.Properties.RoleDefinitionID, err)
		}
		if role != "" && !strings.EqualFold(role, def.Properties.RoleName) && !strings.EqualFold(role, def.Name) {
			continue
		}
		if _, err := in.arm.do(ctx, http.MethodDelete, a.ID+"?api-version="+rbacAPIVersion, nil, nil); err != nil {
			return changes, fmt.Errorf("deleting role assignment %s: %w", a.ID, err)
		}
		changes = append(changes, Change{Action: ActionRevoke, Kind: "roleAssignment", ID: a.ID,
			Detail: fmt.Sprintf("%s of %s at %s", def.Properties.RoleName, principal, a.Properties.Scope)})
	}
	if len(changes) == 0 {
		what := "no role assignment"
		if role != "" {
			what = "no " + role + " assignment"
		}
		if scope != "" {
			what += " at " + scope
		}
		return []Change{{Action: ActionUnchanged, Kind: "roleAssignment", ID: sub, Detail: principal + " has " + what}}, nil
	}
	return changes, nil
}

// objectID resolves a principal as the fabric knows it.
func (in *Incidents) objectID(ctx context.Context, principal string) (string, error) {
	if strings.TrimSpace(principal) == "" {
		return "", errors.New("no principal given")
	}
	var list struct {
		Value []authz.PrincipalDoc `json:"value"`
	}
	if _, err := in.arm.do(ctx, http.MethodGet, authz.PrincipalsPath, nil, &list); err != nil {
		return "", fmt.Errorf("reading the fabric's principals: %w", err)
	}
	for _, p := range list.Value {
		if strings.EqualFold(p.ClientID, principal) || strings.EqualFold(p.ObjectID, principal) || strings.EqualFold(p.DisplayName, principal) {
			return p.ObjectID, nil
		}
	}
	return principal, nil
}

// Lock adds (or changes) a management lock: level CanNotDelete or
// ReadOnly, at scope.
func (in *Incidents) Lock(ctx context.Context, scope, name, level, notes string) ([]Change, error) {
	switch {
	case strings.EqualFold(level, authz.LockCanNotDelete):
		level = authz.LockCanNotDelete
	case strings.EqualFold(level, authz.LockReadOnly):
		level = authz.LockReadOnly
	default:
		return nil, fmt.Errorf("lock level %q: want CanNotDelete or ReadOnly", level)
	}
	id := strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/locks/" + name
	props := map[string]any{"level": level}
	if notes != "" {
		props["notes"] = notes
	}
	if _, err := in.arm.do(ctx, http.MethodPut, id+"?api-version="+locksAPIVersion, map[string]any{"properties": props}, nil); err != nil {
		return nil, fmt.Errorf("locking %s: %w", scope, err)
	}
	return []Change{{Action: ActionLock, Kind: "lock", ID: id, Detail: level + " on " + scope}}, nil
}

// DenyNextHopRule is the policy rule that denies route tables with a
// route of next hop type hop, and such routes written alone.
func DenyNextHopRule(hop string) (json.RawMessage, error) {
	h, ok := network.CanonicalHop(hop)
	if !ok {
		return nil, fmt.Errorf("next hop type %q is not one of VirtualAppliance, VnetLocal, Internet, VirtualNetworkGateway, None", hop)
	}
	return json.Marshal(map[string]any{
		"if": map[string]any{"anyOf": []any{
			map[string]any{"allOf": []any{
				map[string]any{"field": "type", "equals": api.ArmTypeRouteTable},
				map[string]any{"not": map[string]any{"field": "Microsoft.Network/routeTables/routes[*].nextHopType", "notEquals": string(h)}},
			}},
			map[string]any{"allOf": []any{
				map[string]any{"field": "type", "equals": api.ArmTypeRoute},
				map[string]any{"field": "Microsoft.Network/routeTables/routes/nextHopType", "equals": string(h)},
			}},
		}},
		"then": map[string]any{"effect": "deny"},
	})
}

// DenyPolicy defines a deny policy (rule: a policy rule, {"if", "then"})
// in the subscription and assigns it at scope, both named name.
func (in *Incidents) DenyPolicy(ctx context.Context, scope, name, displayName string, rule json.RawMessage) ([]Change, error) {
	def := "/subscriptions/" + in.sub + "/providers/Microsoft.Authorization/policyDefinitions/" + name
	body := map[string]any{"properties": map[string]any{"policyType": "Custom", "mode": "All", "displayName": displayName, "policyRule": rule}}
	if _, err := in.arm.do(ctx, http.MethodPut, def+"?api-version="+policyAPIVersion, body, nil); err != nil {
		return nil, fmt.Errorf("defining policy %s: %w", name, err)
	}
	changes := []Change{{Action: ActionCreate, Kind: "policyDefinition", ID: def, Detail: displayName}}
	id := strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/policyAssignments/" + name
	body = map[string]any{"properties": map[string]any{"policyDefinitionId": def, "displayName": displayName}}
	if _, err := in.arm.do(ctx, http.MethodPut, id+"?api-version="+policyAPIVersion, body, nil); err != nil {
		return changes, fmt.Errorf("assigning policy %s at %s: %w", name, scope, err)
	}
	return append(changes, Change{Action: ActionAssign, Kind: "policyAssignment", ID: id, Detail: "deny at " + scope}), nil
}

// policyName is a name for a policy from its display name.
func policyName(display string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(display) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// DenyNextHopName is the name DenyPolicy uses for a next-hop deny.
func DenyNextHopName(hop string) string {
	h, _ := network.CanonicalHop(hop)
	return policyName("deny " + string(h) + " next hops")
}
