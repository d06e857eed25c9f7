package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// The questions Azure answers about routing, computed by internal/routing
// from the live state: a NIC's effective routes and Network Watcher's next
// hop. Both are long-running POSTs, as in Azure: 202 with
// Azure-AsyncOperation and Location, the answer at the Location when done.
// The answer is computed when it is fetched, from the state at that time.

const (
	typeNetworkWatchers = "networkWatchers"
	armTypeWatcher      = "Microsoft.Network/networkWatchers"

	opAction = "action" // a long-running POST that computes an answer

	actionEffectiveRoutes = "effectiveRouteTable"
	actionNextHop         = "nextHop"
)

func decodeWatcher(doc []byte) (*armnetwork.Watcher, error) {
	return decodeStored(doc, "network watcher", func(w *armnetwork.Watcher) {
		if w.Properties == nil {
			w.Properties = &armnetwork.WatcherPropertiesFormat{}
		}
	})
}

// settleWatcher: see settleDoc.
func settleWatcher(w *armnetwork.Watcher, _, etag string) {
	settleState(etag, &w.Etag, &w.Properties.ProvisioningState)
}

var watcherKind = modelKind(typeNetworkWatchers, armTypeWatcher, decodeWatcher, renderPlain,
	func(w *armnetwork.Watcher) (*string, map[string]*string) { return w.Location, w.Tags })

type watcherPut = topPut[armnetwork.Watcher, *armnetwork.Watcher]

// buildWatcher stores the network watcher of a PUT. It is synchronous in
// Azure (WatchersClient.CreateOrUpdate is not a poller).
func (s *Provider) buildWatcher(p *watcherPut) (*api.Response, error) {
	etag := api.NewEtag()
	w := &armnetwork.Watcher{
		ID: api.Ptr(p.id), Name: api.Ptr(armid.Name(p.id)), Type: api.Ptr(armTypeWatcher), Location: api.Ptr(p.loc), Tags: api.TagsOf(p.in.Tags), Etag: api.Ptr(etag),
		Properties: &armnetwork.WatcherPropertiesFormat{ProvisioningState: api.Ptr(armnetwork.ProvisioningStateSucceeded)},
	}
	doc, err := api.Encode(w)
	if err != nil {
		return nil, err
	}
	row := p.stored()
	row.Doc, row.Etag = doc, etag
	if err := s.StoreRow(p.tx, row); err != nil {
		return nil, err
	}
	status := http.StatusOK
	if !p.exists() {
		status = http.StatusCreated
	}
	return &api.Response{Status: status, Body: json.RawMessage(doc), Header: api.WithEtag(etag)}, nil
}

// startAction records the long-running operation of a POST whose answer
// is computed when it is fetched. The operation is not tied to the
// resource (ResourceKey is its own), so it never blocks a write.
func (s *Provider) startAction(ctx context.Context, q *api.Request, action, resourceID, location string, params []byte) (*api.Response, error) {
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.settleTx(tx); err != nil {
			return err
		}
		o := s.newOp(opAction, q.Segs[1], location, "", resourceID, action, params)
		o.ResourceKey = "action/" + o.ID
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusAccepted, Header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}

