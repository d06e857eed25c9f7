package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

func TestIpplanGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		// The AKS kubenet article ("Use kubenet networking with your own IP
		// address ranges"): its own command, a /24 node subnet.
		{"aks-kubenet-article", []string{"ipplan", "--vnet", "192.168.0.0/16", "--subnet", "myAKSSubnet=192.168.1.0/24",
			"--pod-cidr", "10.244.0.0/16", "--service-cidr", "10.0.0.0/16", "--dns-service-ip", "10.0.0.10"}, ExitOK},
		{"aks-kubenet-article-json", []string{"ipplan", "-o", "json", "--vnet", "192.168.0.0/16", "--subnet", "myAKSSubnet=192.168.1.0/24"}, ExitOK},
		// Microsoft's worked example: 50 nodes + 1 surge at 30 pods, Azure CNI.
		{"microsoft-worked-example", []string{"ipplan", "--plugin", "azure", "--nodes", "50", "--surge", "1", "--max-pods", "30"}, ExitOK},
		{"microsoft-worked-example-22", []string{"ipplan", "--plugin", "azure", "--nodes", "50", "--max-pods", "30",
			"--vnet", "10.1.0.0/16", "--subnet", "nodes=10.1.0.0/22", "--service-cidr", "10.2.0.0/16", "--dns-service-ip", "10.2.0.10"}, ExitFindings},
		{"compare-all", []string{"ipplan", "--vnet", "10.1.0.0/16", "--subnet", "nodes=10.1.0.0/24",
			"--service-cidr", "10.2.0.0/16", "--dns-service-ip", "10.2.0.10", "--nodes", "20", "--surge", "33%"}, ExitOK},
		{"example", []string{"ipplan", "-f", "testdata/ipplan/example.yaml"}, ExitFindings},
		{"example-yaml", []string{"ipplan", "-o", "yaml", "-f", "testdata/ipplan/example.yaml"}, ExitFindings},
		{"example-fixed", []string{"ipplan", "-f", "testdata/ipplan/example-fixed.yaml"}, ExitOK},
		// A kubenet cluster's move to a dual-stack Overlay cluster.
		{"dual-stack", []string{"ipplan", "-f", "testdata/ipplan/dual-stack.yaml"}, ExitOK},
		{"dual-stack-json", []string{"ipplan", "-o", "json", "-f", "testdata/ipplan/dual-stack.yaml"}, ExitOK},
		{"dual-stack-mistakes", []string{"ipplan", "-f", "testdata/ipplan/dual-stack-mistakes.yaml"}, ExitFindings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCLI(t, nil, "", tt.args...)
			if res.code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", res.code, tt.code, res.stderr)
			}
			if res.stderr != "" {
				t.Errorf("unexpected stderr: %s", res.stderr)
			}
			golden(t, filepath.Join("testdata", "ipplan", tt.name+".golden"), []byte(res.stdout))
		})
	}
}

// The numbers the articles give (the AKS kubenet article's /24 subnet,
// Microsoft's Azure CNI worked example), read from the JSON output rather
// than the golden text, so a regenerated golden file cannot hide a wrong
// number.
func TestIpplanNumbers(t *testing.T) {
	type capacity struct {
		Plugin               string `json:"plugin"`
		MaxNodes             *int64 `json:"maxNodes"`
		MaxPods              *int64 `json:"maxPods"`
		AddressesConsumed    int64  `json:"addressesConsumed"`
		SmallestSubnetPrefix int    `json:"smallestSubnetPrefix"`
	}
	decode := func(t *testing.T, args ...string) map[string]capacity {
		t.Helper()
		res := runCLI(t, nil, "", append([]string{"ipplan", "-o", "json"}, args...)...)
		var r struct{ Capacity []capacity }
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Fatalf("decoding %q: %v", res.stdout, err)
		}
		m := map[string]capacity{}
		for _, c := range r.Capacity {
			m[c.Plugin] = c
		}
		return m
	}
	article := decode(t, "--subnet", "192.168.1.0/24")
	for plugin, want := range map[string][2]int64{"kubenet": {251, 27_610}, "azure": {8, 240}} {
		c := article[plugin]
		if c.MaxNodes == nil || c.MaxPods == nil || *c.MaxNodes != want[0] || *c.MaxPods != want[1] {
			t.Errorf("the AKS kubenet article's /24 subnet, %s: got %+v, want %d nodes, %d pods", plugin, c, want[0], want[1])
		}
	}
	ms := decode(t, "--plugin", "azure", "--nodes", "50", "--surge", "1", "--max-pods", "30")["azure"]
	if ms.AddressesConsumed != 1581 || ms.SmallestSubnetPrefix != 21 {
		t.Errorf("worked example: got %+v, want 1581 addresses, /21", ms)
	}
}

