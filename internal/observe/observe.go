// Package observe is routekeeper's one observer: the only code that reads
// the cloud during a pass. Observe reads, once each, what the pass decides
// from — the route table routekeeper keeps and the tables its migrated-to
// tags lead to, every guarded subnet and the table it points to, and when
// the scope asks for them the guarded subnets' virtual networks (the node
// networks), the route tables of every subnet in them (trace and doctor)
// and the subscription's NICs — into an Observation, an immutable value.
//
// The association guard's steady scope (Scope.Steady) reads less: a route
// table's GET lists the subnets associated with it (properties.subnets, a
// back-reference ARM keeps), so a guarded subnet that our table lists is
// known to be on it without reading the subnet. Such a subnet is answered
// from an earlier pass's read of it (SubnetRead.Listed); it is read only
// when the table no longer lists it, when the table is missing or could
// not be read, or when a write needs its body and etag (ReadListed).
//
// Everything that judges or reports (internal/verdict, doctor, diff,
// routes list, trace, iac check) takes an Observation, never a cloud
// client, so no command can see a different cloud than the pass it
// reports on.
package observe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/route"
)

// Reader is what the observer reads of the cloud (cloud.Cloud has it).
type Reader interface {
	GetRouteTable(ctx context.Context, id string) (*route.Table, error)
	GetSubnet(ctx context.Context, id string) (*Subnet, error)
	GetVirtualNetwork(ctx context.Context, id string) (*VirtualNetwork, error)
	ListNetworkInterfaces(ctx context.Context, subscription string) ([]NetworkInterface, error)
	Calls() (reads, writes int64)
}

// Scope says what one pass reads.
type Scope struct {
	// Table is the route table routekeeper keeps: the configured one, or
	// the one a followed swap or migration led to.
	Table string
	// Subnets are the subnets that must stay on the table, in the
	// configuration's order.
	Subnets []string
	// Networks reads the virtual network of each guarded subnet: the node
	// networks a next hop must lie in (plan.Input.NodeNetworks).
	Networks bool
	// Routing also reads the virtual networks of RoutingSubnets and the
	// route table every subnet of every network read uses: what Azure's
	// route selection needs (trace, doctor).
	Routing bool
	// RoutingSubnets are more subnets whose networks a trace may start in
	// (the mirrors' subnets).
	RoutingSubnets []string
	// Tables are more route tables to read (a migration's new table).
	Tables []string
	// ListedSubnets also reads every subnet a table read lists among its
	// subnets (properties.subnets), and the table it points to: what a
	// migration moves is every subnet on either table.
	ListedSubnets bool
	// NextHops are the addresses the nodes' routes point to (NextHops of
	// the nodes). With Networks, a next hop in no subnet of the node
	// networks has the networks peered with them whose address space holds
	// it read too (peered.go), so that a node in a peered network is a
	// valid next hop; nothing more is read when every next hop is in a
	// node network.
	NextHops []netip.Addr
	// NICs lists the network interfaces of Table's subscription (doctor's
	// IP forwarding check; reading them is an optional right).
	NICs bool
	// Access reads what the caller may do where the pass writes (doctor's
	// permission check; access.go).
	Access bool
	// Usage reads the usages of our table's region (usage.go): Azure's
	// limit of routes per route table, which routekeeper keeps to. One GET;
	// a reconcile asks for it at start and once per resync, never the
	// guard. Location is the region when the table cannot be read (it is
	// yet to be created).
	Usage    bool
	Location string
	// Steady reads our table first and a guarded subnet only when the
	// table does not list it (properties.subnets): the association guard's
	// scope. A listed subnet is answered from Earlier's read of it
	// (SubnetRead.Listed), so one GET per cycle checks both the routes and
	// the associations of a table whose subnets are all on it. A subnet is
	// read anyway when our table is missing, could not be read or carries
	// a migrated-to tag, or when Earlier did not read it.
	Steady bool
	// Earlier is an earlier pass's observation: networks this scope does
	// not read are taken from it (the guard does not read networks each
	// cycle, but judges next hops against the last ones read), and so are
	// the subnets a Steady scope does not read. It should be an
	// observation that read the subnets (a reconcile's), so that what is
	// taken from it is never older than that pass.
	Earlier *Observation
}

// TableRead is one route table as read: Table when it exists, NotFound
// when it does not, Err when it could not be read.
type TableRead struct {
	ID       string
	Table    *route.Table
	NotFound bool
	Err      error
	// Refused is what ARM's refusal of the read named (Err is it).
	Refused *Refusal
}

// Exists reports whether the table was read and exists.
func (r TableRead) Exists() bool { return r.Table != nil }