// actionResult is the answer of a finished action, from the state now.
func (s *Provider) actionResult(ctx context.Context, o *store.Operation) (*api.Response, error) {
	var body any
	err := s.View(ctx, func(tx *store.Txn) error {
		var err error
		switch o.ChildName {
		case actionEffectiveRoutes:
			body, err = effectiveRouteTable(tx, o.ResourceID)
		case actionNextHop:
			body, err = nextHop(tx, o.ResourceID, o.PrevDoc)
		case actionLearnedRoutes:
			body, err = learnedRoutesResult(tx, o.ResourceID)
		default:
			err = fmt.Errorf("operation %s: unknown action %q", o.ID, o.ChildName)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: body}, nil
}

func (s *Provider) postEffectiveRouteTable(ctx context.Context, q *api.Request) (*api.Response, error) {
	var nicID, loc string
	err := s.readTop(ctx, q, TypeNetworkInterfaces, armTypeNetworkIface, func(tx *store.Txn, row *store.ResourceRow) error {
		n, err := decodeNIC(row.Doc)
		if err != nil {
			return err
		}
		nicID, loc = row.ID, api.Str(n.Location)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.startAction(ctx, q, actionEffectiveRoutes, nicID, loc, nil)
}

func (s *Provider) postNextHop(ctx context.Context, q *api.Request) (*api.Response, error) {
	var in armnetwork.NextHopParameters
	if err := api.DecodeModel(q.Body, &in); err != nil {
		return nil, err
	}
	// In this order: when both are invalid, the error names the source.
	for _, f := range []struct {
		name string
		v    *string
	}{{"sourceIPAddress", in.SourceIPAddress}, {"destinationIPAddress", in.DestinationIPAddress}} {
		if _, err := netip.ParseAddr(api.Str(f.v)); err != nil {
			return nil, api.BadRequest("InvalidIPAddress", "The %s %q is not a valid IP address.", f.name, api.Str(f.v))
		}
	}
	if api.Str(in.TargetResourceID) == "" && api.Str(in.TargetNicResourceID) == "" {
		return nil, api.BadRequest("InvalidTargetResourceId", "targetResourceId is required.")
	}
	var loc, nicID string
	err := s.readTop(ctx, q, typeNetworkWatchers, armTypeWatcher, func(tx *store.Txn, row *store.ResourceRow) error {
		w, err := decodeWatcher(row.Doc)
		if err != nil {
			return err
		}
		loc = api.Str(w.Location)
		nic, err := targetNIC(tx, q.Segs[1], api.Str(in.TargetResourceID), api.Str(in.TargetNicResourceID))
		if err != nil {
			return err
		}
		nicID = api.Str(nic.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(map[string]string{
		"sourceIPAddress": api.Str(in.SourceIPAddress), "destinationIPAddress": api.Str(in.DestinationIPAddress),
	})
	if err != nil {
		return nil, err
	}
	return s.startAction(ctx, q, actionNextHop, nicID, loc, params)
}

// targetNIC finds the NIC a next-hop question is about: the NIC named, or
// the NIC whose virtualMachine is the target VM.
func targetNIC(tx *store.Txn, sub, target, nicTarget string) (*armnetwork.Interface, error) {
	want := nicTarget
	if want == "" {
		want = target
	}
	if _, ok := api.ParseTopID(want, TypeNetworkInterfaces); ok {
		return getDoc(tx, want, decodeNIC, "Resource "+want+" not found.")
	}
	nics, err := allNICs(tx, sub)
	if err != nil {
		return nil, err
	}
	for _, n := range nics {
		if vm := n.Properties.VirtualMachine; vm != nil && api.Key(api.Str(vm.ID)) == api.Key(target) {
			return n, nil
		}
	}
	return nil, api.NewError(http.StatusNotFound, "NotFound", "Resource %s not found: the fabric knows no NIC of it (give targetNicResourceId, or set the NIC's virtualMachine).", target)
}

// nicRouting is what routing needs of a NIC's primary subnet.
type nicRouting struct {
	network    routing.Network
	tableID    string
	udrs       []route.Route
	disableBGP bool
}

// routingOfNIC reads the virtual network and the route table of the
// primary IP configuration's subnet.
// getDoc reads the resource id and decodes its document; a missing one is
// ARM's 404 NotFound with the message notFound.
func getDoc[T any](tx *store.Txn, id string, decode func([]byte) (*T, error), notFound string) (*T, error) {
	row, err := tx.GetResource(api.Key(id))
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, api.NewError(http.StatusNotFound, "NotFound", "%s", notFound)
	}
	return decode(row.Doc)
}

func routingOfNIC(tx *store.Txn, nicID string) (*nicRouting, error) {
	n, err := getDoc(tx, nicID, decodeNIC, "Resource "+nicID+" not found.")
	if err != nil {
		return nil, err
	}
	var subnetID string
	for _, c := range n.Properties.IPConfigurations {
		if c.Properties != nil && c.Properties.Subnet != nil && (subnetID == "" || c.Properties.Primary != nil && *c.Properties.Primary) {
			subnetID = api.Str(c.Properties.Subnet.ID)
		}
	}
	a, ok := api.ParseNetworkID(subnetID)
	if !ok {
		return nil, fmt.Errorf("network interface %s: subnet %q is not a subnet ID", nicID, subnetID)
	}
	v, err := getDoc(tx, a.ParentID(), decodeVNet, "Virtual network of subnet "+subnetID+" not found.")
	if err != nil {
		return nil, err
	}
	ar, err := readInterconnect(tx)
	if err != nil {
		return nil, err
	}
	// The address space, the peerings and the gateways' routes (interconnect.go).
	out := &nicRouting{network: ar.networkOf(api.Str(v.ID))}
	sn := findSubnet(v.Properties.Subnets, a.ChildName)
	if sn == nil || sn.Properties == nil || sn.Properties.RouteTable == nil {
		return out, nil
	}
	out.tableID = api.Str(sn.Properties.RouteTable.ID)
	trow, err := tx.GetResource(api.Key(out.tableID))
	if err != nil || trow == nil {
		return out, err
	}
	t, err := DecodeTable(trow.Doc)
	if err != nil {
		return nil, err
	}
	out.tableID = t.ID
	out.disableBGP = t.Properties.DisableBgpRoutePropagation
	if out.disableBGP {
		out.network.Gateway = nil // the gateways' routes do not reach the subnet
	}
	for _, r := range t.Properties.Routes {
		rr := route.Route{Name: r.Name, AddressPrefix: r.Properties.AddressPrefix, NextHopType: route.NextHopType(r.Properties.NextHopType)}
		rr.Prefix, _ = netip.ParsePrefix(r.Properties.AddressPrefix)
		rr.NextHopIP, _ = netip.ParseAddr(r.Properties.NextHopIPAddress)
		out.udrs = append(out.udrs, rr)
	}
	return out, nil
}

// effectiveRoute is one route of effectiveRouteTable, in Azure's JSON.
type effectiveRoute struct {
	Name                       *string  `json:"name"`
	DisableBgpRoutePropagation bool     `json:"disableBgpRoutePropagation"`
	Source                     string   `json:"source"`
	State                      string   `json:"state"`
	AddressPrefix              []string `json:"addressPrefix"`
	NextHopIPAddress           []string `json:"nextHopIpAddress"`
	NextHopType                string   `json:"nextHopType"`
}

func effectiveRouteTable(tx *store.Txn, nicID string) (any, error) {
	nr, err := routingOfNIC(tx, nicID)
	if err != nil {
		return nil, err
	}
	value := []effectiveRoute{}
	for _, r := range routing.Effective(nr.network, nr.udrs) {
		e := effectiveRoute{
			DisableBgpRoutePropagation: nr.disableBGP, Source: r.Source, State: r.State,
			AddressPrefix: []string{r.Prefix.String()}, NextHopIPAddress: []string{}, NextHopType: string(r.NextHopType),
		}
		if r.Name != "" {
			e.Name = api.Ptr(r.Name)
		}
		if r.NextHopIP.IsValid() {
			e.NextHopIPAddress = append(e.NextHopIPAddress, r.NextHopIP.String())
		}
		value = append(value, e)
	}
	return map[string]any{"value": value}, nil
}

func nextHop(tx *store.Txn, nicID string, params []byte) (any, error) {
	var p struct {
		Destination string `json:"destinationIPAddress"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("next hop parameters: %w", err)
	}
	dst, err := netip.ParseAddr(p.Destination)
	if err != nil {
		return nil, fmt.Errorf("next hop destination %q: %w", p.Destination, err)
	}
	nr, err := routingOfNIC(tx, nicID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"nextHopType": string(routing.None), "routeTableId": routing.SystemRouteID}
	r, ok := routing.NewSelector(routing.Effective(nr.network, nr.udrs)).Lookup(dst)
	if ok {
		out["nextHopType"] = string(r.NextHopType)
		if r.NextHopIP.IsValid() {
			out["nextHopIpAddress"] = r.NextHopIP.String()
		}
		if !r.IsSystem() {
			out["routeTableId"] = nr.tableID
		}
	}
	return out, nil
}
