package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Plane is the data plane of one fabric: the network namespaces whose
// names start with its prefix. Apply makes them match a Spec; Close
// removes them. It is safe for concurrent use (Applies are serialised).
type Plane struct {
	prefix string
	log    *slog.Logger

	mu    sync.Mutex
	built *Spec // the topology (routes left out) of the last complete Apply
}

// New returns the data plane of prefix (see CheckPrefix, PrefixFor). It
// creates nothing until Apply. It fails when this process lacks the
// privileges to create network namespaces or `ip` (iproute2) is missing.
func New(prefix string, log *slog.Logger) (*Plane, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("the data plane needs the ip command (iproute2): %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plane{prefix: prefix, log: log}, nil
}

// Prefix is the namespace prefix of the plane.
func (p *Plane) Prefix() string { return p.prefix }

// Apply makes the namespaces match spec. It is idempotent: an Apply of the
// spec already in place reads the routers' tables and writes nothing. It
// adds before it deletes (routes are replaced in place, never withdrawn
// first), so a route that stays in the spec forwards throughout. On error
// the state reached is partial but consistent with the last spec for
// everything not yet touched; the next Apply starts over from what the
// kernel holds.
func (p *Plane) Apply(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("data plane spec: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	topo := topologyOf(spec)
	rebuilt := false
	if p.built == nil || !reflect.DeepEqual(*p.built, topo) {
		p.built = nil
		if err := p.build(ctx, spec); err != nil {
			return err
		}
		rebuilt = true
	}
	for _, v := range spec.VNets {
		if err := p.routes(ctx, spec, v); err != nil {
			p.built = nil
			return err
		}
	}
	if rebuilt {
		if err := p.prune(ctx, spec); err != nil {
			return err
		}
		p.built = &topo
	}
	return nil
}

// topologyOf is spec without routes: what build makes.
func topologyOf(spec Spec) Spec {
	t := Spec{Nodes: slices.Clone(spec.Nodes)}
	for _, v := range spec.VNets {
		tv := VNet{Name: v.Name, Space: slices.Clone(v.Space), Peers: slices.Clone(v.Peers)}
		for _, s := range v.Subnets {
			tv.Subnets = append(tv.Subnets, Subnet{Name: s.Name, Prefix: s.Prefix})
		}
		t.VNets = append(t.VNets, tv)
	}
	return t
}

// Close removes every namespace of the plane (and with them their links
// and routes).
func (p *Plane) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.built = nil
	return Cleanup(ctx, p.prefix)
}

// Cleanup removes every network namespace named prefix-…: what a data
// plane of that prefix left behind, after a crash for instance.
func Cleanup(ctx context.Context, prefix string) error {
	_, err := CleanupNamespaces(ctx, prefix)
	return err
}

// CleanupNamespaces is Cleanup, returning the names of the namespaces removed.
func CleanupNamespaces(ctx context.Context, prefix string) ([]string, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	names, err := listNamespaces(prefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	var removed []string
	for _, n := range names {
		if _, err := ip(ctx, "netns", "del", n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

var (
	routerSysctls = map[string]string{
		"ipv4.ip_forward": "1", "ipv4.conf.all.rp_filter": "0", "ipv4.conf.default.rp_filter": "0",
		"ipv4.conf.all.send_redirects": "0", "ipv4.conf.default.send_redirects": "0",
		"ipv6.conf.all.disable_ipv6": "1", "ipv6.conf.default.disable_ipv6": "1",
	}
	podSysctls = map[string]string{"ipv6.conf.all.disable_ipv6": "1", "ipv6.conf.default.disable_ipv6": "1"}
)

// nodeSysctls are a node's: a router's, without forwarding when its NIC
// has IP forwarding disabled.
func nodeSysctls(n Node) map[string]string {
	if !n.NoForwarding {
		return routerSysctls
	}
	out := maps.Clone(routerSysctls)
	out["ipv4.ip_forward"] = "0"
	return out
}

// build creates what is missing of spec's namespaces, links and addresses
// and sets the node and pod routes (all idempotent: replace, not add).
func (p *Plane) build(ctx context.Context, spec Spec) error {
	have, err := listNamespaces(p.prefix)
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, n := range have {
		exists[n] = true
	}
	ensure := func(ns string, sysctls map[string]string) error {
		if !exists[ns] {
			if _, err := ip(ctx, "netns", "add", ns); err != nil {
				return err
			}
			exists[ns] = true
			p.log.Debug("data plane: namespace created", "netns", ns)
		}
		if err := setSysctls(ns, sysctls); err != nil {
			return err
		}
		return batch(ctx, ns, []string{"link set lo up"})
	}
	subnetOf := map[[2]string]Subnet{}
	for _, v := range spec.VNets {
		if err := ensure(routerNS(p.prefix, v.Name), routerSysctls); err != nil {
			return err
		}
		for _, s := range v.Subnets {
			subnetOf[[2]string{v.Name, s.Name}] = s
		}
	}
	routerLinks := map[string]map[string]bool{}
	for _, n := range spec.Nodes {
		rns, nns := routerNS(p.prefix, n.VNet), nodeNS(p.prefix, n.Name)
		if err := ensure(nns, nodeSysctls(n)); err != nil {
			return err
		}
		if routerLinks[rns] == nil {
			if routerLinks[rns], err = links(ctx, rns); err != nil {
				return err
			}
		}
		sn := subnetOf[[2]string{n.VNet, n.Subnet}]
		gw := gateway(sn.Prefix)
		rl := nodeLink(n.IP)
		if !routerLinks[rns][rl] {
			nl, err := links(ctx, nns)
			if err != nil {
				return err
			}
			if nl["eth0"] { // a leftover of a node that moved to another VNet
				if _, err := ip(ctx, "-n", nns, "link", "del", "eth0"); err != nil {
					return err
				}
			}
			if _, err := ip(ctx, "-n", rns, "link", "add", rl, "type", "veth", "peer", "name", "eth0", "netns", nns); err != nil {
				return err
			}
			routerLinks[rns][rl] = true
		}
		if err := batch(ctx, rns, []string{
			fmt.Sprintf("addr replace %s/32 dev %s", gw, rl),
			fmt.Sprintf("link set %s up", rl),
		}); err != nil {
			return err
		}
		nodeLines := []string{
			fmt.Sprintf("addr replace %s/32 dev eth0", n.IP),
			"link set eth0 up",
			fmt.Sprintf("route replace %s/32 dev eth0 scope link", gw),
			fmt.Sprintf("route replace default via %s dev eth0 src %s", gw, n.IP),
		}
		if n.PodCIDR.IsValid() {
			nodeLines = append(nodeLines, fmt.Sprintf("route replace blackhole %s", n.PodCIDR))
		}
		nodeLinks, err := links(ctx, nns)
		if err != nil {
			return err
		}
		for _, a := range n.Pods {
			pns, pl := podNS(p.prefix, a), podLink(a)
			if err := ensure(pns, podSysctls); err != nil {
				return err
			}
			if !nodeLinks[pl] {
				pls, err := links(ctx, pns)
				if err != nil {
					return err
				}
				if pls["eth0"] { // the pod moved to another node
					if _, err := ip(ctx, "-n", pns, "link", "del", "eth0"); err != nil {
						return err
					}
				}
				if _, err := ip(ctx, "-n", nns, "link", "add", pl, "type", "veth", "peer", "name", "eth0", "netns", pns); err != nil {
					return err
				}
			}
			pgw := gateway(n.PodCIDR)
			nodeLines = append(nodeLines,
				fmt.Sprintf("addr replace %s/32 dev %s", pgw, pl),
				fmt.Sprintf("link set %s up", pl),
				fmt.Sprintf("route replace %s/32 dev %s src %s", a, pl, pgw))
			if err := batch(ctx, pns, []string{
				fmt.Sprintf("addr replace %s/32 dev eth0", a),
				"link set eth0 up",
				fmt.Sprintf("route replace %s/32 dev eth0 scope link", pgw),
				fmt.Sprintf("route replace default via %s dev eth0 src %s", pgw, a),
			}); err != nil {
				return err
			}
		}
		if err := batch(ctx, nns, nodeLines); err != nil {
			return err
		}
	}
	if err := p.buildPeers(ctx, spec); err != nil { // peering_linux.go
		return err
	}
	// A new veth carries packets only once the kernel's link watcher has
	// seen its carrier (up to a second later): wait, so that the network
	// forwards when Apply returns.
	for ns := range exists {
		if err := waitLinksUp(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// prune removes what the plane built that spec no longer has: namespaces
// of VNets, nodes and pods that are gone, and links of nodes and pods that
// moved (routes went with their tables in routes).
func (p *Plane) prune(ctx context.Context, spec Spec) error {
	want := map[string]bool{}
	routerLinks := map[string]map[string]bool{}
	for _, v := range spec.VNets {
		want[routerNS(p.prefix, v.Name)] = true
		routerLinks[routerNS(p.prefix, v.Name)] = peerLinksOf(v)
	}
	nodeLinks := map[string]map[string]bool{}
	for _, n := range spec.Nodes {
		want[nodeNS(p.prefix, n.Name)] = true
		rns := routerNS(p.prefix, n.VNet)
		if routerLinks[rns] == nil {
			routerLinks[rns] = map[string]bool{}
		}
		routerLinks[rns][nodeLink(n.IP)] = true
		nl := map[string]bool{}
		for _, a := range n.Pods {
			want[podNS(p.prefix, a)] = true
			nl[podLink(a)] = true
		}
		nodeLinks[nodeNS(p.prefix, n.Name)] = nl
	}
	have, err := listNamespaces(p.prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range have {
		if !want[ns] {
			if _, err := ip(ctx, "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var keep map[string]bool
		var mine func(string) bool
		switch {
		case strings.HasPrefix(ns, p.prefix+routerInfix):
			keep, mine = routerLinks[ns], func(l string) bool { return (strings.HasPrefix(l, "n") || strings.HasPrefix(l, "v")) && len(l) == 9 }
		case strings.HasPrefix(ns, p.prefix+nodeInfix):
			keep, mine = nodeLinks[ns], func(l string) bool { return strings.HasPrefix(l, "p") && len(l) == 9 }
		default:
			continue
		}
		ls, err := links(ctx, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for l := range ls {
			if mine(l) && !keep[l] {
				if err := delLink(ctx, ns, l); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