func TestIpplanSVG(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "plan.svg")
	wantExit(t, ExitFindings, "ipplan", "-f", "testdata/ipplan/example.yaml", "--svg", svg)
	got, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "ipplan", "example.svg"), got)
	// The picture in the user guide is this one; keep it current.
	golden(t, filepath.Join("..", "..", "docs", "ipplan-example.svg"), got)
}

func TestIpplanInputs(t *testing.T) {
	plan := "vnet: 10.1.0.0/16\nsubnets:\n  - name: nodes\n    prefix: 10.1.0.0/24\nnodes: 10\nplugins: [kubenet]\n"
	tests := []struct {
		name   string
		env    map[string]string
		stdin  string
		args   []string
		code   int
		stdout []string // substrings
		stderr []string // substrings
	}{
		{name: "plan on stdin", stdin: plan, args: []string{"ipplan", "-f", "-"}, code: ExitOK,
			stdout: []string{"subnet   nodes", "kubenet  110          251"}},
		{name: "flags override the plan file", stdin: plan, args: []string{"ipplan", "-f", "-", "--nodes", "300"}, code: ExitFindings,
			stdout: []string{"subnet-too-small", "300 nodes + 1 surge need 301"}},
		{name: "environment variables", env: map[string]string{"ROUTEKEEPER_NODES": "50", "ROUTEKEEPER_PLUGIN": "azure", "ROUTEKEEPER_MAX_PODS": "30"},
			args: []string{"ipplan"}, code: ExitOK, stdout: []string{"1,581", "/21"}},
		{name: "several plugins", args: []string{"ipplan", "--plugin", "overlay", "--plugin", "kubenet", "--nodes", "3"}, code: ExitOK,
			stdout: []string{"kubenet  110", "overlay  250"}},
		{name: "plugin error is an error when chosen", args: []string{"ipplan", "--plugin", "azure", "--subnet", "10.1.0.0/24", "--nodes", "20"},
			code: ExitFindings, stdout: []string{"error     subnet-too-small  azure"}},
		{name: "plugin error is a warning when comparing", args: []string{"ipplan", "--subnet", "10.1.0.0/24", "--nodes", "20"},
			code: ExitOK, stdout: []string{"warning   subnet-too-small  azure"}},

		{name: "bad CIDR flag", args: []string{"ipplan", "--pod-cidr", "10.244.0.0/33"}, code: ExitUsage,
			stderr: []string{`flag --pod-cidr: "10.244.0.0/33" is not a CIDR`}},
		{name: "host bits", args: []string{"ipplan", "--service-cidr", "10.0.0.1/16"}, code: ExitUsage,
			stderr: []string{`flag --service-cidr: "10.0.0.1/16" has host bits set; did you mean 10.0.0.0/16?`}},
		{name: "DNS not an address", args: []string{"ipplan", "--dns-service-ip", "10.0.0.0/16"}, code: ExitUsage,
			stderr: []string{`flag --dns-service-ip: "10.0.0.0/16" is not an IP address`}},
		{name: "bad subnet", args: []string{"ipplan", "--subnet", "a=10.1.0.0/24", "--subnet", "b=10.1.1.0"}, code: ExitUsage,
			stderr: []string{`flag --subnet: "10.1.1.0" has no prefix length`}},
		{name: "dual-stack with repeated flags", args: []string{"ipplan", "--plugin", "overlay", "--vnet", "10.1.0.0/16", "--vnet", "fd00:1::/48",
			"--subnet", "nodes=10.1.0.0/24", "--subnet", "fd00:1::/64", "--pod-cidr", "10.244.0.0/16", "--pod-cidr", "fd12:3456:789a::/64", "--nodes", "10"},
			code: ExitOK, stdout: []string{"subnet   nodes  fd00:1::/64", "service         fd12:3456:789a:1::/108", "overlay  fd12:3456:789a::/64  /80        65,536      /76              yes"}},
		{name: "IPv6-only pods", args: []string{"ipplan", "--plugin", "overlay", "--pod-cidr", "fd12:3456:789a::/64"}, code: ExitFindings,
			stdout: []string{"ipv6-only", "AKS runs IPv4 or dual-stack clusters"}},
		{name: "a second IPv4 pod CIDR", args: []string{"ipplan", "--pod-cidr", "10.244.0.0/16,10.245.0.0/16"}, code: ExitUsage,
			stderr: []string{`flag --pod-cidr: "10.245.0.0/16" is a second IPv4 range (also 10.244.0.0/16)`}},
		{name: "kubenet dual-stack: two routes per node", args: []string{"ipplan", "--plugin", "kubenet", "--vnet", "10.1.0.0/16,fd00:1::/48",
			"--subnet", "nodes=10.1.0.0/22,fd00:1::/64", "--pod-cidr", "10.244.0.0/15,fd12:3456:789a::/64", "--nodes", "250", "--route-limit", "400"}, code: ExitFindings,
			stdout: []string{"kubenet  110          200       route-limit", "two routes per node in a dual-stack cluster"}},
		{name: "self-managed kubenet: Azure's 1,000 routes per table bind, not AKS's 400 nodes", args: []string{"ipplan", "--plugin", "kubenet", "--platform", "self-managed",
			"--vnet", "10.1.0.0/16", "--subnet", "nodes=10.1.0.0/20", "--pod-cidr", "10.240.0.0/14", "--nodes", "1000"}, code: ExitFindings,
			stdout: []string{"kubenet  110          1,000     route-limit", "1,000 nodes + 1 surge need 1,001 routes, more than the route table limit of 1,000"}},
		{name: "AKS kubenet: AKS's 400 nodes bind, not the table", args: []string{"ipplan", "--plugin", "kubenet",
			"--vnet", "10.1.0.0/16", "--subnet", "nodes=10.1.0.0/20", "--pod-cidr", "10.240.0.0/14", "--nodes", "500"}, code: ExitFindings,
			stdout: []string{"kubenet  110          400       aks-kubenet", "AKS supports at most 400 nodes in a kubenet cluster (AKS's documented cap, not the route table's"}},
		{name: "unknown platform", args: []string{"ipplan", "--platform", "gke"}, code: ExitUsage,
			stderr: []string{`flag --platform: "gke" is not one of aks, self-managed`}},
		{name: "IPv6 service range too large", args: []string{"ipplan", "--service-cidr", "10.0.0.0/16,fd00:9::/100", "--pod-cidr", "10.244.0.0/16,fd12:3456:789a::/64"},
			code: ExitFindings, stdout: []string{"service-cidr-too-large", "no larger than /108"}},
		{name: "unknown plugin", args: []string{"ipplan", "--plugin", "calico"}, code: ExitUsage,
			stderr: []string{`flag --plugin: "calico" is not one of kubenet, azure, overlay`}},
		{name: "bad surge", args: []string{"ipplan", "--surge", "lots"}, code: ExitUsage, stderr: []string{`flag --surge: "lots"`}},
		{name: "bad value in the plan file names file and field", stdin: "podCIDR: 10.244.0.1/16\n", args: []string{"ipplan", "-f", "-"},
			code: ExitUsage, stderr: []string{`plan file -: podCIDR: "10.244.0.1/16" has host bits set`}},
		{name: "bad list value in the plan file", stdin: "subnets:\n  - prefix: 10.1.0.0/24\n  - prefix: nope\n", args: []string{"ipplan", "-f", "-"},
			code: ExitUsage, stderr: []string{`plan file -: subnets[1].prefix: "nope"`}},
		{name: "unknown field in the plan file", stdin: "podRange: 10.0.0.0/16\n", args: []string{"ipplan", "-f", "-"},
			code: ExitUsage, stderr: []string{"plan file -", "podRange"}},
		{name: "missing plan file", args: []string{"ipplan", "-f", "testdata/ipplan/nope.yaml"}, code: ExitUsage,
			stderr: []string{"reading plan file", "nope.yaml"}},
		{name: "file and config", args: []string{"ipplan", "-f", "a.yaml", "--config", "b.yaml"}, code: ExitUsage,
			stderr: []string{"give one of them"}},
		{name: "bad env value", env: map[string]string{"ROUTEKEEPER_NODES": "many"}, args: []string{"ipplan"}, code: ExitUsage,
			stderr: []string{"ROUTEKEEPER_NODES"}},
		{name: "arguments", args: []string{"ipplan", "10.0.0.0/16"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCLI(t, tt.env, tt.stdin, tt.args...)
			if res.code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", res.code, tt.code, res.stdout, res.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(res.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, res.stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(res.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, res.stderr)
				}
			}
		})
	}
}

