package network

import (
	"fmt"
	"net/netip"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Network interfaces: what routing needs of a VM's NIC (its subnet and
// private IP, IP forwarding) with Azure's paths, JSON, etags and
// long-running PUT/DELETE. A subnet that holds a NIC cannot be deleted,
// neither directly nor by a virtual network PUT that omits it.

const (
	TypeNetworkInterfaces  = "networkInterfaces"
	armTypeNetworkIface    = "Microsoft.Network/networkInterfaces"
	armTypeIPConfiguration = "Microsoft.Network/networkInterfaces/ipConfigurations"
	childIPConfigurations  = "ipConfigurations"
)

func decodeNIC(doc []byte) (*armnetwork.Interface, error) {
	return decodeStored(doc, "network interface", func(n *armnetwork.Interface) {
		if n.Properties == nil {
			n.Properties = &armnetwork.InterfacePropertiesFormat{}
		}
	})
}

// settleNIC: see settleDoc.
func settleNIC(n *armnetwork.Interface, _, etag string) {
	if settleState(etag, &n.Etag, &n.Properties.ProvisioningState) {
		return
	}
	for _, c := range n.Properties.IPConfigurations {
		if c.Properties != nil {
			c.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateSucceeded)
		}
	}
}

var nicKind = modelKind(TypeNetworkInterfaces, armTypeNetworkIface, decodeNIC, renderPlain,
	func(n *armnetwork.Interface) (*string, map[string]*string) { return n.Location, n.Tags })

type nicPut = topPut[armnetwork.Interface, *armnetwork.Interface]

// buildNIC makes the network interface a PUT stores: its IP
// configurations, each in an existing subnet, one of them primary.
func (s *Provider) buildNIC(p *nicPut) (*api.Response, error) {
	in, cur, id := &p.in, p.cur, p.id
	props := in.Properties
	if props == nil || len(props.IPConfigurations) == 0 {
		return nil, api.BadRequest("NetworkInterfaceMustHaveAtLeastOneIpConfiguration",
			"Network interface %s must have at least one IP configuration.", id)
	}
	etag := api.NewEtag()
	out := armnetwork.InterfacePropertiesFormat{
		EnableIPForwarding:          api.Ptr(props.EnableIPForwarding != nil && *props.EnableIPForwarding),
		EnableAcceleratedNetworking: api.Ptr(props.EnableAcceleratedNetworking != nil && *props.EnableAcceleratedNetworking),
		ProvisioningState:           api.Ptr(armnetwork.ProvisioningStateUpdating),
		ResourceGUID:                api.Ptr(uuid.NewString()),
		NicType:                     api.Ptr(armnetwork.NetworkInterfaceNicTypeStandard),
		VirtualMachine:              props.VirtualMachine,
	}
	if cur != nil {
		out.ResourceGUID = cur.Properties.ResourceGUID
		if out.VirtualMachine == nil {
			out.VirtualMachine = cur.Properties.VirtualMachine
		}
	}
	seen := api.InlineNames{}
	primaries := 0
	for i, c := range props.IPConfigurations {
		if c == nil {
			return nil, api.InvalidFormat("properties.ipConfigurations[%d] is null.", i)
		}
		name := api.Str(c.Name)
		if err := seen.Add(name, "Network interface %s has more than one IP configuration named %s.", p.t.Name); err != nil {
			return nil, err
		}
		oc, err := s.buildIPConfig(p.tx, id, name, i, c.Properties, etag)
		if err != nil {
			return nil, err
		}
		if *oc.Properties.Primary {
			primaries++
		}
		out.IPConfigurations = append(out.IPConfigurations, oc)
	}
	if primaries == 0 {
		out.IPConfigurations[0].Properties.Primary = api.Ptr(true)
	} else if primaries > 1 {
		return nil, api.BadRequest("OnlyOnePrimaryIpConfigurationAllowed", "Network interface %s has more than one primary IP configuration.", id)
	}
	if err := checkNICAddresses(p.tx, id, out.IPConfigurations); err != nil {
		return nil, err
	}
	nic := &armnetwork.Interface{
		ID: api.Ptr(id), Name: api.Ptr(armid.Name(id)), Type: api.Ptr(armTypeNetworkIface), Location: api.Ptr(p.loc),
		Tags: api.TagsOf(in.Tags), Etag: api.Ptr(etag), Properties: &out,
	}
	return p.Store(s, etag, nic)
}

