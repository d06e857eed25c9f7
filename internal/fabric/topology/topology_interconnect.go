package topology

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// The interconnect in a topology file (what joins a cluster's network to
// other networks and to premises): peerings of a virtual
// network, virtual network gateways, on-premises sites (local network
// gateways) and connections.
//
//	resourceGroups:
//	  - name: hub
//	    virtualNetworks:
//	      - name: hub-vnet
//	        addressPrefixes: [10.250.0.0/16]
//	        subnets:
//	          - {name: GatewaySubnet, addressPrefix: 10.250.255.0/27}
//	        peerings:
//	          - name: to-cluster
//	            remoteVirtualNetwork: kubernetes/kubernetes-vnet   # <group>/<vnet>, a VNet of this group, or a full ID
//	            allowForwardedTraffic: true
//	            allowGatewayTransit: true
//	    virtualNetworkGateways:
//	      - name: hub-vpn
//	        gatewayType: Vpn                # or ExpressRoute
//	        virtualNetwork: hub-vnet        # its GatewaySubnet holds the gateway
//	        bgpRoutes: [10.0.0.0/8]         # what on-premises advertises by BGP (fabric only, /_fabric/bgp)
//	    localNetworkGateways:
//	      - {name: datacenter, gatewayIpAddress: 203.0.113.10, addressPrefixes: [10.9.0.0/16]}
//	    connections:
//	      - {name: hub-to-datacenter, virtualNetworkGateway: hub-vpn, localNetworkGateway: datacenter}

// TopologyPeering is one side of a virtual network peering. Azure's
// defaults apply: allowVirtualNetworkAccess true, the others false.
type TopologyPeering struct {
	Name                      string `json:"name"`
	RemoteVirtualNetwork      string `json:"remoteVirtualNetwork"`
	AllowVirtualNetworkAccess *bool  `json:"allowVirtualNetworkAccess,omitempty"`
	AllowForwardedTraffic     bool   `json:"allowForwardedTraffic,omitempty"`
	AllowGatewayTransit       bool   `json:"allowGatewayTransit,omitempty"`
	UseRemoteGateways         bool   `json:"useRemoteGateways,omitempty"`
}

// TopologyGateway is a virtual network gateway in the GatewaySubnet of a
// network. BGPRoutes are what its on-premises BGP peer advertises (an
// ExpressRoute circuit's or a VPN site's); they are not an ARM property
// and reach only the fabric (PUT /_fabric/bgp).
type TopologyGateway struct {
	Name           string   `json:"name"`
	Location       string   `json:"location,omitempty"`
	GatewayType    string   `json:"gatewayType"`
	VirtualNetwork string   `json:"virtualNetwork"`
	BGPRoutes      []string `json:"bgpRoutes,omitempty"`
}

// TopologyLocalGateway is an on-premises site: its address and prefixes.
type TopologyLocalGateway struct {
	Name             string   `json:"name"`
	Location         string   `json:"location,omitempty"`
	GatewayIPAddress string   `json:"gatewayIpAddress"`
	AddressPrefixes  []string `json:"addressPrefixes,omitempty"`
}

// TopologyConnection links a gateway to a site (IPsec) or, for an
// ExpressRoute gateway, to a circuit (its ID; circuits are not modelled).
type TopologyConnection struct {
	Name                  string `json:"name"`
	Location              string `json:"location,omitempty"`
	VirtualNetworkGateway string `json:"virtualNetworkGateway"`
	LocalNetworkGateway   string `json:"localNetworkGateway,omitempty"`
	ExpressRouteCircuit   string `json:"expressRouteCircuit,omitempty"`
}

