package topology

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/azrbac"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/authz"
)

// TopologyAuthorization is who may do what in the fabric, and what
// governs it: principals, custom role definitions, role assignments,
// management locks and deny policies. A topology without it declares no
// authorization; Apply then changes none. See docs/fabric.md.
//
//	authorization:
//	  principals:
//	    - {name: routekeeper, clientId: 11111111-1111-1111-1111-111111111111, objectId: aaaaaaaa-0000-0000-0000-000000000001}
//	  roleDefinitions:
//	    - file: ../../deploy/azure/routekeeper-role.json   # Azure's role-definition JSON, as is
//	  roleAssignments:
//	    - {principal: routekeeper, role: routekeeper, resourceGroup: kubernetes}
//	    - {principal: routekeeper, role: Reader}                     # at the subscription
//	  locks:
//	    - {name: keep-vnet, level: CanNotDelete, scope: /subscriptions/.../virtualNetworks/kubernetes-vnet}
//	  policyDefinitions:
//	    - name: no-appliance-hops
//	      mode: All
//	      policyRule: {if: {field: Microsoft.Network/routeTables/routes[*].nextHopType, ...}, then: {effect: deny}}
//	  policyAssignments:
//	    - {name: no-appliance-hops, definition: no-appliance-hops, resourceGroup: kubernetes}
type TopologyAuthorization struct {
	Principals        []TopologyPrincipal        `json:"principals,omitempty"`
	RoleDefinitions   []TopologyRoleDefinition   `json:"roleDefinitions,omitempty"`
	RoleAssignments   []TopologyRoleAssignment   `json:"roleAssignments,omitempty"`
	Locks             []TopologyLock             `json:"locks,omitempty"`
	PolicyDefinitions []TopologyPolicyDefinition `json:"policyDefinitions,omitempty"`
	PolicyAssignments []TopologyPolicyAssignment `json:"policyAssignments,omitempty"`
}

// TopologyPrincipal is a service principal (or user): the client ID its
// tokens are asked for and the object ID role assignments name (default:
// the client ID).
type TopologyPrincipal struct {
	Name     string `json:"name"`
	ClientID string `json:"clientId"`
	ObjectID string `json:"objectId,omitempty"`
	Type     string `json:"type,omitempty"` // ServicePrincipal (default), User, Group
}

func (p TopologyPrincipal) objectID() string { return cmp.Or(p.ObjectID, p.ClientID) }

// TopologyRoleDefinition is a custom role: `file` names a file in Azure's
// role-definition JSON (relative to the topology file), or the entry is
// that JSON itself (Name, Actions, NotActions, AssignableScopes, ...).
type TopologyRoleDefinition struct {
	File       string                `json:"-"`
	Definition azrbac.RoleDefinition `json:"-"`
	raw        json.RawMessage
	err        error
}

// UnmarshalJSON reads {file: PATH} or an inline role definition.
func (d *TopologyRoleDefinition) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("a role definition is an object: {file: PATH} or Azure's role-definition JSON: %w", err)
	}
	if f, ok := probe["file"]; ok {
		if len(probe) != 1 {
			return errors.New("a role definition with file has no other property")
		}
		return json.Unmarshal(f, &d.File)
	}
	d.raw = append([]byte(nil), b...)
	d.Definition, d.err = azrbac.ParseRoleDefinition(b)
	return nil
}

// MarshalJSON writes the entry back as it was given.
func (d TopologyRoleDefinition) MarshalJSON() ([]byte, error) {
	if d.File != "" {
		return json.Marshal(map[string]string{"file": d.File})
	}
	return d.raw, nil
}

// load reads the file of a role definition, relative to dir.
func (d *TopologyRoleDefinition) load(dir string) {
	if d.File == "" {
		return
	}
	path := d.File
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		d.err = fmt.Errorf("reading %s: %w", d.File, err)
		return
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	d.Definition, d.err = azrbac.ParseRoleDefinition(b)
	if d.err != nil {
		d.err = fmt.Errorf("%s: %w", d.File, d.err)
	}
}

// guid is the role's definition name: its Id, else one derived from its
// name, so that applying again finds it.
func (d TopologyRoleDefinition) guid() string {
	if _, err := uuid.Parse(d.Definition.Name); err == nil {
		return strings.ToLower(d.Definition.Name)
	}
	return uuid.NewSHA1(TopologyNamespace, []byte("role:"+strings.ToLower(d.Definition.RoleName))).String()
}

// TopologyNamespace derives the names of the role definitions and
// assignments a topology declares.
var TopologyNamespace = uuid.MustParse("6f1e8a5c-7b0d-4f3e-9a2b-726b6b746f70")

