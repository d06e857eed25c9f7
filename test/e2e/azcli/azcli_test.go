// Package azcli is the end-to-end test of the Azure CLI against the fabric:
// Debian's az walks Kubernetes the Hard Way's pod network routes lab
// verbatim against `fabric serve --tls`, then routekeeper meets an IaC
// redeploy through the same served fabric. It runs with
// ROUTEKEEPER_E2E_AZ=1 (scripts/test.sh installs azure-cli then) and is
// skipped otherwise.
package azcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/cli"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// The lab's commands, verbatim: the network of Kubernetes the Hard Way's
// "Provisioning Compute Resources", then its "Provisioning Pod Network
// Routes".
const (
	labNetwork = `az group create -n kubernetes -l eastus
az network vnet create -g kubernetes \
  -n kubernetes-vnet \
  --address-prefix 10.240.0.0/24 \
  --subnet-name kubernetes-subnet
`
	labRoutes = `az network route-table create -g kubernetes -n kubernetes-routes

az network vnet subnet update -g kubernetes \
  -n kubernetes-subnet \
  --vnet-name kubernetes-vnet \
  --route-table kubernetes-routes
  
for i in 0 1; do
az network route-table route create -g kubernetes \
  -n kubernetes-route-10-200-${i}-0-24 \
  --route-table-name kubernetes-routes \
  --address-prefix 10.200.${i}.0/24 \
  --next-hop-ip-address 10.240.0.2${i} \
  --next-hop-type VirtualAppliance
done
`
	labList = `az network route-table route list -g kubernetes --route-table-name kubernetes-routes -o table`
	// labTable is what the lab shows the list printing.
	labTable = `AddressPrefix    Name                            NextHopIpAddress    NextHopType       ProvisioningState    ResourceGroup
---------------  ------------------------------  ------------------  ----------------  -------------------  ---------------
10.200.0.0/24    kubernetes-route-10-200-0-0-24  10.240.0.20         VirtualAppliance  Succeeded            kubernetes
10.200.1.0/24    kubernetes-route-10-200-1-0-24  10.240.0.21         VirtualAppliance  Succeeded            kubernetes
`
	subnetTable = `az network vnet subnet show -g kubernetes --vnet-name kubernetes-vnet -n kubernetes-subnet --query routeTable.id -o tsv`
)

var listening = regexp.MustCompile(`routekeeper fabric listening on (https://\S+)`)

