package azure

import "github.com/routekeeper/routekeeper/internal/armid"

// resourceRef is a parsed ID of a route table, a virtual network or a
// subnet (vnet is a subnet's network).
type resourceRef struct {
	id, subscription, group, vnet, name string
}

// parseRef parses id as the ID of a resource of type typ (armid.RouteTable,
// armid.VirtualNetwork or armid.Subnet).
func parseRef(id, typ string) (resourceRef, error) {
	r, err := armid.Parse(id, typ)
	if err != nil {
		return resourceRef{}, err
	}
	ref := resourceRef{id: id, subscription: r.Subscription, group: r.ResourceGroup, name: r.Name()}
	if typ == armid.Subnet {
		ref.vnet = r.ParentName()
	}
	return ref, nil
}

// resolve parses id (of type typ) and returns the ARM clients of its
// subscription.
func (c *Client) resolve(id, typ string) (resourceRef, *subClients, error) {
	ref, err := parseRef(id, typ)
	if err != nil {
		return resourceRef{}, nil, err
	}
	sc, err := c.clients(ref.subscription)
	if err != nil {
		return resourceRef{}, nil, err
	}
	return ref, sc, nil
}

// str dereferences an SDK string pointer; nil is "".
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
