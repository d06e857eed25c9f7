package network

import (
	"context"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// resourceType is how the paths of one top-level Microsoft.Network type
// are served below .../providers/Microsoft.Network/{type}: the type's
// collection, one resource, its child collections and its actions.
type resourceType struct {
	// name is the type as an InvalidResourceType error for a path below
	// it names it; "" names it as the request spelled it.
	name string
	// list serves GET of the collection in a group (nil: the path is not
	// served), and of a subscription's too when inSubscription.
	list           api.Handler
	inSubscription bool
	item           map[string]api.Handler // the methods on one resource
	children       map[string]childPaths  // by child segment
	actions        map[string]api.Handler // POST .../{name}/{action}, by action
}

// childPaths are the handlers of one collection of children.
type childPaths struct {
	list api.Handler
	item map[string]api.Handler
}

// The handlers of a top-level type of kind k.

func (k *topKind[In, Cur]) handleList(s *Provider) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return s.listTop(ctx, q, k.typ, k.render)
	}
}

func (k *topKind[In, Cur]) handleGet(s *Provider) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return s.getTop(ctx, q, k.typ, k.armType, k.render)
	}
}

func (k *topKind[In, Cur]) handlePatch(s *Provider) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return s.patchTags(ctx, q, k.typ, k.armType, k.render)
	}
}

// handleDelete is DELETE; check may refuse it (nil: never).
func (k *topKind[In, Cur]) handleDelete(s *Provider, check func(*store.Txn, *store.ResourceRow) error) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return s.deleteTop(ctx, q, k.typ, check)
	}
}

// handlePut is PUT through the pipeline, with build for the type's part.
func (k *topKind[In, Cur]) handlePut(s *Provider, build func(*topPut[In, Cur]) (*api.Response, error)) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return s.put(ctx, q, &topPut[In, Cur]{kind: k, build: build})
	}
}

// resourceTypes are the types the fabric serves, by name.
func (s *Provider) resourceTypes() map[string]*resourceType {
	return map[string]*resourceType{
		api.TypeRouteTables: {
			name: api.TypeRouteTables, list: tableKind.handleList(s), inSubscription: true,
			item: map[string]api.Handler{
				"GET": s.getRouteTable, "PUT": tableKind.handlePut(s, s.buildTable),
				"PATCH": tableKind.handlePatch(s), "DELETE": tableKind.handleDelete(s, checkTableNotInUse),
			},
			children: map[string]childPaths{
				api.ChildRoutes: {
					list: routeKind.handleList(s),
					item: map[string]api.Handler{"GET": routeKind.handleGet(s), "PUT": s.putRoute, "DELETE": routeKind.handleDelete(s, nil)},
				},
			},
		},
		api.TypeVirtualNetworks: {
			name: api.TypeVirtualNetworks, list: vnetKind.handleList(s), inSubscription: true,
			item: map[string]api.Handler{
				"GET": vnetKind.handleGet(s), "PUT": vnetKind.handlePut(s, s.buildVNet),
				"PATCH": vnetKind.handlePatch(s), "DELETE": vnetKind.handleDelete(s, checkVNetNotInUse),
			},
			children: map[string]childPaths{
				api.ChildSubnets: {
					list: subnetKind.handleList(s),
					item: map[string]api.Handler{"GET": subnetKind.handleGet(s), "PUT": s.putSubnet, "DELETE": subnetKind.handleDelete(s, checkSubnetNotInUse)},
				},
				ChildPeerings: {
					list: peeringKind.handleList(s),
					item: map[string]api.Handler{"GET": peeringKind.handleGet(s), "PUT": s.putPeering, "DELETE": peeringKind.handleDelete(s, nil)},
				},
			},
		},
		TypeNetworkInterfaces: {
			name: TypeNetworkInterfaces, list: nicKind.handleList(s), inSubscription: true,
			item:    map[string]api.Handler{"GET": nicKind.handleGet(s), "PUT": nicKind.handlePut(s, s.buildNIC), "DELETE": nicKind.handleDelete(s, nil)},
			actions: map[string]api.Handler{actionEffectiveRoutes: s.postEffectiveRouteTable},
		},
		TypeNetworkSecurityGroups: {
			name: TypeNetworkSecurityGroups, list: nsgKind.handleList(s), inSubscription: true,
			item: map[string]api.Handler{
				"GET": nsgKind.handleGet(s), "PUT": nsgKind.handlePut(s, s.buildNSG),
				"PATCH": nsgKind.handlePatch(s), "DELETE": nsgKind.handleDelete(s, checkNSGNotInUse),
			},
			children: map[string]childPaths{
				childSecurityRules: {
					list: securityRuleKind.handleList(s),
					item: map[string]api.Handler{"GET": securityRuleKind.handleGet(s), "PUT": s.putSecurityRule, "DELETE": securityRuleKind.handleDelete(s, nil)},
				},
				childDefaultSecurityRules: {
					list: defaultRuleKind.handleList(s),
					item: map[string]api.Handler{"GET": defaultRuleKind.handleGet(s)},
				},
			},
		},
		TypeNatGateways: {
			name: TypeNatGateways, list: natGatewayKind.handleList(s), inSubscription: true,
			item: map[string]api.Handler{
				"GET": natGatewayKind.handleGet(s), "PUT": natGatewayKind.handlePut(s, s.buildNatGateway),
				"DELETE": natGatewayKind.handleDelete(s, checkNatGatewayNotInUse),
			},
		},
		typeNetworkWatchers: {
			name:    typeNetworkWatchers,
			item:    map[string]api.Handler{"GET": watcherKind.handleGet(s), "PUT": watcherKind.handlePut(s, s.buildWatcher), "DELETE": watcherKind.handleDelete(s, nil)},
			actions: map[string]api.Handler{actionNextHop: s.postNextHop},
		},
		TypeVNetGateways: {
			list: gatewayKind.handleList(s),
			item: map[string]api.Handler{
				"GET": gatewayKind.handleGet(s), "PUT": gatewayKind.handlePut(s, s.buildGateway),
				"DELETE": gatewayKind.handleDelete(s, notConnected("InUseVirtualNetworkGatewayCannotBeDeleted",
					"Virtual network gateway %s cannot be deleted because it is in use by connection %s.")),
			},
			actions: map[string]api.Handler{actionLearnedRoutes: s.postLearnedRoutes},
		},
		TypeLocalGateways: {
			list: localGatewayKind.handleList(s),
			item: map[string]api.Handler{
				"GET": localGatewayKind.handleGet(s), "PUT": localGatewayKind.handlePut(s, s.buildLocalGateway),
				"DELETE": localGatewayKind.handleDelete(s, notConnected("InUseLocalNetworkGatewayCannotBeDeleted",
					"Local network gateway %s cannot be deleted because it is in use by connection %s.")),
			},
		},
		TypeConnections: {
			list: connectionKind.handleList(s),
			item: map[string]api.Handler{"GET": connectionKind.handleGet(s), "PUT": connectionKind.handlePut(s, s.buildConnection), "DELETE": connectionKind.handleDelete(s, nil)},
		},
	}
}

