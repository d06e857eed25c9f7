package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"
)

// tableWithSubnets returns a route table document whose read-only
// subnets list is the table's current associations.
func tableWithSubnets(tx *txn, tableKey string, doc []byte) ([]byte, error) {
	subnets, err := tx.subnetsOf(tableKey)
	if err != nil {
		return nil, err
	}
	t, err := decodeTable(doc)
	if err != nil {
		return nil, err
	}
	t.Properties.Subnets = nil
	for _, id := range subnets {
		t.Properties.Subnets = append(t.Properties.Subnets, idRef{ID: id})
	}
	return encode(t)
}

// renderTable is a stored route table as ARM returns it. The document
// carries its subnets list (kept by storeRow), so a GET is a copy.
func renderTable(_ *txn, row *resourceRow) (json.RawMessage, error) { return row.Doc, nil }

func (s *Server) listRouteTables(ctx context.Context, q *request) (*response, error) {
	return s.listTop(ctx, q, typeRouteTables, renderTable)
}

// readTop reads one top-level resource for a GET: 404 when it or its group
// is missing. fn must not modify the row's Doc (it may be cached).
func (s *Server) readTop(ctx context.Context, q *request, typ, armType string, fn func(*txn, *resourceRow) error) error {
	t := q.target()
	return s.view(ctx, func(tx *txn) error {
		rg, err := requireRG(tx, t.sub, t.rg, false)
		if err != nil {
			return err
		}
		row, err := tx.getResourceForRead(key(resourceID(rg.Sub, rg.Name, typ, t.name)))
		if err != nil {
			return err
		}
		if row == nil {
			return errResourceNotFound(armType, t.name, t.rg)
		}
		return fn(tx, row)
	})
}

func (s *Server) getRouteTable(ctx context.Context, q *request) (*response, error) {
	var body json.RawMessage
	var etag, k string
	err := s.readTop(ctx, q, typeRouteTables, armTypeRouteTable, func(tx *txn, row *resourceRow) error {
		var err error
		body, err = renderTable(tx, row)
		etag, k = row.Etag, row.Key
		return err
	})
	if err != nil {
		return nil, err
	}
	// The intruder strikes after the answer is computed and before it is
	// sent: the client holds an etag that is already stale.
	s.maybeIntrude(ctx, k)
	return &response{status: http.StatusOK, body: body, header: withEtag(etag)}, nil
}

// writeTop runs a write of a top-level resource (or of one of its
// children) in one transaction: due operations settle first, the resource
// group must exist and not be deleting, and no operation may be running on
// the resource.
func (s *Server) writeTop(ctx context.Context, q *request, typ string, fn func(tx *txn, rg *rgRow, row *resourceRow, fresh *resourceRow) error) error {
	t := q.target()
	return s.store.write(ctx, func(tx *txn) error {
		if err := s.settleTx(tx); err != nil {
			return err
		}
		rg, err := requireRG(tx, t.sub, t.rg, true)
		if err != nil {
			return err
		}
		fresh := newRow(rg, typ, t.name)
		row, err := tx.getResource(fresh.Key)
		if err != nil {
			return err
		}
		if row != nil {
			if err := s.checkRunning(tx, q, row.Key); err != nil {
				return err
			}
		}
		return fn(tx, rg, row, fresh)
	})
}

func (s *Server) putRouteTable(ctx context.Context, q *request) (*response, error) {
	var in tableIn
	if err := decodeObject(q.body, &in); err != nil {
		return nil, err
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	t := q.target()
	if !validName(t.name) {
		return nil, errInvalidName(t.name)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeRouteTables, func(tx *txn, rg *rgRow, row, fresh *resourceRow) error {
		id, curEtag := fresh.ID, ""
		var cur *tableDoc
		if row != nil {
			var err error
			if cur, err = decodeTable(row.Doc); err != nil {
				return err
			}
			id, curEtag = row.ID, row.Etag
		}
		if err := checkPreconditions(q, id, row != nil, curEtag); err != nil {
			return err
		}
		curLoc := ""
		if cur != nil {
			curLoc = cur.Location
		}
		loc, err := locationOf(in.Location, curLoc, t.name, rg.Name)
		if err != nil {
			return err
		}
		etag := newEtag()
		out := &tableDoc{
			ID: id, Name: nameOf(id), Type: armTypeRouteTable, Location: loc, Tags: plainTags(in.Tags), Etag: etag,
			Properties: tableProps{ProvisioningState: stateUpdating, ResourceGUID: uuid.NewString(), Routes: []*routeDoc{}},
		}
		var curRoutes []*routeDoc
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
		seen := map[string]bool{}
		for i, r := range inRoutes {
			if r == nil {
				return errInvalidFormat("properties.routes[%d] is null.", i)
			}
			name := str(r.Name)
			if !validName(name) {
				return errInvalidName(name)
			}
			if seen[key(name)] {
				return badRequest("DuplicateResourceName", "Route table %s has more than one route named %s.", t.name, name)
			}
			seen[key(name)] = true
			nr, err := buildRoute(id, name, r.Properties, findRoute(curRoutes, name), etag)
			if err != nil {
				return err
			}
			out.Properties.Routes = append(out.Properties.Routes, nr)
		}
		if err := s.checkRoutes(id, out.Properties.Routes); err != nil {
			return err
		}
		if cur != nil && cur.Properties.ProvisioningState == stateSucceeded {
			if sameTable(cur, out) {
				resp = unchanged(json.RawMessage(row.Doc), row.Etag)
				return nil
			}
		}
		resp, err = s.storeTopPut(tx, q, rg, row, fresh, id, loc, etag, out)
		return err
	})
	return resp, err
}

func plainTags(in map[string]*string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = str(v)
	}
	return out
}

