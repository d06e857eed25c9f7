package doctor

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/finding"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/routing"
)

// The checks of this file.
const (
	// RuleReachability: a node's pod CIDR traced from a guarded subnet
	// with Azure's route selection (internal/routing) is not delivered.
	RuleReachability = "pod-reachability"
	// RuleIPForwarding: a node's NIC has IP forwarding off, so Azure drops
	// the pod traffic a VirtualAppliance route sends to it.
	RuleIPForwarding = "ip-forwarding"
)

// NIC is what the IP forwarding check needs of a network interface.
type NIC struct {
	ID           string
	Name         string
	IPs          []netip.Addr
	IPForwarding bool
}

// RoutingInput is what the routing checks work on: the network as read
// (routing.State, whose nodes are the cluster's), the guarded subnets, and
// the NICs when they could be read (NICsRead false skips the check).
type RoutingInput struct {
	State   routing.State
	Subnets []string
	NICs    []NIC
	// NICsRead: the NICs were listed (the permission to read them is
	// optional); NICsError says why not.
	NICsRead  bool
	NICsError string
}

// maxNamed is how many nodes a grouped finding names.
const maxNamed = 5

// CheckRouting traces every node's pod CIDRs from every guarded subnet and
// reports what is not delivered, one finding per subnet and cause (the
// nodes it hits are listed), and the node NICs without IP forwarding.
func CheckRouting(in RoutingInput) []finding.Finding {
	var out []finding.Finding
	tr := routing.NewTracer(in.State)
	for _, id := range in.Subnets {
		sn := findSubnet(in.State.Subnets, id)
		if sn == nil {
			continue // the association check reports a subnet that is missing
		}
		type group struct {
			example *routing.Result
			nodes   []string
		}
		var order []string
		groups := map[string]*group{}
		for _, n := range in.State.Nodes {
			for _, pod := range n.PodCIDRs {
				src, ok := sn.FirstAddr(pod.Addr().Is4())
				if !ok {
					continue
				}
				r := tr.Verdict(routing.Endpoint{Addr: src}, routing.Endpoint{Addr: routing.PodAddr(pod), Node: n.Name})
				if r.OK() {
					continue
				}
				k := string(r.Verdict) + " " + r.Node
				if r.Route != nil {
					k += " " + r.Route.Prefix.String() + " " + r.Route.Source
				}
				g := groups[k]
				if g == nil {
					tr.Explain(r)
					g = &group{example: r}
					groups[k] = g
					order = append(order, k)
				}
				g.nodes = append(g.nodes, fmt.Sprintf("%s (%s)", n.Name, pod))
			}
		}
		for _, k := range order {
			g := groups[k]
			out = append(out, finding.Finding{Severity: finding.Error, Rule: RuleReachability, Resource: id,
				Message: reachabilityMessage(sn.Name, g.example, g.nodes),
				Fix:     fmt.Sprintf("routekeeper trace %s %s", g.example.Source.Addr, g.example.Destination.Addr)})
		}
	}
	return append(out, checkForwarding(in)...)
}

func reachabilityMessage(subnet string, r *routing.Result, nodes []string) string {
	who := strings.Join(nodes[:min(len(nodes), maxNamed)], ", ")
	if len(nodes) > maxNamed {
		who += fmt.Sprintf(" and %d more", len(nodes)-maxNamed)
	}
	// The first reasons say where the packet starts and what the
	// destination is; the rest is the route and the verdict.
	why := r.Reasons
	if len(why) > 2 {
		why = why[2:]
	}
	return fmt.Sprintf("pod traffic from %s to %d node pod CIDR(s) is not delivered (%s): %s. Example %s → %s: %s",
		subnet, len(nodes), r.Verdict, who, r.Source.Addr, r.Destination.Addr, strings.Join(why, "; "))
}

func checkForwarding(in RoutingInput) []finding.Finding {
	if !in.NICsRead {
		if in.NICsError == "" {
			return nil
		}
		return []finding.Finding{{Severity: finding.Info, Rule: RuleIPForwarding, Resource: "",
			Message: "the network interfaces could not be read, so IP forwarding of the nodes' NICs was not checked (optional permission Microsoft.Network/networkInterfaces/read): " + in.NICsError}}
	}
	byIP := map[netip.Addr]*NIC{}
	for i := range in.NICs {
		for _, ip := range in.NICs[i].IPs {
			byIP[ip] = &in.NICs[i]
		}
	}
	var out []finding.Finding
	seen := map[string]bool{}
	for _, n := range in.State.Nodes {
		if len(n.PodCIDRs) == 0 {
			continue // no pod route points to it
		}
		for _, ip := range n.InternalIPs {
			nic := byIP[ip]
			if nic == nil || nic.IPForwarding || seen[nic.ID] {
				continue
			}
			seen[nic.ID] = true
			out = append(out, finding.Finding{Severity: finding.Error, Rule: RuleIPForwarding, Resource: nic.ID,
				Message: fmt.Sprintf("node %s's NIC %s has IP forwarding disabled: Azure drops the pod traffic the route table sends to %s (next hop VirtualAppliance)",
					n.Name, nic.Name, ip),
				Fix: fmt.Sprintf("az network nic update --ids %s --ip-forwarding true", nic.ID)})
		}
	}
	return out
}

func findSubnet(subnets []routing.Subnet, id string) *routing.Subnet {
	i := slices.IndexFunc(subnets, func(s routing.Subnet) bool { return armid.Same(s.ID, id) })
	if i < 0 {
		return nil
	}
	return &subnets[i]
}

// Add adds findings to the report, keeping errors before warnings before
// remarks.
func (r *Report) Add(fs ...finding.Finding) {
	r.Findings = append(r.Findings, fs...)
	finding.Sort(r.Findings)
}