// TopologyRoleAssignment gives a role to a principal at a scope: scope
// (a full ID), or resourceGroup (a group of the topology), or neither (the
// subscription).
type TopologyRoleAssignment struct {
	// Principal is a declared principal's name, client ID or object ID,
	// or the object ID (a GUID) of one the topology does not declare.
	Principal string `json:"principal"`
	// Role is a role's name or definition GUID: a built-in (Owner,
	// Contributor, Reader, Network Contributor) or one of roleDefinitions.
	Role          string `json:"role"`
	Scope         string `json:"scope,omitempty"`
	ResourceGroup string `json:"resourceGroup,omitempty"`
}

// TopologyLock is a management lock at a scope (as for role assignments).
type TopologyLock struct {
	Name          string `json:"name"`
	Level         string `json:"level"` // CanNotDelete or ReadOnly
	Notes         string `json:"notes,omitempty"`
	Scope         string `json:"scope,omitempty"`
	ResourceGroup string `json:"resourceGroup,omitempty"`
}

// TopologyPolicyDefinition is a custom policy definition of the
// subscription, in the subset of the policy language the fabric
// understands (docs/fabric.md).
type TopologyPolicyDefinition struct {
	Name        string         `json:"name"`
	DisplayName string         `json:"displayName,omitempty"`
	Description string         `json:"description,omitempty"`
	Mode        string         `json:"mode,omitempty"` // All or Indexed (default)
	Parameters  map[string]any `json:"parameters,omitempty"`
	PolicyRule  map[string]any `json:"policyRule"`
}

// TopologyPolicyAssignment assigns a policy definition (a name of
// policyDefinitions, or a full ID) at a scope.
type TopologyPolicyAssignment struct {
	Name            string         `json:"name"`
	DisplayName     string         `json:"displayName,omitempty"`
	Definition      string         `json:"definition"`
	Scope           string         `json:"scope,omitempty"`
	ResourceGroup   string         `json:"resourceGroup,omitempty"`
	NotScopes       []string       `json:"notScopes,omitempty"`
	Parameters      map[string]any `json:"parameters,omitempty"`
	EnforcementMode string         `json:"enforcementMode,omitempty"`
}

// scopeOf resolves scope / resourceGroup.
func scopeOf(sub, scope, rg string) string {
	switch {
	case scope != "":
		return azrbac.NormalizeScope(scope)
	case rg != "":
		return api.RGID(sub, rg)
	}
	return "/subscriptions/" + sub
}

// principal finds a declared principal by name, client ID or object ID.
func (a *TopologyAuthorization) principal(ref string) (TopologyPrincipal, bool) {
	for _, p := range a.Principals {
		if strings.EqualFold(p.Name, ref) || strings.EqualFold(p.ClientID, ref) || strings.EqualFold(p.objectID(), ref) {
			return p, true
		}
	}
	return TopologyPrincipal{}, false
}

// role finds a role by name or GUID: declared, then built-in.
func (a *TopologyAuthorization) role(ref string) (azrbac.RoleDefinition, string, bool) {
	for _, d := range a.RoleDefinitions {
		if d.err == nil && (strings.EqualFold(d.Definition.RoleName, ref) || strings.EqualFold(d.guid(), ref)) {
			return d.Definition, d.guid(), true
		}
	}
	if d, ok := azrbac.BuiltInRole(ref); ok {
		return d, d.Name, true
	}
	return azrbac.RoleDefinition{}, "", false
}

