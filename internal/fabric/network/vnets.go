package network

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

func decodeVNet(doc []byte) (*armnetwork.VirtualNetwork, error) {
	return decodeStored(doc, "virtual network", func(v *armnetwork.VirtualNetwork) {
		if v.Properties == nil {
			v.Properties = &armnetwork.VirtualNetworkPropertiesFormat{}
		}
	})
}

// settleVNet: see settleDoc.
func settleVNet(v *armnetwork.VirtualNetwork, removeChild, etag string) {
	if settleState(etag, &v.Etag, &v.Properties.ProvisioningState) {
		return
	}
	settlePeerings(v, removeChild)
	subnets := v.Properties.Subnets[:0]
	for _, sn := range v.Properties.Subnets {
		if removeChild != "" && strings.EqualFold(api.Str(sn.Name), removeChild) {
			continue
		}
		sn.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateSucceeded)
		subnets = append(subnets, sn)
	}
	v.Properties.Subnets = subnets
}

// renderVNet is a virtual network as ARM returns it: with its peerings'
// states, which depend on the remote networks (peerings.go).
func renderVNet(tx *store.Txn, row *store.ResourceRow) (json.RawMessage, error) {
	return renderVNetDoc(tx, row.Doc)
}

// vnetAssociations derives the subnet → route table links a virtual
// network holds. A link to a table that no longer exists is dropped.
func vnetAssociations(tx *store.Txn, vnetKey string, v *armnetwork.VirtualNetwork) ([]store.Association, error) {
	var out []store.Association
	for _, sn := range v.Properties.Subnets {
		if sn.Properties == nil || sn.Properties.RouteTable == nil || api.Str(sn.Properties.RouteTable.ID) == "" {
			continue
		}
		tk := api.Key(api.Str(sn.Properties.RouteTable.ID))
		row, err := tx.GetResource(tk)
		if err != nil {
			return nil, err
		}
		if row == nil {
			continue
		}
		out = append(out, store.Association{SubnetKey: api.Key(api.Str(sn.ID)), SubnetID: api.Str(sn.ID), VNetKey: vnetKey, TableKey: tk})
	}
	return out, nil
}

var vnetKind = modelKind(api.TypeVirtualNetworks, api.ArmTypeVirtualNetwork, decodeVNet, renderVNet,
	func(v *armnetwork.VirtualNetwork) (*string, map[string]*string) { return v.Location, v.Tags })

type vnetPut = topPut[armnetwork.VirtualNetwork, *armnetwork.VirtualNetwork]

// buildVNet makes the virtual network a PUT stores, with its inline
// subnets; the peerings, child resources only, are kept.
func (s *Provider) buildVNet(p *vnetPut) (*api.Response, error) {
	in, cur, id, loc := &p.in, p.cur, p.id, p.loc
	props := in.Properties
	if props == nil {
		props = &armnetwork.VirtualNetworkPropertiesFormat{}
	}
	space, err := addressSpace(p.t.Name, props.AddressSpace)
	if err != nil {
		return nil, err
	}
	etag := api.NewEtag()
	out := *props                        // keep what the client set that the fabric does not model
	out.Subnets = []*armnetwork.Subnet{} // Azure lists none as []
	out.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)
	out.ResourceGUID = api.Ptr(uuid.NewString())
	out.FlowLogs = nil
	if out.EnableDdosProtection == nil {
		out.EnableDdosProtection = api.Ptr(false)
	}
	// Peerings are child resources: a PUT of the network keeps them.
	out.VirtualNetworkPeerings = keptPeerings(cur)
	out.AddressSpace = &armnetwork.AddressSpace{AddressPrefixes: toPtrs(space)}
	var curSubnets []*armnetwork.Subnet
	if cur != nil {
		out.ResourceGUID = cur.Properties.ResourceGUID
		curSubnets = cur.Properties.Subnets
	}
	seen := api.InlineNames{}
	for i, sn := range props.Subnets {
		if sn == nil {
			return nil, api.InvalidFormat("properties.subnets[%d] is null.", i)
		}
		name := api.Str(sn.Name)
		if err := seen.Add(name, "Virtual network %s has more than one subnet named %s.", p.t.Name); err != nil {
			return nil, err
		}
		ns, err := s.buildSubnet(p.tx, id, name, loc, sn.Properties, findSubnet(curSubnets, name), etag)
		if err != nil {
			return nil, err
		}
		out.Subnets = append(out.Subnets, ns)
	}
	if err := checkSubnets(p.t.Name, space, out.Subnets); err != nil {
		return nil, err
	}
	if err := checkSubnetsNotInUse(p.tx, p.rg.Sub, removedSubnets(curSubnets, out.Subnets)); err != nil {
		return nil, err
	}
	v := &armnetwork.VirtualNetwork{
		ID: api.Ptr(id), Name: api.Ptr(armid.Name(id)), Type: api.Ptr(api.ArmTypeVirtualNetwork), Location: api.Ptr(loc),
		Tags: api.TagsOf(in.Tags), ExtendedLocation: in.ExtendedLocation, Properties: &out,
	}
	if cur != nil && succeeded(cur.Properties.ProvisioningState) && api.SameContent(p.row.Doc, v) {
		return api.Unchanged(json.RawMessage(p.row.Doc), p.row.Etag), nil
	}
	v.Etag = api.Ptr(etag)
	return p.Store(s, etag, v)
}

