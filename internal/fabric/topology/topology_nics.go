package topology

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// TopologyNIC is a node's network interface: one IP configuration in a
// subnet with a static private IP. enableIPForwarding must be true for a
// node that receives pod traffic on user-defined routes (default false, as
// in Azure).
//
//	networkInterfaces:
//	  - name: worker-0-nic
//	    subnet: kubernetes-vnet/kubernetes-subnet   # or a full subnet ID
//	    privateIPAddress: 10.240.0.20
//	    enableIPForwarding: true
type TopologyNIC struct {
	Name               string `json:"name"`
	Location           string `json:"location,omitempty"`
	Subnet             string `json:"subnet"`
	PrivateIPAddress   string `json:"privateIPAddress"`
	EnableIPForwarding bool   `json:"enableIPForwarding,omitempty"`
}

// validateNICs checks the NICs of a resource group of the topology; f is
// the group's field path.
func validateNICs(f string, rg TopologyResourceGroup, bad func(field, format string, args ...any)) {
	seen := nameSet{}
	for i, n := range rg.NetworkInterfaces {
		g := fmt.Sprintf("%s.networkInterfaces[%d]", f, i)
		seen.declare(bad, g+".name", n.Name)
		if n.Subnet == "" {
			bad(g+".subnet", "missing: <virtual network>/<subnet> of this group, or a subnet ID")
		} else if !strings.HasPrefix(n.Subnet, "/") && strings.Count(n.Subnet, "/") != 1 {
			bad(g+".subnet", "%q is neither <virtual network>/<subnet> nor a subnet ID", n.Subnet)
		} else if strings.HasPrefix(n.Subnet, "/") {
			if a, ok := api.ParseNetworkID(n.Subnet); !ok || a.Child != api.ChildSubnets {
				bad(g+".subnet", "%q is not a subnet ID", n.Subnet)
			}
		}
		if _, err := netip.ParseAddr(n.PrivateIPAddress); err != nil {
			bad(g+".privateIPAddress", "%q is not an IP address (the fabric needs the node's static private IP)", n.PrivateIPAddress)
		}
	}
}

func (a *applier) subnetRef(rg, ref string) string {
	if strings.HasPrefix(ref, "/") {
		return ref
	}
	vnet, sn, _ := strings.Cut(ref, "/")
	return api.ChildID(api.ResourceID(a.sub, rg, api.TypeVirtualNetworks, vnet), api.ChildSubnets, sn)
}

// networkInterface creates the NIC or updates its subnet, private IP and
// IP forwarding when they differ.
func (a *applier) networkInterface(ctx context.Context, rg string, n TopologyNIC, loc string) error {
	id := api.ResourceID(a.sub, rg, network.TypeNetworkInterfaces, n.Name)
	subnetID := a.subnetRef(rg, n.Subnet)
	ipCfg := func(name string) *armnetwork.InterfaceIPConfiguration {
		return &armnetwork.InterfaceIPConfiguration{Name: api.Ptr(name), Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
			Subnet: &armnetwork.Subnet{ID: api.Ptr(subnetID)}, PrivateIPAddress: api.Ptr(n.PrivateIPAddress),
			PrivateIPAllocationMethod: api.Ptr(armnetwork.IPAllocationMethodStatic), Primary: api.Ptr(true),
		}}
	}
	detail := fmt.Sprintf("%s in %s, IP forwarding %v", n.PrivateIPAddress, n.Subnet, n.EnableIPForwarding)
	for attempt := 0; ; attempt++ {
		cur, err := a.nics.Get(ctx, rg, n.Name, nil)
		if isStatus(err, http.StatusNotFound) {
			body := armnetwork.Interface{Location: api.Ptr(loc), Properties: &armnetwork.InterfacePropertiesFormat{
				EnableIPForwarding: api.Ptr(n.EnableIPForwarding), IPConfigurations: []*armnetwork.InterfaceIPConfiguration{ipCfg("ipconfig1")}}}
			if err := a.putNIC(withIfNoneMatch(ctx), rg, n.Name, body); err != nil {
				if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
					continue
				}
				return fmt.Errorf("creating network interface %s: %w", n.Name, describe(err))
			}
			a.record(ActionCreate, "networkInterface", id, detail)
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading network interface %s: %w", n.Name, describe(err))
		}
		nic := cur.Interface
		if nic.Properties == nil || len(nic.Properties.IPConfigurations) == 0 {
			return fmt.Errorf("network interface %s has no IP configuration", n.Name)
		}
		first := nic.Properties.IPConfigurations[0]
		var changes []string
		if p := first.Properties; p == nil || p.Subnet == nil || !armid.Same(api.Str(p.Subnet.ID), subnetID) || api.Str(p.PrivateIPAddress) != n.PrivateIPAddress {
			nic.Properties.IPConfigurations[0] = ipCfg(api.Str(first.Name))
			changes = append(changes, "ipConfiguration")
		}
		if f := nic.Properties.EnableIPForwarding; f == nil || *f != n.EnableIPForwarding {
			nic.Properties.EnableIPForwarding = api.Ptr(n.EnableIPForwarding)
			changes = append(changes, "enableIPForwarding")
		}
		if len(changes) == 0 {
			a.record(ActionUnchanged, "networkInterface", id, "")
			return nil
		}
		if err := a.putNIC(withIfMatch(ctx, api.Str(nic.Etag)), rg, n.Name, nic); err != nil {
			if isStatus(err, http.StatusPreconditionFailed) && attempt < applyRetries {
				continue
			}
			return fmt.Errorf("updating network interface %s: %w", n.Name, describe(err))
		}
		a.record(ActionUpdate, "networkInterface", id, strings.Join(changes, ", ")+": "+detail)
		return nil
	}
}

func (a *applier) putNIC(ctx context.Context, rg, name string, n armnetwork.Interface) error {
	p, err := a.nics.BeginCreateOrUpdate(ctx, rg, name, n, nil)
	return awaitPut(ctx, a, p, err)
}

// applyNICs applies the NICs of every group, after the virtual networks
// they sit in.
func (a *applier) applyNICs(ctx context.Context, t *Topology) error {
	for _, rg := range t.ResourceGroups {
		rgLoc := cmp.Or(rg.Location, t.Location)
		for _, n := range rg.NetworkInterfaces {
			if err := a.networkInterface(ctx, rg.Name, n, api.NormalizeLocation(cmp.Or(n.Location, rgLoc))); err != nil {
				return err
			}
		}
	}
	return nil
}

// nameSet is the names declared in one collection of a topology, by key.
type nameSet map[string]bool

// declare checks the name at field: a valid name, not declared before in
// the collection; and records it.
func (s nameSet) declare(bad func(field, format string, args ...any), field, name string) {
	if !api.ValidName(name) {
		bad(field, "%q is not a valid name", name)
	}
	if s[api.Key(name)] {
		bad(field, "%q is declared twice", name)
	}
	s[api.Key(name)] = true
}
