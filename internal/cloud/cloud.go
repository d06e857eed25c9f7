// Package cloud is the boundary between routekeeper and a cloud back-end:
// the Cloud interface the controller and the observer work against
// (internal/cloud/azure implements it, for real Azure and for the local
// fabric alike) and the marking of a request with the table it is made
// for. The resources it reads are internal/observe's; the errors it
// answers with are internal/armerr's.
package cloud

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Cloud is the cloud back-end the controller and the observer work
// against: internal/cloud/azure implements it, for real Azure and for the
// local fabric alike. Nothing above this interface knows which.
type Cloud interface {
	TablesAndSubnets
	GetVirtualNetwork(ctx context.Context, id string) (*observe.VirtualNetwork, error)
	// ListNetworkInterfaces lists a subscription's NICs (optional rights:
	// an error is reported, not fatal).
	ListNetworkInterfaces(ctx context.Context, subscription string) ([]observe.NetworkInterface, error)
}

// TablesAndSubnets is the part of Cloud that reads and writes route
// tables and the subnets' associations with them: what the controller
// keeps and a migration moves.
type TablesAndSubnets interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
	// PutRouteTable writes the whole table with If-Match etag ("" = create
	// only) and returns the table read back after the operation succeeded.
	PutRouteTable(ctx context.Context, t *route.Table, etag string) (*route.Table, error)
	GetSubnet(ctx context.Context, id string) (*observe.Subnet, error)
	// SetSubnetRouteTable points the subnet to a route table with
	// If-Match etag ("" = unconditionally), sending back the body of the
	// subnet as last read; armerr.ErrPreconditionFailed when the subnet
	// changed since etag.
	SetSubnetRouteTable(ctx context.Context, subnetID, routeTableID, etag string) (*observe.Subnet, error)
	// Calls returns the number of ARM reads and writes made so far.
	Calls() (reads, writes int64)
}
