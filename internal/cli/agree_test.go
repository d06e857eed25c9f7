package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"sigs.k8s.io/yaml"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/testutil/scenario"
)

// TestAgree is invariant 9, one state, one answer: for every state a
// scenario script of internal/verdict judges (its configuration, cloud and
// nodes at a judge step), built for real — a fabric state file holding the
// script's cloud, written through the fabric's API with the real SDK
// (topology.Apply), a configuration file and an inventory — diff, doctor,
// trace (between two nodes' pod addresses) and iac check (on a plan that
// changes nothing) give the same exit code, and it is the one the script
// shows; then run --once acts, and diff and doctor afterwards give the exit
// code run --once gave. At a script's iac step, iac check of its plan gives
// the step's exit code.
//
// A route the script shows Failed is made Failed as Azure makes one: a
// write of it that fails (the fabric's fault injection), which leaves the
// route as it was, Failed, and its table Failed too (one more error
// finding; the exit code is the script's).
//
// A resource the script cannot read (it answers 500) is served so: the
// commands use a fabric served on loopback (cloud.local.endpoint) that
// fails every request to it (an error rate of 1 targeted at it).
//
// A state the fabric cannot hold is skipped, with why: what the controller
// remembers of earlier passes, more than one resource that answers 500, a
// route in the middle of an operation (Updating: the operation ends with the process
// that started it), a node the inventory cannot describe (a source's
// problem, no pod CIDR), a reference the fabric refuses (a subnet on a
// table that does not exist). A node the script marks available (its
// NetworkUnavailable condition is False) is listed without it: it matters
// only while a route is not Succeeded, and those states are skipped.
//
// Deliberately not one answer: run --once exits 1 when one of its writes
// fails (the command failed; the state is what it was, and diff gives its
// answer). The fabric's writes do not fail here, so no state meets it. And
// on a state that cannot be judged (a read fails: 1 from the others), iac
// check judges the plan against the plan's own before-values, as it does
// offline, and says so: the empty plan gives 0.
func TestAgree(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "verdict", "testdata", "scenarios", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		ran, same atomic.Int64
		mu        sync.Mutex
		skips     = map[string]int{}     // by kind
		met       = map[string]meeting{} // by the state's key
	)
	skip := func(t *testing.T, kind, detail string) {
		mu.Lock()
		skips[kind]++
		mu.Unlock()
		t.Skip(detail + ": " + kind)
	}
	t.Run("scripts", func(t *testing.T) {
		for _, f := range files {
			script := strings.TrimSuffix(filepath.Base(f), ".txt")
			t.Run(script, func(t *testing.T) {
				t.Parallel()
				for _, st := range scriptStates(t, f) {
					t.Run(fmt.Sprintf("line-%d-%s", st.Step.Line, st.Step.Cmd), func(t *testing.T) {
						if kind, detail := inexpressible(st); kind != "" {
							skip(t, kind, detail)
						}
						sf, err := stateFiles(st)
						if err != nil {
							skip(t, "the fabric refuses to hold the state", err.Error())
						}
						// A state several scripts reach is built once; the
						// others must show the same exit code.
						here := meeting{where: fmt.Sprintf("%s:%d", script, st.Step.Line), exit: st.Exit}
						mu.Lock()
						first, seen := met[sf.key()]
						if !seen {
							met[sf.key()] = here
						}
						mu.Unlock()
						if seen {
							same.Add(1)
							if first.exit != here.exit {
								t.Errorf("the script shows exit %d, %s shows %d for the same state", here.exit, first.where, first.exit)
							}
							return
						}
						dir := t.TempDir()
						if err := buildFabric(filepath.Join(dir, "fabric.db"), sf); errors.Is(err, errNotBuilt) {
							t.Fatal(err)
						} else if err != nil {
							skip(t, "the fabric refuses to hold the state", err.Error())
						}
						ran.Add(1)
						agree(t, dir, st, sf)
					})
				}
			})
		}
	})
	skipped := 0
	for _, kind := range slices.Sorted(maps.Keys(skips)) {
		skipped += skips[kind]
		t.Logf("skipped %d: %s", skips[kind], kind)
	}
	total := int(ran.Load()+same.Load()) + skipped
	t.Logf("%d states: %d built and judged by every command, %d the same as one of them, %d skipped", total, ran.Load(), same.Load(), skipped)
	if int(ran.Load()+same.Load())*4 < total*3 {
		t.Errorf("only %d of %d states ran: the agreement test must build most of them", ran.Load()+same.Load(), total)
	}
}

