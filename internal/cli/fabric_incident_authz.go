package cli

import (
	"context"
	"encoding/json"
	"os"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// The authorization incidents: the operator mistakes that take away
// routekeeper's right to repair (fabric/incident_authz.go).
func (a *shell) addAuthzIncidentCmds(parent *cobra.Command) {
	// One variable per flag: cobra sets a flag's default when it is
	// registered, so two verbs must not share one.
	var role, scope, level, lockName, notes, hop, ruleFile, policyName string
	verbs := []incidentVerb{
		{"revoke-role PRINCIPAL", "Remove a principal's role assignments (--role, --scope: only those)", cobra.ExactArgs(1),
			func(c *cobra.Command) {
				c.Flags().StringVar(&role, "role", "", "only assignments of this role (name or definition GUID)")
				c.Flags().StringVar(&scope, "scope", "", "only assignments at this scope (an ID, or a resource group name)")
			},
			func(ctx context.Context, in *topology.Incidents, args []string, o *incidentOptions) ([]topology.Change, error) {
				at := ""
				if scope != "" {
					var err error
					if at, err = in.ResolveScope("", scope); err != nil {
						return nil, usageErrorf("flag --scope: %w", err)
					}
				}
				return in.RevokeRole(ctx, args[0], role, at)
			}},
		{"lock [SCOPE]", "Add a management lock (--level CanNotDelete|ReadOnly) on a scope (default: the resource group -g)", cobra.MaximumNArgs(1),
			func(c *cobra.Command) {
				c.Flags().StringVar(&level, "level", "CanNotDelete", "CanNotDelete or ReadOnly")
				c.Flags().StringVar(&lockName, "name", "routekeeper-incident", "name of the lock")
				c.Flags().StringVar(&notes, "notes", "", "notes of the lock")
			},
			func(ctx context.Context, in *topology.Incidents, args []string, o *incidentOptions) ([]topology.Change, error) {
				at, err := in.ResolveScope(o.rg, first(args))
				if err != nil {
					return nil, usageError(err)
				}
				return in.Lock(ctx, at, lockName, level, notes)
			}},
		{"deny-policy [SCOPE]", "Assign a deny policy on a scope (default: the resource group -g): --next-hop TYPE, or --rule FILE", cobra.MaximumNArgs(1),
			func(c *cobra.Command) {
				c.Flags().StringVar(&hop, "next-hop", "", "deny route tables and routes with this next hop type (VirtualAppliance, Internet, ...)")
				c.Flags().StringVar(&ruleFile, "rule", "", "a policy rule ({\"if\": ..., \"then\": {\"effect\": \"deny\"}}) in a JSON file")
				c.Flags().StringVar(&policyName, "name", "", "name of the definition and assignment (default: from the rule)")
			},
			func(ctx context.Context, in *topology.Incidents, args []string, o *incidentOptions) ([]topology.Change, error) {
				at, err := in.ResolveScope(o.rg, first(args))
				if err != nil {
					return nil, usageError(err)
				}
				var rule json.RawMessage
				display := ""
				switch {
				case (hop == "") == (ruleFile == ""):
					return nil, usageErrorf("give --next-hop TYPE or --rule FILE")
				case hop != "":
					if rule, err = topology.DenyNextHopRule(hop); err != nil {
						return nil, usageErrorf("flag --next-hop: %w", err)
					}
					display = "Deny " + hop + " next hops"
					if policyName == "" {
						policyName = topology.DenyNextHopName(hop)
					}
				default:
					b, err := os.ReadFile(ruleFile)
					if err != nil {
						return nil, usageErrorf("flag --rule: %w", err)
					}
					if !json.Valid(b) {
						return nil, usageErrorf("flag --rule: %s is not JSON", ruleFile)
					}
					rule, display = b, "Deny ("+ruleFile+")"
					if policyName == "" {
						policyName = "routekeeper-incident-deny"
					}
				}
				return in.DenyPolicy(ctx, at, policyName, display, rule)
			}},
	}
	for _, v := range verbs {
		parent.AddCommand(a.incidentCmd(v))
	}
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