// validateInterconnect checks the peerings, gateways, sites and connections of a
// group of the topology; f is the group's field path.
func validateInterconnect(f string, rg TopologyResourceGroup, bad func(field, format string, args ...any)) {
	names := func(kind string, n int, name func(int) string) map[string]bool {
		seen := nameSet{}
		for i := range n {
			g := fmt.Sprintf("%s.%s[%d].name", f, kind, i)
			seen.declare(bad, g, name(i))
		}
		return seen
	}
	vnets := map[string]bool{}
	for _, v := range rg.VirtualNetworks {
		vnets[api.Key(v.Name)] = true
	}
	for i, v := range rg.VirtualNetworks {
		seen := nameSet{}
		for j, p := range v.Peerings {
			g := fmt.Sprintf("%s.virtualNetworks[%d].peerings[%d]", f, i, j)
			seen.declare(bad, g+".name", p.Name)
			switch ref := p.RemoteVirtualNetwork; {
			case ref == "":
				bad(g+".remoteVirtualNetwork", "missing: <group>/<vnet>, a virtual network of this group, or an ID")
			case strings.HasPrefix(ref, "/"):
				if a, ok := api.ParseNetworkID(ref); !ok || a.Type != api.TypeVirtualNetworks || a.Child != "" {
					bad(g+".remoteVirtualNetwork", "%q is not a virtual network ID", ref)
				}
			case strings.Count(ref, "/") > 1:
				bad(g+".remoteVirtualNetwork", "%q is neither <group>/<vnet>, a virtual network name nor an ID", ref)
			case !strings.Contains(ref, "/") && api.Key(ref) == api.Key(v.Name):
				bad(g+".remoteVirtualNetwork", "%q is the peering's own virtual network", ref)
			case !strings.Contains(ref, "/") && !vnets[api.Key(ref)]:
				bad(g+".remoteVirtualNetwork", "%q is not a virtual network of resource group %q; write <group>/<vnet> for another group", ref, rg.Name)
			}
		}
	}
	gateways := names("virtualNetworkGateways", len(rg.VirtualNetworkGateways), func(i int) string { return rg.VirtualNetworkGateways[i].Name })
	for i, gw := range rg.VirtualNetworkGateways {
		g := fmt.Sprintf("%s.virtualNetworkGateways[%d]", f, i)
		if !strings.EqualFold(gw.GatewayType, "Vpn") && !strings.EqualFold(gw.GatewayType, "ExpressRoute") {
			bad(g+".gatewayType", "%q is not Vpn or ExpressRoute", gw.GatewayType)
		}
		switch ref := gw.VirtualNetwork; {
		case ref == "":
			bad(g+".virtualNetwork", "missing: the virtual network whose GatewaySubnet holds the gateway")
		case strings.HasPrefix(ref, "/"):
			if a, ok := api.ParseNetworkID(ref); !ok || a.Type != api.TypeVirtualNetworks || a.Child != "" {
				bad(g+".virtualNetwork", "%q is not a virtual network ID", ref)
			}
		case !vnets[api.Key(ref)]:
			bad(g+".virtualNetwork", "%q is not a virtual network of resource group %q; give its ID", ref, rg.Name)
		}
		for k, p := range gw.BGPRoutes {
			topoPrefix(bad, fmt.Sprintf("%s.bgpRoutes[%d]", g, k), p)
		}
	}
	sites := names("localNetworkGateways", len(rg.LocalNetworkGateways), func(i int) string { return rg.LocalNetworkGateways[i].Name })
	for i, l := range rg.LocalNetworkGateways {
		g := fmt.Sprintf("%s.localNetworkGateways[%d]", f, i)
		if _, err := netip.ParseAddr(l.GatewayIPAddress); err != nil {
			bad(g+".gatewayIpAddress", "%q is not an IP address (the site's VPN device)", l.GatewayIPAddress)
		}
		for k, p := range l.AddressPrefixes {
			topoPrefix(bad, fmt.Sprintf("%s.addressPrefixes[%d]", g, k), p)
		}
	}
	names("connections", len(rg.Connections), func(i int) string { return rg.Connections[i].Name })
	for i, c := range rg.Connections {
		g := fmt.Sprintf("%s.connections[%d]", f, i)
		if c.VirtualNetworkGateway == "" {
			bad(g+".virtualNetworkGateway", "missing")
		} else if !strings.HasPrefix(c.VirtualNetworkGateway, "/") && !gateways[api.Key(c.VirtualNetworkGateway)] {
			bad(g+".virtualNetworkGateway", "%q is not a gateway of resource group %q; give its ID", c.VirtualNetworkGateway, rg.Name)
		}
		switch {
		case (c.LocalNetworkGateway == "") == (c.ExpressRouteCircuit == ""):
			bad(g, "set localNetworkGateway (IPsec) or expressRouteCircuit (ExpressRoute), one of them")
		case c.LocalNetworkGateway != "" && !strings.HasPrefix(c.LocalNetworkGateway, "/") && !sites[api.Key(c.LocalNetworkGateway)]:
			bad(g+".localNetworkGateway", "%q is not a local network gateway of resource group %q; give its ID", c.LocalNetworkGateway, rg.Name)
		case c.ExpressRouteCircuit != "" && !strings.HasPrefix(c.ExpressRouteCircuit, "/subscriptions/"):
			bad(g+".expressRouteCircuit", "%q is not an ExpressRoute circuit ID", c.ExpressRouteCircuit)
		}
	}
}