// meeting is where a state was first met, and the exit code shown there.
type meeting struct {
	where string
	exit  int
}

// state is a script's state as files: the fabric's topology (with the
// peerings to cut after it is applied), the configuration, the inventory
// and the plan of an iac step.
type state struct {
	topology *topology.Topology
	cut      [][2]string
	failed   [][2]string // (table, route): made Failed by a write that fails
	// unreadable is the ID of the resource every request to which fails.
	unreadable string
	config     string
	inventory  string
	plan       string
}

// key tells states apart: equal keys are the same state.
func (s state) key() string {
	b, err := json.Marshal(struct {
		T *topology.Topology
		C [][2]string
		F [][2]string
		U string
	}{s.topology, s.cut, s.failed, s.unreadable})
	if err != nil {
		panic(err) // a topology is plain data
	}
	return strings.Join([]string{string(b), s.config, s.inventory, s.plan}, "\n---\n")
}

// stateFiles is st as files.
func stateFiles(st scenario.State) (state, error) {
	topo, cut, err := topologyOf(st.Cloud)
	if err != nil {
		return state{}, err
	}
	cfg, err := configYAML(st.Config)
	if err != nil {
		return state{}, err
	}
	inv, err := inventoryYAML(st)
	if err != nil {
		return state{}, err
	}
	var unreadable string
	for k := range st.Cloud.Unreadable {
		unreadable = fabricID(k)
	}
	return state{topology: topo, cut: cut, failed: failedRoutes(st.Cloud), unreadable: unreadable, config: cfg, inventory: inv, plan: st.Plan}, nil
}

// scriptStates replays the script at path and returns the state of each
// of its judge steps.
func scriptStates(t *testing.T, path string) []scenario.State {
	t.Helper()
	sc, err := scenario.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []scenario.State
	w := scenario.New()
	w.OnJudge = func(st scenario.State) { out = append(out, st) }
	for _, s := range sc.Steps {
		if _, err := w.Do(s); err != nil {
			t.Fatalf("%s:%d: %s: %v", path, s.Line, s.Cmd, err)
		}
	}
	return out
}

// inexpressible says why the state cannot be built for real: the kind of
// reason and what in the state ("" when it can).
func inexpressible(st scenario.State) (kind, detail string) {
	c := st.Cloud
	switch {
	case len(st.Config.Memory) > 0:
		return "what the controller remembers of earlier passes: a process starts without it", strings.Join(st.Config.Memory, ", ")
	case len(c.Unreadable) > 1:
		return "several resources that answer 500: the fabric's faults target one", fmt.Sprintf("%d unreadable", len(c.Unreadable))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Tables)) {
		for _, r := range c.Tables[k].Routes {
			if r.ProvisioningState != "" && r.ProvisioningState != "Succeeded" && r.ProvisioningState != "Failed" {
				return "a route in the middle of an operation: the operation ends with the process that started it", fmt.Sprintf("route %s is %s", r.Name, r.ProvisioningState)
			}
		}
	}
	for _, n := range st.Nodes {
		switch {
		case n.Problem != nil:
			return "a problem of the node source's: an inventory cannot say it", fmt.Sprintf("node %s: %s", n.Name, n.Problem.Reason)
		case len(n.PodCIDRs) == 0:
			return "a node without a pod CIDR: the inventory's IPAM gives it one", "node " + n.Name
		}
	}
	for _, n := range c.NICs {
		if len(n.IPs) > 1 {
			return "a NIC with several addresses: a topology's NIC has one", "NIC " + n.Name
		}
	}
	return "", ""
}

