package network

import (
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
	// prefixes they learned; filled by Store.Networks (interconnect.go).
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
	// Peerings are the network's peerings (interconnect.go).
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

func StateVNet(sub string, v *armnetwork.VirtualNetwork) StateVirtualNetwork {
	out := StateVirtualNetwork{
		ID: api.Str(v.ID), Subscription: sub, ResourceGroup: GroupOf(api.Str(v.ID)), Name: api.Str(v.Name), Location: api.Str(v.Location),
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
			s := StateSubnet{ID: api.Str(sn.ID), Name: api.Str(sn.Name), AddressPrefixes: SubnetPrefixesOf(sn)}
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

func StateTable(sub string, t *armnetwork.RouteTable) StateRouteTable {
	out := StateRouteTable{
		ID: api.Str(t.ID), Subscription: sub, ResourceGroup: GroupOf(api.Str(t.ID)), Name: api.Str(t.Name), Location: api.Str(t.Location),
		Tags: PlainTags(t.Tags), Etag: api.Str(t.Etag), Routes: []StateRoute{}, Subnets: []string{},
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

func SubnetPrefixesOf(sn *armnetwork.Subnet) []string {
	if sn.Properties == nil {
		return nil
	}
	if len(sn.Properties.AddressPrefixes) > 0 {
		out := make([]string, 0, len(sn.Properties.AddressPrefixes))
		for _, p := range sn.Properties.AddressPrefixes {
			out = append(out, api.Str(p))
		}
		return out
	}
	if sn.Properties.AddressPrefix != nil {
		return []string{*sn.Properties.AddressPrefix}
	}
	return nil
}

func GroupOf(id string) string {
	if a, ok := api.ParseNetworkID(id); ok {
		return a.RG
	}
	return ""
}
