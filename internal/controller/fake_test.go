package controller

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// fakeCloud is an in-memory Cloud for unit tests of the loop's logic; the
// integration tests in fabric_test.go use the real SDK against the fabric.
type fakeCloud struct {
	mu      sync.Mutex
	table   *route.Table
	subnets map[string]*observe.Subnet
	etagN   int
	reads   int64
	writes  int64
	puts    int
	// beforePut runs before a PUT is checked, for injecting concurrent writes.
	beforePut func(f *fakeCloud)
	// putErr, if set, fails PUTs.
	putErr error
}

func (f *fakeCloud) nextEtag() string { f.etagN++; return fmt.Sprintf(`W/"%d"`, f.etagN) }

func (f *fakeCloud) GetRouteTable(_ context.Context, id string) (*route.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.table == nil || !armid.Same(f.table.ID, id) {
		return nil, fmt.Errorf("route table %s: %w", id, armerr.ErrNotFound)
	}
	return f.table.Clone(), nil
}

func (f *fakeCloud) PutRouteTable(_ context.Context, t *route.Table, etag string) (*route.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.puts++
	if f.beforePut != nil {
		f.beforePut(f)
	}
	if f.putErr != nil {
		return nil, f.putErr
	}
	switch {
	case etag == "" && f.table != nil:
		return nil, fmt.Errorf("create: %w", armerr.ErrPreconditionFailed)
	case etag != "" && (f.table == nil || f.table.Etag != etag):
		return nil, fmt.Errorf("stale etag: %w", armerr.ErrPreconditionFailed)
	}
	n := t.Clone()
	n.Etag = f.nextEtag()
	if f.table != nil {
		n.Subnets = f.table.Subnets
	}
	for i := range n.Routes {
		n.Routes[i].ProvisioningState = "Succeeded"
		if p, err := netip.ParsePrefix(n.Routes[i].AddressPrefix); err == nil {
			n.Routes[i].Prefix = p
		}
	}
	f.table = n
	return n.Clone(), nil
}

func (f *fakeCloud) GetSubnet(_ context.Context, id string) (*observe.Subnet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	s, err := f.subnet(id)
	if err != nil {
		return nil, err
	}
	c := *s
	return &c, nil
}

// subnet is the subnet id, or armerr.ErrNotFound; f.mu must be held.
func (f *fakeCloud) subnet(id string) (*observe.Subnet, error) {
	s, ok := f.subnets[strings.ToLower(id)]
	if !ok {
		return nil, fmt.Errorf("subnet %s: %w", id, armerr.ErrNotFound)
	}
	return s, nil
}

func (f *fakeCloud) SetSubnetRouteTable(_ context.Context, subnetID, tableID, etag string) (*observe.Subnet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	s, err := f.subnet(subnetID)
	if err != nil {
		return nil, err
	}
	if etag != "" && s.Etag != etag {
		return nil, fmt.Errorf("subnet: %w", armerr.ErrPreconditionFailed)
	}
	s.RouteTableID = tableID
	s.Etag = f.nextEtag()
	c := *s
	return &c, nil
}

func (f *fakeCloud) Calls() (int64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads, f.writes
}

func node(name, ip, cidr string) source.Node {
	n := source.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}}
	if cidr != "" {
		n.PodCIDRs = []netip.Prefix{netip.MustParsePrefix(cidr)}
	}
	return n
}

func (f *fakeCloud) GetVirtualNetwork(_ context.Context, id string) (*observe.VirtualNetwork, error) {
	return nil, fmt.Errorf("virtual network %s: %w", id, armerr.ErrNotFound)
}

func (f *fakeCloud) ListNetworkInterfaces(context.Context, string) ([]observe.NetworkInterface, error) {
	return nil, nil
}
