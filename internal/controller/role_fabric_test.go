package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// The role we ship, deploy/azure/routekeeper-role.json, is proved enough
// and least: every scenario routekeeper is for passes as a principal that
// holds only it, and for each of its actions, the same scenarios with
// that one action removed make at least one scenario fail with the finding
// for exactly that action.

const roleFile = "../../deploy/azure/routekeeper-role.json"

// roleRG is the group the role file is assignable at; the cluster's
// network and tables live there.
const roleRG = "my-cluster-rg"

func roleID(typ, name string) string {
	return "/subscriptions/" + fabrictest.Sub + "/resourceGroups/" + roleRG + "/providers/Microsoft.Network/" + typ + "/" + name
}

var (
	roleTable  = roleID("routeTables", "cluster-routes")
	roleTable2 = roleID("routeTables", "cluster-routes-v2")
	roleMirror = roleID("routeTables", "appgw-routes")
	roleVNet   = roleID("virtualNetworks", "cluster-vnet")
	roleSubnet = roleVNet + "/subnets/nodes"
	roleAppGW  = roleVNet + "/subnets/appgw"
)

// roleTopology is the cluster's network; the subnets start without a
// table unless a scenario says otherwise.
const roleTopology = `
location: eastus
resourceGroups:
  - name: my-cluster-rg
    virtualNetworks:
      - name: cluster-vnet
        addressPrefixes: [10.240.0.0/16]
        subnets:
          - {name: nodes, addressPrefix: 10.240.0.0/24}
          - {name: appgw, addressPrefix: 10.240.2.0/24}
    routeTables:
      - name: cluster-routes
        tags: {routekeeper-cluster: kthw}
      - name: cluster-routes-v2
      - name: appgw-routes
        routes:
          - {name: internet, addressPrefix: 0.0.0.0/0, nextHopType: Internet}
`

// roleScenario runs one of routekeeper's jobs as the principal and says
// whether it reached its end, with the verdicts' denials.
type roleScenario struct {
	name string
	// setup prepares the network as the administrator (no RBAC check).
	setup func(t *testing.T, env *fabrictest.Env)
	// cfg adjusts the controller's configuration.
	cfg func(c *Config)
	// done reports whether the job is done, as the administrator sees it.
	done func(t *testing.T, env *fabrictest.Env) bool
	// nodes are the nodes (default: two workers).
	nodes []source.Node
	// mirror runs a mirror's controller instead of the main one.
	mirror bool
}

func admin(t *testing.T, env *fabrictest.Env) *armnetwork.ClientFactory {
	f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func associate(t *testing.T, env *fabrictest.Env, subnet, table string, more func(*armnetwork.SubnetPropertiesFormat)) {
	t.Helper()
	ctx := context.Background()
	sc := admin(t, env).NewSubnetsClient()
	name := armid.Name(subnet)
	cur, err := sc.Get(ctx, roleRG, "cluster-vnet", name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if table == "" {
		cur.Properties.RouteTable = nil
	} else {
		cur.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(table)}
	}
	if more != nil {
		more(cur.Properties)
	}
	p, err := sc.BeginCreateOrUpdate(ctx, roleRG, "cluster-vnet", name, cur.Subnet, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, nil)
	}
	if err != nil {
		t.Fatalf("associating %s: %v", name, err)
	}
}

