// Package armaz is the end-to-end test of ARM templates against the fabric:
// Debian's az deploys the post-mortems' templates of examples/kthw/arm to
// `fabric serve --tls` (Microsoft.Resources/deployments) while `routekeeper
// run` keeps the Hard Way cluster's pod routes: the hazards really detach the
// route table, delete the pod routes and, in Complete mode, the table, and
// routekeeper repairs them (measured); each fix keeps routing through a
// redeploy; `az deployment group what-if` fed to `routekeeper iac check`
// flags each hazard (exit 3) and passes each fix (exit 0); what-if, validate,
// list, show, operation list and delete answer as Azure's do. The what-ifs
// are recorded for iac check's tests (internal/iac/testdata/whatif, with
// ROUTEKEEPER_RECORD_WHATIF=1). It runs with ROUTEKEEPER_E2E_AZ=1
// (scripts/test.sh installs azure-cli then) and is skipped otherwise.
package armaz

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// subnetTable is the route table the node subnet uses, as az shows it.
const subnetTable = `az network vnet subnet show -g kubernetes --vnet-name kubernetes-vnet -n kubernetes-subnet --query routeTable.id -o tsv`

func TestARMTemplatesOfThePostMortems(t *testing.T) {
	l := startLab(t)

	// The network as the post-mortems' users write it: the first deployment
	// creates it; routekeeper then creates its table, writes the pod routes
	// and associates it.
	l.az(t, `az group create -n kubernetes -l eastus -o none
az deployment group create -g kubernetes -n network -f vnet-inline-subnet.json -o none`)
	l.startRoutekeeper(t)
	l.watch.WaitOK(t, 60*time.Second, "after routekeeper's first pass")

	// Hazard 1: the same template deployed again detaches the table.
	wi := l.whatIf(t, "-f vnet-inline-subnet.json")
	l.fixture(t, "detach-inline-subnet", wi)
	l.iacCheck(t, "detach-inline-subnet", wi, "vnet-inline-subnet-detaches", "kubernetes-subnet", "kubernetes-routes", "10.200.0.0/24", "10.200.1.0/24", "virtualNetworks/kubernetes-vnet")
	l.measure(t, "hazard 1: redeploy of the VNet with its subnet inline", true, func() {
		l.az(t, `az deployment group create -g kubernetes -n network -f vnet-inline-subnet.json -o none`)
	})

	// Fix 1: the subnet's table read first and passed in.
	const withTable = `-f fix-route-table-parameter.json -p routeTableId="$(` + subnetTable + `)"`
	wi = l.whatIf(t, withTable)
	l.fixture(t, "fix-route-table-parameter", wi)
	l.iacCheck(t, "fix-route-table-parameter", wi, "")
	l.measure(t, "fix 1: the route table passed in as a parameter", false, func() {
		l.az(t, `az deployment group create -g kubernetes -n network `+withTable+` -o none`)
	})

	// Fix 2: a nested template reads it with reference().
	wi = l.whatIf(t, "-f fix-nested-reference.json")
	l.fixture(t, "fix-nested-reference", wi)
	l.iacCheck(t, "fix-nested-reference", wi, "")
	l.measure(t, "fix 2: the nested template's reference()", false, func() {
		l.az(t, `az deployment group create -g kubernetes -n network -f fix-nested-reference.json -o none`)
	})

	// Hazard 2: a route table with its routes inline deletes the pod
	// routes; routekeeper writes them back and keeps the template's own.
	wi = l.whatIf(t, "-f route-table-inline-routes.json")
	l.fixture(t, "inline-routes", wi)
	l.iacCheck(t, "inline-routes", wi, "inline-routes-delete-pod-routes", "kubernetes-routes", "worker-0____102000024", "worker-1____102001024")
	l.measure(t, "hazard 2: a route table with inline routes", true, func() {
		l.az(t, `az deployment group create -g kubernetes -n routes -f route-table-inline-routes.json -o none`)
	})
	if r := l.watch.Now(); !r.Egress {
		t.Errorf("after routekeeper's repair the template's own route is gone: %v", r)
	}

	// Fix 3: the route as a child resource of its own.
	wi = l.whatIf(t, "-f fix-route-child-resource.json")
	l.fixture(t, "fix-route-child-resource", wi)
	l.iacCheck(t, "fix-route-child-resource", wi, "")
	l.measure(t, "fix 3: the route as a child resource", false, func() {
		l.az(t, `az deployment group create -g kubernetes -n egress -f fix-route-child-resource.json -o none`)
	})

	// Complete mode: the VNet PUT drops the association, then the table,
	// which the template does not declare, is deleted; routekeeper makes
	// it again (create: true), fills and associates it.
	wi = l.whatIf(t, "--mode Complete -f vnet-inline-subnet.json")
	l.fixture(t, "complete-mode", wi)
	l.iacCheck(t, "complete-mode", wi, "route-table-destroyed", "vnet-inline-subnet-detaches", "kubernetes-routes")
	l.measure(t, "Complete mode: the VNet with its subnet inline, the table undeclared", true, func() {
		if _, stderr, err := l.azMay(t, `az deployment group create -g kubernetes -n network --mode Complete -f vnet-inline-subnet.json -o none`); err != nil {
			// routekeeper's guard may re-associate the table between the
			// VNet PUT and the table's DELETE, which ARM then refuses.
			if !strings.Contains(stderr, "InUseRouteTableCannotBeDeleted") {
				t.Errorf("Complete mode deployment: %v\n%s", err, stderr)
			}
			l.results = append(l.results, "Complete mode: the table's DELETE was refused (routekeeper re-associated it first)")
		}
	})

	l.checkDeploymentCommands(t)
	t.Logf("measured:\n  %s", strings.Join(l.results, "\n  "))
	for _, line := range strings.Split(l.fabricLog.String(), "\n") {
		if strings.Contains(line, "unknown request") || strings.Contains(line, "internal error") {
			t.Errorf("the fabric: %s", line)
		}
	}
}

