// Package kthw is the network of Kubernetes the Hard Way's pod network
// routes lab as fabric topology YAML, with the ARM IDs of its resources,
// for the tests of any package: it imports nothing, so the fabric's own
// tests and pure unit tests use it as well as those that run a fabric
// through fabrictest. A test appends what its scenario adds.
package kthw

// Sub is the subscription of the IDs: the fabric's default subscription.
const Sub = "00000000-0000-0000-0000-000000000000"

// Provider starts the ID of every resource of the network: resource group
// kubernetes's Microsoft.Network provider, with a trailing slash.
const Provider = "/subscriptions/" + Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/"

// The IDs of the network's resources.
const (
	// TableID is the route table kubernetes-routes.
	TableID = Provider + "routeTables/kubernetes-routes"
	// Table2ID is a second route table in the group, for swaps and
	// migrations: kubernetes-routes-v2.
	Table2ID = TableID + "-v2"
	// VNetID is the virtual network kubernetes-vnet.
	VNetID = Provider + "virtualNetworks/kubernetes-vnet"
	// SubnetID is the node subnet kubernetes-subnet.
	SubnetID = VNetID + "/subnets/kubernetes-subnet"
	// Pool2ID is a second node subnet, pool-2.
	Pool2ID = VNetID + "/subnets/pool-2"
)

// Network is the start of a KTHW topology: resource group kubernetes and
// VNet kubernetes-vnet (10.240.0.0/16), up to the list of its subnets,
// which a test fills.
const Network = `
location: eastus
resourceGroups:
  - name: kubernetes
    virtualNetworks:
      - name: kubernetes-vnet
        addressPrefixes: [10.240.0.0/16]
        subnets:
`

// Topology is the KTHW network: Network with its one subnet,
// kubernetes-subnet (10.240.0.0/24), and no route table. A test may add
// properties of the subnet (routeTable: ...) and more subnets.
const Topology = Network + `          - name: kubernetes-subnet
            addressPrefix: 10.240.0.0/24
`

// NICs are the two workers' network interfaces in kubernetes-subnet, to
// append to Topology: worker-0-nic (10.240.0.20, IP forwarding on) and
// worker-1-nic (10.240.0.21, IP forwarding off).
const NICs = `    networkInterfaces:
      - name: worker-0-nic
        subnet: kubernetes-vnet/kubernetes-subnet
        privateIPAddress: 10.240.0.20
        enableIPForwarding: true
      - name: worker-1-nic
        subnet: kubernetes-vnet/kubernetes-subnet
        privateIPAddress: 10.240.0.21
`

// SplitGroups is the KTHW network split between two groups, where the
// permission on the network's group goes missing: the network in group net,
// the route table kubernetes-routes (claimed by cluster kthw, no routes) in
// group kubernetes. A test appends the table's routes and the
// authorization.
const SplitGroups = `
location: eastus
resourceGroups:
  - name: net
    virtualNetworks:
      - name: kubernetes-vnet
        addressPrefixes: [10.240.0.0/16]
        subnets:
          - {name: kubernetes-subnet, addressPrefix: 10.240.0.0/24}
  - name: kubernetes
    routeTables:
      - name: kubernetes-routes
        tags: {routekeeper-cluster: kthw}
`

// AppGateway is Topology with an Application Gateway subnet, appgw-subnet
// (10.240.2.0/24), on a route table of its own, appgw-routes, whose route
// default-internet sends 0.0.0.0/0 to the Internet (as App Gateway v2
// requires). A test may append more routes of appgw-routes.
const AppGateway = Topology + `          - name: appgw-subnet
            addressPrefix: 10.240.2.0/24
            routeTable: appgw-routes
    routeTables:
      - name: appgw-routes
        routes:
          - name: default-internet
            addressPrefix: 0.0.0.0/0
            nextHopType: Internet
`
