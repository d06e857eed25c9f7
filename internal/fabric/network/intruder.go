package network

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// The intruder of fault injection: another writer that rewrites a route
// table right after a client's GET, so the client's next PUT with the etag
// it just read gets 412. The FaultInjector decides when it strikes.

// intruderPrefixBase is where intruder routes live: 198.18.0.0/15 is the
// benchmarking range, which no real table routes.
var intruderPrefixBase = netip.MustParseAddr("198.18.0.0")

// maybeIntrude lets the intruder rewrite the route table tableKey (a new
// etag) when the FaultInjector says it strikes.
func (s *Provider) maybeIntrude(ctx context.Context, tableKey string) {
	strike, coin := s.faults.Intrude(tableKey)
	if !strike {
		return
	}
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		row, err := tx.GetResource(tableKey)
		if err != nil || row == nil {
			return err
		}
		if o, err := tx.RunningOp(tableKey); err != nil || o != nil {
			return err // a real writer would get 409: leave the table alone
		}
		t, err := DecodeTable(row.Doc)
		if err != nil {
			return err
		}
		var mine []*RouteDoc
		used := map[string]bool{}
		maxN := 0
		for _, r := range t.Properties.Routes {
			used[PrefixKey(r.Properties.AddressPrefix)] = true
			if n, ok := strings.CutPrefix(strings.ToLower(r.Name), "intruder-"); ok {
				mine = append(mine, r)
				if v, err := strconv.Atoi(n); err == nil && v > maxN {
					maxN = v
				}
			}
		}
		etag := api.NewEtag()
		canAdd := len(t.Properties.Routes) < s.routeLimit
		if len(mine) > 0 && (coin == 0 || !canAdd) {
			r := mine[0]
			ip, _ := netip.ParseAddr(r.Properties.NextHopIPAddress)
			next := netip.MustParseAddr("10.255.255.1")
			if ip.IsValid() && ip.Is4() {
				next = ip.Next()
			}
			r.Properties.NextHopType = string(armnetwork.RouteNextHopTypeVirtualAppliance)
			r.Properties.NextHopIPAddress = next.String()
			r.Etag = etag
		} else if canAdd {
			var prefix netip.Prefix
			a := intruderPrefixBase
			for i := 0; i < 512; i++ {
				p := netip.PrefixFrom(a, 24)
				if !used[p.String()] {
					prefix = p
					break
				}
				b := a.As4()
				b[2]++
				if b[2] == 0 {
					b[1]++
				}
				a = netip.AddrFrom4(b)
			}
			if !prefix.IsValid() {
				return nil
			}
			name := fmt.Sprintf("intruder-%d", maxN+1)
			t.Properties.Routes = append(t.Properties.Routes, &RouteDoc{
				ID: api.ChildID(row.ID, api.ChildRoutes, name), Name: name, Type: api.ArmTypeRoute, Etag: etag,
				Properties: RouteProps{
					ProvisioningState: StateSucceeded, AddressPrefix: prefix.String(),
					NextHopType: string(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: "10.255.255.1",
				},
			})
		} else {
			return nil
		}
		t.Etag = etag
		doc, err := api.Encode(t)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		return s.StoreRow(tx, row)
	})
	if err != nil {
		s.log.Warn("fabric intruder failed", "table", tableKey, "err", err)
		return
	}
	s.log.Debug("fabric intruder rewrote a route table", "table", tableKey)
}