// buildIPConfig checks one IP configuration: the subnet must exist and
// hold the static private IP.
func (s *Provider) buildIPConfig(tx *store.Txn, nicID, name string, i int, in *armnetwork.InterfaceIPConfigurationPropertiesFormat, etag string) (*armnetwork.InterfaceIPConfiguration, error) {
	field := fmt.Sprintf("properties.ipConfigurations[%d]", i)
	if in == nil || in.Subnet == nil || api.Str(in.Subnet.ID) == "" {
		return nil, api.BadRequest("IpConfigurationSubnetMissing", "%s (%s) of network interface %s has no subnet.", field, name, nicID)
	}
	subnetID := api.Str(in.Subnet.ID)
	sn, prefixes, err := lookupSubnet(tx, subnetID)
	if err != nil {
		return nil, err
	}
	if sn == nil {
		return nil, api.InvalidReference(subnetID, nicID)
	}
	method := armnetwork.IPAllocationMethodDynamic
	if in.PrivateIPAllocationMethod != nil {
		method = *in.PrivateIPAllocationMethod
	}
	out := &armnetwork.InterfaceIPConfiguration{
		ID: api.Ptr(api.ChildID(nicID, childIPConfigurations, name)), Name: api.Ptr(name), Type: api.Ptr(armTypeIPConfiguration), Etag: api.Ptr(etag),
		Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
			Subnet:                    &armnetwork.Subnet{ID: sn.ID},
			PrivateIPAllocationMethod: api.Ptr(method),
			Primary:                   api.Ptr(in.Primary != nil && *in.Primary),
			ProvisioningState:         api.Ptr(armnetwork.ProvisioningStateUpdating),
		},
	}
	ipText := api.Str(in.PrivateIPAddress)
	if ipText == "" {
		if method == armnetwork.IPAllocationMethodStatic {
			return nil, api.BadRequest("PrivateIPAddressIsRequired", "%s (%s): a static allocation needs privateIPAddress.", field, name)
		}
		// Dynamic: the fabric needs an address it can route on; Azure would
		// pick the next free one. Picking is left to the caller here.
		return nil, api.BadRequest("PrivateIPAddressIsRequired", "%s (%s): the routekeeper fabric needs privateIPAddress (it does not allocate dynamic addresses).", field, name)
	}
	ip, err := netip.ParseAddr(ipText)
	if err != nil {
		return nil, api.BadRequest("InvalidPrivateIPAddressFormat", "%s.privateIPAddress %q is not an IP address.", field, ipText)
	}
	in4 := false
	for _, p := range prefixes {
		if p.Contains(ip) {
			in4 = true
		}
	}
	if !in4 {
		return nil, api.BadRequest("PrivateIPAddressNotInSubnet", "Private static IP address %s does not belong to the range of subnet %s.", ip, subnetID)
	}
	version := armnetwork.IPVersionIPv4
	if ip.Is6() {
		version = armnetwork.IPVersionIPv6
	}
	out.Properties.PrivateIPAddress = api.Ptr(ip.String())
	out.Properties.PrivateIPAddressVersion = api.Ptr(version)
	return out, nil
}

// lookupSubnet finds a subnet by ID in its virtual network's document:
// nil when the network or the subnet does not exist.
func lookupSubnet(tx *store.Txn, subnetID string) (*armnetwork.Subnet, []netip.Prefix, error) {
	a, ok := api.ParseNetworkID(subnetID)
	if !ok || a.Type != api.TypeVirtualNetworks || a.Child != api.ChildSubnets {
		return nil, nil, api.BadRequest("InvalidResourceReference", "Resource %s is not a subnet ID.", subnetID)
	}
	row, err := tx.GetResource(api.Key(a.ParentID()))
	if err != nil || row == nil {
		return nil, nil, err
	}
	v, err := decodeVNet(row.Doc)
	if err != nil {
		return nil, nil, err
	}
	sn := findSubnet(v.Properties.Subnets, a.ChildName)
	if sn == nil {
		return nil, nil, nil
	}
	return sn, subnetPrefixes(sn), nil
}

