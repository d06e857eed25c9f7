package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"
)

func decodeVNet(doc []byte) (*armnetwork.VirtualNetwork, error) {
	var v armnetwork.VirtualNetwork
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("decoding stored virtual network: %w", err)
	}
	if v.Properties == nil {
		v.Properties = &armnetwork.VirtualNetworkPropertiesFormat{}
	}
	return &v, nil
}

// settleVNet: see settleDoc.
func settleVNet(v *armnetwork.VirtualNetwork, removeChild, etag string) {
	if etag != "" {
		v.Etag = ptr(etag)
		v.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateFailed)
		return
	}
	v.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateSucceeded)
	settlePeerings(v, removeChild)
	subnets := v.Properties.Subnets[:0]
	for _, sn := range v.Properties.Subnets {
		if removeChild != "" && strings.EqualFold(str(sn.Name), removeChild) {
			continue
		}
		sn.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateSucceeded)
		subnets = append(subnets, sn)
	}
	v.Properties.Subnets = subnets
}

// renderVNet is a virtual network as ARM returns it: with its peerings'
// states, which depend on the remote networks (peerings.go).
func renderVNet(tx *txn, row *resourceRow) (json.RawMessage, error) {
	return renderVNetDoc(tx, row.Doc)
}

// vnetAssociations derives the subnet → route table links a virtual
// network holds. A link to a table that no longer exists is dropped.
func vnetAssociations(tx *txn, vnetKey string, v *armnetwork.VirtualNetwork) ([]association, error) {
	var out []association
	for _, sn := range v.Properties.Subnets {
		if sn.Properties == nil || sn.Properties.RouteTable == nil || str(sn.Properties.RouteTable.ID) == "" {
			continue
		}
		tk := key(str(sn.Properties.RouteTable.ID))
		row, err := tx.getResource(tk)
		if err != nil {
			return nil, err
		}
		if row == nil {
			continue
		}
		out = append(out, association{SubnetKey: key(str(sn.ID)), SubnetID: str(sn.ID), VNetKey: vnetKey, TableKey: tk})
	}
	return out, nil
}

func (s *Server) listVirtualNetworks(ctx context.Context, q *request) (*response, error) {
	return s.listTop(ctx, q, typeVirtualNetworks, renderVNet)
}

func (s *Server) getVirtualNetwork(ctx context.Context, q *request) (*response, error) {
	var resp *response
	err := s.readTop(ctx, q, typeVirtualNetworks, armTypeVirtualNetwork, func(tx *txn, row *resourceRow) error {
		doc, err := renderVNet(tx, row)
		resp = &response{status: http.StatusOK, body: doc, header: withEtag(row.Etag)}
		return err
	})
	return resp, err
}

func (s *Server) patchVirtualNetwork(ctx context.Context, q *request) (*response, error) {
	return s.patchTags(ctx, q, typeVirtualNetworks, armTypeVirtualNetwork, renderVNet)
}

func (s *Server) deleteVirtualNetwork(ctx context.Context, q *request) (*response, error) {
	return s.deleteTop(ctx, q, typeVirtualNetworks, checkVNetNotInUse)
}

