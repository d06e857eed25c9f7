package verdict

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// Denial is one write Azure Resource Manager refused for who routekeeper
// is or what governs the scope — a missing role, a missing join on a
// linked resource, a management lock, a deny policy — with what it takes
// to fix it. Retrying does not help until someone grants, unlocks or
// exempts; the controller backs off and keeps the other writes going.
type Denial struct {
	// Op is what routekeeper tried (one of the Op constants); Resource is
	// the table, subnet or network it was tried on.
	Op       string `json:"op"`
	Resource string `json:"resource"`
	// Code is ARM's error code (AuthorizationFailed,
	// LinkedAuthorizationFailed, ScopeLocked, RequestDisallowedByPolicy).
	Code string `json:"code"`
	// Action and Scope are what was refused: the action missing (for a
	// linked refusal, the join on the linked scope), the lock's scope, or
	// the policy's assignment.
	Action string `json:"action,omitempty"`
	Scope  string `json:"scope,omitempty"`
	// Why says it in words; Fix is the command that fixes it.
	Why string `json:"why"`
	Fix string `json:"fix,omitempty"`
}

// Message is the denial in one line, for logs, conditions and events.
func (d Denial) Message() string {
	s := fmt.Sprintf("Azure refused the %s of %s (%s): %s", d.Op, d.Resource, d.Code, d.Why)
	if d.Fix != "" {
		s += "; fix: " + d.Fix
	}
	return s
}

// The operations a denial can be of.
const (
	OpTableWrite  = "route table write"
	OpSubnetWrite = "subnet association"
	OpTableRead   = "route table read"
	OpSubnetRead  = "subnet read"
	OpNetworkRead = "virtual network read"
)

// Deny makes the Denial of a refused write of resource, with the command
// that fixes it.
func Deny(op, resource string, r observe.Refusal) Denial {
	d := Denial{Op: op, Resource: resource, Code: r.Code}
	who := "the identity"
	if r.Principal != "" {
		who = "principal " + r.Principal
	}
	switch r.Code {
	case observe.CodeAuthorizationFailed:
		d.Action, d.Scope = r.Action, cmp.Or(r.Scope, resource)
		d.Why = fmt.Sprintf("%s lacks %s on %s (a missing role assignment)", who, orUnknown(d.Action), d.Scope)
		d.Fix = Grant(r.Principal, d.Scope)
	case observe.CodeLinkedAuthorizationFailed:
		d.Action, d.Scope = strings.Join(r.LinkedActions, ", "), strings.Join(r.LinkedScopes, ", ")
		d.Why = fmt.Sprintf("%s may write %s but lacks %s on the linked %s, which the write references", who, cmp.Or(r.Scope, resource), orUnknown(d.Action), orUnknown(d.Scope))
		var fixes []string
		seen := map[string]bool{}
		for _, s := range r.LinkedScopes {
			if g := armid.ResourceGroupID(s); !seen[armid.Key(cmp.Or(g, s))] {
				seen[armid.Key(cmp.Or(g, s))] = true
				fixes = append(fixes, Grant(r.Principal, s))
			}
		}
		d.Fix = strings.Join(fixes, " && ")
	case observe.CodeScopeLocked:
		d.Scope = cmp.Or(r.Lock, r.Scope)
		d.Why = fmt.Sprintf("a management lock on %s forbids the %s", orUnknown(d.Scope), cmp.Or(r.Operation, "write"))
		d.Fix = Unlock(d.Scope, "")
	case observe.CodeRequestDisallowedByPolicy:
		d.Scope = r.PolicyAssignment
		d.Why = fmt.Sprintf("policy assignment %s (definition %s) denies it", orUnknown(r.PolicyAssignment), orUnknown(r.PolicyDefinition))
		if r.PolicyAssignment != "" {
			d.Fix = Exempt(r.PolicyAssignment, resource)
		}
	default:
		d.Why = r.Message
	}
	return d
}

// Grant is the role assignment that gives principal what routekeeper
// needs on the resource group of scope: Network Contributor, the
// built-in role every Azure user has (deploy/azure/routekeeper-role.json
// is the least one, when it is defined in the subscription).
func Grant(principal, scope string) string {
	at := cmp.Or(armid.ResourceGroupID(scope), scope)
	who := "--assignee-object-id " + principal + " --assignee-principal-type ServicePrincipal"
	if principal == "" {
		who = "--assignee <routekeeper's client id>"
	}
	return fmt.Sprintf(`az role assignment create %s --role "Network Contributor" --scope %s`, who, at)
}

// Unlock removes the lock lockID. When the lock is not known (ARM's
// refusal names only the locked scopes, comma-separated, and the
// observation read no locks there) it lists the locks placed at exactly
// those scopes — not the ones below or beside them — and leaves the
// delete to whoever has read them: a lock usually guards more than
// routekeeper's table.
func Unlock(scope, lockID string) string {
	if lockID != "" {
		return "az lock delete --ids " + lockID
	}
	var lists []string
	for _, s := range strings.Split(scope, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		where := "--resource " + s
		switch sub := armid.Subscription(s); {
		case armid.Same(s, "/subscriptions/"+sub):
			where = "--subscription " + sub
		case armid.Same(s, armid.ResourceGroupID(s)):
			where = fmt.Sprintf("--resource-group %s --subscription %s", armid.Name(s), sub)
		}
		lists = append(lists, fmt.Sprintf(`az lock list %s --query "[?starts_with(id, '%s/providers/Microsoft.Authorization/locks/')].{lock:id, level:level, notes:notes}" -o table`,
			where, strings.TrimSuffix(s, "/")))
	}
	if len(lists) == 0 {
		return ""
	}
	return strings.Join(lists, " && ") + ", then az lock delete --ids <the lock's id>"
}

// Exempt exempts resource from a deny policy assignment.
func Exempt(assignment, resource string) string {
	return fmt.Sprintf("az policy exemption create --name routekeeper-%s --policy-assignment %s --scope %s --exemption-category Waiver",
		armid.Name(resource), assignment, resource)
}

func orUnknown(s string) string {
	if s == "" {
		return "(not named by ARM)"
	}
	return s
}