func toPtrs(ps []netip.Prefix) []*string {
	out := make([]*string, len(ps))
	for i, p := range ps {
		out[i] = api.Ptr(p.String())
	}
	return out
}

// addressSpace validates a virtual network's address prefixes.
func addressSpace(vnet string, as *armnetwork.AddressSpace) ([]netip.Prefix, error) {
	if as == nil || len(as.AddressPrefixes) == 0 {
		return nil, api.BadRequest("AddressSpaceMustHaveAtLeastOnePrefix",
			"Virtual network %s must have at least one address prefix in properties.addressSpace.addressPrefixes.", vnet)
	}
	var out []netip.Prefix
	for _, s := range as.AddressPrefixes {
		p, err := parseCIDR(api.Str(s), "virtual network "+vnet)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Overlaps(p) {
				return nil, api.BadRequest("VnetAddressSpacesOverlap",
					"Cannot create or update virtual network %s because address prefixes %s and %s overlap.", vnet, o, p)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// parseCIDR validates one address prefix of a virtual network or subnet.
func parseCIDR(s, in string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	p, code, want := api.PrefixProblem(s)
	switch code {
	case "":
		return p, nil
	case "InvalidCIDRNotation":
		return p, api.BadRequest(code, "The address prefix %s in resource %s has an invalid CIDR notation. For the given prefix length, the address prefix should be %s.", s, in, want)
	}
	return p, api.BadRequest(code, "The address prefix %q of %s is not a valid CIDR prefix.", s, in)
}

func findSubnet(subnets []*armnetwork.Subnet, name string) *armnetwork.Subnet {
	for _, sn := range subnets {
		if strings.EqualFold(api.Str(sn.Name), name) {
			return sn
		}
	}
	return nil
}

// subnetPrefixes are the parsed prefixes of a built subnet.
func subnetPrefixes(sn *armnetwork.Subnet) []netip.Prefix {
	var out []netip.Prefix
	add := func(s *string) {
		if p, err := netip.ParsePrefix(api.Str(s)); err == nil {
			out = append(out, p)
		}
	}
	if sn.Properties == nil {
		return nil
	}
	if len(sn.Properties.AddressPrefixes) > 0 {
		for _, s := range sn.Properties.AddressPrefixes {
			add(s)
		}
	} else {
		add(sn.Properties.AddressPrefix)
	}
	return out
}

// buildSubnet validates a subnet as a client sent it and returns it as the
// virtual network will hold it. The route table association is resolved
// here: the table must exist, in the same subscription and location.
func (s *Provider) buildSubnet(tx *store.Txn, vnetID, name, loc string, in *armnetwork.SubnetPropertiesFormat, prev *armnetwork.Subnet, etag string) (*armnetwork.Subnet, error) {
	if prev != nil {
		name = api.Str(prev.Name)
	}
	id := api.ChildID(vnetID, api.ChildSubnets, name)
	p := armnetwork.SubnetPropertiesFormat{}
	if in != nil {
		p = *in
	}
	// Read-only properties are the service's, whatever the client sent.
	p.IPConfigurations, p.IPConfigurationProfiles, p.PrivateEndpoints = nil, nil, nil
	p.ResourceNavigationLinks, p.ServiceAssociationLinks, p.Purpose = nil, nil, nil
	p.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateUpdating)

	var raw []string
	if len(p.AddressPrefixes) > 0 {
		for _, s := range p.AddressPrefixes {
			raw = append(raw, api.Str(s))
		}
	} else if api.Str(p.AddressPrefix) != "" {
		raw = append(raw, api.Str(p.AddressPrefix))
	}
	if len(raw) == 0 {
		return nil, api.BadRequest("NoAddressPrefixOrPoolProvided", "Subnet %s has neither an addressPrefix nor addressPrefixes.", name)
	}
	var prefixes []string
	for _, r := range raw {
		pf, err := parseCIDR(r, id)
		if err != nil {
			return nil, err
		}
		if pf.Addr().Is4() && pf.Bits() > 29 {
			return nil, api.BadRequest("NetcfgInvalidSubnet",
				"Subnet '%s' is not valid: the smallest IPv4 subnet Azure supports is /29, and %s is smaller.", name, pf)
		}
		prefixes = append(prefixes, pf.String())
	}
	if len(p.AddressPrefixes) > 0 {
		p.AddressPrefixes = make([]*string, len(prefixes))
		for i := range prefixes {
			p.AddressPrefixes[i] = api.Ptr(prefixes[i])
		}
		p.AddressPrefix = nil
	} else {
		p.AddressPrefix = api.Ptr(prefixes[0])
	}

	if p.RouteTable != nil {
		ref := strings.TrimSpace(api.Str(p.RouteTable.ID))
		if ref == "" {
			p.RouteTable = nil
		} else {
			tableID, err := resolveTable(tx, ref, vnetID, id, loc)
			if err != nil {
				return nil, err
			}
			p.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(tableID)}
		}
	}
	if p.NetworkSecurityGroup != nil {
		nsg, err := s.resolveNSG(tx, api.Str(p.NetworkSecurityGroup.ID), vnetID, id, loc)
		if err != nil {
			return nil, err
		}
		p.NetworkSecurityGroup = nsg
	}
	if p.NatGateway != nil { // natgateways.go
		ref := strings.TrimSpace(api.Str(p.NatGateway.ID))
		if ref == "" {
			p.NatGateway = nil
		} else {
			natID, err := resolveNatGateway(tx, ref, vnetID, id, loc)
			if err != nil {
				return nil, err
			}
			p.NatGateway = &armnetwork.SubResource{ID: api.Ptr(natID)}
		}
	}
	if p.Delegations == nil {
		p.Delegations = []*armnetwork.Delegation{} // Azure lists none as []
	}
	if p.PrivateEndpointNetworkPolicies == nil {
		p.PrivateEndpointNetworkPolicies = api.Ptr(armnetwork.VirtualNetworkPrivateEndpointNetworkPoliciesDisabled)
	}
	if p.PrivateLinkServiceNetworkPolicies == nil {
		p.PrivateLinkServiceNetworkPolicies = api.Ptr(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled)
	}
	out := &armnetwork.Subnet{ID: api.Ptr(id), Name: api.Ptr(name), Type: api.Ptr(api.ArmTypeSubnet), Etag: api.Ptr(etag), Properties: &p}
	if prev != nil && prev.Properties != nil && sameSubnet(prev, out) {
		out.Etag = prev.Etag
	}
	return out, nil
}

// sameSubnet compares two subnets apart from their etag and state.
func sameSubnet(a, b *armnetwork.Subnet) bool {
	strip := func(sn *armnetwork.Subnet) string {
		c := *sn
		p := *sn.Properties
		p.ProvisioningState = nil
		c.Properties, c.Etag = &p, nil
		b, _ := json.Marshal(&c)
		return string(b)
	}
	return strip(a) == strip(b)
}

// resolveTable checks a subnet's routeTable.id: a well-formed route table
// ID (LinkedInvalidPropertyId), of a table that exists in the virtual
// network's subscription and location (InvalidResourceReference).
func resolveTable(tx *store.Txn, ref, vnetID, subnetID, loc string) (string, error) {
	a, ok := api.ParseNetworkID(ref)
	if !ok || a.Type != api.TypeRouteTables || a.Child != "" {
		return "", api.BadRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.routeTable.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	v, _ := api.ParseNetworkID(vnetID)
	if !strings.EqualFold(a.Sub, v.Sub) {
		return "", api.InvalidReference(ref, subnetID)
	}
	row, err := tx.GetResource(api.Key(api.ResourceID(a.Sub, a.RG, api.TypeRouteTables, a.Name)))
	if err != nil {
		return "", err
	}
	if row == nil {
		return "", api.InvalidReference(ref, subnetID)
	}
	t, err := DecodeTable(row.Doc)
	if err != nil {
		return "", err
	}
	if t.Location != loc {
		return "", api.InvalidReference(ref, subnetID)
	}
	return row.ID, nil
}

// checkSubnets applies the rules between a virtual network and its
// subnets: every subnet inside the address space, no two overlapping.
func checkSubnets(vnet string, space []netip.Prefix, subnets []*armnetwork.Subnet) error {
	type named struct {
		name string
		p    netip.Prefix
	}
	var all []named
	for _, sn := range subnets {
		for _, p := range subnetPrefixes(sn) {
			inside := false
			for _, sp := range space {
				if sp.Bits() <= p.Bits() && sp.Contains(p.Addr()) {
					inside = true
					break
				}
			}
			if !inside {
				return api.BadRequest("NetcfgSubnetRangeOutsideVnet",
					"Subnet '%s' is not valid because its IP address range is outside the IP address range of virtual network '%s'.", api.Str(sn.Name), vnet)
			}
			for _, o := range all {
				if o.p.Overlaps(p) {
					return api.BadRequest("NetcfgSubnetRangesOverlap",
						"Subnet '%s' is not valid because its IP address range overlaps with that of an existing subnet '%s' in virtual network '%s'.",
						api.Str(sn.Name), o.name, vnet)
				}
			}
			all = append(all, named{api.Str(sn.Name), p})
		}
	}
	return nil
}

// --- subnets as child resources ---

// vnetParent is the virtual network as the parent of its subnets and
// peerings.
var vnetParent = parentKind[*armnetwork.VirtualNetwork]{
	typ: api.TypeVirtualNetworks, armType: api.ArmTypeVirtualNetwork, decode: decodeVNet,
	location:  func(v *armnetwork.VirtualNetwork) string { return api.Str(v.Location) },
	succeeded: func(v *armnetwork.VirtualNetwork) bool { return succeeded(v.Properties.ProvisioningState) },
	updating: func(v *armnetwork.VirtualNetwork, etag string) {
		v.Etag, v.Properties.ProvisioningState = api.Ptr(etag), api.Ptr(armnetwork.ProvisioningStateUpdating)
	},
}

var subnetKind = childKind[*armnetwork.VirtualNetwork, *armnetwork.Subnet]{
	parent: &vnetParent, child: api.ChildSubnets,
	items:   func(v *armnetwork.VirtualNetwork) *[]*armnetwork.Subnet { return &v.Properties.Subnets },
	name:    func(sn *armnetwork.Subnet) string { return api.Str(sn.Name) },
	id:      func(sn *armnetwork.Subnet) string { return api.Str(sn.ID) },
	etag:    func(sn *armnetwork.Subnet) string { return api.Str(sn.Etag) },
	setEtag: func(sn *armnetwork.Subnet, etag string) { sn.Etag = api.Ptr(etag) },
	deleting: func(sn *armnetwork.Subnet) {
		sn.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
	},
}

type subnetPut = childPut[armnetwork.Subnet, *armnetwork.VirtualNetwork, *armnetwork.Subnet]

func (s *Provider) putSubnet(ctx context.Context, q *api.Request) (*api.Response, error) {
	return s.put(ctx, q, &subnetPut{
		kind: &subnetKind, body: api.DecodeModel,
		build: func(p *subnetPut) (*armnetwork.Subnet, error) {
			return s.buildSubnet(p.tx, p.row.ID, p.t.ChildName, api.Str(p.parent.Location), p.in.Properties, p.prev, p.etag)
		},
		same: sameSubnet,
		check: func(p *subnetPut, subnets []*armnetwork.Subnet) error {
			var space []netip.Prefix
			if as := p.parent.Properties.AddressSpace; as != nil {
				for _, a := range as.AddressPrefixes {
					if pf, err := netip.ParsePrefix(api.Str(a)); err == nil {
						space = append(space, pf)
					}
				}
			}
			return checkSubnets(api.Str(p.parent.Name), space, subnets)
		},
	})
}

// checkSubnetNotInUse refuses to delete a subnet that holds a NIC's or a
// gateway's IP configuration.
func checkSubnetNotInUse(tx *store.Txn, rg *store.RGRow, sn *armnetwork.Subnet) error {
	return checkSubnetsNotInUse(tx, rg.Sub, []string{api.Str(sn.ID)})
}

func succeeded(p *armnetwork.ProvisioningState) bool {
	return p != nil && *p == armnetwork.ProvisioningStateSucceeded
}
