package fabric

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// State is what a fabric holds, as `routekeeper fabric show` prints it.
type State struct {
	ResourceGroups  []StateResourceGroup  `json:"resourceGroups"`
	VirtualNetworks []StateVirtualNetwork `json:"virtualNetworks"`
	RouteTables     []StateRouteTable     `json:"routeTables"`
	// NetworkInterfaces are filled by Store.Networks (the data plane places
	// nodes by them), not by Snapshot.
	NetworkInterfaces []StateNIC `json:"networkInterfaces,omitempty"`
	// Gateways are the virtual network gateways with the on-premises
	// prefixes they learned; filled by Store.Networks (around.go).
	Gateways []StateGateway `json:"gateways,omitempty"`
}

// StateNIC is a network interface: its private IP addresses, each with the
// subnet that holds it.
type StateNIC struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	IPForwarding bool              `json:"enableIPForwarding"`
	IPs          []StateNICAddress `json:"ipConfigurations"`
}

// StateNICAddress is one IP configuration of a NIC.
type StateNICAddress struct {
	Address string `json:"privateIPAddress"`
	Subnet  string `json:"subnet"` // ID
}

// StateResourceGroup is a resource group.
type StateResourceGroup struct {
	Subscription      string            `json:"subscription"`
	Name              string            `json:"name"`
	Location          string            `json:"location"`
	Tags              map[string]string `json:"tags,omitempty"`
	ProvisioningState string            `json:"provisioningState"`
}

// StateVirtualNetwork is a virtual network with its subnets.
type StateVirtualNetwork struct {
	ID                string        `json:"id"`
	Subscription      string        `json:"subscription"`
	ResourceGroup     string        `json:"resourceGroup"`
	Name              string        `json:"name"`
	Location          string        `json:"location"`
	AddressPrefixes   []string      `json:"addressPrefixes"`
	Etag              string        `json:"etag"`
	ProvisioningState string        `json:"provisioningState"`
	Subnets           []StateSubnet `json:"subnets"`
	// Peerings are the network's peerings (around.go).
	Peerings []StatePeering `json:"peerings,omitempty"`
}

// StateSubnet is a subnet and the route table associated with it.
type StateSubnet struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	AddressPrefixes   []string `json:"addressPrefixes"`
	RouteTable        string   `json:"routeTable,omitempty"` // ID
	ProvisioningState string   `json:"provisioningState"`
}

// StateRouteTable is a route table with its routes and subnets.
type StateRouteTable struct {
	ID                         string            `json:"id"`
	Subscription               string            `json:"subscription"`
	ResourceGroup              string            `json:"resourceGroup"`
	Name                       string            `json:"name"`
	Location                   string            `json:"location"`
	Tags                       map[string]string `json:"tags,omitempty"`
	Etag                       string            `json:"etag"`
	DisableBgpRoutePropagation bool              `json:"disableBgpRoutePropagation"`
	ProvisioningState          string            `json:"provisioningState"`
	Routes                     []StateRoute      `json:"routes"`
	Subnets                    []string          `json:"subnets"` // IDs
}

// StateRoute is a route.
type StateRoute struct {
	Name              string `json:"name"`
	AddressPrefix     string `json:"addressPrefix"`
	NextHopType       string `json:"nextHopType"`
	NextHopIPAddress  string `json:"nextHopIpAddress,omitempty"`
	ProvisioningState string `json:"provisioningState"`
}

