package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/migrate"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

const kthwNewTable = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes-v2"

// newTableFor creates the table to migrate to in the example's fabric, as
// Terraform would, with routes of its own.
func newTableFor(t *testing.T, cfg string, routes ...*armnetwork.Route) {
	t.Helper()
	_, tables := sdkRoutes(t, cfg)
	ctx := context.Background()
	p, err := tables.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes-v2", armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Properties: &armnetwork.RouteTablePropertiesFormat{Routes: routes}}, nil)
	fabrictest.MustPoll(t, p, err)
}

func TestMigrate(t *testing.T) {
	cfg := ranKTHW(t)
	newTableFor(t, cfg, &armnetwork.Route{Name: to.Ptr("to-onprem"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("192.168.0.0/16"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualNetworkGateway)}})

	// The plan, from the live state: exit 3, nothing written.
	res := wantExit(t, ExitFindings, "migrate", "--to", kthwNewTable, "--delete-old", "--dry-run", "--config", cfg)
	golden(t, filepath.Join("testdata", "migrate", "dry-run.golden"), []byte(res.stdout))
	res = runCLI(t, nil, "", "migrate", "--to", kthwNewTable, "--dry-run", "-o", "json", "--config", cfg)
	var out struct {
		DryRun, Complete bool
		Writes           int
		Steps            []migrate.Step
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("dry run JSON: %v\n%s", err, res.stdout)
	}
	if !out.DryRun || out.Complete || out.Writes != 0 || len(out.Steps) != 6 || out.Steps[1].Status != migrate.Pending {
		t.Errorf("dry run JSON: %+v", out)
	}

	// The migration: exit 0, every step applied, four writes.
	res = wantExit(t, ExitOK, "migrate", "--to", kthwNewTable, "--delete-old", "--config", cfg)
	golden(t, filepath.Join("testdata", "migrate", "applied.golden"), []byte(res.stdout))
	if !strings.Contains(res.stderr, "migration complete") || !strings.Contains(res.stderr, "writes=4") {
		t.Errorf("stderr does not say the migration is complete with 4 writes:\n%s", res.stderr)
	}

	// Again: nothing to do, exit 0 with and without --dry-run.
	for _, args := range [][]string{{"--dry-run"}, nil} {
		res = runCLI(t, nil, "", append([]string{"migrate", "--to", kthwNewTable, "--delete-old", "--config", cfg}, args...)...)
		if res.code != ExitOK || strings.Contains(res.stdout, "pending") {
			t.Errorf("migrate %v after the migration: exit %d\n%s%s", args, res.code, res.stdout, res.stderr)
		}
	}

	// run, still configured with the deleted old table, keeps the new one:
	// no write, and no resurrected old table.
	res = runCLI(t, nil, "", "run", "--once", "--config", cfg)
	if res.code != ExitOK || reconcileWrites(t, res.stderr) != 0 {
		t.Fatalf("run after the migration: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "to-onprem") || !strings.Contains(res.stdout, "worker-0____102000024") {
		t.Errorf("run does not print the new table:\n%s", res.stdout)
	}
	_, tables := sdkRoutes(t, cfg)
	if _, err := tables.Get(context.Background(), "kubernetes", "kubernetes-routes", nil); err == nil {
		t.Error("the old table exists again")
	}
}

func TestMigrateRefusesConflicts(t *testing.T) {
	cfg := ranKTHW(t)
	newTableFor(t, cfg, &armnetwork.Route{Name: to.Ptr("hand-made"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.200.1.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.99")}})
	res := wantExit(t, ExitError, "migrate", "--to", kthwNewTable, "--config", cfg)
	golden(t, filepath.Join("testdata", "migrate", "refused.golden"), []byte(res.stdout))
	if !strings.Contains(res.stderr, "refused") || !strings.Contains(res.stderr, "nothing was written") {
		t.Errorf("stderr: %s", res.stderr)
	}
}

func TestMigrateUsage(t *testing.T) {
	cfg := kthw(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--config", cfg}, "flag --to"},
		{[]string{"migrate", "--config", cfg, "--to", strings.ToUpper("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes")}, "already uses"},
	} {
		res := runCLI(t, nil, "", tc.args...)
		if res.code != ExitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, res.code, res.stderr, tc.want)
		}
	}
}
