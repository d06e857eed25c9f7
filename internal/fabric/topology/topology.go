package topology

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Topology is a small declarative description of resource groups, virtual
// networks, subnets and route tables, the equivalent of the
// `az network ...` commands of Kubernetes the Hard Way, applied to a fabric
// with Apply. Locations default from the resource group, then the file.
//
//	subscription: 00000000-0000-0000-0000-000000000000   # optional
//	location: eastus
//	resourceGroups:
//	  - name: kubernetes
//	    virtualNetworks:
//	      - name: kubernetes-vnet
//	        addressPrefixes: [10.240.0.0/16]
//	        subnets:
//	          - name: kubernetes-subnet
//	            addressPrefix: 10.240.0.0/24
//	            routeTable: kubernetes-routes   # a table of this group, or a full ID
//	    routeTables:
//	      - name: kubernetes-routes
//	        tags: {env: test}
//	        routes:
//	          - {name: default-fw, addressPrefix: 0.0.0.0/0, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.4}
//	authorization: {...}   # optional: principals, roles, locks, policies (TopologyAuthorization)
//
// Network interfaces are in topology_nics.go; peerings, gateways,
// on-premises sites and connections in topology_interconnect.go.
type Topology struct {
	Subscription   string                  `json:"subscription,omitempty"`
	Location       string                  `json:"location,omitempty"`
	ResourceGroups []TopologyResourceGroup `json:"resourceGroups"`
	// Authorization declares principals, roles, locks and policies
	// (topology_authz.go); nil declares none.
	Authorization *TopologyAuthorization `json:"authorization,omitempty"`
}

// TopologyResourceGroup is a resource group and what it holds.
type TopologyResourceGroup struct {
	Name            string                   `json:"name"`
	Location        string                   `json:"location,omitempty"`
	Tags            map[string]string        `json:"tags,omitempty"`
	VirtualNetworks []TopologyVirtualNetwork `json:"virtualNetworks,omitempty"`
	RouteTables     []TopologyRouteTable     `json:"routeTables,omitempty"`
	// NetworkInterfaces are the nodes' NICs (topology_nics.go).
	NetworkInterfaces []TopologyNIC `json:"networkInterfaces,omitempty"`
	// Gateways, on-premises sites and connections (topology_interconnect.go).
	VirtualNetworkGateways []TopologyGateway      `json:"virtualNetworkGateways,omitempty"`
	LocalNetworkGateways   []TopologyLocalGateway `json:"localNetworkGateways,omitempty"`
	Connections            []TopologyConnection   `json:"connections,omitempty"`
}

