package verdict

import (
	"cmp"
	"fmt"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// Need is one Azure action routekeeper needs for what its configuration
// does, on the resource it is checked on. Needs is the one list of them:
// doctor's permission check compares it with what the identity may do,
// and docs/azure.md's permissions section is written from it.
type Need struct {
	Action string `json:"action"`
	Scope  string `json:"scope"`
	// For says what routekeeper does with it.
	For string `json:"for"`
}

// The actions routekeeper uses (deploy/azure/routekeeper-role.json grants
// them; each is proved needed by a test of the role).
const (
	ActionTableRead    = "Microsoft.Network/routeTables/read"
	ActionTableWrite   = "Microsoft.Network/routeTables/write"
	ActionTableJoin    = "Microsoft.Network/routeTables/join/action"
	ActionVNetRead     = "Microsoft.Network/virtualNetworks/read"
	ActionSubnetRead   = "Microsoft.Network/virtualNetworks/subnets/read"
	ActionSubnetWrite  = "Microsoft.Network/virtualNetworks/subnets/write"
	ActionNSGJoin      = "Microsoft.Network/networkSecurityGroups/join/action"
	ActionNATJoin      = "Microsoft.Network/natGateways/join/action"
	ActionOperationsRd = "Microsoft.Network/locations/operations/read"
)

// Needs lists what routekeeper needs, for want, on the resources o read:
// read the table, the subnets and their networks; in manage mode write
// the table (create it, in its resource group, when it is missing and may
// be created); unless the association policy is report, write each subnet
// and join what the subnet's write references — our table, and the
// network security group and NAT gateway the subnet already has (ARM
// checks the join of every resource a subnet PUT references, even those
// it does not change); and follow each write's operation to its end,
// which ARM checks at the written resource's group.
func Needs(o *observe.Observation, want Desired) []Need {
	table := cmp.Or(want.Table, want.Configured)
	tr, _ := o.Table(table)
	var out []Need
	seen := map[string]bool{}
	add := func(action, scope, format string, args ...any) {
		if k := action + " " + armid.Key(scope); scope != "" && !seen[k] {
			seen[k] = true
			out = append(out, Need{Action: action, Scope: scope, For: fmt.Sprintf(format, args...)})
		}
	}
	// Each write is a long-running operation whose end ARM lets only a
	// caller with a role at the resource group follow (Track asynchronous
	// Azure operations: "Permission for tracking async status").
	track := func(id string) {
		if g := armid.ResourceGroupID(id); g != "" {
			add(ActionOperationsRd, g, "follow its writes in group %s to their end (ARM checks the operation's status at the resource group)", armid.Name(g))
		}
	}
	name := armid.Name(table)
	if tr.Exists() || tr.Err != nil {
		add(ActionTableRead, table, "read route table %s", name)
	}
	if want.Mode != Observe {
		switch {
		case tr.Exists() || tr.Err != nil:
			add(ActionTableWrite, table, "write the node routes into %s", name)
			track(table)
		case want.CreateAllowed:
			add(ActionTableWrite, armid.ResourceGroupID(table), "create route table %s (routeTable.create) in its resource group", name)
			track(table)
		}
	}
	seenVNet := map[string]bool{}
	for _, s := range o.Subnets() {
		sn := armid.Name(s.ID)
		if vid, err := armid.VNetOfSubnet(s.ID); err == nil && !seenVNet[armid.Key(vid)] {
			seenVNet[armid.Key(vid)] = true
			add(ActionVNetRead, vid, "read virtual network %s (the node networks a next hop must lie in)", armid.Name(vid))
		}
		add(ActionSubnetRead, s.ID, "read subnet %s (is it on the table?)", sn)
		if want.Policy == assoc.Report || s.NotFound {
			continue
		}
		add(ActionSubnetWrite, s.ID, "keep subnet %s associated with %s", sn, name)
		track(s.ID)
		joinAt := table
		if !tr.Exists() && tr.Err == nil {
			joinAt = armid.ResourceGroupID(table)
		}
		add(ActionTableJoin, joinAt, "point subnet %s to %s (ARM checks the join on the table)", sn, name)
		if s.Subnet != nil {
			add(ActionNSGJoin, s.Subnet.NetworkSecurityGroupID, "write subnet %s, which references network security group %s (ARM checks its join too)", sn, armid.Name(s.Subnet.NetworkSecurityGroupID))
			add(ActionNATJoin, s.Subnet.NATGatewayID, "write subnet %s, which references NAT gateway %s (ARM checks its join too)", sn, armid.Name(s.Subnet.NATGatewayID))
		}
	}
	return out
}

// Access is one need checked against what the identity may do there.
type Access struct {
	Need
	// Allowed: the permissions at Scope grant the action (and, for a
	// write, no lock or deny policy refuses it). Unknown says why that
	// could not be told ("" when it could).
	Allowed bool   `json:"allowed"`
	Unknown string `json:"unknown,omitempty"`
	// BlockedBy names the lock or deny policy that refuses a write the
	// permissions allow.
	BlockedBy string `json:"blockedBy,omitempty"`
	// Fix grants, unlocks or exempts.
	Fix string `json:"fix,omitempty"`
}

// Refused reports whether the action is refused (not allowed, and that is
// known), and says why in words.
func (a Access) Refused() (bool, string) {
	switch {
	case a.Allowed || a.Unknown != "":
		return false, ""
	case a.BlockedBy != "":
		return true, a.BlockedBy + " refuses it"
	}
	return true, fmt.Sprintf("the identity lacks %s on %s", a.Action, a.Scope)
}

// access checks each need against the permissions o read (Scope.Access),
// and each write against the locks and deny policies that apply where it
// is made; nil when none were read.
func access(o *observe.Observation, want Desired, writes map[string]map[string]any) []Access {
	if !o.AccessRead() {
		return nil
	}
	who := o.Principal()
	principal := who.ObjectID
	var out []Access
	for _, n := range Needs(o, want) {
		a := Access{Need: n}
		p, ok := o.Permissions(n.Scope)
		switch {
		case !ok:
			a.Unknown = "the permissions at this scope were not read"
		case p.Err != nil:
			a.Unknown = p.Err.Error()
		default:
			a.Allowed = p.Set.Allows(n.Action)
		}
		if !a.Allowed && a.Unknown == "" {
			a.Fix = Grant(principal, n.Scope)
			if principal == "" && who.ClientID != "" {
				a.Fix = grantClient(who.ClientID, n.Scope)
			}
		}
		out = append(out, a)
		if doc, ok := writes[armid.Key(n.Scope)]; ok && (n.Action == ActionTableWrite || n.Action == ActionSubnetWrite) {
			out = append(out, governed(o, n, doc)...)
			delete(writes, armid.Key(n.Scope)) // one check per write
		}
	}
	return out
}

// governed checks a write (doc: the ARM document it sends) against the
// locks and the deny policies that apply at its scope.
func governed(o *observe.Observation, n Need, doc map[string]any) []Access {
	g, ok := o.Governance(n.Scope)
	if !ok {
		return nil
	}
	var out []Access
	switch {
	case g.LocksErr != nil:
		out = append(out, Access{Need: n, Unknown: "the management locks could not be read: " + g.LocksErr.Error()})
	default:
		for _, l := range g.Locks {
			if l.RefusesWrites() {
				out = append(out, Access{Need: n, BlockedBy: fmt.Sprintf("the %s lock %s on %s", l.Level, l.Name, l.Scope), Fix: Unlock(l.Scope, l.ID)})
			}
		}
	}
	if g.PoliciesErr != nil {
		return append(out, Access{Need: n, Unknown: "the policy assignments could not be read: " + g.PoliciesErr.Error()})
	}
	for _, p := range g.Policies {
		what := "policy assignment " + cmp.Or(p.Assignment.DisplayName, p.Assignment.Name)
		if p.DefinitionErr != nil {
			out = append(out, Access{Need: n, Unknown: fmt.Sprintf("%s: its definition could not be read: %v", what, p.DefinitionErr)})
			continue
		}
		a, err := azpolicy.ParseAssignment(p.Assignment.Document)
		if err != nil {
			out = append(out, Access{Need: n, Unknown: fmt.Sprintf("%s: %v", what, err)})
			continue
		}
		d, err := azpolicy.ParseDefinition(p.Definition.Document)
		if err != nil {
			out = append(out, Access{Need: n, Unknown: fmt.Sprintf("%s cannot be evaluated here: %v", what, err)})
			continue
		}
		denied, err := azpolicy.Denies(d, a, doc)
		switch {
		case err != nil:
			out = append(out, Access{Need: n, Unknown: fmt.Sprintf("%s cannot be evaluated here: %v", what, err)})
		case denied:
			out = append(out, Access{Need: n, BlockedBy: fmt.Sprintf("the deny %s (%s)", what, cmp.Or(p.Definition.DisplayName, p.Definition.ID)),
				Fix: Exempt(p.Assignment.ID, n.Scope)})
		}
	}
	return out
}

// grantClient is Grant for a principal known by its client ID only (az
// looks its service principal up).
func grantClient(client, scope string) string {
	return fmt.Sprintf(`az role assignment create --assignee %s --role "Network Contributor" --scope %s`, client, cmp.Or(armid.ResourceGroupID(scope), scope))
}
