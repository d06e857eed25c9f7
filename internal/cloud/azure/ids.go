package azure

import "github.com/routekeeper/routekeeper/internal/armid"

// tableRef is a parsed route table ID.
type tableRef struct {
	id, subscription, group, name string
}

// subnetRef is a parsed subnet ID.
type subnetRef struct {
	id, subscription, group, vnet, name string
}

// vnetRef is a parsed virtual network ID.
type vnetRef struct {
	id, subscription, group, name string
}

func parseTableID(id string) (tableRef, error) {
	r, err := armid.Parse(id, armid.RouteTable)
	if err != nil {
		return tableRef{}, err
	}
	return tableRef{id: id, subscription: r.SubscriptionID, group: r.ResourceGroupName, name: r.Name}, nil
}

func parseSubnetID(id string) (subnetRef, error) {
	r, err := armid.Parse(id, armid.Subnet)
	if err != nil {
		return subnetRef{}, err
	}
	return subnetRef{id: id, subscription: r.SubscriptionID, group: r.ResourceGroupName, vnet: r.Parent.Name, name: r.Name}, nil
}

func parseVNetID(id string) (vnetRef, error) {
	r, err := armid.Parse(id, armid.VirtualNetwork)
	if err != nil {
		return vnetRef{}, err
	}
	return vnetRef{id: id, subscription: r.SubscriptionID, group: r.ResourceGroupName, name: r.Name}, nil
}

// str dereferences an SDK string pointer; nil is "".
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
