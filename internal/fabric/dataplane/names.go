package dataplane

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"regexp"
)

// The kernel objects of a Spec are named after its parts, so that Apply
// finds what an earlier Apply (or an earlier process) built:
//
//	namespace  <prefix>-vnet-<vnet>       the VNet's router
//	namespace  <prefix>-node-<node>       a NIC: eth0 holds the node's IP
//	namespace  <prefix>-pod-<ip>          a pod: eth0 holds its IP
//	link       n<hex IP> (router)         the router's side of a node's veth
//	link       p<hex IP> (node)           the node's side of a pod's veth
//	table      hostTable (router)         /32 routes to the NICs of the VNet
//	table      subnetTable(name) (router) the effective routes of a subnet
const (
	routerInfix = "-vnet-"
	nodeInfix   = "-node-"
	podInfix    = "-pod-"

	hostTable = 900
	// rulePrefSubnet selects a subnet's table by ingress interface;
	// rulePrefHosts is where VnetLocal (throw) continues.
	rulePrefSubnet = 1000
	rulePrefHosts  = 2000
)

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{1,15}$`)

// CheckPrefix checks a namespace prefix: 2-16 lower-case letters and
// digits, starting with a letter.
func CheckPrefix(prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("data plane prefix %q: want 2-16 lower-case letters and digits, starting with a letter", prefix)
	}
	return nil
}

// PrefixFor derives the namespace prefix of a fabric from its state file
// ("" for an in-memory fabric and pid): "rk" and 8 hex digits.
func PrefixFor(statePath string, pid int) string {
	h := fnv.New32a()
	if statePath == "" {
		fmt.Fprintf(h, "memory:%d", pid)
	} else {
		h.Write([]byte(statePath))
	}
	return fmt.Sprintf("rk%08x", h.Sum32())
}

func routerNS(prefix, vnet string) string { return prefix + routerInfix + vnet }
func nodeNS(prefix, node string) string   { return prefix + nodeInfix + node }
func podNS(prefix string, a netip.Addr) string {
	return prefix + podInfix + a.String()
}

func hexIP(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("%02x%02x%02x%02x", b[0], b[1], b[2], b[3])
}

func nodeLink(ip netip.Addr) string { return "n" + hexIP(ip) }
func podLink(ip netip.Addr) string  { return "p" + hexIP(ip) }

// subnetTable is the routing table of a subnet in its router: stable
// across Applies while the subnet exists.
func subnetTable(subnet string) int {
	h := fnv.New32a()
	h.Write([]byte(subnet))
	return 1000 + int(h.Sum32()%1_000_000)
}