// nameOf is the last segment of an ID.
func nameOf(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// buildRoute validates a route as a client sent it and returns it as the
// table will hold it. An unchanged route keeps its etag and state.
func buildRoute(tableID, name string, p *routePropsIn, prev *routeDoc, etag string) (*routeDoc, error) {
	if p == nil {
		return nil, errInvalidFormat("Route %s has no properties.", name)
	}
	if prev != nil {
		name = prev.Name // ARM keeps the name as first created
	}
	prefix := strings.TrimSpace(str(p.AddressPrefix))
	if prefix == "" {
		return nil, errInvalidFormat("Route %s has no addressPrefix.", name)
	}
	if !serviceTagRE.MatchString(prefix) {
		_, code, want := prefixProblem(prefix)
		switch code {
		case "InvalidCIDRNotation":
			return nil, badRequest(code, "The address prefix %s in resource %s has an invalid CIDR notation. For the given prefix length, the address prefix should be %s.",
				prefix, childID(tableID, childRoutes, name), want)
		case "":
		default:
			return nil, badRequest(code, "Route %s has an invalid AddressPrefix %q: it is neither a CIDR prefix nor a service tag.", name, prefix)
		}
	}
	if p.NextHopType == nil {
		return nil, errInvalidFormat("Route %s has no nextHopType.", name)
	}
	hop, ok := canonicalHop(*p.NextHopType)
	if !ok {
		return nil, errInvalidFormat("Route %s has an unknown nextHopType %q; it must be one of VirtualNetworkGateway, VnetLocal, Internet, VirtualAppliance, None.",
			name, *p.NextHopType)
	}
	ip := strings.TrimSpace(str(p.NextHopIPAddress))
	out := &routeDoc{
		ID: childID(tableID, childRoutes, name), Name: name, Type: armTypeRoute, Etag: etag,
		Properties: routeProps{ProvisioningState: stateUpdating, AddressPrefix: prefix, NextHopType: string(hop)},
	}
	if hop == armnetwork.RouteNextHopTypeVirtualAppliance {
		if ip == "" {
			return nil, badRequest("MissingNextHopIpAddress",
				"NextHopIpAddress cannot be Null or Empty in route %s when NextHopType is VirtualAppliance.", name)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			return nil, badRequest("InvalidNextHopIpAddress", "Route %s has an invalid NextHopIpAddress %q.", name, ip)
		}
		out.Properties.NextHopIPAddress = a.String()
	} else if ip != "" {
		return nil, badRequest("NextHopIpAddressNotAllowed",
			"NextHopIpAddress %s is not allowed in route %s when NextHopType is %s. Next hop values are only allowed in routes where the next hop type is VirtualAppliance.",
			ip, name, hop)
	}
	if prev != nil && sameRoute(prev.Properties, out.Properties) {
		out.Etag = prev.Etag
	}
	return out, nil
}

func sameRoute(a, b routeProps) bool {
	return a.AddressPrefix == b.AddressPrefix && a.NextHopType == b.NextHopType && a.NextHopIPAddress == b.NextHopIPAddress
}

func canonicalHop(s string) (armnetwork.RouteNextHopType, bool) {
	for _, h := range armnetwork.PossibleRouteNextHopTypeValues() {
		if strings.EqualFold(string(h), s) {
			return h, true
		}
	}
	return "", false
}

// checkRoutes applies the whole-table rules: no two routes with the same
// address prefix (RouteConflict) and no more routes than the limit.
func (s *Server) checkRoutes(tableID string, routes []*routeDoc) error {
	if len(routes) > s.routeLimit {
		return badRequest("RouteTableRouteLimitExceeded",
			"Route table %s has %d routes, more than the limit of %d routes per route table.", tableID, len(routes), s.routeLimit)
	}
	seen := make(map[string]string, len(routes))
	for _, r := range routes {
		k := prefixKey(r.Properties.AddressPrefix)
		if first, ok := seen[k]; ok {
			return badRequest("RouteConflict",
				"Route: %s conflicts with Route: %s. Routes cannot have the same AddressPrefix.", r.Name, first)
		}
		seen[k] = r.Name
	}
	return nil
}

// prefixKey is the identity of an address prefix for RouteConflict: the
// parsed prefix for a CIDR, the lower-cased tag for a service tag.
func prefixKey(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return "tag:" + strings.ToLower(s)
}

func errTableInUse(tableID string, subnets []string) *apiError {
	return badRequest("InUseRouteTableCannotBeDeleted",
		"Route table %s is in use by subnet(s) %s and cannot be deleted. Remove the route table from the subnet(s) first.",
		tableID, strings.Join(subnets, ", "))
}

func (s *Server) deleteRouteTable(ctx context.Context, q *request) (*response, error) {
	return s.deleteTop(ctx, q, typeRouteTables, func(tx *txn, row *resourceRow) error {
		subnets, err := tx.subnetsOf(row.Key)
		if err != nil {
			return err
		}
		if len(subnets) > 0 {
			return errTableInUse(row.ID, subnets)
		}
		return nil
	})
}

// deleteTop starts the deletion of a top-level resource: 204 when it does
// not exist, else 202 with the operation's URLs; check may refuse.
func (s *Server) deleteTop(ctx context.Context, q *request, typ string, check func(*txn, *resourceRow) error) (*response, error) {
	var resp *response
	err := s.writeTop(ctx, q, typ, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			if err := checkPreconditions(q, resourceID(rg.Sub, rg.Name, typ, q.target().name), false, ""); err != nil {
				return err
			}
			resp = &response{status: http.StatusNoContent}
			return nil
		}
		if err := checkPreconditions(q, row.ID, true, row.Etag); err != nil {
			return err
		}
		if err := check(tx, row); err != nil {
			return err
		}
		loc, doc, err := markDeleting(row)
		if err != nil {
			return err
		}
		row.Doc = doc
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		o := s.newOp(opDelete, rg.Sub, loc, row.Key, row.ID, "", nil)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &response{status: http.StatusAccepted, header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}

// markDeleting sets a resource's provisioning state to Deleting and
// returns its location.
func markDeleting(row *resourceRow) (string, []byte, error) {
	switch row.Type {
	case typeRouteTables:
		t, err := decodeTable(row.Doc)
		if err != nil {
			return "", nil, err
		}
		t.Properties.ProvisioningState = stateDeleting
		doc, err := encode(t)
		return t.Location, doc, err
	case typeVirtualNetworks:
		v, err := decodeVNet(row.Doc)
		if err != nil {
			return "", nil, err
		}
		v.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateDeleting)
		doc, err := encode(v)
		return str(v.Location), doc, err
	}
	return markSimpleDeleting(row)
}

// patchTags serves PATCH of a top-level resource: ARM's UpdateTags, which
// replaces the tags at once (no long-running operation).
func (s *Server) patchTags(ctx context.Context, q *request, typ, armType string, render func(*txn, *resourceRow) (json.RawMessage, error)) (*response, error) {
	var in struct {
		Tags map[string]*string `json:"tags"`
	}
	if err := decodeObject(q.body, &in); err != nil {
		return nil, err
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	var resp *response
	err := s.writeTop(ctx, q, typ, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			if err := checkPreconditions(q, resourceID(rg.Sub, rg.Name, typ, q.target().name), false, ""); err != nil {
				return err
			}
			return errResourceNotFound(armType, q.target().name, q.target().rg)
		}
		if err := checkPreconditions(q, row.ID, true, row.Etag); err != nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(row.Doc, &m); err != nil {
			return fmt.Errorf("decoding stored %s: %w", row.ID, err)
		}
		etag := newEtag()
		tags, err := json.Marshal(tagsOf(in.Tags))
		if err != nil {
			return err
		}
		if in.Tags == nil {
			delete(m, "tags")
		} else {
			m["tags"] = tags
		}
		m["etag"], _ = json.Marshal(etag)
		doc, err := json.Marshal(m)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		body, err := render(tx, row)
		if err != nil {
			return err
		}
		resp = &response{status: http.StatusOK, body: body, header: withEtag(etag)}
		return nil
	})
	return resp, err
}

