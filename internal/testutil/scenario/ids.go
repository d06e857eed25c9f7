package scenario

import "strings"

// Names in a script are short: table rt is Prefix+"routeTables/rt", subnet
// nodes in network v is Prefix+"virtualNetworks/v/subnets/nodes", all in
// one resource group (rg) of one subscription (s).
const (
	// Prefix is what every ID of a script starts with.
	Prefix = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/"
	// Subscription and ResourceGroup are those of every ID of a script.
	Subscription  = "s"
	ResourceGroup = "rg"
	// DefaultVNet is the network of a subnet that names none.
	DefaultVNet = "v"
)

// TableID is the ID of the route table name.
func TableID(name string) string { return Prefix + "routeTables/" + name }

// VNetID is the ID of the virtual network name.
func VNetID(name string) string { return Prefix + "virtualNetworks/" + name }

// SubnetID is the ID of subnet name in network vnet.
func SubnetID(vnet, name string) string { return VNetID(vnet) + "/subnets/" + name }

// subnetRef is the ID of a subnet written NAME (in DefaultVNet) or
// VNET/NAME.
func subnetRef(s string) string {
	if vnet, name, found := strings.Cut(s, "/"); found {
		return SubnetID(vnet, name)
	}
	return SubnetID(DefaultVNet, s)
}

// Short makes the IDs in a text relative to the resource group's
// providers, for readable expectations.
func Short(s string) string { return strings.ReplaceAll(s, Prefix, "") }

// ShortSubnet is a subnet as a script names it: NAME in DefaultVNet, else
// VNET/NAME.
func ShortSubnet(id string) string {
	s := Short(id)
	s = strings.TrimPrefix(s, "virtualNetworks/"+DefaultVNet+"/subnets/")
	return strings.Replace(strings.TrimPrefix(s, "virtualNetworks/"), "/subnets/", "/", 1)
}
