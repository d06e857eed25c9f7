package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/iac"
	"github.com/routekeeper/routekeeper/internal/observe"
)

func (a *shell) newIacCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iac",
		Short: "Infrastructure as code: check a Terraform/OpenTofu plan before it is applied",
	}
	var (
		cf      configFlags
		offline bool
	)
	check := &cobra.Command{
		Use:   "check PLAN.json",
		Short: "Tell, before the apply, every planned change that would break pod routing",
		Long: `Read the JSON of a plan (tofu show -json PLANFILE, or terraform show -json
PLANFILE; "-" reads stdin) and report every planned change that would break
pod routing: a node subnet whose route table goes away (a virtual network's
inline subnet blocks without route_table_id, an azurerm_subnet, an
azurerm_subnet_route_table_association destroyed), routekeeper's table
replaced or destroyed, routekeeper's routes removed by a table with inline
routes, a node subnet's prefix changed under its nodes, an address space
that overlaps the pod CIDRs. Each finding names the resource address, the
subnet, the table, the nodes that lose their route and the HCL that avoids
it. Values known only after the apply are unknown, not removals.

The plan is applied, in memory, to the cloud as it stands — read live, as
run reads it, or with --offline (or when the cloud cannot be read) rebuilt
from the plan's own before-values — and both are judged by run's verdict.

Output: -o table (the default), json, yaml, tsv, or sarif (SARIF 2.1.0, for
code-scanning UIs). Exit status: 0 when the plan is safe, 3 with findings, 2
for a plan that is not one (or bad input), 1 on errors.`,
		Example: `  tofu plan -out plan.tfplan && tofu show -json plan.tfplan > plan.json
  routekeeper iac check plan.json --config routekeeper.yaml
  routekeeper iac check plan.json --config routekeeper.yaml -o sarif > routekeeper.sarif`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, err := readPlanFile(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			p, err := iac.ParsePlan(b)
			if err != nil {
				return usageErrorf("%s: %w", args[0], err)
			}
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			in, notes, err := a.iacInput(cmd, cfg, offline)
			if err != nil {
				return err
			}
			rep, err := iac.Check(ctx, p, in)
			if errors.Is(err, iac.ErrBadValue) {
				return usageErrorf("%s: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			rep.Notes = append(notes, rep.Notes...)
			if err := a.printIac(rep, args[0]); err != nil {
				return err
			}
			if len(rep.Findings) > 0 {
				return findings()
			}
			return nil
		},
	}
	check.Flags().BoolVar(&offline, "offline", false, "do not read the cloud: judge the plan against its own before-values (what OpenTofu refreshed)")
	cf.register(check.Flags(), diffSettings)
	cmd.AddCommand(check)
	return cmd
}

func readPlanFile(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading the plan from stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, usageErrorf("plan file: %w", err)
	}
	return b, nil
}

// iacInput is what the plan is judged with: the configuration, the nodes
// and, unless offline or unreachable, the cloud as it stands (run's
// observation, with the networks and the tables every subnet uses), for
// the main table and each mirror. The notes say what was not read when it
// was wanted: the cloud, or a mirror table (the plan is then not checked
// against that mirror).
func (a *shell) iacInput(cmd *cobra.Command, cfg *config.Config, offline bool) (iac.Input, []string, error) {
	ctx := cmd.Context()
	if !offline {
		conn, err := a.connect(ctx, cfg, connectOptions{readOnly: true})
		if err == nil {
			defer conn.close()
			set, err := a.newSet(ctx, cfg, conn.client)
			if err != nil {
				return iac.Input{}, nil, err
			}
			res := set.Main.DryRun(ctx, observe.Scope{Routing: true})
			if res.Verdict != nil && res.Verdict.Decision.TableErr == nil {
				nodes := res.SourceNodes()
				in := iac.Input{Want: set.Main.Desired(nodes), Subnets: cfg.Subnets, Live: res.Observation}
				var notes []string
				for i, m := range set.Mirrors {
					mr := m.DryRun(ctx, observe.Scope{Routing: true})
					if mr.Verdict == nil || mr.Verdict.Decision.TableErr != nil {
						// Judged without its table, the mirror would look
						// unassociated now and after: no finding, wrongly.
						a.log.Warn("a mirror route table could not be read: the plan is not checked against it", "routeTable", cfg.Mirrors[i].RouteTable, "err", mr.Err)
						notes = append(notes, fmt.Sprintf("mirror route table %s could not be read (%v): the plan was not checked against it", shortID(cfg.Mirrors[i].RouteTable), mr.Err))
						continue
					}
					in.Mirrors = append(in.Mirrors, iac.Mirror{Want: m.Desired(nodes), Subnets: cfg.Mirrors[i].Subnets, Live: mr.Observation})
				}
				return in, notes, nil
			}
			err = res.Err
		}
		var ee *exitError
		if errors.As(err, &ee) && ee.code == ExitUsage {
			return iac.Input{}, nil, err
		}
		a.log.Warn("the cloud could not be read: the plan is judged against its own before-values", "err", err)
		note := "the cloud could not be read (" + err.Error() + "): the plan was judged against its own before-values"
		in, err := a.iacOffline(cmd, cfg)
		return in, []string{note}, err
	}
	in, err := a.iacOffline(cmd, cfg)
	return in, nil, err
}

// iacOffline is what the plan is judged with when the cloud is not read:
// the configuration as written and the nodes.
func (a *shell) iacOffline(cmd *cobra.Command, cfg *config.Config) (iac.Input, error) {
	ctx := cmd.Context()
	src, err := a.nodeSource(ctx, cfg, nil)
	if err != nil {
		return iac.Input{}, err
	}
	nodes, err := src.Nodes(ctx)
	if err != nil {
		return iac.Input{}, fmt.Errorf("reading the nodes: %w", err)
	}
	ccfg := baseControllerConfig(cfg)
	in := iac.Input{Want: controller.New(ccfg, nil, nil, a.log).Desired(nodes), Subnets: cfg.Subnets}
	for _, m := range cfg.Mirrors {
		mc := controller.MirrorConfig(ccfg, mirrorOf(m))
		in.Mirrors = append(in.Mirrors, iac.Mirror{Want: controller.New(mc, nil, nil, a.log).Desired(nodes), Subnets: m.Subnets})
	}
	return in, nil
}

// printIac prints the report in the chosen format.
func (a *shell) printIac(rep *iac.Report, planFile string) error {
	if a.humanOutput() && len(rep.Findings) == 0 {
		_, err := fmt.Fprintf(a.stdout, "No findings: the plan keeps every node's route and every node subnet on its table (%d nodes).\n", rep.Nodes)
		a.printNotes(rep.Notes)
		return err
	}
	tool := finding.Tool{Name: "routekeeper iac check", InformationURI: docsURL("iac.md"), RuleText: iac.RuleText}
	if err := a.printFindings(findingsOutput{v: rep, findings: rep.Findings, tool: tool, artifact: planFile}); err != nil {
		return err
	}
	if a.humanOutput() {
		a.printNotes(rep.Notes)
	}
	return nil
}

func (a *shell) printNotes(notes []string) {
	for _, n := range notes {
		fmt.Fprintf(a.stdout, "\nNote: %s\n", n)
	}
}