// measure runs a deployment while the state is watched: with breaks it
// expects routing to break and routekeeper to repair it within two guard
// cycles of the break; without, no break at all.
func (l *lab) measure(t *testing.T, what string, breaks bool, deploy func()) {
	t.Helper()
	l.watch.WaitOK(t, 60*time.Second, "before "+what)
	start := time.Now()
	deploy()
	deployed := time.Now()
	l.watch.WaitOK(t, 60*time.Second, what)
	outages := l.watch.OutagesSince(start)
	switch {
	case breaks && len(outages) == 0:
		t.Fatalf("%s: the deployment did not break pod routing", what)
	case breaks:
		o := outages[0]
		l.results = append(l.results, fmt.Sprintf("%s: az took %s; broken (%v) %s after it started, repaired by routekeeper %s after the break (%d break(s))",
			what, deployed.Sub(start).Round(10*time.Millisecond), o.What, o.Broken.Sub(start).Round(time.Millisecond), o.Duration().Round(time.Millisecond), len(outages)))
		if o.Duration() > 3*time.Second {
			t.Errorf("%s: repaired %s after the break; want within a guard cycle (1 s) and the operations", what, o.Duration())
		}
	case len(outages) > 0:
		t.Errorf("%s: the fix's deployment broke pod routing: %v for %s", what, outages[0].What, outages[0].Duration())
	default:
		l.results = append(l.results, fmt.Sprintf("%s: az took %s, routing never broken", what, deployed.Sub(start).Round(10*time.Millisecond)))
	}
}

// checkDeploymentCommands: list, show, operation list, validate and
// delete answer as Azure's do.
func (l *lab) checkDeploymentCommands(t *testing.T) {
	t.Helper()
	names := strings.Fields(l.az(t, `az deployment group list -g kubernetes --query "[].name" -o tsv`))
	for _, want := range []string{"network", "routes", "egress", "current-subnet"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("az deployment group list: %v, want %s among them", names, want)
		}
	}
	if s := strings.TrimSpace(l.az(t, `az deployment group show -g kubernetes -n routes --query properties.provisioningState -o tsv`)); s != "Succeeded" {
		t.Errorf("az deployment group show: provisioningState %q", s)
	}
	var ops []struct {
		Properties struct {
			ProvisioningOperation, ProvisioningState string
			TargetResource                           struct{ ResourceName string }
		}
	}
	if err := json.Unmarshal([]byte(l.az(t, `az deployment operation group list -g kubernetes -n routes -o json`)), &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 || ops[0].Properties.TargetResource.ResourceName != "kubernetes-routes" || ops[0].Properties.ProvisioningState != "Succeeded" {
		t.Errorf("az deployment operation group list: %+v", ops)
	}
	// validate: a template ARM refuses is InvalidTemplate, with where.
	circular := filepath.Join(l.dir, "circular.json")
	if err := os.WriteFile(circular, []byte(circularTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := l.azMay(t, `az deployment group validate -g kubernetes -f `+circular)
	if err == nil || !strings.Contains(stderr, "InvalidTemplate") || !strings.Contains(stderr, "Circular dependency detected on resource") {
		t.Errorf("az deployment group validate of a template with a circular dependency: %v\n%s", err, stderr)
	}
	if out := l.az(t, `az deployment group validate -g kubernetes -f vnet-inline-subnet.json --query properties.provisioningState -o tsv`); strings.TrimSpace(out) != "Succeeded" {
		t.Errorf("az deployment group validate: %q", out)
	}
	l.az(t, `az deployment group delete -g kubernetes -n egress`)
	if _, _, err := l.azMay(t, `az deployment group show -g kubernetes -n egress`); err == nil {
		t.Error("az deployment group show after delete: still there")
	}
}

// circularTemplate has two route tables that depend on each other.
const circularTemplate = `{
  "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
  "contentVersion": "1.0.0.0",
  "resources": [
    {"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01", "name": "a", "location": "eastus", "dependsOn": ["b"]},
    {"type": "Microsoft.Network/routeTables", "apiVersion": "2023-09-01", "name": "b", "location": "eastus", "dependsOn": ["a"]}
  ]
}
`
