package fabric

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// What the fabric does not know, it says so, loudly: a client such as the
// azurerm provider must never see a request accepted that the fabric
// silently misread. Every request with an unknown path, resource type,
// namespace or method (refused by the router), an api-version the fabric
// was not checked against, or a body property it does not know (and so
// drops) is logged at WARN with the method, the path and what was unknown.
// The end-to-end suites fail on any such line.

// resourcesAPIVersions are the Microsoft.Resources api-versions (resource
// groups, subscriptions, tenants, locations, providers, resources) whose
// shapes the fabric serves: those of the SDKs and CLIs it is tested with and
// the other versions of the same shapes.
var resourcesAPIVersions = []string{
	"2025-04-01", "2024-11-01", "2024-07-01", "2024-03-01", "2023-07-01", "2022-12-01", "2022-09-01",
	"2021-04-01", "2021-01-01", "2020-06-01", "2020-01-01", "2019-11-01", "2019-10-01", "2019-06-01",
}

// warnUnknownRequest logs a request the router refused because it does not
// know it. Other refusals (validation, preconditions, throttling) are the
// behaviour being emulated and are not logged here.
func (s *Server) warnUnknownRequest(r *http.Request, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return
	}
	what := ""
	switch ae.Code {
	case "InvalidRequestUri":
		what = "path"
	case "InvalidResourceType":
		what = "resource type"
	case "InvalidResourceNamespace":
		what = "resource provider namespace"
	case "HttpMethodNotSupported":
		what = "method"
	case "AuthenticationFailed":
		// An unauthenticated request to a path that is not ARM's is a
		// client looking for an identity endpoint the fabric lacks.
		p := strings.ToLower(r.URL.Path)
		if strings.HasPrefix(p, "/subscriptions") || strings.HasPrefix(p, "/tenants") {
			return
		}
		what = "path"
	default:
		return
	}
	s.log.Warn("fabric: unknown request: "+what, "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
		"code", ae.Code, "message", ae.Message)
}

// checkKnown warns about an api-version the fabric was not checked against
// and about body properties it does not know. The request is still served:
// ARM itself ignores unknown properties, and the shapes the fabric serves
// do not change with the api-version.
func (s *Server) checkKnown(q *api.Request) {
	ns, known := s.namespaceOf(q)
	if known != nil && !slices.Contains(known, q.APIVersion) {
		s.log.Warn("fabric: unknown request: api-version", "method", q.Method, "path", q.HTTP.URL.Path,
			"namespace", ns, "apiVersion", q.APIVersion, "known", strings.Join(known, ","))
	}
	if len(q.Body) == 0 || (q.Method != http.MethodPut && q.Method != http.MethodPatch && q.Method != http.MethodPost) {
		return
	}
	tmpl := bodyTemplate(q)
	if tmpl == nil {
		return
	}
	var body any
	if json.Unmarshal(q.Body, &body) != nil {
		return // the handler reports the body
	}
	var unknown []string
	unknownProperties(body, tmpl, "", &unknown)
	if len(unknown) > 0 {
		slices.Sort(unknown)
		s.log.Warn("fabric: unknown request: properties the fabric does not know (dropped)", "method", q.Method,
			"path", q.HTTP.URL.Path, "apiVersion", q.APIVersion, "properties", strings.Join(unknown, ","))
	}
}

// namespaceOf is the resource provider a request is for, with the
// api-versions the fabric knows of it (nil: any).
func (s *Server) namespaceOf(q *api.Request) (string, []string) {
	seg := q.Segs
	is := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	if !is(0, "subscriptions") && !is(0, "tenants") {
		return "", nil
	}
	// A resource of a provider: .../providers/{namespace}/{type}...; the
	// provider itself (.../providers/{namespace}[/register]) is served by
	// Microsoft.Resources. An extension resource on another resource (a role
	// assignment or lock on a route table:
	// .../routeTables/rt/providers/Microsoft.Authorization/locks/l) is its
	// own, last, provider's.
	p := lastProviders(seg)
	if p < 0 || len(seg) <= p+2 || (len(seg) == p+3 && is(p+2, "register")) {
		return api.ResourcesNamespace, resourcesAPIVersions
	}
	if strings.EqualFold(seg[p+1], api.NetworkNamespace) {
		return api.NetworkNamespace, networkAPIVersions
	}
	return seg[p+1], nil // another provider: the router says whether it is served
}

