package topology

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/authz"
)

// Apply's part for TopologyAuthorization: principals through the control
// endpoint, everything else through Microsoft.Authorization's REST API, as
// az would. Locks come last, so that a ReadOnly lock does not refuse the
// topology's own writes; applying again writes nothing.

// API versions Apply sends for Microsoft.Authorization.
const (
	rbacAPIVersion   = "2022-04-01"
	locksAPIVersion  = "2016-09-01"
	policyAPIVersion = "2023-04-01"
)

func (a *applier) applyAuthorization(ctx context.Context, t *Topology) error {
	az := t.Authorization
	if az == nil {
		return nil
	}
	for _, p := range az.Principals {
		if err := a.principal(ctx, p); err != nil {
			return err
		}
	}
	for _, d := range az.RoleDefinitions {
		if err := a.roleDefinition(ctx, d); err != nil {
			return err
		}
	}
	for _, ra := range az.RoleAssignments {
		if err := a.roleAssignment(ctx, az, ra); err != nil {
			return err
		}
	}
	for _, d := range az.PolicyDefinitions {
		if err := a.policyDefinition(ctx, d); err != nil {
			return err
		}
	}
	for _, pa := range az.PolicyAssignments {
		if err := a.policyAssignment(ctx, pa); err != nil {
			return err
		}
	}
	for _, l := range az.Locks {
		if err := a.lock(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

// putIfChanged reads path, and PUTs body unless same says the current
// document already holds it; it records the change.
func (a *applier) putIfChanged(ctx context.Context, kind, id, path, apiVersion string, body any, same func(cur map[string]any) bool, detail string) error {
	url := path + "?api-version=" + apiVersion
	var cur map[string]any
	status, err := a.arm.do(ctx, http.MethodGet, url, nil, &cur)
	if err != nil && status != http.StatusNotFound {
		return fmt.Errorf("reading %s %s: %w", kind, id, err)
	}
	action := ActionCreate
	if status != http.StatusNotFound {
		if same(cur) {
			a.record(ActionUnchanged, kind, id, "")
			return nil
		}
		action = ActionUpdate
	}
	if _, err := a.arm.do(ctx, http.MethodPut, url, body, nil); err != nil {
		return fmt.Errorf("writing %s %s: %w", kind, id, err)
	}
	a.res.Writes++
	a.record(action, kind, id, detail)
	return nil
}

func (a *applier) principal(ctx context.Context, p TopologyPrincipal) error {
	doc := authz.PrincipalDoc{ClientID: p.ClientID, ObjectID: p.objectID(), DisplayName: p.Name, PrincipalType: cmp.Or(p.Type, "ServicePrincipal")}
	var list struct {
		Value []authz.PrincipalDoc `json:"value"`
	}
	if _, err := a.arm.do(ctx, http.MethodGet, authz.PrincipalsPath, nil, &list); err != nil {
		return fmt.Errorf("reading principals (is the endpoint a routekeeper fabric?): %w", err)
	}
	action := ActionCreate
	for _, cur := range list.Value {
		if strings.EqualFold(cur.ClientID, p.ClientID) {
			if cur == doc {
				a.record(ActionUnchanged, "principal", p.ClientID, "")
				return nil
			}
			action = ActionUpdate
		}
	}
	if _, err := a.arm.do(ctx, http.MethodPut, authz.PrincipalsPath+"/"+p.ClientID, doc, nil); err != nil {
		return fmt.Errorf("declaring principal %s: %w", p.Name, err)
	}
	a.res.Writes++
	a.record(action, "principal", p.ClientID, fmt.Sprintf("%s, object ID %s", p.Name, doc.ObjectID))
	return nil
}

func (a *applier) roleDefinition(ctx context.Context, d TopologyRoleDefinition) error {
	guid := d.guid()
	scope := "/subscriptions/" + a.sub
	id := scope + "/providers/Microsoft.Authorization/roleDefinitions/" + guid
	want := authz.RoleDoc(d.Definition, scope).Properties
	want.Type = azrbac.TypeCustomRole
	body := map[string]any{"name": guid, "properties": want}
	return a.putIfChanged(ctx, "roleDefinition", id, id, rbacAPIVersion, body, func(cur map[string]any) bool {
		b, _ := json.Marshal(cur)
		have, err := azrbac.ParseRoleDefinition(b)
		return err == nil && have.RoleName == want.RoleName && have.Description == want.Description &&
			reflect.DeepEqual(have.Permissions, want.Permissions) && reflect.DeepEqual(have.AssignableScopes, want.AssignableScopes)
	}, d.Definition.RoleName)
}

func (a *applier) roleAssignment(ctx context.Context, az *TopologyAuthorization, ra TopologyRoleAssignment) error {
	scope := scopeOf(a.sub, ra.Scope, ra.ResourceGroup)
	oid, ptype := ra.Principal, "ServicePrincipal"
	if p, ok := az.principal(ra.Principal); ok {
		oid, ptype = p.objectID(), cmp.Or(p.Type, "ServicePrincipal")
	}
	role, guid, _ := az.role(ra.Role)
	name := uuid.NewSHA1(TopologyNamespace, []byte(strings.ToLower(scope+"|"+oid+"|"+guid))).String()
	id := strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/roleAssignments/" + name
	body := map[string]any{"properties": map[string]any{
		"roleDefinitionId": "/subscriptions/" + a.sub + "/providers/Microsoft.Authorization/roleDefinitions/" + guid,
		"principalId":      oid, "principalType": ptype,
	}}
	err := a.putIfChanged(ctx, "roleAssignment", id, id, rbacAPIVersion, body, func(map[string]any) bool { return true },
		fmt.Sprintf("%s to %s", role.RoleName, ra.Principal))
	var ae *armError
	if errors.As(err, &ae) && ae.Code == "RoleAssignmentExists" {
		a.record(ActionUnchanged, "roleAssignment", id, "assigned already under another name")
		return nil
	}
	return err
}

func (a *applier) policyDefinition(ctx context.Context, d TopologyPolicyDefinition) error {
	pd, err := d.compiled(a.sub)
	if err != nil {
		return fmt.Errorf("policy definition %s: %w", d.Name, err)
	}
	pd.Properties.PolicyType = "Custom"
	body := map[string]any{"properties": pd.Properties}
	return a.putIfChanged(ctx, "policyDefinition", pd.ID, pd.ID, policyAPIVersion, body, func(cur map[string]any) bool {
		props, _ := cur["properties"].(map[string]any)
		return sameJSON(props["policyRule"], d.PolicyRule) && props["mode"] == pd.Properties.Mode &&
			sameJSON(props["parameters"], d.Parameters) && props["displayName"] == nilIfEmpty(d.DisplayName)
	}, cmp.Or(d.DisplayName, d.Name))
}

func (a *applier) policyAssignment(ctx context.Context, pa TopologyPolicyAssignment) error {
	scope := scopeOf(a.sub, pa.Scope, pa.ResourceGroup)
	def := pa.Definition
	if !strings.HasPrefix(def, "/") {
		def = "/subscriptions/" + a.sub + "/providers/Microsoft.Authorization/policyDefinitions/" + def
	}
	params := map[string]any{}
	for k, v := range pa.Parameters {
		params[k] = map[string]any{"value": v}
	}
	props := map[string]any{"policyDefinitionId": def, "parameters": params, "notScopes": nonNilStrings(pa.NotScopes),
		"enforcementMode": cmp.Or(pa.EnforcementMode, "Default")}
	if pa.DisplayName != "" {
		props["displayName"] = pa.DisplayName
	}
	id := strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/policyAssignments/" + pa.Name
	return a.putIfChanged(ctx, "policyAssignment", id, id, policyAPIVersion, map[string]any{"properties": props}, func(cur map[string]any) bool {
		p, _ := cur["properties"].(map[string]any)
		return armid.Same(fmt.Sprint(p["policyDefinitionId"]), def) && sameJSON(p["parameters"], params) &&
			sameJSON(p["notScopes"], nonNilStrings(pa.NotScopes)) && strings.EqualFold(fmt.Sprint(p["enforcementMode"]), fmt.Sprint(props["enforcementMode"])) &&
			p["displayName"] == nilIfEmpty(pa.DisplayName)
	}, "definition "+armid.Name(def))
}

func (a *applier) lock(ctx context.Context, l TopologyLock) error {
	scope := scopeOf(a.sub, l.Scope, l.ResourceGroup)
	id := strings.TrimRight(scope, "/") + "/providers/Microsoft.Authorization/locks/" + l.Name
	props := map[string]any{"level": l.Level}
	if l.Notes != "" {
		props["notes"] = l.Notes
	}
	return a.putIfChanged(ctx, "lock", id, id, locksAPIVersion, map[string]any{"properties": props}, func(cur map[string]any) bool {
		p, _ := cur["properties"].(map[string]any)
		return strings.EqualFold(fmt.Sprint(p["level"]), l.Level) && p["notes"] == nilIfEmpty(l.Notes)
	}, l.Level)
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	if m, ok := x.(map[string]any); ok && len(m) == 0 {
		x = nil
	}
	if m, ok := y.(map[string]any); ok && len(m) == 0 {
		y = nil
	}
	return reflect.DeepEqual(x, y)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
