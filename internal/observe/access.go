package observe

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azrbac"
)

// AccessReader is the optional part of a Reader that reads what the
// caller may do at a scope (ARM's permissions API; internal/cloud/azure
// has it). Any identity may read its own permissions.
type AccessReader interface {
	Permissions(ctx context.Context, scope string) (azrbac.Set, error)
	// Principal is who the client authenticates as (from its token).
	Principal(ctx context.Context) (Principal, error)
}

// PermissionsRead is what the permissions API answered at one scope.
type PermissionsRead struct {
	Scope string
	Set   azrbac.Set
	Err   error
}

// readAccess reads, for Scope.Access, the caller's permissions at every
// resource the pass touches or would: the table kept and its resource
// group (a create, and following a write's operation, are checked there),
// each guarded subnet and its group, each subnet's network, and what each
// subnet references (a network security group, a NAT gateway: a write of
// the subnet needs their joins).
func (o *Observation) readAccess(ctx context.Context, c Reader) {
	ar, ok := c.(AccessReader)
	if !ok {
		return
	}
	o.permissions = map[string]PermissionsRead{}
	o.principal, _ = ar.Principal(ctx) // names who to grant to; a fix without it names the client
	read := func(scope string) {
		if scope == "" {
			return
		}
		if _, done := o.permissions[armid.Key(scope)]; done {
			return
		}
		set, err := ar.Permissions(ctx, scope)
		o.permissions[armid.Key(scope)] = PermissionsRead{Scope: scope, Set: set, Err: err}
	}
	for _, s := range o.AccessScopes() {
		read(s)
	}
}

// AccessScopes are the scopes whose permissions Scope.Access reads.
func (o *Observation) AccessScopes() []string {
	out := []string{armid.ResourceGroupID(o.scope.Table)}
	if t, _ := o.Table(o.scope.Table); t.Exists() || t.Err != nil {
		out = append(out, o.scope.Table)
	}
	for _, s := range o.Subnets() {
		if vid, err := armid.VNetOfSubnet(s.ID); err == nil {
			out = append(out, vid)
		}
		out = append(out, armid.ResourceGroupID(s.ID), s.ID)
		if s.Subnet != nil {
			out = append(out, s.Subnet.NetworkSecurityGroupID, s.Subnet.NATGatewayID)
		}
	}
	return out
}

// Permissions returns what was read of the caller's permissions at scope;
// ok is false when they were not read (Scope.Access off, or a cloud that
// cannot tell).
func (o *Observation) Permissions(scope string) (PermissionsRead, bool) {
	if o.permissions == nil {
		return PermissionsRead{}, false
	}
	r, ok := o.permissions[armid.Key(scope)]
	return r, ok
}

// AccessRead reports whether the observation read permissions.
func (o *Observation) AccessRead() bool { return o.permissions != nil }

// Principal is who the caller is, as its token says (Scope.Access).
func (o *Observation) Principal() Principal { return o.principal }
