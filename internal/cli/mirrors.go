package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/doctor"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/output"
)

// mirrors returns the configured mirror tables (config `mirrors:`) for the
// controller; a mirror to create without a location goes where its first
// subnet's network is, unless the main table's location is known.
func (a *shell) mirrors(ctx context.Context, cfg *config.Config, c *azure.Client, main controller.Config) ([]controller.Mirror, error) {
	out := make([]controller.Mirror, 0, len(cfg.Mirrors))
	for i, m := range cfg.Mirrors {
		cm := mirrorOf(m)
		if cm.CreateTable && cm.Location == "" && main.Location == "" && len(m.Subnets) > 0 {
			vnetID, err := armid.VNetOfSubnet(m.Subnets[0])
			if err != nil {
				return nil, usageErrorf("mirrors[%d].subnets[0]: %w", i, err)
			}
			vnet, err := c.GetVirtualNetwork(ctx, vnetID)
			if err != nil {
				return nil, fmt.Errorf("finding the location for mirror route table %s: %w", m.RouteTable, err)
			}
			cm.Location = vnet.Location
		}
		out = append(out, cm)
	}
	return out, nil
}

// mirrorOf is a mirror of the configuration as written.
func mirrorOf(m config.Mirror) controller.Mirror {
	return controller.Mirror{
		RouteTableID: m.RouteTable, Subnets: m.Subnets,
		Policy: m.Association.Policy, Restore: m.Association.Restore,
		CreateTable: m.Create, Location: m.Location,
	}
}

// newSet builds the controllers of cfg: the main table's and one per
// mirror, on one node source. reporters go to the main controller only
// (a node's status reflects the main table).
func (a *shell) newSet(ctx context.Context, cfg *config.Config, c *azure.Client, reporters ...controller.Reporter) (*controller.Set, error) {
	ccfg, src, err := a.controllerParts(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	ms, err := a.mirrors(ctx, cfg, c, ccfg)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return &controller.Set{Main: controller.New(ccfg, c, src, a.log, reporters...)}, nil
	}
	shared := controller.Share(src, a.log)
	set := &controller.Set{Main: controller.New(ccfg, c, shared, a.log, reporters...)}
	for _, m := range ms {
		set.Mirrors = append(set.Mirrors, controller.New(controller.MirrorConfig(ccfg, m), c, shared, a.log.With("mirror", controller.TableName(m.RouteTableID))))
	}
	return set, nil
}

// sessionSet opens cmd's session (configuration and cloud client) and
// builds the set of controllers of the configuration on it. The caller
// must call closeConn.
func (a *shell) sessionSet(cmd *cobra.Command, cf *configFlags, o connectOptions) (cfg *config.Config, set *controller.Set, closeConn func(), err error) {
	cfg, conn, err := a.session(cmd, cf, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if set, err = a.newSet(cmd.Context(), cfg, conn.client); err != nil {
		conn.close()
		return nil, nil, nil, err
	}
	return cfg, set, conn.close, nil
}

// mirrorErr is the first mirror's error, naming the mirror.
func mirrorErr(results []*controller.Result) error {
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("mirror route table %s: %w", controller.TableName(r.TableID), r.Err))
		}
	}
	return errors.Join(errs...)
}

// mirrorFindings reports whether a mirror's pass leaves nodes without
// their route in it or a subnet off it.
func mirrorFindings(results []*controller.Result) bool {
	for _, r := range results {
		if r.Unrouted() > 0 || r.AssociationProblems() > 0 {
			return true
		}
	}
	return false
}

// logMirrors logs each mirror's summary line, with its table.
func (a *shell) logMirrors(results []*controller.Result) {
	for _, r := range results {
		log := a.log.With("mirror", controller.TableName(r.TableID))
		for name, nr := range r.Nodes {
			if !nr.Routed {
				log.Warn("node not routed in the mirror table", "node", name, "reason", nr.Reason, "message", nr.Message)
			}
		}
		if r.Err != nil {
			log.Error(r.Summary(), "err", r.Err)
			continue
		}
		log.Info(r.Summary())
	}
}

