package network

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Networks returns the virtual networks (with their subnets and route
// table associations), the route tables and the network interfaces of
// every subscription, read
// from the store in one snapshot, without going through the ARM pipeline:
// no faults, no throttling, no request. It is what the data plane forwards
// by. Resource groups are left out; the table's Subnets back-references
// are not filled (a subnet's RouteTable says which table it uses).
func Networks(ctx context.Context, s *store.Store) (*State, error) {
	st := &State{ResourceGroups: []StateResourceGroup{}, VirtualNetworks: []StateVirtualNetwork{}, RouteTables: []StateRouteTable{}}
	ar := newInterconnect() // peerings' states and gateways (interconnect.go)
	err := s.Read(ctx, func(tx *store.Txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT r.type, r.doc, g.sub FROM resources r JOIN resource_groups g ON g.key = r.rg_key ORDER BY r.key`)
		if err != nil {
			return fmt.Errorf("reading networks: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var typ, sub string
			var doc []byte
			if err := rows.Scan(&typ, &doc, &sub); err != nil {
				return fmt.Errorf("reading networks: %w", err)
			}
			if err := ar.addDoc(typ, doc); err != nil {
				return err
			}
			switch typ {
			case api.TypeVirtualNetworks:
				var v armnetwork.VirtualNetwork
				if err := json.Unmarshal(doc, &v); err != nil {
					return fmt.Errorf("decoding stored virtual network: %w", err)
				}
				st.VirtualNetworks = append(st.VirtualNetworks, StateVNet(sub, &v))
			case api.TypeRouteTables:
				var t armnetwork.RouteTable
				if err := json.Unmarshal(doc, &t); err != nil {
					return fmt.Errorf("decoding stored route table: %w", err)
				}
				out := StateTable(sub, &t)
				out.Subnets = []string{}
				st.RouteTables = append(st.RouteTables, out)
			case TypeNetworkInterfaces:
				n, err := decodeNIC(doc)
				if err != nil {
					return err
				}
				st.NetworkInterfaces = append(st.NetworkInterfaces, stateNIC(n))
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	ar.fill(st)
	slices.SortFunc(st.VirtualNetworks, func(a, b StateVirtualNetwork) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	slices.SortFunc(st.RouteTables, func(a, b StateRouteTable) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	slices.SortFunc(st.NetworkInterfaces, func(a, b StateNIC) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	return st, nil
}

func stateNIC(n *armnetwork.Interface) StateNIC {
	out := StateNIC{ID: api.Str(n.ID), Name: api.Str(n.Name)}
	if p := n.Properties; p != nil {
		out.IPForwarding = p.EnableIPForwarding != nil && *p.EnableIPForwarding
		for _, c := range p.IPConfigurations {
			if c == nil || c.Properties == nil {
				continue
			}
			a := StateNICAddress{Address: api.Str(c.Properties.PrivateIPAddress)}
			if c.Properties.Subnet != nil {
				a.Subnet = api.Str(c.Properties.Subnet.ID)
			}
			out.IPs = append(out.IPs, a)
		}
	}
	return out
}

// NetworkReader reads a store's networks for the data plane's driver:
// Networks, and the store's Version and Subscribe.
type NetworkReader struct{ *store.Store }

// Networks is Networks of the reader's store.
func (r NetworkReader) Networks(ctx context.Context) (*State, error) { return Networks(ctx, r.Store) }
