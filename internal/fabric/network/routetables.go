package network

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// tableWithSubnets returns a route table document whose read-only
// subnets list is the table's current associations.
func tableWithSubnets(tx *store.Txn, tableKey string, doc []byte) ([]byte, error) {
	subnets, err := tx.SubnetsOf(tableKey)
	if err != nil {
		return nil, err
	}
	t, err := DecodeTable(doc)
	if err != nil {
		return nil, err
	}
	t.Properties.Subnets = nil
	for _, id := range subnets {
		t.Properties.Subnets = append(t.Properties.Subnets, idRef{ID: id})
	}
	return api.Encode(t)
}

// renderTable is a stored route table as ARM returns it. The document
// carries its subnets list (kept by storeRow), so a GET is a copy.
func renderTable(_ *store.Txn, row *store.ResourceRow) (json.RawMessage, error) { return row.Doc, nil }

func (s *Provider) getRouteTable(ctx context.Context, q *api.Request) (*api.Response, error) {
	resp, err := s.getTop(ctx, q, api.TypeRouteTables, api.ArmTypeRouteTable, renderTable)
	if err != nil {
		return nil, err
	}
	// The intruder strikes after the answer is computed and before it is
	// sent: the client holds an etag that is already stale.
	t := q.Target()
	s.maybeIntrude(ctx, api.Key(api.ResourceID(t.Sub, t.RG, api.TypeRouteTables, t.Name)))
	return resp, nil
}

// tableKind is the route table to the PUT pipeline: the fabric's own
// documents (tabledoc.go), which encoding/json decodes without regard to
// the case of property names.
var tableKind = topKind[tableIn, *tableDoc]{
	typ: api.TypeRouteTables, armType: api.ArmTypeRouteTable, render: renderTable, body: api.DecodeObject, stored: DecodeTable,
	meta:  func(in *tableIn) (*string, map[string]*string) { return in.Location, in.Tags },
	where: func(t *tableDoc) string { return t.Location },
}

type tablePut = topPut[tableIn, *tableDoc]

// buildTable makes the route table a PUT stores, with its inline routes.
func (s *Provider) buildTable(p *tablePut) (*api.Response, error) {
	in, cur, id := p.in, p.cur, p.id
	etag := api.NewEtag()
	out := &tableDoc{
		ID: id, Name: armid.Name(id), Type: api.ArmTypeRouteTable, Location: p.loc, Tags: PlainTags(in.Tags), Etag: etag,
		Properties: tableProps{ProvisioningState: stateUpdating, ResourceGUID: uuid.NewString(), Routes: []*RouteDoc{}},
	}
	if !p.exists() {
		if err := s.checkTablesLimit(p.tx, p.fresh.SubKey, p.loc); err != nil {
			return nil, err
		}
	}
	var curRoutes []*RouteDoc
	if cur != nil {
		out.Properties.ResourceGUID = cur.Properties.ResourceGUID
		curRoutes = cur.Properties.Routes
	}
	var inRoutes []*routeIn
	if in.Properties != nil {
		if in.Properties.DisableBgpRoutePropagation != nil {
			out.Properties.DisableBgpRoutePropagation = *in.Properties.DisableBgpRoutePropagation
		}
		inRoutes = in.Properties.Routes
	}
	seen := api.InlineNames{}
	for i, r := range inRoutes {
		if r == nil {
			return nil, api.InvalidFormat("properties.routes[%d] is null.", i)
		}
		name := api.Str(r.Name)
		if err := seen.Add(name, "Route table %s has more than one route named %s.", p.t.Name); err != nil {
			return nil, err
		}
		nr, err := buildRoute(id, name, r.Properties, findRoute(curRoutes, name), etag)
		if err != nil {
			return nil, err
		}
		out.Properties.Routes = append(out.Properties.Routes, nr)
	}
	if err := s.checkRoutes(id, out.Properties.Routes); err != nil {
		return nil, err
	}
	if cur != nil && cur.Properties.ProvisioningState == StateSucceeded && sameTable(cur, out) {
		return api.Unchanged(json.RawMessage(p.row.Doc), p.row.Etag), nil
	}
	return p.Store(s, etag, out)
}

