package deployments

import (
	"sort"
	"strconv"
	"strings"
)

// What-if's delta: the property changes between a resource as it is
// (before, as the provider's GET answers it) and as the template writes it
// (after), in the shape of Microsoft.Resources' WhatIfPropertyChange:
// object members joined into dotted paths ("properties.addressSpace"),
// arrays as one "Array" change whose children are the changed elements by
// index, each element's own changes relative to it.
//
// A property the template leaves out is a Delete only when it carries
// something: what the provider computes or fills in by itself (etag,
// provisioningState, resourceGuid, a child's id and type) and empty or
// default values (false, "", [], {}) are not changes, so an unchanged
// redeploy is NoChange. A subnet's routeTable left out is a Delete: the
// PUT drops the association.

// Property change types (PropertyChangeType).
const (
	propCreate = "Create"
	propDelete = "Delete"
	propModify = "Modify"
	propArray  = "Array"
)

// computed are properties the service sets: never a change.
var computed = map[string]bool{"etag": true, "provisioningstate": true, "resourceguid": true, "apiversion": true,
	// a subnet's back-references
	"ipconfigurations": true, "ipconfigurationprofiles": true, "serviceassociationlinks": true, "resourcenavigationlinks": true, "privateendpoints": true}

// serviceDefaults are values Microsoft.Network fills in for a property a
// PUT leaves out: left out again, they are not removed.
var serviceDefaults = map[string]string{
	"privateendpointnetworkpolicies":    "Disabled",
	"privatelinkservicenetworkpolicies": "Enabled",
}

// implicit are properties a template need not write: left out, they are
// not removed.
var implicit = map[string]bool{"id": true, "type": true}

// diffResource is the delta of a whole resource. Its name is left out: the
// template spells a child's with its parent's ("table/route"), the
// provider with its own only, and the ID says which resource it is.
// The provider's read-only properties of a type, which a GET answers and
// a template never writes, are left out too.
func diffResource(typ string, before, after map[string]any) []map[string]any {
	strip := func(m map[string]any, readOnly bool) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if !strings.EqualFold(k, "name") {
				out[k] = v
			}
		}
		if !readOnly {
			return out
		}
		props, ok := field(out, "properties").(map[string]any)
		if !ok {
			return out
		}
		kept := map[string]any{}
		for k, v := range props {
			if !readOnlyProps[strings.ToLower(typ)][strings.ToLower(k)] {
				kept[k] = v
			}
		}
		out["properties"] = kept
		return out
	}
	return diffObjects("", strip(before, true), strip(after, false))
}

// readOnlyProps are the properties a type's GET answers that a PUT does
// not write: back-references to what uses the resource.
var readOnlyProps = map[string]map[string]bool{
	"microsoft.network/routetables":           {"subnets": true},
	"microsoft.network/networksecuritygroups": {"subnets": true, "networkinterfaces": true, "defaultsecurityrules": true, "flowlogs": true},
	"microsoft.network/natgateways":           {"subnets": true},
}

func diffObjects(path string, before, after map[string]any) []map[string]any {
	var out []map[string]any
	keys := map[string][2]string{} // lower → (before's spelling, after's)
	for k := range before {
		e := keys[strings.ToLower(k)]
		e[0] = k
		keys[strings.ToLower(k)] = e
	}
	for k := range after {
		e := keys[strings.ToLower(k)]
		e[1] = k
		keys[strings.ToLower(k)] = e
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, lower := range names {
		if computed[lower] {
			continue
		}
		bk, ak := keys[lower][0], keys[lower][1]
		p := join(path, ak)
		switch {
		case ak == "":
			if implicit[lower] || isDefault(before[bk]) || sameScalar(before[bk], serviceDefaults[lower]) {
				continue
			}
			out = append(out, map[string]any{"path": join(path, bk), "propertyChangeType": propDelete, "before": before[bk]})
		case bk == "":
			if after[ak] == nil {
				continue
			}
			out = append(out, map[string]any{"path": p, "propertyChangeType": propCreate, "after": after[ak]})
		default:
			out = append(out, diffValues(p, before[bk], after[ak])...)
		}
	}
	return out
}

func diffValues(path string, before, after any) []map[string]any {
	switch a := after.(type) {
	case map[string]any:
		if b, ok := before.(map[string]any); ok {
			return diffObjects(path, b, a)
		}
	case []any:
		if b, ok := before.([]any); ok {
			children := diffArrays(b, a)
			if len(children) == 0 {
				return nil
			}
			return []map[string]any{{"path": path, "propertyChangeType": propArray, "children": children}}
		}
	default:
		if sameScalar(before, after) {
			return nil
		}
	}
	if after == nil && isDefault(before) {
		return nil
	}
	return []map[string]any{{"path": path, "propertyChangeType": propModify, "before": before, "after": after}}
}

// diffArrays compares arrays element by element: by name when every
// element is an object with one (subnets, routes), else by position.
func diffArrays(before, after []any) []map[string]any {
	var out []map[string]any
	if named(before) && named(after) {
		seen := map[string]bool{}
		for i, a := range after {
			n := elementName(a)
			seen[n] = true
			j := indexByName(before, n)
			if j < 0 {
				out = append(out, map[string]any{"path": strconv.Itoa(i), "propertyChangeType": propCreate, "after": a})
				continue
			}
			out = append(out, element(strconv.Itoa(i), before[j], a)...)
		}
		for j, b := range before {
			if !seen[elementName(b)] {
				out = append(out, map[string]any{"path": strconv.Itoa(j), "propertyChangeType": propDelete, "before": b})
			}
		}
		return out
	}
	for i := 0; i < max(len(before), len(after)); i++ {
		switch {
		case i >= len(before):
			out = append(out, map[string]any{"path": strconv.Itoa(i), "propertyChangeType": propCreate, "after": after[i]})
		case i >= len(after):
			out = append(out, map[string]any{"path": strconv.Itoa(i), "propertyChangeType": propDelete, "before": before[i]})
		default:
			out = append(out, element(strconv.Itoa(i), before[i], after[i])...)
		}
	}
	return out
}

// element is one array element's change: Modify with the element's own
// changes as children, or Modify of a scalar.
func element(path string, before, after any) []map[string]any {
	b, bok := before.(map[string]any)
	a, aok := after.(map[string]any)
	if bok && aok {
		children := diffObjects("", b, a)
		if len(children) == 0 {
			return nil
		}
		return []map[string]any{{"path": path, "propertyChangeType": propModify, "children": children}}
	}
	return diffValues(path, before, after)
}

func named(list []any) bool {
	for _, e := range list {
		if elementName(e) == "" {
			return false
		}
	}
	return true
}

func elementName(e any) string {
	m, _ := e.(map[string]any)
	s, _ := field(m, "name").(string)
	return strings.ToLower(s)
}

func indexByName(list []any, lower string) int {
	for i, e := range list {
		if elementName(e) == lower {
			return i
		}
	}
	return -1
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// sameScalar compares scalars as ARM does: strings without regard to
// case (IDs, locations), numbers by value.
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && strings.EqualFold(x, y)
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case int64:
			return x == float64(y)
		}
	case int64:
		switch y := b.(type) {
		case float64:
			return float64(x) == y
		case int64:
			return x == y
		}
	}
	return a == b
}

// isDefault reports whether v carries nothing: null, false, "", 0, [], {}.
func isDefault(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case int64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if !isDefault(e) {
				return false
			}
		}
		return true
	}
	return false
}