// serveType serves a path of n segments below a resource group's
// .../providers/Microsoft.Network/{type} of type t.
func (s *Provider) serveType(ctx context.Context, q *api.Request, t *resourceType, n int) (*api.Response, error) {
	seg := q.Segs
	switch {
	case n == 7 && t.list != nil:
		return api.Methods(q, map[string]api.Handler{"GET": t.list})(ctx, q)
	case n == 8:
		return api.Methods(q, t.item)(ctx, q)
	case n == 9 || n == 10:
		if c, ok := api.LookupFold(t.children, seg[8]); ok {
			if n == 9 {
				return api.Methods(q, map[string]api.Handler{"GET": c.list})(ctx, q)
			}
			return api.Methods(q, c.item)(ctx, q)
		}
		if a, ok := api.LookupFold(t.actions, seg[8]); ok && n == 9 {
			return api.Methods(q, map[string]api.Handler{"POST": a})(ctx, q)
		}
	}
	if n >= 9 {
		name := t.name
		if name == "" {
			name = seg[6]
		}
		return nil, api.InvalidResourceType(q, name+"/"+seg[8])
	}
	return nil, api.NoRoute(q)
}

// Namespace is the resource provider namespace the provider serves.
func (s *Provider) Namespace() string { return api.NetworkNamespace }

// ServeSubscription serves a path below a subscription's
// .../providers/Microsoft.Network: the subscription-wide lists of the types,
// the usages of a location (usages.go) and the operation status endpoints.
func (s *Provider) ServeSubscription(ctx context.Context, q *api.Request) (*api.Response, error) {
	seg := q.Segs
	is := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	n := len(seg)
	if t, ok := api.LookupFold(s.types, seg[4]); ok && n == 5 && t.inSubscription {
		return api.Methods(q, map[string]api.Handler{"GET": t.list})(ctx, q)
	}
	switch {
	case n == 7 && is(4, "locations") && is(6, "usages"):
		return api.Methods(q, map[string]api.Handler{"GET": s.getUsages})(ctx, q)
	case n == 8 && is(4, "locations") && is(6, "operations"):
		return api.Methods(q, map[string]api.Handler{"GET": s.getOperation})(ctx, q)
	case n == 8 && is(4, "locations") && is(6, "operationResults"):
		return api.Methods(q, map[string]api.Handler{"GET": s.getOperationResult})(ctx, q)
	}
	if n >= 5 {
		return nil, api.InvalidResourceType(q, seg[4])
	}
	return nil, api.NoRoute(q)
}

// ServeGroup serves a path of 7 or more segments below a resource group's
// .../providers/Microsoft.Network.
func (s *Provider) ServeGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	if t, ok := api.LookupFold(s.types, q.Segs[6]); ok {
		return s.serveType(ctx, q, t, len(q.Segs))
	}
	return nil, api.InvalidResourceType(q, q.Segs[6])
}