func (s *Server) putVirtualNetwork(ctx context.Context, q *request) (*response, error) {
	var in armnetwork.VirtualNetwork
	if err := decodeModel(q.body, &in); err != nil {
		return nil, err
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	t := q.target()
	if !validName(t.name) {
		return nil, errInvalidName(t.name)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeVirtualNetworks, func(tx *txn, rg *rgRow, row, fresh *resourceRow) error {
		id, curEtag := fresh.ID, ""
		var cur *armnetwork.VirtualNetwork
		if row != nil {
			var err error
			if cur, err = decodeVNet(row.Doc); err != nil {
				return err
			}
			id, curEtag = row.ID, row.Etag
		}
		if err := checkPreconditions(q, id, row != nil, curEtag); err != nil {
			return err
		}
		curLoc := ""
		if cur != nil {
			curLoc = str(cur.Location)
		}
		loc, err := locationOf(in.Location, curLoc, t.name, rg.Name)
		if err != nil {
			return err
		}
		props := in.Properties
		if props == nil {
			props = &armnetwork.VirtualNetworkPropertiesFormat{}
		}
		space, err := addressSpace(t.name, props.AddressSpace)
		if err != nil {
			return err
		}
		etag := newEtag()
		out := *props                        // keep what the client set that the fabric does not model
		out.Subnets = []*armnetwork.Subnet{} // Azure lists none as []
		out.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)
		out.ResourceGUID = ptr(uuid.NewString())
		out.FlowLogs = nil
		if out.EnableDdosProtection == nil {
			out.EnableDdosProtection = ptr(false)
		}
		// Peerings are child resources: a PUT of the network keeps them.
		out.VirtualNetworkPeerings = keptPeerings(cur)
		out.AddressSpace = &armnetwork.AddressSpace{AddressPrefixes: toPtrs(space)}
		var curSubnets []*armnetwork.Subnet
		if cur != nil {
			out.ResourceGUID = cur.Properties.ResourceGUID
			curSubnets = cur.Properties.Subnets
		}
		seen := map[string]bool{}
		for i, sn := range props.Subnets {
			if sn == nil {
				return errInvalidFormat("properties.subnets[%d] is null.", i)
			}
			name := str(sn.Name)
			if !validName(name) {
				return errInvalidName(name)
			}
			if seen[key(name)] {
				return badRequest("DuplicateResourceName", "Virtual network %s has more than one subnet named %s.", t.name, name)
			}
			seen[key(name)] = true
			ns, err := s.buildSubnet(tx, id, name, loc, sn.Properties, findSubnet(curSubnets, name), etag)
			if err != nil {
				return err
			}
			out.Subnets = append(out.Subnets, ns)
		}
		if err := checkSubnets(t.name, space, out.Subnets); err != nil {
			return err
		}
		if err := checkSubnetsNotInUse(tx, rg.Sub, removedSubnets(curSubnets, out.Subnets)); err != nil {
			return err
		}
		if cur != nil && succeeded(cur.Properties.ProvisioningState) {
			same := &armnetwork.VirtualNetwork{
				ID: ptr(id), Name: ptr(nameOf(id)), Type: ptr(armTypeVirtualNetwork), Location: ptr(loc),
				Tags: tagsOf(in.Tags), ExtendedLocation: in.ExtendedLocation, Properties: &out,
			}
			if sameContent(row.Doc, same) {
				resp = unchanged(json.RawMessage(row.Doc), row.Etag)
				return nil
			}
		}
		v := &armnetwork.VirtualNetwork{
			ID: ptr(id), Name: ptr(nameOf(id)), Type: ptr(armTypeVirtualNetwork), Location: ptr(loc),
			Tags: tagsOf(in.Tags), Etag: ptr(etag), ExtendedLocation: in.ExtendedLocation, Properties: &out,
		}
		resp, err = s.storeTopPut(tx, q, rg, row, fresh, id, loc, etag, v)
		return err
	})
	return resp, err
}

func toPtrs(ps []netip.Prefix) []*string {
	out := make([]*string, len(ps))
	for i, p := range ps {
		out[i] = ptr(p.String())
	}
	return out
}

