package observe

import "net/netip"

// The interconnect of a cluster's virtual networks: the peerings, gateways
// and connections that link them with other networks, which trace and the
// doctor's pre-flights read (optional rights: see internal/cloud/azure's
// interconnect.go).

// Peering is one side of a virtual network peering, as ARM shows it.
type Peering struct {
	ID, Name     string
	RemoteVNetID string
	// RemoteAddressPrefixes is the remote address space as peered
	// (remoteAddressSpace): what the peering routes.
	RemoteAddressPrefixes []string
	// RemoteCurrentPrefixes is the remote network's address space now
	// (remoteVirtualNetworkAddressSpace); it differs until a sync.
	RemoteCurrentPrefixes []string
	// State is Connected, Initiated or Disconnected; SyncLevel FullyInSync,
	// LocalNotInSync, RemoteNotInSync or LocalAndRemoteNotInSync.
	State, SyncLevel          string
	AllowVirtualNetworkAccess bool
	AllowForwardedTraffic     bool
	AllowGatewayTransit       bool
	UseRemoteGateways         bool
}

// GatewayRoute is one route a virtual network gateway learned (or holds),
// as getLearnedRoutes answers it.
type GatewayRoute struct {
	Network netip.Prefix
	// Origin is Network (the network's own prefixes and static routes of
	// its sites), EBgp or IBgp.
	Origin, NextHop, SourcePeer, AsPath string
	Weight                              int32
}

// Gateway is a virtual network gateway in a network's GatewaySubnet.
type Gateway struct {
	ID, Name string
	// Type is Vpn or ExpressRoute.
	Type             string
	VNetID, SubnetID string
	BGPEnabled       bool
	// Routes are all the routes getLearnedRoutes answered.
	Routes []GatewayRoute
	// OnPremises are the learned prefixes that are not the network's own
	// address space: what the gateway adds to the subnets' routes.
	OnPremises []netip.Prefix
}