// TopologyVirtualNetwork is a virtual network with its subnets.
type TopologyVirtualNetwork struct {
	Name            string            `json:"name"`
	Location        string            `json:"location,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
	AddressPrefixes []string          `json:"addressPrefixes"`
	Subnets         []TopologySubnet  `json:"subnets,omitempty"`
	// Peerings are the network's side of its peerings (topology_interconnect.go).
	Peerings []TopologyPeering `json:"peerings,omitempty"`
}

// TopologySubnet is a subnet; RouteTable, when set, associates a route
// table (the name of a table of the same group, or a full ID). Without
// it, Apply leaves whatever association the subnet has.
type TopologySubnet struct {
	Name            string   `json:"name"`
	AddressPrefix   string   `json:"addressPrefix,omitempty"`
	AddressPrefixes []string `json:"addressPrefixes,omitempty"`
	RouteTable      string   `json:"routeTable,omitempty"`
}

// TopologyRouteTable is a route table and some of its routes: Apply adds
// and updates the routes listed and keeps the others.
type TopologyRouteTable struct {
	Name                       string            `json:"name"`
	Location                   string            `json:"location,omitempty"`
	Tags                       map[string]string `json:"tags,omitempty"`
	DisableBgpRoutePropagation *bool             `json:"disableBgpRoutePropagation,omitempty"`
	Routes                     []TopologyRoute   `json:"routes,omitempty"`
}

// TopologyRoute is a user-defined route.
type TopologyRoute struct {
	Name             string `json:"name"`
	AddressPrefix    string `json:"addressPrefix"`
	NextHopType      string `json:"nextHopType"`
	NextHopIPAddress string `json:"nextHopIpAddress,omitempty"`
}

// LoadTopology reads and checks a topology file. Errors name the file, the
// field and the value.
func LoadTopology(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading topology: %w", err)
	}
	t, err := parseTopology(b, filepath.Dir(path))
	if err != nil {
		return nil, prefixErrors(path, err)
	}
	return t, nil
}

// ParseTopology parses and checks a topology document (YAML or JSON).
// Files it names (role definitions) are read relative to the working
// directory; LoadTopology reads them relative to the topology file.
func ParseTopology(b []byte) (*Topology, error) { return parseTopology(b, "") }

func parseTopology(b []byte, dir string) (*Topology, error) {
	var t Topology
	if err := yaml.UnmarshalStrict(b, &t); err != nil {
		return nil, fmt.Errorf("not a valid topology: %w", err)
	}
	if t.Authorization != nil {
		for i := range t.Authorization.RoleDefinitions {
			t.Authorization.RoleDefinitions[i].load(dir)
		}
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

func prefixErrors(path string, err error) error {
	var parts []string
	for _, e := range splitJoined(err) {
		parts = append(parts, path+": "+e.Error())
	}
	return errors.New(strings.Join(parts, "\n"))
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Validate checks the topology the way Azure would check the resources it
// describes, and returns every problem, each naming its field and value.
func (t *Topology) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if strings.ContainsAny(t.Subscription, "/ \t") {
		bad("subscription", "%q is not a subscription ID", t.Subscription)
	}
	if len(t.ResourceGroups) == 0 {
		bad("resourceGroups", "the topology declares no resource group")
	}
	rgSeen := map[string]bool{}
	for i, rg := range t.ResourceGroups {
		f := fmt.Sprintf("resourceGroups[%d]", i)
		if !api.ValidRGName(rg.Name) {
			bad(f+".name", "%q is not a valid resource group name (1-90 letters, digits, '_', '-', '.', '(' or ')', not ending with '.')", rg.Name)
		}
		if rgSeen[api.Key(rg.Name)] {
			bad(f+".name", "%q is declared twice", rg.Name)
		}
		rgSeen[api.Key(rg.Name)] = true
		rgLoc := cmp.Or(rg.Location, t.Location)
		if rgLoc == "" {
			bad(f+".location", "missing: set it on the resource group or at the top of the file")
		}
		tables := validateRouteTables(f, rg, rgLoc, bad)
		validateNICs(f, rg, bad)
		validateInterconnect(f, rg, bad)
		vnetSeen := nameSet{}
		for j, vn := range rg.VirtualNetworks {
			g := fmt.Sprintf("%s.virtualNetworks[%d]", f, j)
			vnetSeen.declare(bad, g+".name", vn.Name)
			validateVNet(g, rg.Name, vn, api.NormalizeLocation(cmp.Or(vn.Location, rgLoc)), tables, bad)
		}
	}
	if t.Authorization != nil {
		rgs := map[string]bool{}
		for _, rg := range t.ResourceGroups {
			rgs[api.Key(rg.Name)] = true
		}
		t.Authorization.validate(cmp.Or(t.Subscription, api.DefaultSubscription), rgs, bad)
	}
	return errors.Join(errs...)
}

func topoPrefix(bad func(string, string, ...any), field, s string) (netip.Prefix, bool) {
	p, code, want := api.PrefixProblem(s)
	switch code {
	case "":
		return p, true
	case "InvalidCIDRNotation":
		bad(field, "%q has host bits set; did you mean %s?", s, want)
	default:
		bad(field, "%q is not a CIDR prefix", s)
	}
	return netip.Prefix{}, false
}