// mirrorDiffs are the diffs of the mirrors' dry runs (never in observe
// mode: routekeeper writes the mirrors).
func mirrorDiffs(results []*controller.Result) []diffOutput {
	out := make([]diffOutput, 0, len(results))
	for _, r := range results {
		out = append(out, newDiffOutput(r, false))
	}
	return out
}

// printMirrorDiffs prints each mirror's diff after the main table's, as a
// table of its own under a heading.
func (a *shell) printMirrorDiffs(ds []diffOutput) error {
	for _, d := range ds {
		if !d.pending() && d.Error == "" {
			if _, err := fmt.Fprintf(a.stdout, "\nMirror route table %s: no changes.\n", controller.TableName(d.RouteTable)); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(a.stdout, "\nMirror route table %s:\n", controller.TableName(d.RouteTable)); err != nil {
			return err
		}
		if err := a.print(d, func() output.Table { return diffTable(d) }); err != nil {
			return err
		}
		if d.Error != "" {
			if _, err := fmt.Fprintf(a.stdout, "error: %s\n", d.Error); err != nil {
				return err
			}
		}
	}
	return nil
}

// mirrorDoctor turns each mirror's dry run into doctor findings, their
// messages starting with the mirror's table, to add to the main report.
func mirrorDoctor(cfg *config.Config, results []*controller.Result) []finding.Finding {
	var out []finding.Finding
	for i, r := range results {
		if i >= len(cfg.Mirrors) {
			break
		}
		m := cfg.Mirrors[i]
		if r.Verdict == nil {
			out = append(out, finding.Finding{Severity: finding.Error, Rule: doctor.RuleNodes, Resource: m.RouteTable,
				Message: fmt.Sprintf("mirror route table %s: %v", controller.TableName(m.RouteTable), r.Err)})
			continue
		}
		rep := doctor.Check(doctor.Input{
			Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs, Limit: cfg.RouteTable.RouteLimit,
			TableID: m.RouteTable, Subnets: m.Subnets,
		}, r.Verdict)
		for _, f := range rep.Findings {
			f.Message = "mirror route table " + controller.TableName(m.RouteTable) + ": " + f.Message
			out = append(out, f)
		}
	}
	return out
}

// selectTable returns the controller configuration of the table `routes
// list --table` names: "" or the main table (by name or ID), or a mirror
// (by name or ID).
func selectTable(cfg *config.Config, main controller.Config, ms []controller.Mirror, table string) (controller.Config, error) {
	if table == "" || matchesTable(cfg.RouteTable.ID, table) {
		return main, nil
	}
	var names []string
	for _, m := range ms {
		if matchesTable(m.RouteTableID, table) {
			return controller.MirrorConfig(main, m), nil
		}
		names = append(names, controller.TableName(m.RouteTableID))
	}
	known := controller.TableName(cfg.RouteTable.ID) + " (the main table)"
	if len(names) > 0 {
		known += ", " + strings.Join(names, ", ")
	}
	return main, usageErrorf("--table %q: not a route table of the configuration; want one of %s, by name or ARM ID", table, known)
}

func matchesTable(id, sel string) bool { return armid.Matches(id, sel) }

// refuseMirrorTarget refuses `migrate --to` a mirror table: the node
// subnets would get the mirror's own routes (an App Gateway table's
// 0.0.0.0/0 -> Internet), and the mirror's controller would keep writing
// it as a mirror.
func refuseMirrorTarget(cfg *config.Config, to string) error {
	for i, m := range cfg.Mirrors {
		if matchesTable(m.RouteTable, to) && strings.HasPrefix(to, "/") {
			return usageErrorf("migrate --to %s: that table is mirrors[%d].routeTable, a mirror kept for subnets %s with routes of its own; the node subnets must not move onto it. Migrate to a new table, or remove the mirror from the configuration first",
				to, i, strings.Join(m.Subnets, ", "))
		}
	}
	return nil
}
