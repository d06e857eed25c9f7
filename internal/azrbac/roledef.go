package azrbac

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Role types, as ARM spells them in a role definition's "type".
const (
	TypeBuiltInRole = "BuiltInRole"
	TypeCustomRole  = "CustomRole"
)

// RoleDefinition is a role: a named set of permission blocks, assignable
// at some scopes.
type RoleDefinition struct {
	// ID is the definition's ARM ID; Name its GUID.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// RoleName is what people call it ("Network Contributor").
	RoleName         string       `json:"roleName"`
	Description      string       `json:"description,omitempty"`
	RoleType         string       `json:"roleType,omitempty"`
	Permissions      []Permission `json:"permissions"`
	AssignableScopes []string     `json:"assignableScopes"`
}

// AssignableAt reports whether the role may be assigned at scope: at or
// under one of its assignable scopes.
func (d RoleDefinition) AssignableAt(scope string) bool {
	return slices.ContainsFunc(d.AssignableScopes, func(s string) bool { return ScopeContains(s, scope) })
}

// Set is the definition's permission blocks as a Set.
func (d RoleDefinition) Set() Set { return Set(d.Permissions) }

// ParseRoleDefinition reads a role definition in the JSON Azure's tools
// use, so that a file such as deploy/azure/routekeeper-role.json loads as
// it is. Three shapes are accepted, with property names in any case:
//
//   - the role-definition file of `az role definition create` and
//     New-AzRoleDefinition: Name, Id, IsCustom, Description, Actions,
//     NotActions, DataActions, NotDataActions, AssignableScopes;
//   - ARM's resource: {"id", "name", "properties": {"roleName",
//     "description", "type", "permissions": [...], "assignableScopes"}};
//   - the flattened output of `az role definition list`: roleName,
//     roleType, permissions, assignableScopes at the top.
//
// Errors name the property and the value.
func ParseRoleDefinition(b []byte) (RoleDefinition, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return RoleDefinition{}, fmt.Errorf("not a role definition (a JSON object): %w", err)
	}
	top := foldKeys(raw)
	if props, ok := top["properties"]; ok {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(props, &p); err != nil {
			return RoleDefinition{}, fmt.Errorf("properties: not an object: %w", err)
		}
		d, err := fromFields(foldKeys(p), propertyFields)
		if err != nil {
			return d, err
		}
		for k := range top {
			if k != "properties" && k != "id" && k != "name" && k != "type" {
				return d, fmt.Errorf("%s: not a property of a role definition resource", k)
			}
		}
		if err := str(top, "id", &d.ID); err != nil {
			return d, err
		}
		if err := str(top, "name", &d.Name); err != nil {
			return d, err
		}
		return d, d.validate()
	}
	fields := fileFields
	if _, ok := top["permissions"]; ok {
		fields = listFields
	}
	d, err := fromFields(top, fields)
	if err != nil {
		return d, err
	}
	return d, d.validate()
}

// Property names (folded to lower case) of each shape.
var (
	fileFields = map[string]bool{"name": true, "id": true, "iscustom": true, "description": true, "actions": true,
		"notactions": true, "dataactions": true, "notdataactions": true, "assignablescopes": true, "condition": true, "conditionversion": true}
	propertyFields = map[string]bool{"rolename": true, "description": true, "type": true, "roletype": true, "permissions": true,
		"assignablescopes": true, "createdon": true, "updatedon": true, "createdby": true, "updatedby": true}
	listFields = map[string]bool{"id": true, "name": true, "type": true, "rolename": true, "roletype": true, "description": true,
		"permissions": true, "assignablescopes": true, "createdon": true, "updatedon": true, "createdby": true, "updatedby": true}
)

