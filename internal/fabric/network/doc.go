// Package network is the fabric's Microsoft.Network resource provider and
// the resource groups that hold its resources: route tables and routes,
// virtual networks, subnets and peerings, network interfaces, network
// security groups, NAT gateways, virtual network gateways, local network
// gateways and connections, network watchers (next hop) and a NIC's
// effective routes; the PUT pipeline every one of them shares (put.go),
// the top-level and child handlers (toplevel.go, children.go), the
// long-running operations on them (operations.go), and the State the data
// plane forwards by (Networks).
//
// The types it serves are one table (resourceTypes in types.go). The
// server finds the Provider by its Namespace and hands it the paths below
// .../providers/Microsoft.Network; the pipeline (authentication,
// authorization, faults) has run by then. What it needs of the server it
// gets through Config: the store, the clock, the limits, and two small
// interfaces (FaultInjector, PollAuthorizer). It never imports the server.
package network