// fabricID is a script's ID in the fabric's subscription (a configuration
// wants a GUID).
func fabricID(id string) string {
	return strings.ReplaceAll(id, "/subscriptions/"+scenario.Subscription+"/", "/subscriptions/"+fabric.DefaultSubscription+"/")
}

// errNotBuilt is a state the fabric holds that the test failed to build:
// a failure, never a skip.
var errNotBuilt = errors.New("building the state")

// buildFabric writes the state's cloud into a new fabric state file at
// path, through the fabric's API with the real SDK.
func buildFabric(path string, st state) error {
	ctx := context.Background()
	store, err := fabric.Open(ctx, path)
	if err != nil {
		return err
	}
	defer store.Close()
	srv := fabric.New(store, fabric.Options{})
	if _, err := topology.Apply(ctx, st.topology, srv.ClientOptions(), identity.Credential{}); err != nil {
		return err
	}
	f, err := armnetwork.NewClientFactory(fabric.DefaultSubscription, identity.Credential{}, srv.ClientOptions())
	if err != nil {
		return err
	}
	if err := failRoutes(ctx, srv, f.NewRoutesClient(), st.failed); err != nil {
		return fmt.Errorf("%w: %w", errNotBuilt, err)
	}
	// A Disconnected peering: its other side was deleted after it was
	// Connected.
	for _, p := range st.cut {
		poller, err := f.NewVirtualNetworkPeeringsClient().BeginDelete(ctx, scenario.ResourceGroup, p[0], p[1], nil)
		if err == nil {
			_, err = poller.PollUntilDone(ctx, nil)
		}
		if err != nil {
			return fmt.Errorf("deleting peering %s of %s: %w", p[1], p[0], err)
		}
	}
	return nil
}

// failedRoutes are the routes of c whose provisioning state is Failed, as
// (table, route) pairs.
func failedRoutes(c *memcloud.Cloud) [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(c.Tables)) {
		t := c.Tables[k]
		for _, r := range t.Routes {
			if r.ProvisioningState == "Failed" {
				out = append(out, [2]string{t.Name, r.Name})
			}
		}
	}
	return out
}

// failRoutes makes each route Failed with a write of it that fails: the
// write changes the route (a PUT of the same route changes nothing and
// starts no operation), the operation fails, and the route is what it was,
// Failed.
func failRoutes(ctx context.Context, srv *fabric.Server, routes *armnetwork.RoutesClient, failed [][2]string) error {
	for _, tr := range failed {
		cur, err := routes.Get(ctx, scenario.ResourceGroup, tr[0], tr[1], nil)
		if err != nil {
			return fmt.Errorf("reading route %s of %s: %w", tr[1], tr[0], err)
		}
		srv.SetFaults(fabric.Faults{FailNextOperations: 1})
		changed := armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: cur.Properties.AddressPrefix, NextHopType: to.Ptr(armnetwork.RouteNextHopTypeNone)}}
		p, err := routes.BeginCreateOrUpdate(ctx, scenario.ResourceGroup, tr[0], tr[1], changed, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, nil)
		}
		srv.SetFaults(fabric.Faults{})
		if err == nil {
			return fmt.Errorf("failing a write of route %s of %s: it succeeded", tr[1], tr[0])
		}
		got, err := routes.Get(ctx, scenario.ResourceGroup, tr[0], tr[1], nil)
		if err != nil {
			return fmt.Errorf("reading route %s of %s: %w", tr[1], tr[0], err)
		}
		if s := got.Properties.ProvisioningState; s == nil || *s != armnetwork.ProvisioningStateFailed {
			return fmt.Errorf("route %s of %s is %v after a write that failed, want Failed", tr[1], tr[0], s)
		}
	}
	return nil
}