func tableRoutes(t *testing.T, env *fabrictest.Env, id string) int {
	t.Helper()
	tbl, err := env.Client.GetRouteTable(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range tbl.Routes {
		if strings.HasPrefix(r.Name, "worker-") {
			n++
		}
	}
	return n
}

func subnetOn(t *testing.T, env *fabrictest.Env, subnet, table string) bool {
	t.Helper()
	s, err := env.Client.GetSubnet(context.Background(), subnet)
	if err != nil {
		t.Fatal(err)
	}
	return armid.Same(s.RouteTableID, table)
}

func roleScenarios() []roleScenario {
	return []roleScenario{{
		name:  "routing: write the node routes into the table",
		setup: func(t *testing.T, env *fabrictest.Env) { associate(t, env, roleSubnet, roleTable, nil) },
		done:  func(t *testing.T, env *fabrictest.Env) bool { return tableRoutes(t, env, roleTable) == 2 },
	}, {
		name: "association repair: the subnet lost its table (an IaC redeploy)",
		setup: func(t *testing.T, env *fabrictest.Env) {
			associate(t, env, roleSubnet, roleTable, nil)
			associate(t, env, roleSubnet, "", nil)
		},
		done: func(t *testing.T, env *fabrictest.Env) bool { return subnetOn(t, env, roleSubnet, roleTable) },
	}, {
		name: "association repair of a subnet with a network security group",
		setup: func(t *testing.T, env *fabrictest.Env) {
			associate(t, env, roleSubnet, "", func(p *armnetwork.SubnetPropertiesFormat) {
				p.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(roleID("networkSecurityGroups", "nodes-nsg"))}
			})
		},
		done: func(t *testing.T, env *fabrictest.Env) bool { return subnetOn(t, env, roleSubnet, roleTable) },
	}, {
		name: "association repair of a subnet behind a NAT gateway",
		setup: func(t *testing.T, env *fabrictest.Env) {
			ctx := context.Background()
			p, err := admin(t, env).NewNatGatewaysClient().BeginCreateOrUpdate(ctx, roleRG, "egress", armnetwork.NatGateway{Location: to.Ptr("eastus")}, nil)
			if err == nil {
				_, err = p.PollUntilDone(ctx, nil)
			}
			if err != nil {
				t.Fatalf("NAT gateway: %v", err)
			}
			associate(t, env, roleSubnet, "", func(p *armnetwork.SubnetPropertiesFormat) {
				p.NatGateway = &armnetwork.SubResource{ID: to.Ptr(roleID("natGateways", "egress"))}
			})
		},
		done: func(t *testing.T, env *fabrictest.Env) bool { return subnetOn(t, env, roleSubnet, roleTable) },
	}, {
		name:  "swap followed: the subnet was moved to another table on purpose",
		setup: func(t *testing.T, env *fabrictest.Env) { associate(t, env, roleSubnet, roleTable2, nil) },
		cfg:   func(c *Config) { c.Policy = assoc.Follow },
		done:  func(t *testing.T, env *fabrictest.Env) bool { return tableRoutes(t, env, roleTable2) == 2 },
	}, {
		name:  "a node outside every subnet of the network gets no route (NextHopOutsideVNet)",
		setup: func(t *testing.T, env *fabrictest.Env) { associate(t, env, roleSubnet, roleTable, nil) },
		nodes: append(workers(2), node("stray", "192.168.7.4", "10.200.9.0/24")),
		done: func(t *testing.T, env *fabrictest.Env) bool {
			tbl, err := env.Client.GetRouteTable(context.Background(), roleTable)
			if err != nil {
				t.Fatal(err)
			}
			return tableRoutes(t, env, roleTable) == 2 && !slices.ContainsFunc(tbl.Routes, func(r route.Route) bool { return strings.HasPrefix(r.Name, "stray") })
		},
	}, {
		name:   "mirror: the gateway subnet's table gets the pod routes",
		mirror: true,
		setup:  func(t *testing.T, env *fabrictest.Env) { associate(t, env, roleAppGW, "", nil) },
		done: func(t *testing.T, env *fabrictest.Env) bool {
			return tableRoutes(t, env, roleMirror) == 2 && subnetOn(t, env, roleAppGW, roleMirror)
		},
	}}
}

// runRoleScenario runs a scenario as a principal holding only role (a
// role definition's JSON), and returns whether it reached its end and the
// denials of its passes.
func runRoleScenario(t *testing.T, sc roleScenario, role []byte) (bool, []verdict.Denial) {
	t.Helper()
	ok, ds, _ := runRoleScenarioResult(t, sc, role)
	return ok, ds
}

