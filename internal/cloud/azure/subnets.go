package azure

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// GetSubnet reads a subnet: its prefixes, its route table and its etag.
func (c *Client) GetSubnet(ctx context.Context, id string) (*observe.Subnet, error) {
	s, _, err := c.getSubnet(ctx, id)
	return s, err
}

func (c *Client) getSubnet(ctx context.Context, id string) (*observe.Subnet, *armnetwork.Subnet, error) {
	ref, sc, err := c.resolve(id, armid.Subnet)
	if err != nil {
		return nil, nil, err
	}
	resp, err := sc.subnets.Get(ctx, ref.group, ref.vnet, ref.name, nil)
	if err != nil {
		return nil, nil, classify("reading subnet "+id, id, err)
	}
	c.mu.Lock()
	if c.subnets == nil {
		c.subnets = map[string]*armnetwork.Subnet{}
	}
	kept := resp.Subnet
	c.subnets[armid.Key(id)] = &kept
	c.mu.Unlock()
	return subnetFromARM(&resp.Subnet), &resp.Subnet, nil
}

// subnetWriteFailed returns err, the error of a write of subnet id, after
// forgetting the body kept from a read of it when the write's outcome is
// unknown: the next write of the subnet must follow a fresh read.
func (c *Client) subnetWriteFailed(id string, err error) error {
	if errors.Is(err, armerr.ErrOutcomeUnknown) {
		c.mu.Lock()
		delete(c.subnets, armid.Key(id))
		c.mu.Unlock()
	}
	return err
}

// takeSubnet returns (and forgets) the subnet's body as last read when it
// is the version etag.
func (c *Client) takeSubnet(id, etag string) *armnetwork.Subnet {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.subnets[armid.Key(id)]
	if s == nil || etag == "" || s.Etag == nil || *s.Etag != etag {
		return nil
	}
	delete(c.subnets, armid.Key(id))
	return s
}

// SetSubnetRouteTable associates the subnet with routeTableID ("" removes
// the association). etag is the subnet version the caller decided on. When
// this client's last read of the subnet was that version, its body is sent
// back as read, with If-Match: a newer version makes ARM answer 412
// (armerr.ErrPreconditionFailed) and nothing is written. Otherwise the
// subnet is read again, and if it changed since, armerr.ErrPreconditionFailed
// is returned without a write. The PUT carries every other property of the
// subnet as read, so nothing else on the subnet changes. A write whose
// answer was lost returns a *armerr.OutcomeUnknownError and leaves no body
// kept: the next one reads the subnet first.
func (c *Client) SetSubnetRouteTable(ctx context.Context, subnetID, routeTableID, etag string) (*observe.Subnet, error) {
	raw := c.takeSubnet(subnetID, etag)
	curEtag := etag
	if raw == nil {
		cur, r, err := c.getSubnet(ctx, subnetID)
		if err != nil {
			return nil, err
		}
		c.takeSubnet(subnetID, cur.Etag) // used now: not kept
		if etag != "" && cur.Etag != etag {
			return nil, fmt.Errorf("subnet %s changed since it was read (etag %s, now %s): %w", subnetID, etag, cur.Etag, armerr.ErrPreconditionFailed)
		}
		raw, curEtag = r, cur.Etag
	}
	ref, sc, err := c.resolve(subnetID, armid.Subnet)
	if err != nil {
		return nil, err
	}
	if raw.Properties == nil {
		raw.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	if routeTableID == "" {
		raw.Properties.RouteTable = nil
	} else {
		raw.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(routeTableID)}
	}
	poller, err := sc.subnets.BeginCreateOrUpdate(withIfMatch(ctx, curEtag), ref.group, ref.vnet, ref.name, *raw, nil)
	if err != nil {
		return nil, c.subnetWriteFailed(subnetID, classifyWrite("writing subnet "+subnetID, subnetID, err))
	}
	resp, err := pollUntilDone(ctx, c, "the write of subnet "+subnetID, poller)
	if err != nil {
		return nil, c.subnetWriteFailed(subnetID, classifyPoll("waiting for the write of subnet "+subnetID, subnetID, err))
	}
	return subnetFromARM(&resp.Subnet), nil
}

// VirtualNetwork is observe.VirtualNetwork (kept under this name for the
// adapter's callers and tests).
type VirtualNetwork = observe.VirtualNetwork

// GetVirtualNetwork reads a virtual network with its inline subnets.
func (c *Client) GetVirtualNetwork(ctx context.Context, id string) (*VirtualNetwork, error) {
	ref, sc, err := c.resolve(id, armid.VirtualNetwork)
	if err != nil {
		return nil, err
	}
	resp, err := sc.vnets.Get(ctx, ref.group, ref.name, nil)
	if err != nil {
		return nil, classify("reading virtual network "+id, id, err)
	}
	v := &VirtualNetwork{ID: str(resp.ID), Name: str(resp.Name), Location: str(resp.Location)}
	if p := resp.Properties; p != nil {
		if p.AddressSpace != nil {
			for _, a := range p.AddressSpace.AddressPrefixes {
				v.AddressPrefixes = append(v.AddressPrefixes, str(a))
			}
		}
		for _, s := range p.Subnets {
			if s != nil {
				v.Subnets = append(v.Subnets, *subnetFromARM(s))
			}
		}
		for _, pr := range p.VirtualNetworkPeerings {
			if pr != nil {
				v.Peerings = append(v.Peerings, peeringFromARM(pr))
			}
		}
	}
	return v, nil
}

func subnetFromARM(s *armnetwork.Subnet) *observe.Subnet {
	out := &observe.Subnet{ID: str(s.ID), Name: str(s.Name), Etag: str(s.Etag)}
	if p := s.Properties; p != nil {
		if p.AddressPrefix != nil {
			out.AddressPrefixes = append(out.AddressPrefixes, *p.AddressPrefix)
		}
		for _, a := range p.AddressPrefixes {
			if a != nil && (p.AddressPrefix == nil || *a != *p.AddressPrefix) {
				out.AddressPrefixes = append(out.AddressPrefixes, *a)
			}
		}
		if p.RouteTable != nil && p.RouteTable.ID != nil {
			out.RouteTableID = *p.RouteTable.ID
		}
		if p.NetworkSecurityGroup != nil {
			out.NetworkSecurityGroupID = str(p.NetworkSecurityGroup.ID)
		}
		if p.NatGateway != nil {
			out.NATGatewayID = str(p.NatGateway.ID)
		}
		if p.ProvisioningState != nil {
			out.ProvisioningState = string(*p.ProvisioningState)
		}
	}
	return out
}