// PlainTags is the SDK's tags as plain strings (a nil value becomes "").
func PlainTags(in map[string]*string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = api.Str(v)
	}
	return out
}

// buildRoute validates a route as a client sent it and returns it as the
// table will hold it. An unchanged route keeps its etag and state.
func buildRoute(tableID, name string, p *routePropsIn, prev *RouteDoc, etag string) (*RouteDoc, error) {
	if p == nil {
		return nil, api.InvalidFormat("Route %s has no properties.", name)
	}
	if prev != nil {
		name = prev.Name // ARM keeps the name as first created
	}
	prefix := strings.TrimSpace(api.Str(p.AddressPrefix))
	if prefix == "" {
		return nil, api.InvalidFormat("Route %s has no addressPrefix.", name)
	}
	if !api.ServiceTagRE.MatchString(prefix) {
		_, code, want := api.PrefixProblem(prefix)
		switch code {
		case "InvalidCIDRNotation":
			return nil, api.BadRequest(code, "The address prefix %s in resource %s has an invalid CIDR notation. For the given prefix length, the address prefix should be %s.",
				prefix, api.ChildID(tableID, api.ChildRoutes, name), want)
		case "":
		default:
			return nil, api.BadRequest(code, "Route %s has an invalid AddressPrefix %q: it is neither a CIDR prefix nor a service tag.", name, prefix)
		}
	}
	if p.NextHopType == nil {
		return nil, api.InvalidFormat("Route %s has no nextHopType.", name)
	}
	hop, ok := CanonicalHop(*p.NextHopType)
	if !ok {
		return nil, api.InvalidFormat("Route %s has an unknown nextHopType %q; it must be one of VirtualNetworkGateway, VnetLocal, Internet, VirtualAppliance, None.",
			name, *p.NextHopType)
	}
	ip := strings.TrimSpace(api.Str(p.NextHopIPAddress))
	out := &RouteDoc{
		ID: api.ChildID(tableID, api.ChildRoutes, name), Name: name, Type: api.ArmTypeRoute, Etag: etag,
		Properties: RouteProps{ProvisioningState: stateUpdating, AddressPrefix: prefix, NextHopType: string(hop)},
	}
	if hop == armnetwork.RouteNextHopTypeVirtualAppliance {
		if ip == "" {
			return nil, api.BadRequest("MissingNextHopIpAddress",
				"NextHopIpAddress cannot be Null or Empty in route %s when NextHopType is VirtualAppliance.", name)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			return nil, api.BadRequest("InvalidNextHopIpAddress", "Route %s has an invalid NextHopIpAddress %q.", name, ip)
		}
		out.Properties.NextHopIPAddress = a.String()
	} else if ip != "" {
		return nil, api.BadRequest("NextHopIpAddressNotAllowed",
			"NextHopIpAddress %s is not allowed in route %s when NextHopType is %s. Next hop values are only allowed in routes where the next hop type is VirtualAppliance.",
			ip, name, hop)
	}
	if prev != nil && sameRoute(prev.Properties, out.Properties) {
		out.Etag = prev.Etag
	}
	return out, nil
}

func sameRoute(a, b RouteProps) bool {
	return a.AddressPrefix == b.AddressPrefix && a.NextHopType == b.NextHopType && a.NextHopIPAddress == b.NextHopIPAddress
}

func CanonicalHop(s string) (armnetwork.RouteNextHopType, bool) {
	for _, h := range armnetwork.PossibleRouteNextHopTypeValues() {
		if strings.EqualFold(string(h), s) {
			return h, true
		}
	}
	return "", false
}

// checkRoutes applies the whole-table rules: no two routes with the same
// address prefix (RouteConflict) and no more routes than the limit. ARM's
// code and message for too many routes are not in public material (its
// limits page gives the number only); the fabric answers 400 with a code
// of its own and a message that carries the limit, which routekeeper reads
// (internal/cloud/azure classifies any 400 naming the route limit).
func (s *Provider) checkRoutes(tableID string, routes []*RouteDoc) error {
	if len(routes) > s.routeLimit {
		return api.BadRequest("RouteTableRouteLimitExceeded",
			"Route table %s has %d routes, more than the limit of %d routes per route table.", tableID, len(routes), s.routeLimit)
	}
	seen := make(map[string]string, len(routes))
	for _, r := range routes {
		k := PrefixKey(r.Properties.AddressPrefix)
		if first, ok := seen[k]; ok {
			return api.BadRequest("RouteConflict",
				"Route: %s conflicts with Route: %s. Routes cannot have the same AddressPrefix.", r.Name, first)
		}
		seen[k] = r.Name
	}
	return nil
}