// topologyOf is the cloud as a topology file, with the peerings to delete
// after it is applied (network, peering) to make their other side
// Disconnected.
func topologyOf(c *memcloud.Cloud) (*topology.Topology, [][2]string, error) {
	rg := topology.TopologyResourceGroup{Name: scenario.ResourceGroup}
	vnets := map[string]*topology.TopologyVirtualNetwork{}
	var order []string
	addVNet := func(name string, prefixes []string) *topology.TopologyVirtualNetwork {
		k := strings.ToLower(name)
		if v := vnets[k]; v != nil {
			return v
		}
		vnets[k] = &topology.TopologyVirtualNetwork{Name: name, AddressPrefixes: prefixes}
		order = append(order, k)
		return vnets[k]
	}
	for _, k := range slices.Sorted(maps.Keys(c.VNets)) {
		v := c.VNets[k]
		addVNet(v.Name, v.AddressPrefixes)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Subnets)) {
		s := c.Subnets[k]
		vid, err := armid.VNetOfSubnet(s.ID)
		if err != nil {
			return nil, nil, err
		}
		v := vnets[strings.ToLower(armid.Name(vid))]
		if v == nil {
			return nil, nil, fmt.Errorf("subnet %s is in network %s, which the script does not declare", s.Name, armid.Name(vid))
		}
		sn := topology.TopologySubnet{Name: s.Name, AddressPrefixes: s.AddressPrefixes}
		if s.RouteTableID != "" {
			sn.RouteTable = fabricID(s.RouteTableID)
		}
		v.Subnets = append(v.Subnets, sn)
	}
	var cut [][2]string
	for _, k := range slices.Sorted(maps.Keys(c.VNets)) {
		v := c.VNets[k]
		for _, p := range v.Peerings {
			remote := armid.Name(p.RemoteVNetID)
			rv := addVNet(remote, p.RemoteAddressPrefixes)
			vnets[strings.ToLower(v.Name)].Peerings = append(vnets[strings.ToLower(v.Name)].Peerings, topology.TopologyPeering{Name: p.Name, RemoteVirtualNetwork: remote})
			switch p.State {
			case "Initiated":
			case "Connected", "Disconnected":
				back := "back-" + p.Name
				rv.Peerings = append(rv.Peerings, topology.TopologyPeering{Name: back, RemoteVirtualNetwork: v.Name})
				if p.State == "Disconnected" {
					cut = append(cut, [2]string{remote, back})
				}
			default:
				return nil, nil, fmt.Errorf("peering %s is %s", p.Name, p.State)
			}
		}
	}
	for _, k := range order {
		rg.VirtualNetworks = append(rg.VirtualNetworks, *vnets[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Tables)) {
		t := c.Tables[k]
		tt := topology.TopologyRouteTable{Name: t.Name, Tags: map[string]string{}}
		for tk, tv := range t.Tags {
			tt.Tags[tk] = fabricID(tv)
		}
		for _, r := range t.Routes {
			tr := topology.TopologyRoute{Name: r.Name, AddressPrefix: r.AddressPrefix, NextHopType: string(r.NextHopType)}
			if r.NextHopIP.IsValid() {
				tr.NextHopIPAddress = r.NextHopIP.String()
			}
			tt.Routes = append(tt.Routes, tr)
		}
		rg.RouteTables = append(rg.RouteTables, tt)
	}
	for _, n := range c.NICs {
		rg.NetworkInterfaces = append(rg.NetworkInterfaces, topology.TopologyNIC{Name: n.Name, Subnet: fabricID(n.SubnetIDs[0]),
			PrivateIPAddress: n.IPs[0].String(), EnableIPForwarding: n.IPForwarding})
	}
	return &topology.Topology{Location: "eastus", ResourceGroups: []topology.TopologyResourceGroup{rg}}, cut, nil
}