// lastProviders is the index of the last "providers" segment of a path
// below a subscription (at 2, 4 or later), -1 when there is none.
func lastProviders(seg []string) int {
	for i := len(seg) - 2; i >= 2; i-- {
		if strings.EqualFold(seg[i], "providers") {
			return i
		}
	}
	return -1
}

// bodyTemplate is the model a request body is checked against: every
// property name the Azure SDK's model of the resource knows, nested as in
// the body. nil: the body is not checked.
func bodyTemplate(q *api.Request) any {
	seg := q.Segs
	n := len(seg)
	is := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	if q.Method == http.MethodPatch {
		return templateOf("tags", &armnetwork.TagsObject{})
	}
	switch {
	case n == 4 && is(2, "resourcegroups"):
		return map[string]any{"id": "", "name": "", "type": "", "location": "", "managedBy": "", "tags": map[string]any{},
			"properties": map[string]any{"provisioningState": ""}}
	case n == 5 && is(2, "providers") && is(4, "register"):
		return map[string]any{"thirdPartyProviderConsent": map[string]any{"consentToAuthorization": false}}
	case n < 8 || !is(2, "resourcegroups") || !is(5, api.NetworkNamespace) || lastProviders(seg) != 4:
		return nil // not a network resource (an extension resource on one is its provider's)
	}
	typ := strings.ToLower(seg[6])
	if n == 10 {
		typ += "/" + strings.ToLower(seg[8])
	} else if n == 9 {
		typ += "/" + strings.ToLower(seg[8]) // an action: nextHop, effectiveRouteTable
	}
	switch typ {
	case "virtualnetworks":
		return templateOf(typ, &armnetwork.VirtualNetwork{})
	case "virtualnetworks/subnets":
		return templateOf(typ, &armnetwork.Subnet{})
	case "routetables":
		return templateOf(typ, &armnetwork.RouteTable{})
	case "routetables/routes":
		return templateOf(typ, &armnetwork.Route{})
	case "networkinterfaces":
		return templateOf(typ, &armnetwork.Interface{})
	case "networksecuritygroups":
		return templateOf(typ, &armnetwork.SecurityGroup{})
	case "networksecuritygroups/securityrules":
		return templateOf(typ, &armnetwork.SecurityRule{})
	case "networkwatchers":
		return templateOf(typ, &armnetwork.Watcher{})
	case "networkwatchers/nexthop":
		return templateOf(typ, &armnetwork.NextHopParameters{})
	}
	return nil
}

var templates sync.Map // type → the filled model as a JSON tree

// templateOf fills an SDK model (every field set, see fill) and returns it
// as a JSON tree: the names and nesting of every property it knows.
func templateOf(name string, model any) any {
	if t, ok := templates.Load(name); ok {
		return t
	}
	api.FillModel(reflect.ValueOf(model).Elem(), 0)
	b, err := json.Marshal(model)
	if err != nil {
		panic("fabric: marshalling a filled SDK model: " + err.Error())
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		panic("fabric: reading a filled SDK model: " + err.Error())
	}
	templates.Store(name, doc)
	return doc
}

// unknownProperties collects the paths of the properties of body that tmpl
// does not have, comparing names without regard to case as ARM does. An
// empty object in the template is a free-form map (tags): anything goes.
func unknownProperties(body, tmpl any, path string, out *[]string) {
	switch b := body.(type) {
	case map[string]any:
		t, ok := tmpl.(map[string]any)
		if !ok || len(t) == 0 {
			return
		}
		lower := make(map[string]any, len(t))
		for k, v := range t {
			lower[strings.ToLower(k)] = v
		}
		for k, v := range b {
			tv, ok := lower[strings.ToLower(k)]
			if !ok {
				*out = append(*out, path+k)
				continue
			}
			unknownProperties(v, tv, path+k+".", out)
		}
	case []any:
		t, ok := tmpl.([]any)
		if !ok || len(t) == 0 {
			return
		}
		p := strings.TrimSuffix(path, ".")
		for i, v := range b {
			unknownProperties(v, t[0], p+"["+strconv.Itoa(i)+"].", out)
		}
	}
}