// allNICs returns every network interface of a subscription.
func allNICs(tx *store.Txn, sub string) ([]*armnetwork.Interface, error) {
	rows, err := tx.ListResources(api.Key(sub), "", TypeNetworkInterfaces, "", 1<<30)
	if err != nil {
		return nil, err
	}
	out := make([]*armnetwork.Interface, 0, len(rows))
	for _, r := range rows {
		n, err := decodeNIC(r.Doc)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// checkNICAddresses refuses a private IP another NIC already holds in the
// same subnet (Azure's PrivateIPAddressInUse).
func checkNICAddresses(tx *store.Txn, nicID string, cfgs []*armnetwork.InterfaceIPConfiguration) error {
	a, _ := api.ParseTopID(nicID, TypeNetworkInterfaces)
	nics, err := allNICs(tx, a.Sub)
	if err != nil {
		return err
	}
	for _, n := range nics {
		if api.Key(api.Str(n.ID)) == api.Key(nicID) {
			continue
		}
		for _, oc := range n.Properties.IPConfigurations {
			for _, c := range cfgs {
				if oc.Properties == nil || oc.Properties.Subnet == nil {
					continue
				}
				if api.Key(api.Str(oc.Properties.Subnet.ID)) == api.Key(api.Str(c.Properties.Subnet.ID)) && api.Str(oc.Properties.PrivateIPAddress) == api.Str(c.Properties.PrivateIPAddress) {
					return api.BadRequest("PrivateIPAddressInUse", "IP configuration %s is using the private IP address %s which is already allocated to resource %s.",
						api.Str(c.ID), api.Str(c.Properties.PrivateIPAddress), api.Str(oc.ID))
				}
			}
		}
	}
	return nil
}

// checkSubnetsNotInUse refuses to delete subnets that hold an IP
// configuration of a NIC: Azure's InUseSubnetCannotBeDeleted. subnetIDs are
// the subnets about to go away (by a subnet DELETE or a virtual network PUT
// that omits them).
func checkSubnetsNotInUse(tx *store.Txn, sub string, subnetIDs []string) error {
	if len(subnetIDs) == 0 {
		return nil
	}
	gone := map[string]string{}
	for _, id := range subnetIDs {
		gone[api.Key(id)] = id
	}
	if err := checkSubnetsFreeOfGateways(tx, sub, gone); err != nil {
		return err
	}
	nics, err := allNICs(tx, sub)
	if err != nil {
		return err
	}
	for _, n := range nics {
		for _, c := range n.Properties.IPConfigurations {
			if c.Properties == nil || c.Properties.Subnet == nil {
				continue
			}
			if id, ok := gone[api.Key(api.Str(c.Properties.Subnet.ID))]; ok {
				return api.BadRequest("InUseSubnetCannotBeDeleted",
					"Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.",
					armid.Name(id), api.Str(c.ID))
			}
		}
	}
	return nil
}

// removedSubnets are the IDs of the subnets of cur that next no longer has.
func removedSubnets(cur, next []*armnetwork.Subnet) []string {
	var out []string
	for _, sn := range cur {
		if findSubnet(next, api.Str(sn.Name)) == nil {
			out = append(out, api.Str(sn.ID))
		}
	}
	return out
}

// checkVNetNotInUse refuses to delete a virtual network whose subnets hold
// NICs.
func checkVNetNotInUse(tx *store.Txn, row *store.ResourceRow) error {
	v, err := decodeVNet(row.Doc)
	if err != nil {
		return err
	}
	a, ok := api.ParseNetworkID(row.ID)
	if !ok {
		return nil
	}
	return checkSubnetsNotInUse(tx, a.Sub, removedSubnets(v.Properties.Subnets, nil))
}
