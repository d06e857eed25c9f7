package fabric

import (
	"context"
	"encoding/json"
	"strings"
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
	list           handler
	inSubscription bool
	item           map[string]handler    // the methods on one resource
	children       map[string]childPaths // by child segment
	actions        map[string]handler    // POST .../{name}/{action}, by action
}

// childPaths are the handlers of one collection of children.
type childPaths struct {
	list handler
	item map[string]handler
}

// lister lists the resources of a type with listTop.
func (s *Server) lister(typ string, render func(*txn, *resourceRow) (json.RawMessage, error)) handler {
	return func(ctx context.Context, q *request) (*response, error) { return s.listTop(ctx, q, typ, render) }
}

// resourceTypes are the types the fabric serves, by name.
func (s *Server) resourceTypes() map[string]*resourceType {
	return map[string]*resourceType{
		typeRouteTables: {
			name: typeRouteTables, list: s.lister(typeRouteTables, renderTable), inSubscription: true,
			item: map[string]handler{"GET": s.getRouteTable, "PUT": s.putRouteTable, "PATCH": s.patchRouteTable, "DELETE": s.deleteRouteTable},
			children: map[string]childPaths{
				childRoutes: {s.listRoutes, map[string]handler{"GET": s.getRoute, "PUT": s.putRoute, "DELETE": s.deleteRoute}},
			},
		},
		typeVirtualNetworks: {
			name: typeVirtualNetworks, list: s.lister(typeVirtualNetworks, renderVNet), inSubscription: true,
			item: map[string]handler{"GET": s.getVirtualNetwork, "PUT": s.putVirtualNetwork, "PATCH": s.patchVirtualNetwork, "DELETE": s.deleteVirtualNetwork},
			children: map[string]childPaths{
				childSubnets:  {s.listSubnets, map[string]handler{"GET": s.getSubnet, "PUT": s.putSubnet, "DELETE": s.deleteSubnet}},
				childPeerings: {s.listPeerings, map[string]handler{"GET": s.getPeering, "PUT": s.putPeering, "DELETE": s.deletePeering}},
			},
		},
		typeNetworkInterfaces: {
			name: typeNetworkInterfaces, list: s.lister(typeNetworkInterfaces, renderPlain), inSubscription: true,
			item:    map[string]handler{"GET": s.getNIC, "PUT": s.putNIC, "DELETE": s.deleteNIC},
			actions: map[string]handler{actionEffectiveRoutes: s.postEffectiveRouteTable},
		},
		typeNetworkSecurityGroups: {
			name: typeNetworkSecurityGroups, list: s.lister(typeNetworkSecurityGroups, renderNSG), inSubscription: true,
			item: map[string]handler{"GET": s.getNSG, "PUT": s.putNSG, "PATCH": s.patchNSG, "DELETE": s.deleteNSG},
			children: map[string]childPaths{
				childSecurityRules:        {s.listSecurityRules, map[string]handler{"GET": s.getSecurityRule, "PUT": s.putSecurityRule, "DELETE": s.deleteSecurityRule}},
				childDefaultSecurityRules: {s.listDefaultSecurityRules, map[string]handler{"GET": s.getDefaultSecurityRule}},
			},
		},
		typeNatGateways: {
			name: typeNatGateways, list: s.lister(typeNatGateways, renderNatGateway), inSubscription: true,
			item: map[string]handler{"GET": s.getNatGateway, "PUT": s.putNatGateway, "DELETE": s.deleteNatGateway},
		},
		typeNetworkWatchers: {
			name:    typeNetworkWatchers,
			item:    map[string]handler{"GET": s.getWatcher, "PUT": s.putWatcher, "DELETE": s.deleteWatcher},
			actions: map[string]handler{actionNextHop: s.postNextHop},
		},
		typeVNetGateways: {
			list:    s.lister(typeVNetGateways, renderGateway),
			item:    map[string]handler{"GET": s.getGateway, "PUT": s.putGateway, "DELETE": s.deleteGateway},
			actions: map[string]handler{actionLearnedRoutes: s.postLearnedRoutes},
		},
		typeLocalGateways: {
			list: s.lister(typeLocalGateways, renderPlain),
			item: map[string]handler{"GET": s.getLocalGateway, "PUT": s.putLocalGateway, "DELETE": s.deleteLocalGateway},
		},
		typeConnections: {
			list: s.lister(typeConnections, renderConnection),
			item: map[string]handler{"GET": s.getConnection, "PUT": s.putConnection, "DELETE": s.deleteConnection},
		},
	}
}

// lookupFold finds k in m without regard to case, as ARM matches the
// fixed segments of a path.
func lookupFold[V any](m map[string]V, k string) (V, bool) {
	for name, v := range m {
		if strings.EqualFold(name, k) {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// serveType serves a path of n segments below a resource group's
// .../providers/Microsoft.Network/{type} of type t.
func (s *Server) serveType(ctx context.Context, q *request, t *resourceType, n int) (*response, error) {
	seg := q.segs
	switch {
	case n == 7 && t.list != nil:
		return s.methods(q, map[string]handler{"GET": t.list})(ctx, q)
	case n == 8:
		return s.methods(q, t.item)(ctx, q)
	case n == 9 || n == 10:
		if c, ok := lookupFold(t.children, seg[8]); ok {
			if n == 9 {
				return s.methods(q, map[string]handler{"GET": c.list})(ctx, q)
			}
			return s.methods(q, c.item)(ctx, q)
		}
		if a, ok := lookupFold(t.actions, seg[8]); ok && n == 9 {
			return s.methods(q, map[string]handler{"POST": a})(ctx, q)
		}
	}
	if n >= 9 {
		name := t.name
		if name == "" {
			name = seg[6]
		}
		return nil, errResourceType(q, name+"/"+seg[8])
	}
	return nil, errNoRoute(q)
}