// SubnetRead is one subnet as read.
type SubnetRead struct {
	ID       string
	Subnet   *Subnet
	NotFound bool
	Err      error
	Refused  *Refusal
	// Listed: the subnet was not read by this observation. Our table, read
	// now, lists it among its subnets, so it is on that table; Subnet is
	// an earlier pass's read of it (prefixes, name, etag as read then) with
	// RouteTableID set to our table. Its etag may be stale: a write must
	// read the subnet first (Observation.ReadListed).
	Listed bool
}

// Prefixes are the subnet's address prefixes, masked; prefixes that do
// not parse are left out (ARM validated them).
func (r SubnetRead) Prefixes() []netip.Prefix {
	if r.Subnet == nil {
		return nil
	}
	return parsePrefixes(r.Subnet.AddressPrefixes)
}

// NetworkRead is one virtual network as read. Earlier: it was read by an
// earlier pass (Scope.Earlier), not this one.
type NetworkRead struct {
	ID       string
	Network  *VirtualNetwork
	NotFound bool
	Err      error
	Refused  *Refusal
	Earlier  bool
}

// Observation is what one pass read. It is never modified after Observe
// returns: every accessor returns values, and the tables and subnets it
// hands out must be treated as read-only.
type Observation struct {
	scope    Scope
	tables   map[string]TableRead
	subnets  map[string]SubnetRead
	networks map[string]NetworkRead
	// order of the networks read (for deterministic routing states).
	networkOrder []string
	nics         []NetworkInterface
	nicsRead     bool
	nicsErr      error
	// interconnect is the peered networks, peerings and gateways read
	// for Scope.Routing.
	interconnect interconnect
	// permissions are the caller's, by scope (Scope.Access).
	permissions map[string]PermissionsRead
	principal   Principal
	// governance is the locks and policies, by scope (Scope.Access).
	governance map[string]GovernanceRead
	// peered are the peered networks read for next hops (peered.go).
	peered peered
	// usage is the usages of our table's region (Scope.Usage).
	usage     UsageRead
	usageRead bool
	reads     int64
}

// maxMigrationHops bounds the chain of migrated-to tags read.
const maxMigrationHops = 4

// Observe reads what scope asks for, each resource once.
func Observe(ctx context.Context, c Reader, scope Scope) *Observation {
	r0, _ := c.Calls()
	earlier := scope.Earlier
	scope.Earlier = nil // an observation does not keep a chain of earlier ones alive
	o := &Observation{scope: scope, tables: map[string]TableRead{}, subnets: map[string]SubnetRead{}, networks: map[string]NetworkRead{}}

	// Our table and the chain of tables it was migrated to.
	cur := o.readTable(ctx, c, scope.Table)
	for range maxMigrationHops {
		to := cur.Table.Tag(route.MigratedToTag)
		if to == "" {
			break
		}
		if _, seen := o.tables[armid.Key(to)]; seen {
			break
		}
		cur = o.readTable(ctx, c, to)
	}
	for _, id := range scope.Tables {
		o.readTable(ctx, c, id)
	}
	for _, id := range scope.Subnets {
		if scope.Steady {
			if s, ok := o.listed(id, earlier); ok {
				o.subnets[armid.Key(id)] = s
				continue
			}
		}
		o.readSubnetAndTable(ctx, c, id)
	}
	if scope.ListedSubnets {
		for _, t := range o.Tables() {
			if t.Table == nil {
				continue
			}
			for _, id := range t.Table.Subnets {
				if _, read := o.subnets[armid.Key(id)]; !read {
					o.readSubnetAndTable(ctx, c, id)
				}
			}
		}
	}
	switch {
	case scope.Networks || scope.Routing:
		for _, id := range slices.Concat(scope.Subnets, scope.RoutingSubnets) {
			if !scope.Routing && !armid.Contains(scope.Subnets, id) {
				continue
			}
			if vid, err := armid.VNetOfSubnet(id); err == nil {
				o.readNetwork(ctx, c, vid)
			}
		}
	case earlier != nil:
		for _, k := range earlier.networkOrder {
			n := earlier.networks[k]
			n.Earlier = true
			o.networks[k] = n
			o.networkOrder = append(o.networkOrder, k)
		}
		o.peered = earlier.peered
	}
	if scope.Routing {
		o.readInterconnect(ctx, c)
		for _, k := range o.networkOrder {
			n := o.networks[k]
			if n.Network == nil {
				continue
			}
			for _, s := range n.Network.Subnets {
				if s.RouteTableID != "" {
					o.readTable(ctx, c, s.RouteTableID)
				}
			}
		}
	}
	if scope.Networks || scope.Routing {
		o.readPeered(ctx, c)
	}
	if scope.Access {
		o.readAccess(ctx, c)
		o.readGovernance(ctx, c)
	}
	if scope.Usage {
		o.readUsage(ctx, c)
	}
	if scope.NICs {
		o.nics, o.nicsErr = c.ListNetworkInterfaces(ctx, armid.Subscription(scope.Table))
		o.nicsRead = o.nicsErr == nil
	}
	r1, _ := c.Calls()
	o.reads = r1 - r0
	return o
}