// runRoleScenarioResult is runRoleScenario with the pass's result.
func runRoleScenarioResult(t *testing.T, sc roleScenario, role []byte) (bool, []verdict.Denial, *Result) {
	t.Helper()
	var def map[string]any
	if err := json.Unmarshal(role, &def); err != nil {
		t.Fatal(err)
	}
	defYAML, _ := json.Marshal(def)
	topo := roleTopology + fmt.Sprintf(`authorization:
  principals:
    - {name: routekeeper, clientId: routekeeper-app, objectId: 00000000-0000-0000-0000-0000000000a5}
  roleDefinitions:
    - %s
  roleAssignments:
    - {principal: routekeeper, role: %s, resourceGroup: %s}
`, defYAML, def["Name"], roleRG)
	env := fabrictest.New(t, fabric.Options{}, topo)
	sc.setup(t, env)
	cfg := Config{
		Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")},
		RouteTableID: roleTable, Subnets: []string{roleSubnet}, GuardInterval: time.Second,
	}
	if sc.cfg != nil {
		sc.cfg(&cfg)
	}
	if sc.mirror {
		cfg = MirrorConfig(cfg, Mirror{RouteTableID: roleMirror, Subnets: []string{roleAppGW}, Policy: assoc.Enforce})
	}
	nodes := sc.nodes
	if nodes == nil {
		nodes = workers(2)
	}
	c := New(cfg, env.As(t, "routekeeper-app"), nodesource.New(nodes...), nil)
	// One pass does the job and says so: its verdict has every node it
	// can route routed (a write it could not see finish is not routed)
	// and every subnet on the table.
	res := c.Reconcile(context.Background())
	if res.Verdict == nil {
		return false, nil, res
	}
	truthful := res.AssociationProblems() == 0
	for name, nv := range res.Nodes {
		if name != "stray" && !nv.Routed {
			truthful = false
		}
	}
	return truthful && sc.done(t, env), res.Verdict.Denials, res
}

func names(ds []verdict.Denial) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Op+": "+d.Code+" "+d.Action)
	}
	return out
}

func TestShippedRoleIsEnoughAndLeast(t *testing.T) {
	role, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
	}
	scenarios := roleScenarios()
	t.Run("enough", func(t *testing.T) {
		for _, sc := range scenarios {
			if ok, ds := runRoleScenario(t, sc, role); !ok || len(ds) > 0 {
				t.Errorf("%s: done=%v as a principal holding only %s; denials %v", sc.name, ok, roleFile, names(ds))
			}
		}
	})
	var def struct {
		Actions []string
	}
	if err := json.Unmarshal(role, &def); err != nil {
		t.Fatal(err)
	}
	for _, action := range def.Actions {
		t.Run("without "+action, func(t *testing.T) {
			var m map[string]any
			_ = json.Unmarshal(role, &m)
			m["Name"] = "routekeeper-without-one"
			m["Actions"] = slices.DeleteFunc(slices.Clone(def.Actions), func(a string) bool { return a == action })
			less, _ := json.Marshal(m)
			var failed []string
			for _, sc := range scenarios {
				ok, ds := runRoleScenario(t, sc, less)
				named := slices.ContainsFunc(ds, func(d verdict.Denial) bool {
					return strings.EqualFold(d.Action, action) || slices.ContainsFunc(strings.Split(d.Action, ", "), func(a string) bool { return strings.EqualFold(a, action) })
				})
				if !ok && named {
					failed = append(failed, sc.name)
				}
			}
			if len(failed) == 0 {
				t.Errorf("no scenario fails with a finding for %s: the role does not need it, or routekeeper does not say so", action)
			} else {
				t.Logf("%s is needed by: %s", action, strings.Join(failed, "; "))
			}
		})
	}
}