// planJSON is the recorded plan name (internal/iac/testdata) with its IDs
// in the fabric's subscription and the scripts' resource group.
func planJSON(t *testing.T, name string) string {
	t.Helper()
	w := scenario.New()
	p, err := w.Plan(name)
	if err != nil {
		t.Fatal(err)
	}
	scenario.MovePlan(p, "/subscriptions/"+fabric.DefaultSubscription+"/resourceGroups/"+scenario.ResourceGroup)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// emptyPlan is the JSON of a plan that changes nothing: iac check on it
// judges the cloud as it stands.
const emptyPlan = `{"format_version":"1.2","terraform_version":"1.12.6","resource_changes":[]}`

// agree writes the state's configuration and inventory beside the fabric
// state in dir, runs the commands and checks their exit codes.
func agree(t *testing.T, dir string, st scenario.State, sf state) {
	cfg := filepath.Join(dir, "routekeeper.yaml")
	config := sf.config
	if sf.unreadable != "" {
		url := serveFailing(t, filepath.Join(dir, "fabric.db"), sf.unreadable)
		if !strings.Contains(config, "state: ./fabric.db") {
			t.Fatalf("the configuration names no state file:\n%s", config)
		}
		config = strings.Replace(config, "state: ./fabric.db", "endpoint: "+url, 1)
	}
	writeFile(t, cfg, config)
	writeFile(t, filepath.Join(dir, "nodes.yaml"), sf.inventory)
	plan := filepath.Join(dir, "plan.json")
	if st.Plan != "" {
		// The script's iac step: iac check of its plan, moved into the
		// fabric's resource group, gives the step's exit code.
		writeFile(t, plan, planJSON(t, st.Plan))
		if res := runCLI(t, nil, "", "iac", "check", plan, "--config", cfg); res.code != st.Exit {
			t.Errorf("line %d (%s): iac check exits %d, the script says %d\n%s%s", st.Step.Line, st.Step, res.code, st.Exit, res.stdout, res.stderr)
		}
		return
	}
	writeFile(t, plan, emptyPlan)
	src, dst := traceEnds(st)

	judges := []struct {
		name string
		args []string
	}{
		{"diff", []string{"diff", "--config", cfg}},
		{"doctor", []string{"doctor", "--config", cfg}},
		{"trace", []string{"trace", "--config", cfg, src, dst}},
		{"iac check", []string{"iac", "check", plan, "--config", cfg}},
	}
	// They only read (an inventory's IPAM shares its allocations file
	// under a lock): at the same time.
	results := make([]cliResult, len(judges))
	var wg sync.WaitGroup
	for i, j := range judges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runCLI(t, nil, "", j.args...)
		}()
	}
	wg.Wait()
	codes := map[string]int{}
	var out strings.Builder
	for i, j := range judges {
		res := results[i]
		codes[j.name] = res.code
		fmt.Fprintf(&out, "$ routekeeper %s\nexit %d\n%s%s\n", j.name, res.code, res.stdout, res.stderr)
	}
	for _, j := range judges {
		want := st.Exit
		if j.name == "iac check" && st.Exit == scenario.ExitError {
			// The deliberate difference: judged against the empty
			// plan's before-values.
			want = scenario.ExitOK
		}
		if codes[j.name] != want {
			t.Errorf("line %d (%s): %s exits %d, the script says %d; every command: %v\n%s", st.Step.Line, st.Step, j.name, codes[j.name], want, codes, out.String())
			return
		}
	}

	run := runCLI(t, nil, "", "run", "--once", "--config", cfg)
	after := []string{"diff", "doctor"}
	results = make([]cliResult, len(after))
	for i, cmd := range after {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runCLI(t, nil, "", cmd, "--config", cfg)
		}()
	}
	wg.Wait()
	for i, cmd := range after {
		if res := results[i]; res.code != run.code {
			t.Errorf("after run --once (exit %d), %s exits %d\nrun --once:\n%s%s\n%s:\n%s%s", run.code, cmd, res.code, run.stdout, run.stderr, cmd, res.stdout, res.stderr)
		}
	}
}

// serveFailing serves the fabric state at path on loopback, failing every
// request to the resource id (500, 502 or 503, as ARM's front does), and
// returns its URL; it stops when the test ends.
func serveFailing(t *testing.T, path, id string) string {
	t.Helper()
	store, err := fabric.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	srv := fabric.New(store, fabric.Options{})
	srv.SetFaults(fabric.Faults{ErrorRate: 1, Target: id})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		store.Close()
	})
	return ts.URL
}