// failed sorts the error of one read: the resource is not found, or the
// read failed with err (and what ARM's refusal named, if it refused), or
// neither when err is nil.
func failed(err error) (notFound bool, readErr error, refused *Refusal) {
	switch {
	case errors.Is(err, armerr.ErrNotFound):
		return true, nil, nil
	case err != nil:
		return false, err, RefusalOf(err)
	}
	return false, nil, nil
}

func (o *Observation) readTable(ctx context.Context, c Reader, id string) TableRead {
	if r, ok := o.tables[armid.Key(id)]; ok {
		return r
	}
	t, err := c.GetRouteTable(ctx, id)
	r := TableRead{ID: id}
	if r.NotFound, r.Err, r.Refused = failed(err); err == nil {
		if t.ID == "" {
			t.ID = id
		}
		r.Table = t
	}
	o.tables[armid.Key(id)] = r
	return r
}

// readSubnetAndTable reads a subnet and the route table it points to
// (once each).
func (o *Observation) readSubnetAndTable(ctx context.Context, c Reader, id string) {
	s := o.readSubnet(ctx, c, id)
	if s.Subnet != nil && s.Subnet.RouteTableID != "" {
		o.readTable(ctx, c, s.Subnet.RouteTableID)
	}
}

// listed answers for the guarded subnet id without reading it, when our
// table (the scope's, read and not migrated away from) lists it and
// earlier read it: the subnet is on our table, as ARM's back-reference
// says, with the rest of what earlier read. ok is false when the subnet
// must be read.
func (o *Observation) listed(id string, earlier *Observation) (SubnetRead, bool) {
	t, ok := o.tables[armid.Key(o.scope.Table)]
	if !ok || t.Table == nil || t.Table.Tag(route.MigratedToTag) != "" || !armid.Contains(t.Table.Subnets, id) || earlier == nil {
		return SubnetRead{}, false
	}
	e, ok := earlier.subnets[armid.Key(id)]
	if !ok || e.Subnet == nil {
		return SubnetRead{}, false
	}
	s := *e.Subnet
	s.RouteTableID = t.Table.ID
	return SubnetRead{ID: id, Subnet: &s, Listed: true}, true
}

// ReadListed returns an observation that is o with the subnets ids that o
// took from our table's list (SubnetRead.Listed) read now, and the route
// tables they point to that o did not read. Other ids are left as they
// are. A write to a subnet needs its body and etag as read (the subnet
// PUT carries them with If-Match), so a pass that must write a listed
// subnet reads it first; o itself is not changed. Reads counts o's reads
// and these.
func (o *Observation) ReadListed(ctx context.Context, c Reader, ids []string) *Observation {
	var todo []string
	for _, id := range ids {
		if r, ok := o.subnets[armid.Key(id)]; ok && r.Listed {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return o
	}
	r0, _ := c.Calls()
	n := &Observation{
		scope: o.scope, tables: maps.Clone(o.tables), subnets: maps.Clone(o.subnets), networks: o.networks,
		networkOrder: o.networkOrder, nics: o.nics, nicsRead: o.nicsRead, nicsErr: o.nicsErr, interconnect: o.interconnect,
		permissions: o.permissions, principal: o.principal, usage: o.usage, usageRead: o.usageRead, reads: o.reads,
	}
	for _, id := range todo {
		delete(n.subnets, armid.Key(id))
		n.readSubnetAndTable(ctx, c, id)
	}
	r1, _ := c.Calls()
	n.reads += r1 - r0
	return n
}

func (o *Observation) readSubnet(ctx context.Context, c Reader, id string) SubnetRead {
	if r, ok := o.subnets[armid.Key(id)]; ok {
		return r
	}
	s, err := c.GetSubnet(ctx, id)
	r := SubnetRead{ID: id}
	if r.NotFound, r.Err, r.Refused = failed(err); err == nil {
		r.Subnet = s
	}
	o.subnets[armid.Key(id)] = r
	return r
}

func (o *Observation) readNetwork(ctx context.Context, c Reader, id string) {
	k := armid.Key(id)
	if _, ok := o.networks[k]; ok {
		return
	}
	v, err := c.GetVirtualNetwork(ctx, id)
	r := NetworkRead{ID: id}
	if r.NotFound, r.Err, r.Refused = failed(err); err == nil {
		r.Network = v
	}
	o.networks[k] = r
	o.networkOrder = append(o.networkOrder, k)
}

// Scope is the scope the observation was made with (without Earlier).
func (o *Observation) Scope() Scope { return o.scope }

// Reads is the number of ARM reads the observation took.
func (o *Observation) Reads() int64 { return o.reads }

// Table returns what was read of table id; ok is false when it was not read.
func (o *Observation) Table(id string) (TableRead, bool) {
	r, ok := o.tables[armid.Key(id)]
	return r, ok
}

// Tables returns every table read, sorted by ID.
func (o *Observation) Tables() []TableRead {
	out := make([]TableRead, 0, len(o.tables))
	for _, r := range o.tables {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b TableRead) int { return strings.Compare(armid.Key(a.ID), armid.Key(b.ID)) })
	return out
}

