package scenario

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Config is a script's configuration: the `config` step.
type Config struct {
	// Desired is the main table's configuration and what the controller
	// remembers (Table, Previous, FollowedFrom, TableExisted); it has no
	// nodes.
	Desired verdict.Desired
	// Subnets are the guarded subnets.
	Subnets []string
	// Mirrors are the mirror tables (the configuration's mirrors:).
	Mirrors []Mirror
	// Memory names the keys of the controller's memory the step set
	// (kept, previous, followedFrom, existed): what a process remembers of
	// its earlier passes, which no configuration file can say.
	Memory []string
}

// Mirror is one mirror table, as the configuration's mirrors: lists it.
type Mirror struct {
	Table    string
	Subnets  []string
	Policy   assoc.Policy
	Restore  bool
	Create   bool
	Location string
}

// DefaultConfig is the configuration of a bare `config` step: cluster
// kthw with pod CIDRs 10.200.0.0/16, table rt (created when missing, in
// eastus), subnet nodes of network v.
func DefaultConfig() Config {
	return Config{
		Desired: verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: TableID("rt"),
			CreateAllowed: true, Location: "eastus"},
		Subnets: []string{SubnetID(DefaultVNet, "nodes")},
	}
}

// ParseConfig reads a `config` step: key=value arguments over
// DefaultConfig, and a `mirror` line per mirror table.
func ParseConfig(args, input []string) (Config, error) {
	c := DefaultConfig()
	w := &c.Desired
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return c, fmt.Errorf("config %q: want key=value", a)
		}
		var err error
		switch k {
		case "cluster":
			w.Cluster = v
		case "cidrs":
			w.ClusterCIDRs = nil
			for _, s := range strings.Split(v, ",") {
				p, perr := netip.ParsePrefix(s)
				if perr != nil {
					return c, perr
				}
				w.ClusterCIDRs = append(w.ClusterCIDRs, p)
			}
		case "table":
			w.Configured = TableID(v)
		case "subnets":
			c.Subnets = subnetList(v)
		case "policy":
			w.Policy = assoc.Policy(v)
		case "restore":
			w.Restore, err = strconv.ParseBool(v)
		case "create":
			w.CreateAllowed, err = strconv.ParseBool(v)
		case "mode":
			w.Mode = verdict.Mode(v)
		case "adopt":
			w.Adopt = plan.AdoptPolicy(v)
		case "claim":
			w.Claim, err = strconv.ParseBool(v)
		case "limit":
			w.Limit, err = strconv.Atoi(v)
		case "maxDeletes":
			w.MaxDeletes, err = strconv.Atoi(v)
		case "allowEmptySource":
			w.AllowEmptySource, err = strconv.ParseBool(v)
		case "confirmStandDown":
			w.ConfirmStandDown, err = strconv.ParseBool(v)
		case "kept":
			w.Table = TableID(v)
			c.Memory = append(c.Memory, k)
		case "previous":
			w.Previous = append(w.Previous, TableID(v))
			c.Memory = append(c.Memory, k)
		case "followedFrom":
			w.FollowedFrom = TableID(v)
			c.Memory = append(c.Memory, k)
		case "existed":
			w.TableExisted, err = strconv.ParseBool(v)
			c.Memory = append(c.Memory, k)
		default:
			return c, fmt.Errorf("config: unknown key %q", k)
		}
		if err != nil {
			return c, fmt.Errorf("config %s: %w", a, err)
		}
	}
	for _, l := range input {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] != "mirror" || len(f) < 3 {
			return c, fmt.Errorf("config line %q: want mirror TABLE SUBNET[,SUBNET] [policy=P] [restore=B] [create=B] [location=L]", l)
		}
		m := Mirror{Table: TableID(f[1]), Subnets: subnetList(f[2])}
		for _, x := range f[3:] {
			k, v, _ := strings.Cut(x, "=")
			var err error
			switch k {
			case "policy":
				m.Policy = assoc.Policy(v)
			case "restore":
				m.Restore, err = strconv.ParseBool(v)
			case "create":
				m.Create, err = strconv.ParseBool(v)
			case "location":
				m.Location = v
			default:
				return c, fmt.Errorf("config line %q: unknown %q", l, x)
			}
			if err != nil {
				return c, fmt.Errorf("config line %q: %w", l, err)
			}
		}
		c.Mirrors = append(c.Mirrors, m)
	}
	return c, nil
}

// subnetList is a comma-separated list of subnets (NAME or VNET/NAME).
func subnetList(v string) []string {
	var out []string
	if v != "" {
		for _, s := range strings.Split(v, ",") {
			out = append(out, subnetRef(s))
		}
	}
	return out
}

// Controller is the main table's controller configuration, as
// app.BaseControllerConfig makes it from a configuration file.
func (c Config) Controller() controller.Config {
	d := c.Desired
	return controller.Config{
		Cluster: d.Cluster, ClusterCIDRs: d.ClusterCIDRs, RouteLimit: d.Limit, RouteTableID: d.Configured,
		Adopt: d.Adopt, ClaimTable: d.Claim, MaxDeletes: d.MaxDeletes, AllowEmptySource: d.AllowEmptySource, ConfirmStandDown: d.ConfirmStandDown,
		Location: d.Location, CreateTable: d.CreateAllowed, Subnets: c.Subnets, Mode: d.Mode,
		Policy: d.Policy, Restore: d.Restore,
	}
}

// MirrorDesired is what mirror i is judged against with nodes: the
// Desired of a controller made with controller.MirrorConfig from the main
// table's configuration, as run makes the mirrors' controllers.
func (c Config) MirrorDesired(i int, nodes []source.Node) verdict.Desired {
	m := c.Mirrors[i]
	mc := controller.MirrorConfig(c.Controller(), controller.Mirror{RouteTableID: m.Table, Subnets: m.Subnets,
		Policy: m.Policy, Restore: m.Restore, CreateTable: m.Create, Location: m.Location})
	return controller.New(mc, nil, nil, nil).Desired(nodes)
}