func (s *Server) patchRouteTable(ctx context.Context, q *request) (*response, error) {
	return s.patchTags(ctx, q, typeRouteTables, armTypeRouteTable, renderTable)
}

// --- routes as child resources ---

func (s *Server) listRoutes(ctx context.Context, q *request) (*response, error) {
	var items []json.RawMessage
	err := s.readTop(ctx, q, typeRouteTables, armTypeRouteTable, func(tx *txn, row *resourceRow) error {
		t, err := decodeTable(row.Doc)
		if err != nil {
			return err
		}
		for _, r := range t.Properties.Routes {
			b, err := encode(r)
			if err != nil {
				return err
			}
			items = append(items, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &response{status: http.StatusOK, body: s.pageChildren(q, items)}, nil
}

func (s *Server) getRoute(ctx context.Context, q *request) (*response, error) {
	var resp *response
	tg := q.target()
	err := s.readTop(ctx, q, typeRouteTables, armTypeRouteTable, func(tx *txn, row *resourceRow) error {
		t, err := decodeTable(row.Doc)
		if err != nil {
			return err
		}
		r := findRoute(t.Properties.Routes, tg.childName)
		if r == nil {
			return errChildNotFound(typeRouteTables, tg.name, childRoutes, tg.childName, tg.rg)
		}
		resp = &response{status: http.StatusOK, body: r, header: withEtag(r.Etag)}
		return nil
	})
	return resp, err
}

func (s *Server) putRoute(ctx context.Context, q *request) (*response, error) {
	var in routeIn
	if err := decodeObject(q.body, &in); err != nil {
		return nil, err
	}
	tg := q.target()
	if !validName(tg.childName) {
		return nil, errInvalidName(tg.childName)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeRouteTables, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeRouteTable, tg.name, tg.rg)
		}
		t, err := decodeTable(row.Doc)
		if err != nil {
			return err
		}
		prev := findRoute(t.Properties.Routes, tg.childName)
		routeID, prevTag := childID(row.ID, childRoutes, tg.childName), ""
		if prev != nil {
			routeID, prevTag = prev.ID, prev.Etag
		}
		if err := checkPreconditions(q, routeID, prev != nil, prevTag); err != nil {
			return err
		}
		etag := newEtag()
		nr, err := buildRoute(row.ID, tg.childName, in.Properties, prev, etag)
		if err != nil {
			return err
		}
		if prev != nil && t.Properties.ProvisioningState == stateSucceeded && sameRoute(prev.Properties, nr.Properties) {
			resp = unchanged(prev, prev.Etag)
			return nil
		}
		nr.Etag = etag
		routes := make([]*routeDoc, 0, len(t.Properties.Routes)+1)
		replaced := false
		for _, r := range t.Properties.Routes {
			if strings.EqualFold(r.Name, tg.childName) {
				routes = append(routes, nr)
				replaced = true
				continue
			}
			routes = append(routes, r)
		}
		if !replaced {
			routes = append(routes, nr)
		}
		if err := s.checkRoutes(row.ID, routes); err != nil {
			return err
		}
		prevDoc := row.Doc
		t.Properties.Routes = routes
		t.Etag = etag
		t.Properties.ProvisioningState = stateUpdating
		doc, err := encode(t)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		resp, err = s.acceptPut(tx, q, s.newOp(opPut, rg.Sub, t.Location, row.Key, row.ID, "", prevDoc), prev == nil, etag, nr)
		return err
	})
	return resp, err
}

func (s *Server) deleteRoute(ctx context.Context, q *request) (*response, error) {
	tg := q.target()
	var resp *response
	err := s.writeTop(ctx, q, typeRouteTables, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeRouteTable, tg.name, tg.rg)
		}
		t, err := decodeTable(row.Doc)
		if err != nil {
			return err
		}
		r := findRoute(t.Properties.Routes, tg.childName)
		rTag := ""
		if r != nil {
			rTag = r.Etag
		}
		if err := checkPreconditions(q, childID(row.ID, childRoutes, tg.childName), r != nil, rTag); err != nil {
			return err
		}
		if r == nil {
			resp = &response{status: http.StatusNoContent}
			return nil
		}
		prevDoc := row.Doc
		etag := newEtag()
		r.Properties.ProvisioningState = stateDeleting
		t.Properties.ProvisioningState = stateUpdating
		t.Etag = etag
		doc, err := encode(t)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		o := s.newOp(opChildDelete, rg.Sub, t.Location, row.Key, row.ID, r.Name, prevDoc)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &response{status: http.StatusAccepted, header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
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
