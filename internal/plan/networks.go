package plan

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/cloud"
)

// NodeNetworks returns Input.NodeNetworks from the subnets a node may live
// in — every subnet of the virtual networks whose subnets routekeeper
// guards, and of the route table's (azure.VirtualNetwork.Subnets): their
// address prefixes, masked, sorted and without duplicates. A prefix that is
// not a CIDR is an error naming the subnet and the value; the caller should
// then leave NodeNetworks empty (next hops unchecked) rather than report
// every node outside.
func NodeNetworks(subnets ...cloud.Subnet) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range subnets {
		for i, a := range s.AddressPrefixes {
			p, err := netip.ParsePrefix(strings.TrimSpace(a))
			if err != nil {
				return nil, fmt.Errorf("subnet %s: addressPrefixes[%d] %q is not a CIDR: %w", cmp.Or(s.ID, s.Name), i, a, err)
			}
			out = append(out, p.Masked())
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return slices.Compact(out), nil
}
