package observe

import (
	"net/netip"
)

// The resources the observer reads, as routekeeper sees them: what the
// cloud back-end (internal/cloud/azure) makes of ARM's answers.

// Subnet is routekeeper's view of a subnet: where it is and which route
// table it is associated with.
type Subnet struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	AddressPrefixes []string `json:"addressPrefixes"`
	// RouteTableID is the associated route table, "" when none.
	RouteTableID string `json:"routeTableId,omitempty"`
	// NetworkSecurityGroupID and NATGatewayID are the other resources the
	// subnet references, "" when none: a write of the subnet needs their
	// join/action too (ARM's linked authorization).
	NetworkSecurityGroupID string `json:"networkSecurityGroupId,omitempty"`
	NATGatewayID           string `json:"natGatewayId,omitempty"`
	Etag                   string `json:"etag,omitempty"`
	ProvisioningState      string `json:"provisioningState,omitempty"`
}

// VirtualNetwork is what routekeeper reads of a VNet: its address space,
// its subnets (each with the route table it uses) and its side of each
// peering, which ARM returns inline with the network
// (properties.virtualNetworkPeerings): knowing them costs no extra read.
type VirtualNetwork struct {
	ID              string
	Name            string
	Location        string
	AddressPrefixes []string
	Subnets         []Subnet
	Peerings        []Peering
}

// NetworkInterface is what routekeeper reads of a NIC: its addresses and
// subnets, and whether IP forwarding is on (a node that receives pod
// traffic through a VirtualAppliance route needs it).
type NetworkInterface struct {
	ID           string
	Name         string
	IPForwarding bool
	IPs          []netip.Addr
	SubnetIDs    []string
}

// Principal is who the cloud client authenticates as, from its token:
// the object ID ("" when the token does not carry one) and the client
// (application) ID.
type Principal struct {
	ObjectID, ClientID, TenantID string
}