// Snapshot reads what a fabric holds through the SDK: the given
// subscriptions, or every subscription the fabric knows when none is given.
func Snapshot(ctx context.Context, opts *arm.ClientOptions, cred azcore.TokenCredential, subscriptions ...string) (*State, error) {
	c, err := newARMClient(cred, opts)
	if err != nil {
		return nil, err
	}
	if len(subscriptions) == 0 {
		var list struct {
			Value []subscription `json:"value"`
		}
		if _, err := c.do(ctx, http.MethodGet, "/subscriptions", nil, &list); err != nil {
			return nil, fmt.Errorf("listing subscriptions: %w", err)
		}
		for _, s := range list.Value {
			subscriptions = append(subscriptions, s.SubscriptionID)
		}
	}
	st := &State{ResourceGroups: []StateResourceGroup{}, VirtualNetworks: []StateVirtualNetwork{}, RouteTables: []StateRouteTable{}}
	for _, sub := range subscriptions {
		if err := snapshotSubscription(ctx, c, sub, opts, cred, st); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(st.ResourceGroups, func(a, b StateResourceGroup) int {
		return cmp.Or(strings.Compare(api.Key(a.Subscription), api.Key(b.Subscription)), strings.Compare(api.Key(a.Name), api.Key(b.Name)))
	})
	slices.SortFunc(st.VirtualNetworks, func(a, b StateVirtualNetwork) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	slices.SortFunc(st.RouteTables, func(a, b StateRouteTable) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	return st, nil
}

func snapshotSubscription(ctx context.Context, c *armClient, sub string, opts *arm.ClientOptions, cred azcore.TokenCredential, st *State) error {
	var rgs struct {
		Value []resourceGroup `json:"value"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/subscriptions/"+sub+"/resourcegroups", nil, &rgs); err != nil {
		return fmt.Errorf("listing resource groups of %s: %w", sub, err)
	}
	for _, rg := range rgs.Value {
		st.ResourceGroups = append(st.ResourceGroups, StateResourceGroup{
			Subscription: sub, Name: rg.Name, Location: rg.Location, Tags: rg.Tags, ProvisioningState: rg.Properties.ProvisioningState})
	}
	vnets, err := armnetwork.NewVirtualNetworksClient(sub, cred, opts)
	if err != nil {
		return err
	}
	err = eachPage(ctx, vnets.NewListAllPager(nil), "virtual networks of "+sub, func(page armnetwork.VirtualNetworksClientListAllResponse) {
		for _, v := range page.Value {
			st.VirtualNetworks = append(st.VirtualNetworks, stateVNet(sub, v))
		}
	})
	if err != nil {
		return err
	}
	tables, err := armnetwork.NewRouteTablesClient(sub, cred, opts)
	if err != nil {
		return err
	}
	return eachPage(ctx, tables.NewListAllPager(nil), "route tables of "+sub, func(page armnetwork.RouteTablesClientListAllResponse) {
		for _, t := range page.Value {
			st.RouteTables = append(st.RouteTables, stateTable(sub, t))
		}
	})
}

// eachPage hands every page of a pager to use; what names the list in the
// error of a page that could not be read.
func eachPage[T any](ctx context.Context, pg *runtime.Pager[T], what string, use func(T)) error {
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing %s: %w", what, describe(err))
		}
		use(page)
	}
	return nil
}

func rgOf(id string) string {
	if a, ok := api.ParseNetworkID(id); ok {
		return a.RG
	}
	return ""
}

func stateVNet(sub string, v *armnetwork.VirtualNetwork) StateVirtualNetwork {
	out := StateVirtualNetwork{
		ID: api.Str(v.ID), Subscription: sub, ResourceGroup: rgOf(api.Str(v.ID)), Name: api.Str(v.Name), Location: api.Str(v.Location),
		Etag: api.Str(v.Etag), AddressPrefixes: []string{}, Subnets: []StateSubnet{},
	}
	if p := v.Properties; p != nil {
		if p.ProvisioningState != nil {
			out.ProvisioningState = string(*p.ProvisioningState)
		}
		if p.AddressSpace != nil {
			for _, s := range p.AddressSpace.AddressPrefixes {
				out.AddressPrefixes = append(out.AddressPrefixes, api.Str(s))
			}
		}
		for _, sn := range p.Subnets {
			s := StateSubnet{ID: api.Str(sn.ID), Name: api.Str(sn.Name), AddressPrefixes: existingSubnetPrefixes(sn)}
			if sn.Properties != nil {
				if sn.Properties.RouteTable != nil {
					s.RouteTable = api.Str(sn.Properties.RouteTable.ID)
				}
				if sn.Properties.ProvisioningState != nil {
					s.ProvisioningState = string(*sn.Properties.ProvisioningState)
				}
			}
			out.Subnets = append(out.Subnets, s)
		}
		for _, pr := range p.VirtualNetworkPeerings {
			if pr != nil && pr.Properties != nil {
				out.Peerings = append(out.Peerings, statePeering(pr))
			}
		}
	}
	return out
}

func stateTable(sub string, t *armnetwork.RouteTable) StateRouteTable {
	out := StateRouteTable{
		ID: api.Str(t.ID), Subscription: sub, ResourceGroup: rgOf(api.Str(t.ID)), Name: api.Str(t.Name), Location: api.Str(t.Location),
		Tags: plainTags(t.Tags), Etag: api.Str(t.Etag), Routes: []StateRoute{}, Subnets: []string{},
	}
	if p := t.Properties; p != nil {
		if p.ProvisioningState != nil {
			out.ProvisioningState = string(*p.ProvisioningState)
		}
		if p.DisableBgpRoutePropagation != nil {
			out.DisableBgpRoutePropagation = *p.DisableBgpRoutePropagation
		}
		for _, r := range p.Routes {
			sr := StateRoute{Name: api.Str(r.Name)}
			if rp := r.Properties; rp != nil {
				sr.AddressPrefix, sr.NextHopIPAddress = api.Str(rp.AddressPrefix), api.Str(rp.NextHopIPAddress)
				if rp.NextHopType != nil {
					sr.NextHopType = string(*rp.NextHopType)
				}
				if rp.ProvisioningState != nil {
					sr.ProvisioningState = string(*rp.ProvisioningState)
				}
			}
			out.Routes = append(out.Routes, sr)
		}
		for _, s := range p.Subnets {
			out.Subnets = append(out.Subnets, api.Str(s.ID))
		}
	}
	return out
}