const (
	planSub   = "11111111-2222-3333-4444-555555555555"
	planGroup = "kubernetes"
)

// seedFabric writes a fabric state file with a resource group and a VNet
// 10.240.0.0/16 (plus 10.241.0.0/16) holding the subnets nodes
// 10.240.0.0/24 and appgw 10.240.1.0/26.
func seedFabric(t *testing.T, state string) {
	t.Helper()
	ctx := context.Background()
	srv, closeStore := openFabric(t, state)
	defer closeStore()
	hc := &http.Client{Transport: srv.RoundTripper()}
	req, _ := http.NewRequest(http.MethodPut, fabric.InProcessEndpoint+"/subscriptions/"+planSub+"/resourcegroups/"+planGroup+"?api-version=2021-04-01",
		strings.NewReader(`{"location":"eastus"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("creating the resource group: %s", resp.Status)
	}
	vnets, err := armnetwork.NewVirtualNetworksClient(planSub, identity.Credential{}, srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	subnet := func(name, prefix string) *armnetwork.Subnet {
		return &armnetwork.Subnet{Name: to.Ptr(name), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr(prefix)}}
	}
	poller, err := vnets.BeginCreateOrUpdate(ctx, planGroup, "kubernetes-vnet", armnetwork.VirtualNetwork{
		Location: to.Ptr("eastus"),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{to.Ptr("10.240.0.0/16"), to.Ptr("10.241.0.0/16")}},
			Subnets:      []*armnetwork.Subnet{subnet("nodes", "10.240.0.0/24"), subnet("appgw", "10.240.1.0/26")},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

func TestIpplanConfig(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "fabric.db")
	seedFabric(t, state)
	subnetID := func(name string) string {
		return "/subscriptions/" + planSub + "/resourceGroups/" + planGroup + "/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/" + name
	}
	writeConfig := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := writeConfig("routekeeper.yaml", `cluster:
  name: demo
  clusterCIDRs: [10.200.0.0/16]
  serviceCIDRs: [10.32.0.0/16]
routeTable:
  id: /subscriptions/`+planSub+`/resourceGroups/`+planGroup+`/providers/Microsoft.Network/routeTables/kubernetes-routes
subnets:
  - `+subnetID("nodes")+`
  - `+subnetID("appgw")+`
cloud:
  type: local
  local:
    state: fabric.db
`)
	res := runCLI(t, nil, "", "ipplan", "--config", cfg, "--nodes", "300", "--on-prem", "10.0.0.0/8")
	if res.code != ExitFindings {
		t.Errorf("exit %d, want %d; stderr: %s", res.code, ExitFindings, res.stderr)
	}
	golden(t, filepath.Join("testdata", "ipplan", "config.golden"), []byte(res.stdout))

	// The plan as read: VNet prefixes and subnets from the fabric, ranges
	// and DNS (.10 of the service range) from the config.
	var r struct {
		Plugins      []string
		DNSServiceIP string
		Ranges       []struct{ Kind, Name, Prefix string }
	}
	res = runCLI(t, nil, "", "ipplan", "--config", cfg, "-o", "json")
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("%v: %s %s", err, res.stdout, res.stderr)
	}
	var got []string
	for _, rg := range r.Ranges {
		got = append(got, strings.Join(strings.Fields(rg.Kind+" "+rg.Name+" "+rg.Prefix), " "))
	}
	want := []string{"vnet 10.240.0.0/16", "vnet 10.241.0.0/16", "subnet nodes 10.240.0.0/24", "subnet appgw 10.240.1.0/26",
		"pod 10.200.0.0/16", "service 10.32.0.0/16"}
	if diff := cmp.Diff(want, got); diff != "" || r.DNSServiceIP != "10.32.0.10" || !slices.Equal(r.Plugins, []string{"kubenet"}) {
		t.Errorf("plan from config: plugins %v, DNS %s, ranges (-want +got):\n%s", r.Plugins, r.DNSServiceIP, diff)
	}

	// Flags override what the config says.
	res = runCLI(t, nil, "", "ipplan", "--config", cfg, "--plugin", "overlay", "--nodes", "10")
	if res.code != ExitOK || !strings.Contains(res.stdout, "overlay  250") {
		t.Errorf("exit %d: %s %s", res.code, res.stdout, res.stderr)
	}

	missing := writeConfig("missing.yaml", "subnets:\n  - "+subnetID("gone")+"\ncloud:\n  local:\n    state: fabric.db\n")
	res = runCLI(t, nil, "", "ipplan", "--config", missing)
	if res.code != ExitError || !strings.Contains(res.stderr, "reading subnet") || !strings.Contains(res.stderr, "gone") {
		t.Errorf("missing subnet: exit %d: %s", res.code, res.stderr)
	}
	noSubnets := writeConfig("nosubnets.yaml", "cluster:\n  name: demo\n")
	res = runCLI(t, nil, "", "ipplan", "--config", noSubnets)
	if res.code != ExitUsage || !strings.Contains(res.stderr, "subnets: none configured") {
		t.Errorf("no subnets: exit %d: %s", res.code, res.stderr)
	}
	noState := writeConfig("nostate.yaml", "subnets:\n  - "+subnetID("nodes")+"\ncloud:\n  local:\n    state: nope.db\n")
	res = runCLI(t, nil, "", "ipplan", "--config", noState)
	if res.code != ExitError || !strings.Contains(res.stderr, "nope.db") {
		t.Errorf("no state: exit %d: %s", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.db")); err == nil {
		t.Error("ipplan created a fabric state file")
	}
	bad := writeConfig("bad.yaml", "cluster:\n  clusterCIDR: 10.0.0.0/16\n")
	res = runCLI(t, nil, "", "ipplan", "--config", bad)
	if res.code != ExitUsage || !strings.Contains(res.stderr, "bad.yaml") {
		t.Errorf("bad config: exit %d: %s", res.code, res.stderr)
	}
}

// The user guide quotes the command's output; it must match the golden
// files (regenerate both with -update, then paste into docs/ipplan.md).
func TestIpplanDocsQuoteCurrentOutput(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ipplan.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aks-kubenet-article", "microsoft-worked-example", "microsoft-worked-example-22", "example", "example-fixed", "dual-stack", "dual-stack-mistakes"} {
		out, err := os.ReadFile(filepath.Join("testdata", "ipplan", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, out) {
			t.Errorf("docs/ipplan.md does not show the current output of %s", name)
		}
	}
	for _, name := range []string{"example.yaml", "example-fixed.yaml", "dual-stack.yaml", "dual-stack-mistakes.yaml"} {
		plan, err := os.ReadFile(filepath.Join("testdata", "ipplan", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, plan) {
			t.Errorf("docs/ipplan.md does not show the plan %s", name)
		}
	}
}

// A dual-stack cluster's config plans a dual-stack cluster: the IPv6 pod
// range, the subnet's and the VNet's IPv6 prefixes come along.
func TestIpplanConfigDualStack(t *testing.T) {
	cfg := dualStack(t)
	res := runCLI(t, nil, "", "ipplan", "--config", cfg, "--plugin", "overlay", "-o", "json")
	var r struct {
		IPFamilies []string
		Ranges     []struct{ Kind, Name, Prefix string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("%v: %s %s", err, res.stdout, res.stderr)
	}
	var got []string
	for _, rg := range r.Ranges {
		got = append(got, strings.Join(strings.Fields(rg.Kind+" "+rg.Name+" "+rg.Prefix), " "))
	}
	for _, want := range []string{"vnet fd00:10:240::/48", "subnet kubernetes-subnet fd00:10:240::/64", "pod fd00:10:200::/56"} {
		if !slices.Contains(got, want) {
			t.Errorf("ranges %v lack %q", got, want)
		}
	}
	if !slices.Equal(r.IPFamilies, []string{"IPv4", "IPv6"}) {
		t.Errorf("ipFamilies %v", r.IPFamilies)
	}
}