// validate checks the authorization part; bad reports a problem with its
// field. rgs are the topology's resource groups (lower case).
func (a *TopologyAuthorization) validate(sub string, rgs map[string]bool, bad func(field, format string, args ...any)) {
	const f = "authorization"
	checkScope := func(field, scope, rg string) {
		switch {
		case scope != "" && rg != "":
			bad(field, "give scope or resourceGroup, not both")
		case rg != "" && !rgs[api.Key(rg)]:
			bad(field+".resourceGroup", "%q is not a resource group of the topology", rg)
		case scope != "" && !strings.HasPrefix(strings.ToLower(scope), "/subscriptions/"):
			bad(field+".scope", "%q is not a scope (/subscriptions/<id>[/resourceGroups/<name>[/providers/...]])", scope)
		}
	}
	seen := map[string]bool{}
	for i, p := range a.Principals {
		g := fmt.Sprintf("%s.principals[%d]", f, i)
		if p.Name == "" {
			bad(g+".name", "missing")
		}
		if err := authz.CheckPrincipal(authz.PrincipalDoc{ClientID: p.ClientID, ObjectID: p.ObjectID, PrincipalType: p.Type}); err != nil {
			bad(g, "%v", err)
		}
		for _, k := range []string{"name:" + api.Key(p.Name), "client:" + api.Key(p.ClientID)} {
			if seen[k] {
				bad(g, "%q is declared twice", strings.SplitN(k, ":", 2)[1])
			}
			seen[k] = true
		}
	}
	for i, d := range a.RoleDefinitions {
		g := fmt.Sprintf("%s.roleDefinitions[%d]", f, i)
		if d.err != nil {
			bad(g, "%v", strings.ReplaceAll(d.err.Error(), "\n", "; "))
			continue
		}
		if _, ok := azrbac.BuiltInRole(d.Definition.RoleName); ok {
			bad(g+".Name", "%q is a built-in role", d.Definition.RoleName)
		}
		if seen["role:"+api.Key(d.Definition.RoleName)] {
			bad(g+".Name", "%q is declared twice", d.Definition.RoleName)
		}
		seen["role:"+api.Key(d.Definition.RoleName)] = true
	}
	for i, ra := range a.RoleAssignments {
		g := fmt.Sprintf("%s.roleAssignments[%d]", f, i)
		if _, ok := a.principal(ra.Principal); !ok {
			if _, err := uuid.Parse(ra.Principal); err != nil {
				bad(g+".principal", "%q is not a declared principal (name, clientId or objectId) nor an object ID", ra.Principal)
			}
		}
		checkScope(g, ra.Scope, ra.ResourceGroup)
		role, _, ok := a.role(ra.Role)
		switch {
		case !ok:
			bad(g+".role", "%q is neither a built-in role (Owner, Contributor, Reader, Network Contributor) nor one of roleDefinitions", ra.Role)
		case !role.AssignableAt(scopeOf(sub, ra.Scope, ra.ResourceGroup)):
			bad(g+".role", "role %q is not assignable at %s: its assignable scopes are %s", role.RoleName, scopeOf(sub, ra.Scope, ra.ResourceGroup), strings.Join(role.AssignableScopes, ", "))
		}
	}
	for i, l := range a.Locks {
		g := fmt.Sprintf("%s.locks[%d]", f, i)
		if !authz.ExtNameRE.MatchString(l.Name) {
			bad(g+".name", "%q is not a lock name", l.Name)
		}
		if !strings.EqualFold(l.Level, authz.LockCanNotDelete) && !strings.EqualFold(l.Level, authz.LockReadOnly) {
			bad(g+".level", "%q is not CanNotDelete or ReadOnly", l.Level)
		}
		checkScope(g, l.Scope, l.ResourceGroup)
	}
	defs := map[string]bool{}
	for i, d := range a.PolicyDefinitions {
		g := fmt.Sprintf("%s.policyDefinitions[%d]", f, i)
		if !authz.ExtNameRE.MatchString(d.Name) {
			bad(g+".name", "%q is not a policy definition name", d.Name)
		}
		if defs[api.Key(d.Name)] {
			bad(g+".name", "%q is declared twice", d.Name)
		}
		defs[api.Key(d.Name)] = true
		if _, err := d.compiled(sub); err != nil {
			bad(g+".policyRule", "%v", err)
		}
	}
	for i, pa := range a.PolicyAssignments {
		g := fmt.Sprintf("%s.policyAssignments[%d]", f, i)
		if !authz.ExtNameRE.MatchString(pa.Name) {
			bad(g+".name", "%q is not a policy assignment name", pa.Name)
		}
		if !defs[api.Key(pa.Definition)] && !strings.HasPrefix(pa.Definition, "/") {
			bad(g+".definition", "%q is not one of policyDefinitions nor a policy definition ID", pa.Definition)
		}
		checkScope(g, pa.Scope, pa.ResourceGroup)
		if m := pa.EnforcementMode; m != "" && !strings.EqualFold(m, "Default") && !strings.EqualFold(m, "DoNotEnforce") {
			bad(g+".enforcementMode", "%q is not Default or DoNotEnforce", m)
		}
	}
}

// compiled is the policy definition as the fabric stores it.
func (d TopologyPolicyDefinition) compiled(sub string) (*authz.PolicyDefinition, error) {
	rule, err := json.Marshal(d.PolicyRule)
	if err != nil {
		return nil, err
	}
	mode := cmp.Or(d.Mode, "Indexed")
	for _, m := range []string{"All", "Indexed"} {
		if strings.EqualFold(m, mode) {
			mode = m
		}
	}
	pd := &authz.PolicyDefinition{ID: "/subscriptions/" + sub + "/providers/Microsoft.Authorization/policyDefinitions/" + d.Name, Name: d.Name,
		Properties: authz.PolicyDefProperties{Mode: mode, DisplayName: d.DisplayName, Description: d.Description, PolicyRule: rule}}
	if len(d.Parameters) > 0 {
		b, _ := json.Marshal(d.Parameters)
		if err := json.Unmarshal(b, &pd.Properties.Parameters); err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
	}
	if err := pd.Compile(); err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return nil, errors.New(ae.Message)
		}
		return nil, err
	}
	if !slices.Contains([]string{"All", "Indexed"}, pd.Properties.Mode) {
		return nil, fmt.Errorf("mode %q is not All or Indexed", pd.Properties.Mode)
	}
	return pd, nil
}