// PrefixKey is the identity of an address prefix for RouteConflict: the
// parsed prefix for a CIDR, the lower-cased tag for a service tag.
func PrefixKey(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return "tag:" + strings.ToLower(s)
}

func errTableInUse(tableID string, subnets []string) *api.Error {
	return api.BadRequest("InUseRouteTableCannotBeDeleted",
		"Route table %s is in use by subnet(s) %s and cannot be deleted. Remove the route table from the subnet(s) first.",
		tableID, strings.Join(subnets, ", "))
}

// checkTableNotInUse refuses to delete a route table a subnet uses.
func checkTableNotInUse(tx *store.Txn, row *store.ResourceRow) error {
	subnets, err := tx.SubnetsOf(row.Key)
	if err != nil {
		return err
	}
	if len(subnets) > 0 {
		return errTableInUse(row.ID, subnets)
	}
	return nil
}

// --- routes as child resources ---

// tableParent is the route table as the parent of its routes.
var tableParent = parentKind[*tableDoc]{
	typ: api.TypeRouteTables, armType: api.ArmTypeRouteTable, decode: DecodeTable,
	location:  func(t *tableDoc) string { return t.Location },
	succeeded: func(t *tableDoc) bool { return t.Properties.ProvisioningState == StateSucceeded },
	updating:  func(t *tableDoc, etag string) { t.Etag, t.Properties.ProvisioningState = etag, stateUpdating },
}

var routeKind = childKind[*tableDoc, *RouteDoc]{
	parent: &tableParent, child: api.ChildRoutes,
	items:    func(t *tableDoc) *[]*RouteDoc { return &t.Properties.Routes },
	name:     func(r *RouteDoc) string { return r.Name },
	id:       func(r *RouteDoc) string { return r.ID },
	etag:     func(r *RouteDoc) string { return r.Etag },
	setEtag:  func(r *RouteDoc, etag string) { r.Etag = etag },
	deleting: func(r *RouteDoc) { r.Properties.ProvisioningState = stateDeleting },
}

type routePut = childPut[routeIn, *tableDoc, *RouteDoc]

func (s *Provider) putRoute(ctx context.Context, q *api.Request) (*api.Response, error) {
	return s.put(ctx, q, &routePut{
		kind: &routeKind, body: api.DecodeObject,
		build: func(p *routePut) (*RouteDoc, error) {
			return buildRoute(p.row.ID, p.t.ChildName, p.in.Properties, p.prev, p.etag)
		},
		same:  func(prev, next *RouteDoc) bool { return sameRoute(prev.Properties, next.Properties) },
		check: func(p *routePut, routes []*RouteDoc) error { return s.checkRoutes(p.row.ID, routes) },
	})
}

// sameTable reports whether a PUT would store the table it replaces, apart
// from etags and provisioning states: a no-op. Route tables are the hot
// path, so this compares the documents field by field.
func sameTable(cur, next *tableDoc) bool {
	if cur.Location != next.Location || cur.Properties.DisableBgpRoutePropagation != next.Properties.DisableBgpRoutePropagation ||
		len(cur.Tags) != len(next.Tags) || len(cur.Properties.Routes) != len(next.Properties.Routes) {
		return false
	}
	for k, v := range cur.Tags {
		if nv, ok := next.Tags[k]; !ok || nv != v {
			return false
		}
	}
	for i, r := range cur.Properties.Routes {
		n := next.Properties.Routes[i]
		if r.Name != n.Name || r.ID != n.ID || !sameRoute(r.Properties, n.Properties) || r.Properties.HasBgpOverride != n.Properties.HasBgpOverride {
			return false
		}
	}
	return true
}
