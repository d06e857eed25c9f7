package network

import (
	"encoding/json"
	"io"
	"net/http"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// ServeBGP serves /_fabric/bgp?gateway=<gateway ID>: what the on-premises
// BGP peer of a gateway advertises. It is not an ARM property (in Azure it
// comes from the routers of the site or the ExpressRoute circuit), so the
// fabric takes it here: PUT {"prefixes": [...], "asn": 65020,
// "peerAddress": "169.254.21.1"} (asn and peerAddress optional), GET
// returns it. The gateway's getLearnedRoutes and the routes of its
// network's subnets follow it.
func (s *Provider) ServeBGP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) { api.WriteControlJSON(w, status, v) }
	fail := func(status int, code, msg string) { api.FailControl(w, status, code, msg) }
	id := r.URL.Query().Get("gateway")
	gw, ok := api.ParseTopID(id, TypeVNetGateways)
	if !ok {
		fail(http.StatusBadRequest, "InvalidGateway", "give ?gateway=<the ID of a virtual network gateway>")
		return
	}
	var in BgpAdvertisement
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(b, &in)
		}
		if err != nil {
			fail(http.StatusBadRequest, "InvalidRequestContent", "bgp: "+err.Error())
			return
		}
		for i, p := range in.Prefixes {
			pf, err := netip.ParsePrefix(p)
			if err != nil || pf.Masked() != pf {
				fail(http.StatusBadRequest, "InvalidPrefix", "bgp: prefixes["+itoa(i)+"] "+p+" is not a CIDR prefix without host bits")
				return
			}
		}
		if in.PeerAddress != "" {
			if _, err := netip.ParseAddr(in.PeerAddress); err != nil {
				fail(http.StatusBadRequest, "InvalidPeerAddress", "bgp: peerAddress "+in.PeerAddress+" is not an IP address")
				return
			}
		}
	default:
		fail(http.StatusMethodNotAllowed, "HttpMethodNotSupported", "use GET or PUT")
		return
	}
	var out *BgpAdvertisement
	notFound := false
	err := s.store.Write(r.Context(), func(tx *store.Txn) error {
		row, err := tx.GetResource(api.Key(gw.ParentID()))
		if err != nil || row == nil || row.Type != TypeVNetGateways {
			notFound = row == nil
			return err
		}
		d, err := decodeGateway(row.Doc)
		if err != nil {
			return err
		}
		if r.Method == http.MethodGet {
			out = d.bgp
			return nil
		}
		d.bgp = &in
		if len(in.Prefixes) == 0 && in.ASN == 0 && in.PeerAddress == "" {
			d.bgp = nil
		}
		if row.Doc, err = encodeGateway(d); err != nil {
			return err
		}
		out = d.bgp
		return s.StoreRow(tx, row) // the gateway's etag stays: ARM's view of it did not change
	})
	switch {
	case err != nil:
		fail(http.StatusInternalServerError, "InternalServerError", err.Error())
	case notFound:
		fail(http.StatusNotFound, "NotFound", "no virtual network gateway "+id)
	case out == nil:
		reply(http.StatusOK, BgpAdvertisement{Prefixes: []string{}})
	default:
		reply(http.StatusOK, out)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