// refID resolves a reference of a topology: an ID, <group>/<name> or a
// name in group rg.
func (a *applier) refID(rg, typ, ref string) string {
	if strings.HasPrefix(ref, "/") {
		return ref
	}
	if g, n, ok := strings.Cut(ref, "/"); ok {
		return api.ResourceID(a.sub, g, typ, n)
	}
	return api.ResourceID(a.sub, rg, typ, ref)
}

// interconnectClients are the SDK's clients applyInterconnect writes with.
type interconnectClients struct {
	peerings *armnetwork.VirtualNetworkPeeringsClient
	gateways *armnetwork.VirtualNetworkGatewaysClient
	sites    *armnetwork.LocalNetworkGatewaysClient
	conns    *armnetwork.VirtualNetworkGatewayConnectionsClient
}

// applyInterconnect applies the gateways, sites, connections, BGP routes and
// peerings of every group, after the virtual networks: gateways first,
// since a peering that uses remote gateways needs the remote one.
func (a *applier) applyInterconnect(ctx context.Context, t *Topology, opts *arm.ClientOptions, cred azcore.TokenCredential) error {
	some := false
	for _, rg := range t.ResourceGroups {
		some = some || len(rg.VirtualNetworkGateways)+len(rg.LocalNetworkGateways)+len(rg.Connections) > 0 ||
			slices.ContainsFunc(rg.VirtualNetworks, func(v TopologyVirtualNetwork) bool { return len(v.Peerings) > 0 })
	}
	if !some {
		return nil
	}
	f, err := armnetwork.NewClientFactory(a.sub, cred, opts)
	if err != nil {
		return fmt.Errorf("making network clients: %w", err)
	}
	c := &interconnectClients{peerings: f.NewVirtualNetworkPeeringsClient(), gateways: f.NewVirtualNetworkGatewaysClient(),
		sites: f.NewLocalNetworkGatewaysClient(), conns: f.NewVirtualNetworkGatewayConnectionsClient()}
	for _, rg := range t.ResourceGroups {
		rgLoc := cmp.Or(rg.Location, t.Location)
		for _, g := range rg.VirtualNetworkGateways {
			if err := a.gateway(ctx, c, rg.Name, g, api.NormalizeLocation(cmp.Or(g.Location, rgLoc))); err != nil {
				return err
			}
		}
		for _, l := range rg.LocalNetworkGateways {
			if err := a.site(ctx, c, rg.Name, l, api.NormalizeLocation(cmp.Or(l.Location, rgLoc))); err != nil {
				return err
			}
		}
	}
	for _, rg := range t.ResourceGroups {
		rgLoc := cmp.Or(rg.Location, t.Location)
		for _, cn := range rg.Connections {
			if err := a.connection(ctx, c, rg.Name, cn, api.NormalizeLocation(cmp.Or(cn.Location, rgLoc))); err != nil {
				return err
			}
		}
		for _, g := range rg.VirtualNetworkGateways {
			if err := a.bgpRoutes(ctx, rg.Name, g); err != nil {
				return err
			}
		}
	}
	// Peerings without useRemoteGateways first: the remote side's
	// allowGatewayTransit is then in place.
	for _, remote := range []bool{false, true} {
		for _, rg := range t.ResourceGroups {
			for _, v := range rg.VirtualNetworks {
				for _, p := range v.Peerings {
					if p.UseRemoteGateways != remote {
						continue
					}
					if err := a.peering(ctx, c, rg.Name, v.Name, p); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (a *applier) peering(ctx context.Context, c *interconnectClients, rg, vnet string, p TopologyPeering) error {
	id := api.ChildID(api.ResourceID(a.sub, rg, api.TypeVirtualNetworks, vnet), network.ChildPeerings, p.Name)
	remote := a.refID(rg, api.TypeVirtualNetworks, p.RemoteVirtualNetwork)
	want := armnetwork.VirtualNetworkPeeringPropertiesFormat{
		RemoteVirtualNetwork:      &armnetwork.SubResource{ID: api.Ptr(remote)},
		AllowVirtualNetworkAccess: api.Ptr(p.AllowVirtualNetworkAccess == nil || *p.AllowVirtualNetworkAccess),
		AllowForwardedTraffic:     api.Ptr(p.AllowForwardedTraffic), AllowGatewayTransit: api.Ptr(p.AllowGatewayTransit),
		UseRemoteGateways: api.Ptr(p.UseRemoteGateways),
	}
	detail := fmt.Sprintf("to %s, forwarded traffic %v, gateway transit %v, remote gateways %v", p.RemoteVirtualNetwork, p.AllowForwardedTraffic, p.AllowGatewayTransit, p.UseRemoteGateways)
	cur, err := c.peerings.Get(ctx, rg, vnet, p.Name, nil)
	action := ActionCreate
	switch {
	case isStatus(err, http.StatusNotFound):
	case err != nil:
		return fmt.Errorf("reading peering %s/%s: %w", vnet, p.Name, describe(err))
	default:
		cp := cur.Properties
		same := cp != nil && strings.EqualFold(network.PeeringRemote(&cur.VirtualNetworkPeering), remote)
		for _, pair := range [][2]*bool{{cp.AllowVirtualNetworkAccess, want.AllowVirtualNetworkAccess}, {cp.AllowForwardedTraffic, want.AllowForwardedTraffic},
			{cp.AllowGatewayTransit, want.AllowGatewayTransit}, {cp.UseRemoteGateways, want.UseRemoteGateways}} {
			same = same && pair[0] != nil && *pair[0] == *pair[1]
		}
		if same {
			a.record(ActionUnchanged, "virtualNetworkPeering", id, "")
			return nil
		}
		action = ActionUpdate
	}
	poller, err := c.peerings.BeginCreateOrUpdate(ctx, rg, vnet, p.Name, armnetwork.VirtualNetworkPeering{Properties: &want}, nil)
	err = awaitPut(ctx, a, poller, err)
	if err != nil {
		return fmt.Errorf("writing peering %s/%s: %w", vnet, p.Name, describe(err))
	}
	a.record(action, "virtualNetworkPeering", id, detail)
	return nil
}

func (a *applier) gateway(ctx context.Context, c *interconnectClients, rg string, g TopologyGateway, loc string) error {
	id := api.ResourceID(a.sub, rg, network.TypeVNetGateways, g.Name)
	subnet := api.ChildID(a.refID(rg, api.TypeVirtualNetworks, g.VirtualNetwork), api.ChildSubnets, network.GatewaySubnetName)
	typ := armnetwork.VirtualNetworkGatewayTypeVPN
	if strings.EqualFold(g.GatewayType, "ExpressRoute") {
		typ = armnetwork.VirtualNetworkGatewayTypeExpressRoute
	}
	cur, err := c.gateways.Get(ctx, rg, g.Name, nil)
	action := ActionCreate
	switch {
	case isStatus(err, http.StatusNotFound):
	case err != nil:
		return fmt.Errorf("reading virtual network gateway %s: %w", g.Name, describe(err))
	default:
		p := cur.Properties
		if p != nil && p.GatewayType != nil && *p.GatewayType == typ && len(p.IPConfigurations) > 0 &&
			p.IPConfigurations[0].Properties != nil && p.IPConfigurations[0].Properties.Subnet != nil &&
			strings.EqualFold(api.Str(p.IPConfigurations[0].Properties.Subnet.ID), subnet) {
			a.record(ActionUnchanged, "virtualNetworkGateway", id, "")
			return nil
		}
		action = ActionUpdate
	}
	body := armnetwork.VirtualNetworkGateway{Location: api.Ptr(loc), Properties: &armnetwork.VirtualNetworkGatewayPropertiesFormat{
		GatewayType: api.Ptr(typ),
		IPConfigurations: []*armnetwork.VirtualNetworkGatewayIPConfiguration{{Name: api.Ptr("default"),
			Properties: &armnetwork.VirtualNetworkGatewayIPConfigurationPropertiesFormat{Subnet: &armnetwork.SubResource{ID: api.Ptr(subnet)}}}},
	}}
	poller, err := c.gateways.BeginCreateOrUpdate(ctx, rg, g.Name, body, nil)
	err = awaitPut(ctx, a, poller, err)
	if err != nil {
		return fmt.Errorf("writing virtual network gateway %s: %w", g.Name, describe(err))
	}
	a.record(action, "virtualNetworkGateway", id, string(typ)+" in "+g.VirtualNetwork+"/"+network.GatewaySubnetName)
	return nil
}

// bgpRoutes gives the fabric what the gateway's on-premises BGP peer
// advertises, when the topology says and it differs.
func (a *applier) bgpRoutes(ctx context.Context, rg string, g TopologyGateway) error {
	if g.BGPRoutes == nil {
		return nil
	}
	id := api.ResourceID(a.sub, rg, network.TypeVNetGateways, g.Name)
	path := api.ControlPrefix + "bgp?gateway=" + url.QueryEscape(id)
	var cur network.BgpAdvertisement
	if _, err := a.arm.do(ctx, http.MethodGet, path, nil, &cur); err != nil {
		return fmt.Errorf("reading the BGP routes of gateway %s (only the routekeeper fabric has them): %w", g.Name, err)
	}
	if network.SameSpace(cur.Prefixes, g.BGPRoutes) {
		a.record(ActionUnchanged, "bgpRoutes", id, "")
		return nil
	}
	if _, err := a.arm.do(ctx, http.MethodPut, path, network.BgpAdvertisement{Prefixes: g.BGPRoutes}, nil); err != nil {
		return fmt.Errorf("setting the BGP routes of gateway %s: %w", g.Name, err)
	}
	a.res.Writes++
	a.record(ActionUpdate, "bgpRoutes", id, strings.Join(g.BGPRoutes, ", "))
	return nil
}

func (a *applier) site(ctx context.Context, c *interconnectClients, rg string, l TopologyLocalGateway, loc string) error {
	id := api.ResourceID(a.sub, rg, network.TypeLocalGateways, l.Name)
	cur, err := c.sites.Get(ctx, rg, l.Name, nil)
	action := ActionCreate
	switch {
	case isStatus(err, http.StatusNotFound):
	case err != nil:
		return fmt.Errorf("reading local network gateway %s: %w", l.Name, describe(err))
	default:
		if p := cur.Properties; p != nil && api.Str(p.GatewayIPAddress) == l.GatewayIPAddress && network.SameSpace(network.SpaceOf(p.LocalNetworkAddressSpace), l.AddressPrefixes) {
			a.record(ActionUnchanged, "localNetworkGateway", id, "")
			return nil
		}
		action = ActionUpdate
	}
	body := armnetwork.LocalNetworkGateway{Location: api.Ptr(loc), Properties: &armnetwork.LocalNetworkGatewayPropertiesFormat{
		GatewayIPAddress: api.Ptr(l.GatewayIPAddress), LocalNetworkAddressSpace: &armnetwork.AddressSpace{AddressPrefixes: network.ToStrPtrs(l.AddressPrefixes)}}}
	poller, err := c.sites.BeginCreateOrUpdate(ctx, rg, l.Name, body, nil)
	err = awaitPut(ctx, a, poller, err)
	if err != nil {
		return fmt.Errorf("writing local network gateway %s: %w", l.Name, describe(err))
	}
	a.record(action, "localNetworkGateway", id, l.GatewayIPAddress+": "+strings.Join(l.AddressPrefixes, ", "))
	return nil
}

func (a *applier) connection(ctx context.Context, c *interconnectClients, rg string, cn TopologyConnection, loc string) error {
	id := api.ResourceID(a.sub, rg, network.TypeConnections, cn.Name)
	gw := a.refID(rg, network.TypeVNetGateways, cn.VirtualNetworkGateway)
	props := &armnetwork.VirtualNetworkGatewayConnectionPropertiesFormat{VirtualNetworkGateway1: &armnetwork.VirtualNetworkGateway{ID: api.Ptr(gw)}}
	other := ""
	if cn.LocalNetworkGateway != "" {
		other = a.refID(rg, network.TypeLocalGateways, cn.LocalNetworkGateway)
		props.ConnectionType = api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeIPsec)
		props.LocalNetworkGateway2 = &armnetwork.LocalNetworkGateway{ID: api.Ptr(other)}
		props.SharedKey = api.Ptr("routekeeper-fabric")
	} else {
		other = cn.ExpressRouteCircuit
		props.ConnectionType = api.Ptr(armnetwork.VirtualNetworkGatewayConnectionTypeExpressRoute)
		props.Peer = &armnetwork.SubResource{ID: api.Ptr(other)}
	}
	cur, err := c.conns.Get(ctx, rg, cn.Name, nil)
	action := ActionCreate
	switch {
	case isStatus(err, http.StatusNotFound):
	case err != nil:
		return fmt.Errorf("reading connection %s: %w", cn.Name, describe(err))
	default:
		ends := network.ConnectionEnds(&cur.VirtualNetworkGatewayConnection)
		if cur.Properties.Peer != nil {
			ends = append(ends, api.Str(cur.Properties.Peer.ID))
		}
		if len(ends) == 2 && strings.EqualFold(ends[0], gw) && strings.EqualFold(ends[1], other) {
			a.record(ActionUnchanged, "connection", id, "")
			return nil
		}
		action = ActionUpdate
	}
	poller, err := c.conns.BeginCreateOrUpdate(ctx, rg, cn.Name, armnetwork.VirtualNetworkGatewayConnection{Location: api.Ptr(loc), Properties: props}, nil)
	err = awaitPut(ctx, a, poller, err)
	if err != nil {
		return fmt.Errorf("writing connection %s: %w", cn.Name, describe(err))
	}
	a.record(action, "connection", id, string(*props.ConnectionType)+" "+cn.VirtualNetworkGateway+" to "+cmp.Or(cn.LocalNetworkGateway, cn.ExpressRouteCircuit))
	return nil
}
