// Package route holds routekeeper's view of an Azure route table: routes,
// tables, the route naming scheme shared with cloud-provider-azure, and the
// ownership rules that decide which routes routekeeper may change.
package route

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// NextHopType is the type of a route's next hop, as ARM spells it.
type NextHopType string

// The next hop types ARM accepts.
const (
	VirtualAppliance      NextHopType = "VirtualAppliance"
	VnetLocal             NextHopType = "VnetLocal"
	Internet              NextHopType = "Internet"
	VirtualNetworkGateway NextHopType = "VirtualNetworkGateway"
	None                  NextHopType = "None"
)

// ClaimTag is the route table tag that records which cluster owns the pod
// routes of a table: routekeeper-cluster=<cluster name>. Azure tag names
// may not contain < > % & \ ? /, so no "example.io/name" style here.
const ClaimTag = "routekeeper-cluster"

// Route is one user-defined route.
type Route struct {
	Name string `json:"name"`
	// AddressPrefix is the prefix as ARM holds it. It is usually a CIDR, but
	// Azure also accepts service tags (for example "AzureCloud"), so it is
	// kept as text; Prefix is its parsed form and is invalid for a tag.
	AddressPrefix string       `json:"addressPrefix"`
	Prefix        netip.Prefix `json:"-"`
	NextHopType   NextHopType  `json:"nextHopType"`
	// NextHopIP is set only for VirtualAppliance.
	NextHopIP         netip.Addr `json:"nextHopIpAddress,omitzero"`
	ProvisioningState string     `json:"provisioningState,omitempty"`
}

// Table is a route table with everything a whole-table PUT must carry back.
type Table struct {
	ID                         string            `json:"id"`
	Name                       string            `json:"name"`
	ResourceGroup              string            `json:"resourceGroup"`
	Location                   string            `json:"location"`
	Etag                       string            `json:"etag,omitempty"`
	Tags                       map[string]string `json:"tags,omitempty"`
	DisableBGPRoutePropagation bool              `json:"disableBgpRoutePropagation"`
	ProvisioningState          string            `json:"provisioningState,omitempty"`
	Routes                     []Route           `json:"routes"`
	// Subnets are the IDs of the subnets associated with the table (read-only
	// in ARM: it is changed by writing the subnet).
	Subnets []string `json:"subnets,omitempty"`
}

// Claim returns the cluster that claimed the table, or "" when unclaimed.
func (t *Table) Claim() string {
	if t == nil {
		return ""
	}
	for k, v := range t.Tags {
		if strings.EqualFold(k, ClaimTag) {
			return v
		}
	}
	return ""
}

// Clone returns a deep copy of the table (nil for nil): its routes, tags
// and subnets are its own.
func (t *Table) Clone() *Table {
	if t == nil {
		return nil
	}
	c := *t
	c.Routes = slices.Clone(t.Routes)
	c.Tags = maps.Clone(t.Tags)
	c.Subnets = slices.Clone(t.Subnets)
	return &c
}

// nameSeparator separates the node name from the mangled CIDR in a route
// name, exactly as cloud-provider-azure does.
const nameSeparator = "____"

var cidrMangler = strings.NewReplacer(".", "", ":", "", "/", "")

// Name returns the route name for a node's pod CIDR, compatible with
// cloud-provider-azure: <nodeName>____<CIDR with '.', ':' and '/' removed>,
// for example worker-0____102000024.
func Name(node string, podCIDR netip.Prefix) string {
	return node + nameSeparator + cidrMangler.Replace(podCIDR.Masked().String())
}

// ParseName splits a route name of the naming scheme into the node name and
// the mangled CIDR. ok is false when name is not in the scheme.
func ParseName(name string) (node, mangledCIDR string, ok bool) {
	i := strings.LastIndex(name, nameSeparator)
	if i <= 0 || i+len(nameSeparator) == len(name) {
		return "", "", false
	}
	return name[:i], name[i+len(nameSeparator):], true
}
