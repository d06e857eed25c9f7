package inventory

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/routekeeper/routekeeper/internal/ipam"
	"github.com/routekeeper/routekeeper/internal/testutil/problemtest"

	"github.com/routekeeper/routekeeper/internal/source"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var cmpOpts = []cmp.Option{cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}), cmpopts.EquateEmpty()}

func TestKTHWExample(t *testing.T) {
	file := filepath.Join("..", "..", "..", "examples", "kthw", "nodes.yaml")
	dir := t.TempDir()
	s := New(Options{
		File:            file,
		AllocationsFile: filepath.Join(dir, "alloc.json"),
		ClusterCIDRs:    []netip.Prefix{pfx("10.200.0.0/16")},
		ServiceCIDRs:    []netip.Prefix{pfx("10.32.0.0/24")},
	})
	got, err := s.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []source.Node{
		{Name: "worker-0", InternalIPs: []netip.Addr{ip("10.240.0.20")}, PodCIDRs: []netip.Prefix{pfx("10.200.0.0/24")}},
		{Name: "worker-1", InternalIPs: []netip.Addr{ip("10.240.0.21")}, PodCIDRs: []netip.Prefix{pfx("10.200.1.0/24")}},
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "alloc.json")); !os.IsNotExist(err) {
		t.Errorf("an allocations file was written although every node has a pod CIDR (%v)", err)
	}
}

func TestIPAMExample(t *testing.T) {
	src := filepath.Join("..", "..", "..", "examples", "inventory-ipam", "nodes.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "nodes.yaml")
	write(t, file, string(data))
	opts := Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.244.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/12")}}
	got, err := New(opts).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []source.Node{
		{Name: "node-a", InternalIPs: []netip.Addr{ip("10.10.1.4")}, PodCIDRs: []netip.Prefix{pfx("10.244.0.0/24")}},
		{Name: "node-b", InternalIPs: []netip.Addr{ip("10.10.1.5")}, PodCIDRs: []netip.Prefix{pfx("10.244.1.0/24")}},
		{Name: "node-c", InternalIPs: []netip.Addr{ip("10.10.1.6")}, PodCIDRs: []netip.Prefix{pfx("10.244.2.0/24")}, Labels: map[string]string{"pool": "gpu"}},
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The default allocations file sits beside the inventory.
	if _, err := os.Stat(filepath.Join(dir, "nodes.allocations.json")); err != nil {
		t.Errorf("allocations not recorded beside the inventory: %v", err)
	}
}

// TestSameCIDRAcrossRuns: a new Source (a new process) on the same files
// gives every node the same pod CIDR, even when nodes are added in front.
func TestSameCIDRAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "inv.yaml")
	opts := Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16"), pfx("fd00:200::/56")}}
	write(t, file, "nodes:\n- {name: m, internalIPs: [10.0.0.2, 'fd00::2']}\n- {name: n, internalIPs: [10.0.0.3, 'fd00::3']}\n")
	first, err := New(opts).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	write(t, file, "nodes:\n- {name: a, internalIPs: [10.0.0.1, 'fd00::1']}\n- {name: m, internalIPs: [10.0.0.2, 'fd00::2']}\n- {name: n, internalIPs: [10.0.0.3, 'fd00::3']}\n")
	second, err := New(opts).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := func(ns []source.Node) map[string][]netip.Prefix {
		m := map[string][]netip.Prefix{}
		for _, n := range ns {
			m[n.Name] = n.PodCIDRs
		}
		return m
	}
	f, s := byName(first), byName(second)
	for _, n := range []string{"m", "n"} {
		if !cmp.Equal(f[n], s[n], cmpOpts...) {
			t.Errorf("%s: %v then %v", n, f[n], s[n])
		}
		if len(s[n]) != 2 || !s[n][0].Addr().Is4() || !s[n][1].Addr().Is6() {
			t.Errorf("%s: %v, want one IPv4 and one IPv6 CIDR, IPv4 first", n, s[n])
		}
	}
	if len(s["a"]) != 2 || s["a"][0] == s["m"][0] || s["a"][0] == s["n"][0] {
		t.Errorf("a = %v", s["a"])
	}
}

func TestExplicitCIDROutsideClusterPassesThrough(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "inv.yaml")
	write(t, file, "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 192.168.5.0/24}\n- {name: b, internalIP: 10.0.0.2}\n")
	got, err := New(Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}}).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].PodCIDRs[0] != pfx("192.168.5.0/24") || got[1].PodCIDRs[0] != pfx("10.200.0.0/24") {
		t.Errorf("got %+v", got)
	}
}