// traceEnds are the ends of the state's trace: two nodes with pod CIDRs,
// or one to itself, or two addresses of the first guarded subnet.
func traceEnds(st scenario.State) (src, dst string) {
	var names []string
	for _, n := range st.Nodes {
		if len(n.PodCIDRs) > 0 {
			names = append(names, n.Name)
		}
	}
	switch {
	case len(names) >= 2:
		return names[0], names[1]
	case len(names) == 1:
		return names[0], names[0]
	}
	p := netip.MustParsePrefix("10.240.0.0/24")
	if len(st.Config.Subnets) > 0 {
		if s := st.Cloud.Subnets[armid.Key(st.Config.Subnets[0])]; s != nil && len(s.AddressPrefixes) > 0 {
			if q, err := netip.ParsePrefix(s.AddressPrefixes[0]); err == nil {
				p = q
			}
		}
	}
	a := p.Addr().Next().Next().Next().Next()
	return a.String(), a.Next().String()
}

// configYAML is the script's configuration as a configuration file on the
// fabric state and the inventory beside it.
func configYAML(c scenario.Config) (string, error) {
	d := c.Desired
	cidrs := make([]string, len(d.ClusterCIDRs))
	for i, p := range d.ClusterCIDRs {
		cidrs[i] = p.String()
	}
	table := map[string]any{"id": fabricID(d.Configured), "create": d.CreateAllowed, "location": d.Location, "claim": d.Claim}
	if d.Limit > 0 {
		table["routeLimit"] = d.Limit
	}
	if d.Adopt != "" {
		table["adopt"] = string(d.Adopt)
	}
	subnets := make([]string, len(c.Subnets))
	for i, s := range c.Subnets {
		subnets[i] = fabricID(s)
	}
	doc := map[string]any{
		"cluster":     map[string]any{"name": d.Cluster, "clusterCIDRs": cidrs},
		"routeTable":  table,
		"subnets":     subnets,
		"association": map[string]any{"policy": cmp.Or(string(d.Policy), "enforce"), "restore": d.Restore},
		"routes":      cmp.Or(string(d.Mode), "manage"),
		"cloud":       map[string]any{"type": "local", "local": map[string]any{"state": "./fabric.db"}},
		"source":      map[string]any{"type": "inventory", "inventory": map[string]any{"file": "./nodes.yaml"}},
		"controller":  map[string]any{"maxDeletes": d.MaxDeletes, "allowEmptySource": d.AllowEmptySource, "confirmStandDown": d.ConfirmStandDown},
	}
	var mirrors []any
	for _, m := range c.Mirrors {
		ms := make([]string, len(m.Subnets))
		for i, s := range m.Subnets {
			ms[i] = fabricID(s)
		}
		mm := map[string]any{"routeTable": fabricID(m.Table), "subnets": ms, "create": m.Create,
			"association": map[string]any{"policy": cmp.Or(string(m.Policy), "enforce"), "restore": m.Restore}}
		if m.Location != "" {
			mm["location"] = m.Location
		}
		mirrors = append(mirrors, mm)
	}
	if len(mirrors) > 0 {
		doc["mirrors"] = mirrors
	}
	b, err := yaml.Marshal(doc)
	return string(b), err
}

// inventoryYAML is the state's nodes as an inventory; a node whose pod
// CIDRs IPAM gave it is listed without them, for IPAM to give them again.
func inventoryYAML(st scenario.State) (string, error) {
	nodes := []any{}
	for _, n := range st.Nodes {
		ips := make([]string, len(n.InternalIPs))
		for i, a := range n.InternalIPs {
			ips[i] = a.String()
		}
		node := map[string]any{"name": n.Name, "internalIPs": ips}
		if !st.Allocated[n.Name] {
			cidrs := make([]string, len(n.PodCIDRs))
			for i, p := range n.PodCIDRs {
				cidrs[i] = p.String()
			}
			node["podCIDRs"] = cidrs
		}
		nodes = append(nodes, node)
	}
	b, err := yaml.Marshal(map[string]any{"nodes": nodes})
	return string(b), err
}
