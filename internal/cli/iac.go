package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/iac"
	"github.com/routekeeper/routekeeper/internal/output"
)

func (a *shell) newIacCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iac",
		Short: "Infrastructure as code: check a Terraform/OpenTofu plan or an ARM what-if before it is applied",
	}
	var (
		cf      configFlags
		offline bool
	)
	check := &cobra.Command{
		Use:   "check PLAN.json|WHATIF.json",
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

It reads ARM templates' (and Bicep's) changes the same way: the JSON of a
what-if (az deployment group what-if --no-pretty-print -o json, the REST
API's result, or PowerShell's -WhatIfResultFormat FullResourcePayloads),
told from a plan by its shape. The findings name the resource by its ID
and give the fix in ARM JSON; a value what-if left as an expression
("[reference(...)]") is unknown, not a removal.

The plan is applied, in memory, to the cloud as it stands — read live, as
run reads it, or with --offline (or when the cloud cannot be read) rebuilt
from the plan's own before-values — and both are judged by run's verdict.

Output: -o table (the default), json, yaml, tsv, or sarif (SARIF 2.1.0, for
code-scanning UIs). Exit status: 0 when the plan is safe, 3 with findings, 2
for a plan or what-if that is not one (or bad input), 1 on errors.`,
		Example: `  tofu plan -out plan.tfplan && tofu show -json plan.tfplan > plan.json
  routekeeper iac check plan.json --config routekeeper.yaml
  az deployment group what-if -g kubernetes -f network.json --no-pretty-print -o json > whatif.json
  routekeeper iac check whatif.json --config routekeeper.yaml
  routekeeper iac check plan.json --config routekeeper.yaml -o sarif > routekeeper.sarif`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, err := readPlanFile(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			p, err := iac.Parse(b)
			if err != nil {
				return usageErrorf("%s: %w", args[0], err)
			}
			cfg, err := a.loadConfig(cmd, &cf)
			if err != nil {
				return err
			}
			rep, err := a.app.IacCheck(ctx, cfg, p, offline)
			if errors.Is(err, iac.ErrBadValue) {
				return usageErrorf("%s: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			if err := a.printIac(rep, args[0]); err != nil {
				return err
			}
			if rep.Problems() > 0 {
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

// printIac prints the report in the chosen format.
func (a *shell) printIac(rep *iac.Report, planFile string) error {
	if a.humanOutput() && len(rep.Findings) == 0 {
		_, err := fmt.Fprintf(a.stdout, "No findings: the plan keeps every node's route and every node subnet on its table (%d nodes).\n", rep.Nodes)
		a.printRemaining(rep.Remaining)
		a.printNotes(rep.Notes)
		return err
	}
	tool := finding.Tool{Name: "routekeeper iac check", InformationURI: docsURL("iac.md"), RuleText: iac.RuleText}
	if err := a.printFindings(findingsOutput{v: rep, findings: rep.Findings, tool: tool, artifact: planFile}); err != nil {
		return err
	}
	if a.humanOutput() {
		a.printRemaining(rep.Remaining)
		a.printNotes(rep.Notes)
	}
	return nil
}

func (a *shell) printNotes(notes []string) {
	for _, n := range notes {
		fmt.Fprintf(a.stdout, "\nNote: %s\n", n)
	}
}

// printRemaining prints the findings of the cloud as it stands that the
// apply leaves in place: the plan is not their cause, but they still make
// the exit status 3.
func (a *shell) printRemaining(fs []finding.Finding) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "\nThe apply leaves %d finding(s) of the cloud as it stands (exit status 3; routekeeper doctor explains each):\n", len(fs))
	header, rows, _ := finding.Table(fs, armid.Short)
	_ = output.WriteTable(a.stdout, output.Table{Header: header, Rows: rows})
}