func foldKeys(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

func fromFields(m map[string]json.RawMessage, allowed map[string]bool) (RoleDefinition, error) {
	var d RoleDefinition
	for k := range m {
		if !allowed[k] {
			return d, fmt.Errorf("%s: not a property of a role definition", k)
		}
	}
	var errs []error
	get := func(key string, into *string) { errs = append(errs, str(m, key, into)) }
	list := func(key string, into *[]string) { errs = append(errs, strs(m, key, into)) }
	if allowed["iscustom"] { // the role-definition file
		get("name", &d.RoleName)
		get("id", &d.Name)
		get("description", &d.Description)
		var p Permission
		list("actions", &p.Actions)
		list("notactions", &p.NotActions)
		list("dataactions", &p.DataActions)
		list("notdataactions", &p.NotDataActions)
		d.Permissions = []Permission{normalizePermission(p)}
		d.RoleType = TypeCustomRole
		if v, ok := m["iscustom"]; ok {
			var custom bool
			if err := json.Unmarshal(v, &custom); err != nil {
				errs = append(errs, fmt.Errorf("IsCustom: %s is not true or false", v))
			} else if !custom {
				d.RoleType = TypeBuiltInRole
			}
		}
	} else {
		get("rolename", &d.RoleName)
		get("description", &d.Description)
		if _, ok := m["name"]; ok {
			get("name", &d.Name)
			get("id", &d.ID)
		}
		get("roletype", &d.RoleType)
		if d.RoleType == "" && !allowed["name"] {
			get("type", &d.RoleType)
		}
		if v, ok := m["permissions"]; ok {
			var ps []map[string]json.RawMessage
			if err := json.Unmarshal(v, &ps); err != nil {
				errs = append(errs, fmt.Errorf("permissions: not a list of permission objects: %w", err))
			}
			for i, raw := range ps {
				f := foldKeys(raw)
				var p Permission
				for k := range f {
					if k != "actions" && k != "notactions" && k != "dataactions" && k != "notdataactions" && k != "condition" && k != "conditionversion" {
						errs = append(errs, fmt.Errorf("permissions[%d].%s: not a property of a permission", i, k))
					}
				}
				for _, e := range []error{strs(f, "actions", &p.Actions), strs(f, "notactions", &p.NotActions),
					strs(f, "dataactions", &p.DataActions), strs(f, "notdataactions", &p.NotDataActions)} {
					if e != nil {
						errs = append(errs, fmt.Errorf("permissions[%d].%w", i, e))
					}
				}
				d.Permissions = append(d.Permissions, normalizePermission(p))
			}
		}
	}
	list("assignablescopes", &d.AssignableScopes)
	return d, errors.Join(errs...)
}

func normalizePermission(p Permission) Permission {
	for _, l := range []*[]string{&p.Actions, &p.NotActions, &p.DataActions, &p.NotDataActions} {
		if *l == nil {
			*l = []string{}
		}
	}
	return p
}

// str and strs decode the field key of m, when it is there and not null,
// into a string or a list of strings.
func str(m map[string]json.RawMessage, key string, into *string) error {
	return field(m, key, into, "a string")
}

func strs(m map[string]json.RawMessage, key string, into *[]string) error {
	return field(m, key, into, "a list of strings")
}

func field[T any](m map[string]json.RawMessage, key string, into *T, want string) error {
	v, ok := m[key]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, into); err != nil {
		return fmt.Errorf("%s: %s is not %s", key, v, want)
	}
	return nil
}

// validate applies the rules ARM applies to a role definition: a name, at
// least one assignable scope, actions that are well-formed patterns.
func (d RoleDefinition) validate() error {
	var errs []error
	if strings.TrimSpace(d.RoleName) == "" {
		errs = append(errs, errors.New("Name (roleName): missing: a role definition needs a name"))
	}
	if len(d.AssignableScopes) == 0 {
		errs = append(errs, errors.New("AssignableScopes: missing: a role definition needs at least one assignable scope"))
	}
	for i, s := range d.AssignableScopes {
		if s != RootScope && !strings.HasPrefix(strings.ToLower(s), "/subscriptions/") && !strings.HasPrefix(strings.ToLower(s), "/providers/microsoft.management/managementgroups/") {
			errs = append(errs, fmt.Errorf("AssignableScopes[%d]: %q is not a scope (/, /subscriptions/<id>[/resourceGroups/<name>[/providers/...]] or a management group)", i, s))
		}
	}
	for _, p := range d.Permissions {
		for _, l := range [][]string{p.Actions, p.NotActions, p.DataActions, p.NotDataActions} {
			for _, a := range l {
				if strings.TrimSpace(a) == "" || strings.ContainsAny(a, " \t\n") {
					errs = append(errs, fmt.Errorf("action %q is not an action pattern (Namespace/type/operation, '*' as a wildcard)", a))
				}
			}
		}
	}
	return errors.Join(errs...)
}