// addressSpace validates a virtual network's address prefixes.
func addressSpace(vnet string, as *armnetwork.AddressSpace) ([]netip.Prefix, error) {
	if as == nil || len(as.AddressPrefixes) == 0 {
		return nil, badRequest("AddressSpaceMustHaveAtLeastOnePrefix",
			"Virtual network %s must have at least one address prefix in properties.addressSpace.addressPrefixes.", vnet)
	}
	var out []netip.Prefix
	for _, s := range as.AddressPrefixes {
		p, err := parseCIDR(str(s), "virtual network "+vnet)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Overlaps(p) {
				return nil, badRequest("VnetAddressSpacesOverlap",
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
	p, code, want := prefixProblem(s)
	switch code {
	case "":
		return p, nil
	case "InvalidCIDRNotation":
		return p, badRequest(code, "The address prefix %s in resource %s has an invalid CIDR notation. For the given prefix length, the address prefix should be %s.", s, in, want)
	}
	return p, badRequest(code, "The address prefix %q of %s is not a valid CIDR prefix.", s, in)
}

func findSubnet(subnets []*armnetwork.Subnet, name string) *armnetwork.Subnet {
	for _, sn := range subnets {
		if strings.EqualFold(str(sn.Name), name) {
			return sn
		}
	}
	return nil
}

// subnetPrefixes are the parsed prefixes of a built subnet.
func subnetPrefixes(sn *armnetwork.Subnet) []netip.Prefix {
	var out []netip.Prefix
	add := func(s *string) {
		if p, err := netip.ParsePrefix(str(s)); err == nil {
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
func (s *Server) buildSubnet(tx *txn, vnetID, name, loc string, in *armnetwork.SubnetPropertiesFormat, prev *armnetwork.Subnet, etag string) (*armnetwork.Subnet, error) {
	if prev != nil {
		name = str(prev.Name)
	}
	id := childID(vnetID, childSubnets, name)
	p := armnetwork.SubnetPropertiesFormat{}
	if in != nil {
		p = *in
	}
	// Read-only properties are the service's, whatever the client sent.
	p.IPConfigurations, p.IPConfigurationProfiles, p.PrivateEndpoints = nil, nil, nil
	p.ResourceNavigationLinks, p.ServiceAssociationLinks, p.Purpose = nil, nil, nil
	p.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)

	var raw []string
	if len(p.AddressPrefixes) > 0 {
		for _, s := range p.AddressPrefixes {
			raw = append(raw, str(s))
		}
	} else if str(p.AddressPrefix) != "" {
		raw = append(raw, str(p.AddressPrefix))
	}
	if len(raw) == 0 {
		return nil, badRequest("NoAddressPrefixOrPoolProvided", "Subnet %s has neither an addressPrefix nor addressPrefixes.", name)
	}
	var prefixes []string
	for _, r := range raw {
		pf, err := parseCIDR(r, id)
		if err != nil {
			return nil, err
		}
		if pf.Addr().Is4() && pf.Bits() > 29 {
			return nil, badRequest("NetcfgInvalidSubnet",
				"Subnet '%s' is not valid: the smallest IPv4 subnet Azure supports is /29, and %s is smaller.", name, pf)
		}
		prefixes = append(prefixes, pf.String())
	}
	if len(p.AddressPrefixes) > 0 {
		p.AddressPrefixes = make([]*string, len(prefixes))
		for i := range prefixes {
			p.AddressPrefixes[i] = ptr(prefixes[i])
		}
		p.AddressPrefix = nil
	} else {
		p.AddressPrefix = ptr(prefixes[0])
	}

	if p.RouteTable != nil {
		ref := strings.TrimSpace(str(p.RouteTable.ID))
		if ref == "" {
			p.RouteTable = nil
		} else {
			tableID, err := resolveTable(tx, ref, vnetID, id, loc)
			if err != nil {
				return nil, err
			}
			p.RouteTable = &armnetwork.RouteTable{ID: ptr(tableID)}
		}
	}
	if p.NetworkSecurityGroup != nil {
		nsg, err := s.resolveNSG(tx, str(p.NetworkSecurityGroup.ID), vnetID, id, loc)
		if err != nil {
			return nil, err
		}
		p.NetworkSecurityGroup = nsg
	}
	if p.NatGateway != nil { // natgateways.go
		ref := strings.TrimSpace(str(p.NatGateway.ID))
		if ref == "" {
			p.NatGateway = nil
		} else {
			natID, err := resolveNatGateway(tx, ref, vnetID, id, loc)
			if err != nil {
				return nil, err
			}
			p.NatGateway = &armnetwork.SubResource{ID: ptr(natID)}
		}
	}
	if p.Delegations == nil {
		p.Delegations = []*armnetwork.Delegation{} // Azure lists none as []
	}
	if p.PrivateEndpointNetworkPolicies == nil {
		p.PrivateEndpointNetworkPolicies = ptr(armnetwork.VirtualNetworkPrivateEndpointNetworkPoliciesDisabled)
	}
	if p.PrivateLinkServiceNetworkPolicies == nil {
		p.PrivateLinkServiceNetworkPolicies = ptr(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled)
	}
	out := &armnetwork.Subnet{ID: ptr(id), Name: ptr(name), Type: ptr(armTypeSubnet), Etag: ptr(etag), Properties: &p}
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
func resolveTable(tx *txn, ref, vnetID, subnetID, loc string) (string, error) {
	a, ok := parseNetworkID(ref)
	if !ok || a.Type != typeRouteTables || a.Child != "" {
		return "", badRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.routeTable.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	v, _ := parseNetworkID(vnetID)
	if !strings.EqualFold(a.Sub, v.Sub) {
		return "", errInvalidReference(ref, subnetID)
	}
	row, err := tx.getResource(key(resourceID(a.Sub, a.RG, typeRouteTables, a.Name)))
	if err != nil {
		return "", err
	}
	if row == nil {
		return "", errInvalidReference(ref, subnetID)
	}
	t, err := decodeTable(row.Doc)
	if err != nil {
		return "", err
	}
	if t.Location != loc {
		return "", errInvalidReference(ref, subnetID)
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
				return badRequest("NetcfgSubnetRangeOutsideVnet",
					"Subnet '%s' is not valid because its IP address range is outside the IP address range of virtual network '%s'.", str(sn.Name), vnet)
			}
			for _, o := range all {
				if o.p.Overlaps(p) {
					return badRequest("NetcfgSubnetRangesOverlap",
						"Subnet '%s' is not valid because its IP address range overlaps with that of an existing subnet '%s' in virtual network '%s'.",
						str(sn.Name), o.name, vnet)
				}
			}
			all = append(all, named{str(sn.Name), p})
		}
	}
	return nil
}

// --- subnets as child resources ---

func (s *Server) listSubnets(ctx context.Context, q *request) (*response, error) {
	var items []json.RawMessage
	err := s.readTop(ctx, q, typeVirtualNetworks, armTypeVirtualNetwork, func(tx *txn, row *resourceRow) error {
		v, err := decodeVNet(row.Doc)
		if err != nil {
			return err
		}
		for _, sn := range v.Properties.Subnets {
			b, err := encode(sn)
			if err != nil {
				return err
			}
			items = append(items, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &response{status: http.StatusOK, body: s.pageChildren(q, items)}, nil
}

func (s *Server) getSubnet(ctx context.Context, q *request) (*response, error) {
	var resp *response
	tg := q.target()
	err := s.readTop(ctx, q, typeVirtualNetworks, armTypeVirtualNetwork, func(tx *txn, row *resourceRow) error {
		v, err := decodeVNet(row.Doc)
		if err != nil {
			return err
		}
		sn := findSubnet(v.Properties.Subnets, tg.childName)
		if sn == nil {
			return errChildNotFound(typeVirtualNetworks, tg.name, childSubnets, tg.childName, tg.rg)
		}
		resp = &response{status: http.StatusOK, body: sn, header: withEtag(str(sn.Etag))}
		return nil
	})
	return resp, err
}

func (s *Server) putSubnet(ctx context.Context, q *request) (*response, error) {
	var in armnetwork.Subnet
	if err := decodeModel(q.body, &in); err != nil {
		return nil, err
	}
	tg := q.target()
	if !validName(tg.childName) {
		return nil, errInvalidName(tg.childName)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeVirtualNetworks, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeVirtualNetwork, tg.name, tg.rg)
		}
		v, err := decodeVNet(row.Doc)
		if err != nil {
			return err
		}
		prev := findSubnet(v.Properties.Subnets, tg.childName)
		subnetID := childID(row.ID, childSubnets, tg.childName)
		var prevTag string
		if prev != nil {
			subnetID, prevTag = str(prev.ID), str(prev.Etag)
		}
		if err := checkPreconditions(q, subnetID, prev != nil, prevTag); err != nil {
			return err
		}
		etag := newEtag()
		ns, err := s.buildSubnet(tx, row.ID, tg.childName, str(v.Location), in.Properties, prev, etag)
		if err != nil {
			return err
		}
		if prev != nil && succeeded(v.Properties.ProvisioningState) && sameSubnet(prev, ns) {
			resp = unchanged(prev, str(prev.Etag))
			return nil
		}
		ns.Etag = ptr(etag)
		subnets := make([]*armnetwork.Subnet, 0, len(v.Properties.Subnets)+1)
		replaced := false
		for _, sn := range v.Properties.Subnets {
			if strings.EqualFold(str(sn.Name), tg.childName) {
				subnets = append(subnets, ns)
				replaced = true
				continue
			}
			subnets = append(subnets, sn)
		}
		if !replaced {
			subnets = append(subnets, ns)
		}
		var space []netip.Prefix
		if v.Properties.AddressSpace != nil {
			for _, p := range v.Properties.AddressSpace.AddressPrefixes {
				if pf, err := netip.ParsePrefix(str(p)); err == nil {
					space = append(space, pf)
				}
			}
		}
		if err := checkSubnets(str(v.Name), space, subnets); err != nil {
			return err
		}
		prevDoc := row.Doc
		v.Properties.Subnets = subnets
		v.Etag = ptr(etag)
		v.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)
		doc, err := encode(v)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		resp, err = s.acceptPut(tx, q, s.newOp(opPut, rg.Sub, str(v.Location), row.Key, row.ID, "", prevDoc), prev == nil, etag, ns)
		return err
	})
	return resp, err
}

func (s *Server) deleteSubnet(ctx context.Context, q *request) (*response, error) {
	tg := q.target()
	var resp *response
	err := s.writeTop(ctx, q, typeVirtualNetworks, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeVirtualNetwork, tg.name, tg.rg)
		}
		v, err := decodeVNet(row.Doc)
		if err != nil {
			return err
		}
		sn := findSubnet(v.Properties.Subnets, tg.childName)
		var tag string
		if sn != nil {
			tag = str(sn.Etag)
		}
		if err := checkPreconditions(q, childID(row.ID, childSubnets, tg.childName), sn != nil, tag); err != nil {
			return err
		}
		if sn == nil {
			resp = &response{status: http.StatusNoContent}
			return nil
		}
		if err := checkSubnetsNotInUse(tx, rg.Sub, []string{str(sn.ID)}); err != nil {
			return err
		}
		prevDoc := row.Doc
		etag := newEtag()
		sn.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateDeleting)
		v.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)
		v.Etag = ptr(etag)
		doc, err := encode(v)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		o := s.newOp(opChildDelete, rg.Sub, str(v.Location), row.Key, row.ID, str(sn.Name), prevDoc)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &response{status: http.StatusAccepted, header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}

func succeeded(p *armnetwork.ProvisioningState) bool {
	return p != nil && *p == armnetwork.ProvisioningStateSucceeded
}
