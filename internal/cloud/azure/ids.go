package azure

import (
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
)

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
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return tableRef{}, fmt.Errorf("route table ID %q: %w", id, err)
	}
	if !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/routeTables") || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return tableRef{}, fmt.Errorf("route table ID %q: want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<name>", id)
	}
	return tableRef{id: id, subscription: r.SubscriptionID, group: r.ResourceGroupName, name: r.Name}, nil
}

func parseSubnetID(id string) (subnetRef, error) {
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return subnetRef{}, fmt.Errorf("subnet ID %q: %w", id, err)
	}
	if !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/virtualNetworks/subnets") || r.Parent == nil || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return subnetRef{}, fmt.Errorf("subnet ID %q: want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<name>", id)
	}
	return subnetRef{id: id, subscription: r.SubscriptionID, group: r.ResourceGroupName, vnet: r.Parent.Name, name: r.Name}, nil
}

func parseVNetID(id string) (vnetRef, error) {
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return vnetRef{}, fmt.Errorf("virtual network ID %q: %w", id, err)
	}
	if !strings.EqualFold(r.ResourceType.String(), "Microsoft.Network/virtualNetworks") || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return vnetRef{}, fmt.Errorf("virtual network ID %q: want /subscriptions/<sub>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<name>", id)
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