func TestExhaustionReturnsTheOthers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "inv.yaml")
	write(t, file, "nodes:\n- {name: a, internalIP: 10.0.0.1}\n- {name: b, internalIP: 10.0.0.2}\n- {name: c, internalIP: 10.0.0.3}\n")
	got, err := New(Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/23")}}).Nodes(context.Background())
	if err != nil {
		t.Fatalf("err = %v: an exhausted cluster CIDR is a problem of the nodes left without a pod CIDR, not of the inventory", err)
	}
	if len(got) != 3 || len(got[0].PodCIDRs) != 1 || len(got[1].PodCIDRs) != 1 || len(got[2].PodCIDRs) != 0 {
		t.Fatalf("got %+v, want a and b with a CIDR and c without", got)
	}
	if got[0].Problem != nil || got[1].Problem != nil {
		t.Errorf("nodes with a pod CIDR have a problem: %+v %+v", got[0].Problem, got[1].Problem)
	}
	p := got[2].Problem
	if p == nil || p.Reason != ReasonPodCIDRExhausted || !strings.Contains(p.Message, "10.200.0.0/23") || !strings.Contains(p.Message, "node c") {
		t.Errorf("problem of c = %+v", p)
	}
}

// TestBadInventories: each problem names the file, nodes[i].field and the
// value, and no node is returned.
func TestBadInventories(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    []string
	}{
		{"empty file", "", []string{`the file is empty; write ` + "`nodes: []`"}},
		{"no nodes key", "workers: []\n", []string{`workers: unknown field (valid here: nodes)`, `nodes: missing`}},
		{"nodes is not a list", "nodes: worker-0\n", []string{`nodes.yaml:1: nodes: "worker-0": must be a list of nodes, not a string`}},
		{"unknown node field", "nodes:\n- {name: a, internalIp: 10.0.0.1}\n", []string{`nodes[0].internalIp: unknown field (did you mean internalIP?)`, `nodes[0].internalIP: required`}},
		{"podCidr typo", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCidr: 10.200.0.0/24}\n", []string{`nodes[0].podCidr: unknown field (did you mean podCIDR?)`}},
		{"no name", "nodes:\n- {internalIP: 10.0.0.1}\n", []string{`nodes[0].name: required`}},
		{"bad name", "nodes:\n- {name: Worker_0, internalIP: 10.0.0.1}\n", []string{`nodes[0].name: "Worker_0": not a valid Kubernetes node name (a DNS-1123 subdomain`}},
		{"name is a number", "nodes:\n- {name: 7, internalIP: 10.0.0.1}\n", []string{`nodes[0].name: 7: must be a string, not a number`}},
		{"duplicate key", "nodes:\n- name: a\n  internalIP: 10.0.0.1\n  name: b\n", []string{`not valid YAML: line 4: key "name" is already set on line 2`}},
		{"bad IP", "nodes:\n- {name: a, internalIP: 10.240.0.300}\n", []string{`nodes[0].internalIP: "10.240.0.300": not a valid IP address`}},
		{"bad IP in a list", "nodes:\n- {name: a, internalIPs: [10.0.0.1, 'fd00::zz']}\n", []string{`nodes[0].internalIPs[1]: "fd00::zz": not a valid IP address`}},
		{"both IP keys", "nodes:\n- {name: a, internalIP: 10.0.0.1, internalIPs: [10.0.0.1]}\n", []string{`nodes[0].internalIP: give internalIP or internalIPs, not both`}},
		{"mapped IP", "nodes:\n- {name: a, internalIP: '::ffff:10.0.0.1'}\n", []string{`nodes[0].internalIP: "::ffff:10.0.0.1": an IPv4-mapped IPv6 address; write 10.0.0.1`}},
		{"loopback IP", "nodes:\n- {name: a, internalIP: 127.0.0.1}\n", []string{`nodes[0].internalIP: "127.0.0.1": not a unicast address`}},
		{"bad CIDR", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/33}\n", []string{`nodes[0].podCIDR: "10.200.0.0/33": not a valid CIDR`}},
		{"CIDR with host bits", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.1/24}\n", []string{`nodes[0].podCIDR: "10.200.0.1/24": has host bits set; did you mean "10.200.0.0/24"?`}},
		{"two IPv4 pod CIDRs", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDRs: [10.200.0.0/24, 10.200.1.0/24]}\n", []string{`nodes[0].podCIDRs[1]: "10.200.1.0/24": a second pod CIDR of the same IP family`}},
		{"IPv6 CIDR without an IPv6 address", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDRs: [10.200.0.0/24, 'fd00::/64']}\n", []string{`nodes[0].podCIDRs[1]: "fd00::/64": the node has no IPv6 internal IP to route it to`}},
		{"duplicate names", "nodes:\n- {name: a, internalIP: 10.0.0.1}\n- {name: a, internalIP: 10.0.0.2}\n", []string{`nodes[1].name: "a": the same name as nodes[0]`}},
		{"shared internal IP", "nodes:\n- {name: a, internalIP: 10.0.0.1}\n- {name: b, internalIPs: [10.0.0.1]}\n", []string{`nodes.yaml:3: nodes[1].internalIPs[0]: "10.0.0.1": also the internal IP of nodes[0] (a)`}},
		{"problems point at their lines", "nodes:\n  - name: worker-0\n    internalIP: 10.240.0.20\n\n  - name: worker-1\n    internalIP: 10.240.0.21\n    podCIDR: 10.200.1.1/24\n",
			[]string{`nodes.yaml:7: nodes[1].podCIDR: "10.200.1.1/24": has host bits set; did you mean "10.200.1.0/24"?`}},
		{"overlapping pod CIDRs", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/23}\n- {name: b, internalIP: 10.0.0.2, podCIDR: 10.200.1.0/24}\n", []string{`nodes[1].podCIDR: "10.200.1.0/24": overlaps 10.200.0.0/23 of nodes[0] (a)`}},
		{"pod CIDR in the service range", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.32.0.0/24}\n", []string{`nodes[0].podCIDR: "10.32.0.0/24": overlaps the service range 10.32.0.0/24`}},
		{"label value not a string", "nodes:\n- {name: a, internalIP: 10.0.0.1, labels: {gpu: true}}\n", []string{`nodes[0].labels.gpu: true: a label value must be a string`}},
		{"node is a string", "nodes:\n- worker-0\n", []string{`nodes[0]: "worker-0": must be a mapping`}},
		{"YAML syntax", "nodes:\n- {name: a\n", []string{`not valid YAML`}},
		{"several problems at once", "nodes:\n- {name: A, internalIP: x}\n- {name: b, internalIP: 10.0.0.2, podCIDR: y}\n",
			[]string{`nodes[0].name: "A"`, `nodes[0].internalIP: "x"`, `nodes[1].podCIDR: "y"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "nodes.yaml")
			write(t, file, tc.content)
			nodes, err := New(Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}, ServiceCIDRs: []netip.Prefix{pfx("10.32.0.0/24")}}).Nodes(context.Background())
			if err == nil {
				t.Fatalf("accepted, nodes %+v", nodes)
			}
			if nodes != nil {
				t.Errorf("nodes returned with an invalid inventory: %+v", nodes)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("err does not match ErrInvalid: %v", err)
			}
			problemtest.Check(t, err.Error(), file, tc.want...)
			if _, err := os.Stat(filepath.Join(dir, "nodes.allocations.json")); !os.IsNotExist(err) {
				t.Error("allocations were recorded from an invalid inventory")
			}
		})
	}
}

func TestEmptyNodesListIsAllowed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "n.yaml")
	write(t, file, "nodes: []\n")
	got, err := New(Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")}}).Nodes(context.Background())
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := New(Options{File: filepath.Join(t.TempDir(), "none.yaml")}).Nodes(context.Background())
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "none.yaml does not exist") {
		t.Errorf("err = %v", err)
	}
}

// TestWatch runs Watch in a synctest bubble: its polls come every 10 ms
// of the bubble's clock, so "no call within six polls" means six polls
// happened, however busy the machine is.
func TestWatch(t *testing.T) { synctest.Test(t, watch) }

func watch(t *testing.T) {
	const poll = 10 * time.Millisecond
	dir := t.TempDir()
	file := filepath.Join(dir, "n.yaml")
	write(t, file, "nodes: []\n")
	s := New(Options{File: file, PollInterval: poll})
	if _, err := s.Nodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Watch(ctx, func() { calls <- struct{}{} }) }()

	// called waits for the call a change makes; notCalled checks that six
	// polls make none.
	called := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: changed not called within 5s", what)
		}
	}
	notCalled := func(what string) {
		t.Helper()
		select {
		case <-calls:
			t.Fatalf("%s: changed called", what)
		case <-time.After(6 * poll):
		}
	}

	notCalled("without a change")
	// A touch without a change in content is not a change.
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(file, future, future); err != nil {
		t.Fatal(err)
	}
	notCalled("after a touch")
	write(t, file, "nodes:\n- {name: a, internalIP: 10.0.0.1}\n")
	called("after an edit")
	// An editor replacing the file by rename is seen too.
	tmp := filepath.Join(dir, "n.yaml.tmp")
	write(t, tmp, "nodes: []\n")
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	called("after a rename")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	called("after removal")
	notCalled("once the file is gone")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after ctx was cancelled")
	}
}

// TestWatchReportsChangeBeforeStart: an edit between Nodes and Watch is not
// lost. (In a bubble: the 100 ms Watch runs take no wall time.)
func TestWatchReportsChangeBeforeStart(t *testing.T) { synctest.Test(t, watchReportsChangeBeforeStart) }

func watchReportsChangeBeforeStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "n.yaml")
	write(t, file, "nodes: []\n")
	s := New(Options{File: file, PollInterval: 10 * time.Millisecond})
	if _, err := s.Nodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, file, "nodes:\n- {name: a, internalIP: 10.0.0.1}\n")
	var calls atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = s.Watch(ctx, func() { calls.Add(1) })
	if calls.Load() != 1 {
		t.Errorf("changed called %d times, want 1", calls.Load())
	}
}

func TestDefaultAllocationsFile(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/routekeeper/nodes.yaml": "/etc/routekeeper/nodes.allocations.json",
		"inv/cluster.yml":             "inv/cluster.allocations.json",
		"nodes":                       "nodes.allocations.json",
	} {
		if got := DefaultAllocationsFile(in); got != want {
			t.Errorf("DefaultAllocationsFile(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReservedBeforeAllocating: the source asks for the reserved ranges
// only when IPAM has work, allocates around them, and fails without
// allocating when they cannot be read.
func TestReservedBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nodes.yaml")
	calls := 0
	var fail error
	opts := Options{File: file, ClusterCIDRs: []netip.Prefix{pfx("10.200.0.0/16")},
		Reserved: func(context.Context) ([]ipam.Reservation, error) {
			calls++
			return []ipam.Reservation{{Prefix: pfx("10.200.0.0/24"), What: "route fw", Route: true}}, fail
		}}

	write(t, file, "nodes:\n  - {name: a, internalIP: 10.240.0.4, podCIDR: 10.200.9.0/24}\n")
	if _, err := New(opts).Nodes(context.Background()); err != nil || calls != 0 {
		t.Fatalf("explicit pod CIDRs only: err %v, Reserved called %d times, want 0", err, calls)
	}

	write(t, file, "nodes:\n  - {name: a, internalIP: 10.240.0.4, podCIDR: 10.200.9.0/24}\n  - {name: b, internalIP: 10.240.0.5}\n")
	fail = errors.New("GET route table: 503")
	if _, err := New(opts).Nodes(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Reserved failing: err %v, want it passed on", err)
	}
	if _, err := os.Stat(DefaultAllocationsFile(file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an allocation was recorded although the reserved ranges were unknown (%v)", err)
	}

	fail = nil
	got, err := New(opts).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[1].PodCIDRs) != 1 || got[1].PodCIDRs[0] != pfx("10.200.1.0/24") {
		t.Errorf("b = %+v, want pod CIDR 10.200.1.0/24 (10.200.0.0/24 is reserved)", got[1])
	}
}

func TestAddressSpaces(t *testing.T) {
	rs, err := AddressSpaces("vnet", []string{"10.240.0.0/16", "fd00::/48"})
	if err != nil || len(rs) != 2 || rs[0].Prefix != pfx("10.240.0.0/16") || rs[0].Route || !strings.Contains(rs[1].What, "vnet") {
		t.Errorf("AddressSpaces = %+v, %v", rs, err)
	}
	if _, err := AddressSpaces("vnet", []string{"10.240.0.0/33"}); err == nil || !strings.Contains(err.Error(), `addressPrefixes[0] "10.240.0.0/33"`) {
		t.Errorf("bad prefix: %v", err)
	}
}
