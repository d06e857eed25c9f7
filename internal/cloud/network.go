package cloud

import (
	"context"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/route"
)

// Cloud is the cloud back-end the controller and the observer work
// against: internal/cloud/azure implements it, for real Azure and for the
// local fabric alike. Nothing above this interface knows which.
type Cloud interface {
	TablesAndSubnets
	GetVirtualNetwork(ctx context.Context, id string) (*VirtualNetwork, error)
	// ListNetworkInterfaces lists a subscription's NICs (optional rights:
	// an error is reported, not fatal).
	ListNetworkInterfaces(ctx context.Context, subscription string) ([]NetworkInterface, error)
}

// TablesAndSubnets is the part of Cloud that reads and writes route
// tables and the subnets' associations with them: what the controller
// keeps and a migration moves.
type TablesAndSubnets interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
	// PutRouteTable writes the whole table with If-Match etag ("" = create
	// only) and returns the table read back after the operation succeeded.
	PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error)
	GetSubnet(ctx context.Context, id string) (*Subnet, error)
	// SetSubnetRouteTable points the subnet to a route table with
	// If-Match etag ("" = unconditionally), sending back the body of the
	// subnet as last read; cloud.ErrPreconditionFailed when the subnet
	// changed since etag.
	SetSubnetRouteTable(ctx context.Context, subnetID, routeTableID, etag string) (*Subnet, error)
	// Calls returns the number of ARM reads and writes made so far.
	Calls() (reads, writes int64)
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