// Subnet returns what was read of subnet id (or, in a Steady scope, taken
// from our table's list: SubnetRead.Listed); ok is false when it was not
// read.
func (o *Observation) Subnet(id string) (SubnetRead, bool) {
	r, ok := o.subnets[armid.Key(id)]
	return r, ok
}

// Subnets returns the guarded subnets as read (or listed), in the scope's
// order.
func (o *Observation) Subnets() []SubnetRead {
	out := make([]SubnetRead, 0, len(o.scope.Subnets))
	for _, id := range o.scope.Subnets {
		out = append(out, o.subnets[armid.Key(id)])
	}
	return out
}

// Networks returns the virtual networks read (or taken from an earlier
// pass), in the order they were first needed.
func (o *Observation) Networks() []NetworkRead {
	out := make([]NetworkRead, 0, len(o.networkOrder))
	for _, k := range o.networkOrder {
		out = append(out, o.networks[k])
	}
	return out
}

// NICs returns the network interfaces listed; read is false when they
// were not (not asked for, or err says why).
func (o *Observation) NICs() (nics []NetworkInterface, read bool, err error) {
	return o.nics, o.nicsRead, o.nicsErr
}

// NodeNetworks are the address prefixes of every subnet of the guarded
// subnets' virtual networks, and of the networks peered with them that
// were read (PeeredNetworks), masked, sorted and without duplicates: a
// node whose internal IP lies in none of them cannot be a next hop. It is
// nil (next hops unchecked) when no network was read, a network could not
// be read, or a prefix does not parse; err then says why.
func (o *Observation) NodeNetworks() ([]netip.Prefix, error) {
	if o.peered.err != nil {
		return nil, o.peered.err
	}
	own, err := o.ownNodeNetworks()
	if err != nil || own == nil || len(o.peered.networks) == 0 {
		return own, err
	}
	var subnets []Subnet
	for _, p := range o.peered.networks {
		subnets = append(subnets, p.Network.Subnets...)
	}
	more, err := NodeNetworks(subnets...)
	if err != nil {
		return nil, err
	}
	all := append(own, more...)
	slices.SortFunc(all, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return slices.Compact(all), nil
}

// ownNodeNetworks are the prefixes of the guarded subnets' networks alone.
func (o *Observation) ownNodeNetworks() ([]netip.Prefix, error) {
	var subnets []Subnet
	read := false
	for _, id := range o.scope.Subnets {
		vid, err := armid.VNetOfSubnet(id)
		if err != nil {
			continue
		}
		n, ok := o.networks[armid.Key(vid)]
		switch {
		case !ok:
			continue
		case n.Err != nil:
			return nil, fmt.Errorf("reading virtual network %s: %w", n.ID, n.Err)
		case n.Network != nil:
			read = true
			subnets = append(subnets, n.Network.Subnets...)
		}
	}
	if !read {
		return nil, nil
	}
	return NodeNetworks(subnets...)
}

// NodeNetworks returns the address prefixes of subnets, masked, sorted and
// without duplicates. A prefix that is not a CIDR is an error naming the
// subnet and the value.
func NodeNetworks(subnets ...Subnet) ([]netip.Prefix, error) {
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

// Network returns the network that holds the subnet id, nil when it was
// not read.
func (o *Observation) Network(subnetID string) *VirtualNetwork {
	vid, err := armid.VNetOfSubnet(subnetID)
	if err != nil {
		return nil
	}
	return o.networks[armid.Key(vid)].Network
}

func parsePrefixes(ps []string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if pf, err := netip.ParsePrefix(strings.TrimSpace(p)); err == nil {
			out = append(out, pf.Masked())
		}
	}
	return out
}
