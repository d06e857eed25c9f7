package azure

import (
	"context"
	"net/netip"

	"github.com/routekeeper/routekeeper/internal/observe"
)

// NetworkInterface is observe.NetworkInterface.
type NetworkInterface = observe.NetworkInterface

// ListNetworkInterfaces lists the NICs of a subscription. Reading NICs is
// optional for routekeeper (doctor's IP forwarding check); it needs
// Microsoft.Network/networkInterfaces/read.
func (c *Client) ListNetworkInterfaces(ctx context.Context, subscription string) ([]NetworkInterface, error) {
	sc, err := c.clients(subscription)
	if err != nil {
		return nil, err
	}
	var out []NetworkInterface
	pager := sc.nics.NewListAllPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the network interfaces of subscription "+subscription, subscription, err)
		}
		for _, n := range page.Value {
			if n == nil {
				continue
			}
			ni := NetworkInterface{ID: str(n.ID), Name: str(n.Name)}
			if p := n.Properties; p != nil {
				ni.IPForwarding = p.EnableIPForwarding != nil && *p.EnableIPForwarding
				for _, cfg := range p.IPConfigurations {
					if cfg == nil || cfg.Properties == nil {
						continue
					}
					if a, err := netip.ParseAddr(str(cfg.Properties.PrivateIPAddress)); err == nil {
						ni.IPs = append(ni.IPs, a)
					}
					if cfg.Properties.Subnet != nil {
						ni.SubnetIDs = append(ni.SubnetIDs, str(cfg.Properties.Subnet.ID))
					}
				}
			}
			out = append(out, ni)
		}
	}
	return out, nil
}