// routekeeper runs the CLI in process.
func routekeeper(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAzureCLIHardWayLab(t *testing.T) {
	endpoint, dir, az := startFabricAz(t)

	az(labNetwork)
	az(labRoutes)
	got := az(labList)
	compareTables(t, got, labTable)
	if rt := strings.TrimSpace(az(subnetTable)); !strings.HasSuffix(rt, "/routeTables/kubernetes-routes") {
		t.Fatalf("after the lab the subnet's route table is %q", rt)
	}
	if n := strings.TrimSpace(az(`az network vnet show -g kubernetes -n kubernetes-vnet --query "length(subnets)"`)); n != "1" {
		t.Errorf("length(subnets) = %q, want 1", n)
	}

	// routekeeper against the same served fabric: the lab's hand-made
	// routes are not its own, so it reports them and changes nothing.
	cfg := kthwConfig(t, dir)
	t.Setenv("ROUTEKEEPER_ENDPOINT", endpoint)
	code, _, stderr := routekeeper(t, "run", "--once", "--config", cfg)
	if code != cli.ExitOK && code != cli.ExitFindings || !strings.Contains(stderr, "kubernetes-route-10-200-0-0-24") {
		t.Fatalf("routekeeper run --endpoint = %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "kthw", "fabric.db")); err == nil {
		t.Error("routekeeper run used the config's state file instead of the endpoint")
	}

	// The IaC redeploy that detaches the table: az sees it gone.
	if code, out, stderr := routekeeper(t, "fabric", "incident", "redeploy", "kubernetes-vnet"); code != cli.ExitOK || !strings.Contains(out, "kubernetes-routes dropped") {
		t.Fatalf("fabric incident redeploy = %d:\n%s\n%s", code, out, stderr)
	}
	if rt := strings.TrimSpace(az(subnetTable)); rt != "" {
		t.Fatalf("after the redeploy az shows route table %q, want none", rt)
	}
	// routekeeper's guard puts it back, and az sees that too.
	code, _, stderr = routekeeper(t, "run", "--once", "--config", cfg)
	if code != cli.ExitOK && code != cli.ExitFindings || !strings.Contains(stderr, "subnets repaired=1") {
		t.Fatalf("routekeeper run after the redeploy = %d:\n%s", code, stderr)
	}
	if rt := strings.TrimSpace(az(subnetTable)); !strings.HasSuffix(rt, "/routeTables/kubernetes-routes") {
		t.Errorf("after routekeeper run the subnet's route table is %q", rt)
	}
	compareTables(t, az(labList), labTable)
}

// startFabricAz serves a fabric over TLS in memory, points a private az
// configuration at it with `fabric az --apply`, and returns the endpoint,
// the test's directory and a function that runs a bash script with that
// az. It skips unless ROUTEKEEPER_E2E_AZ=1.
func startFabricAz(t *testing.T) (string, string, func(script string) string) {
	t.Helper()
	if os.Getenv("ROUTEKEEPER_E2E_AZ") != "1" {
		t.Skip("set ROUTEKEEPER_E2E_AZ=1 (with Debian's azure-cli installed) to run the az end-to-end test")
	}
	if _, err := exec.LookPath("az"); err != nil {
		t.Fatal("ROUTEKEEPER_E2E_AZ=1 but az is not installed: apt-get install azure-cli")
	}
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("ROUTEKEEPER_ENDPOINT", "")

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"fabric", "serve", "--tls", "--memory", "--listen", "127.0.0.1:0", "--operation-duration", "0"},
			strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// The endpoint, once serve prints it: woken by each write, not polled.
	var endpoint string
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for endpoint == "" {
		text, written := out.Next()
		if m := listening.FindStringSubmatch(text); m != nil {
			endpoint = m[1]
			break
		}
		select {
		case <-written:
		case code := <-done:
			done <- code // for the cleanup
			t.Fatalf("fabric serve --tls exited %d: %s %s", code, text, errOut.String())
		case <-timeout.C:
			t.Fatalf("fabric serve --tls printed no endpoint: %s %s", text, errOut.String())
		}
	}

	// The two documented commands: serve --tls (above), then fabric az --apply.
	code, exports, stderr := routekeeper(t, "fabric", "az", "--apply", "--endpoint", endpoint)
	if code != cli.ExitOK {
		t.Fatalf("fabric az --apply = %d:\n%s", code, stderr)
	}
	env := os.Environ()
	for _, line := range strings.Split(strings.TrimSpace(exports), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		if !ok {
			t.Fatalf("fabric az --apply printed %q, want only export lines", line)
		}
		env = append(env, kv)
	}
	az := func(script string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", script)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s\n%v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	return endpoint, dir, az
}

// kthwConfig copies examples/kthw (config and inventory) into dir.
func kthwConfig(t *testing.T, dir string) string {
	t.Helper()
	d := filepath.Join(dir, "kthw")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"routekeeper.yaml", "nodes.yaml", "topology.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "kthw", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(d, "routekeeper.yaml")
}

// compareTables checks that az's table has every column of want with the
// same values, row by row. Columns az prints beyond the lab's (today's API
// versions add HasBgpOverride) are allowed.
func compareTables(t *testing.T, got, want string) {
	t.Helper()
	g, w := parseTable(got), parseTable(want)
	if len(g) != len(w) {
		t.Fatalf("az printed %d rows, the lab %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		for col, v := range w[i] {
			if g[i][col] != v {
				t.Errorf("row %d column %s = %q, the lab shows %q:\n%s", i, col, g[i][col], v, got)
			}
		}
	}
}

var columnGap = regexp.MustCompile(`\s{2,}`)

func parseTable(s string) []map[string]string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) < 2 {
		return nil
	}
	header := columnGap.Split(strings.TrimSpace(lines[0]), -1)
	var rows []map[string]string
	for _, l := range lines[2:] {
		vals := columnGap.Split(strings.TrimSpace(l), -1)
		row := map[string]string{}
		for i, h := range header {
			if i < len(vals) {
				row[h] = vals[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// authzTopology is the network the authorization test governs: two
// groups with a route table each, and routekeeper's service principal
// (its client ID maps to an object ID); no role assignment yet, so the
// fabric enforces nothing until az creates the first.
const authzTopology = `location: eastus
resourceGroups:
  - name: kubernetes
    routeTables:
      - name: kubernetes-routes
      - name: spare
  - name: other
    routeTables:
      - name: other-routes
authorization:
  principals:
    - {name: routekeeper, clientId: routekeeper-app, objectId: ` + rkObjectID + `}
`

const rkObjectID = "11111111-2222-3333-4444-555555555555"

// TestAzureCLIAuthorization: az role assignment create (with
// --assignee-object-id and --assignee-principal-type, so no Graph) and az
// lock create/list/delete against the served fabric, and what they change
// for the SDK's requests.
func TestAzureCLIAuthorization(t *testing.T) {
	endpoint, dir, az := startFabricAz(t)
	topo := filepath.Join(dir, "authz.yaml")
	if err := os.WriteFile(topo, []byte(authzTopology), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := routekeeper(t, "fabric", "apply", "-f", topo, "--endpoint", endpoint); code != cli.ExitOK {
		t.Fatalf("fabric apply = %d:\n%s", code, stderr)
	}
	opts, err := fabric.EndpointClientOptions(endpoint, filepath.Join(dir, "state", "routekeeper", "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	tables := func(client string) *armnetwork.RouteTablesClient {
		c, err := armnetwork.NewRouteTablesClient(fabric.DefaultSubscription, fabric.Credential{ClientID: client}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := t.Context()
	write := func(client, rg, name string) error {
		p, err := tables(client).BeginCreateOrUpdate(ctx, rg, name, armnetwork.RouteTable{Location: to.Ptr("eastus"),
			Tags: map[string]*string{"by": to.Ptr(client)}}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		}
		return err
	}
	del := func(rg, name string) error {
		p, err := tables("").BeginDelete(ctx, rg, name, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		}
		return err
	}
	code := func(err error) string {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			return re.ErrorCode
		}
		return fmt.Sprint(err)
	}

	scope := "/subscriptions/" + fabric.DefaultSubscription + "/resourceGroups/kubernetes"
	got := strings.Fields(az(`az role assignment create --assignee-object-id ` + rkObjectID + ` --assignee-principal-type ServicePrincipal` +
		` --role "Network Contributor" --scope ` + scope + ` --query "[principalId, principalType, scope, roleDefinitionId]" -o tsv`))
	want := []string{rkObjectID, "ServicePrincipal", scope, "/subscriptions/" + fabric.DefaultSubscription + "/providers/Microsoft.Authorization/roleDefinitions/4d97b98b-1d4f-4787-a291-c67834d212e7"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("az role assignment create printed %v, want %v", got, want)
	}
	// The assignment is enforced: routekeeper writes in its group, not
	// elsewhere; az, logged in as the administrator, keeps its rights.
	if err := write("routekeeper-app", "kubernetes", "kubernetes-routes"); err != nil {
		t.Errorf("routekeeper in its group after the assignment: %v", err)
	}
	if c := code(write("routekeeper-app", "other", "other-routes")); c != "AuthorizationFailed" {
		t.Errorf("routekeeper outside its group: %s, want AuthorizationFailed", c)
	}
	if n := strings.TrimSpace(az(`az role definition list --name "Network Contributor" --query "length(@)"`)); n != "1" {
		t.Errorf("az role definition list --name: %q", n)
	}

	az(`az lock create --name keep --lock-type CanNotDelete -g kubernetes -o none`)
	if names := strings.TrimSpace(az(`az lock list -g kubernetes --query "[].name" -o tsv`)); names != "keep" {
		t.Errorf("az lock list = %q", names)
	}
	if c := code(del("kubernetes", "spare")); c != "ScopeLocked" {
		t.Errorf("delete under the lock: %s, want ScopeLocked", c)
	}
	// The fix routekeeper prints for a ScopeLocked refusal that names the
	// group lists exactly the group's lock, for a person to delete.
	list, _, _ := strings.Cut(verdict.Unlock(scope, ""), ", then ")
	if got := az(list); !strings.Contains(got, scope+"/providers/Microsoft.Authorization/locks/keep") || !strings.Contains(got, "CanNotDelete") {
		t.Errorf("the printed fix's listing %s printed:\n%s", list, got)
	}
	if err := write("", "kubernetes", "spare"); err != nil {
		t.Errorf("a write under a CanNotDelete lock: %v", err)
	}
	az(`az lock delete --name keep -g kubernetes`)
	if names := strings.TrimSpace(az(`az lock list --query "[].name" -o tsv`)); names != "" {
		t.Errorf("az lock list after the delete = %q", names)
	}
	if err := del("kubernetes", "spare"); err != nil {
		t.Errorf("delete after az lock delete: %v", err)
	}
}

// missingPermissionTopology is the missing permission on the network's
// group: the network in group net, the table in group kubernetes;
// routekeeper reads everything and may write only the table's group
// (Network Contributor there).
const missingPermissionTopology = kthw.SplitGroups + `authorization:
  principals:
    - {name: routekeeper, clientId: routekeeper-app, objectId: ` + rkObjectID + `}
  roleAssignments:
    - {principal: routekeeper, role: Reader}
    - {principal: routekeeper, role: Network Contributor, resourceGroup: kubernetes}
`

// TestMissingPermissionOnNetworkGroup: the missing permission on the
// network's group, end to end. With Network Contributor on the table's
// group only, routekeeper's association of the node subnet is refused; it
// says so with the command that grants the right; that command, run through
// az, is enough: the next pass repairs.
func TestMissingPermissionOnNetworkGroup(t *testing.T) {
	endpoint, dir, az := startFabricAz(t)
	topo := filepath.Join(dir, "missing-permission.yaml")
	if err := os.WriteFile(topo, []byte(missingPermissionTopology), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := routekeeper(t, "fabric", "apply", "-f", topo, "--endpoint", endpoint); code != cli.ExitOK {
		t.Fatalf("fabric apply = %d:\n%s", code, stderr)
	}
	sub := "/subscriptions/" + fabric.DefaultSubscription
	cfg := filepath.Join(dir, "routekeeper.yaml")
	nodes := filepath.Join(dir, "nodes.yaml")
	if err := os.WriteFile(nodes, []byte("nodes:\n  - {name: worker-0, internalIP: 10.240.0.20, podCIDR: 10.200.0.0/24}\n  - {name: worker-1, internalIP: 10.240.0.21, podCIDR: 10.200.1.0/24}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`cluster: {name: kthw, clusterCIDRs: [10.200.0.0/16]}
routeTable: {id: `+sub+`/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes}
subnets: [`+sub+`/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet]
cloud: {type: local, local: {endpoint: `+endpoint+`, clientID: routekeeper-app}}
source: {type: inventory, inventory: {file: ./nodes.yaml}}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	code, _, stderr := routekeeper(t, "run", "--once", "--config", cfg, "--log-format", "json")
	if code != cli.ExitFindings {
		t.Fatalf("run --once with the role on the table's group only = %d, want 3:\n%s", code, stderr)
	}
	var fix string
	for _, line := range strings.Split(stderr, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if f, _ := rec["fix"].(string); strings.HasPrefix(f, "az role assignment create") && rec["code"] == "AuthorizationFailed" {
			fix = f
		}
	}
	want := `az role assignment create --assignee-object-id ` + rkObjectID + ` --assignee-principal-type ServicePrincipal --role "Network Contributor" --scope ` + sub + `/resourceGroups/net`
	if fix != want {
		t.Fatalf("the refusal's fix is %q, want %q\n%s", fix, want, stderr)
	}
	if rt := strings.TrimSpace(az(`az network vnet subnet show -g net --vnet-name kubernetes-vnet -n kubernetes-subnet --query routeTable.id -o tsv`)); rt != "" {
		t.Fatalf("the refused association happened anyway: %q", rt)
	}

	az(fix + " -o none")

	code, _, stderr = routekeeper(t, "run", "--once", "--config", cfg)
	if code != cli.ExitOK || !strings.Contains(stderr, "subnets repaired=1") {
		t.Fatalf("run --once after the grant = %d, want 0 with the subnet repaired:\n%s", code, stderr)
	}
	if rt := strings.TrimSpace(az(`az network vnet subnet show -g net --vnet-name kubernetes-vnet -n kubernetes-subnet --query routeTable.id -o tsv`)); !strings.HasSuffix(rt, "/routeTables/kubernetes-routes") {
		t.Errorf("after the grant az shows route table %q", rt)
	}
}
