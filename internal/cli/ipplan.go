package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/output"
)

// ipplanOptions are the flags of `routekeeper ipplan`.
type ipplanOptions struct {
	file             string
	configPath       string
	endpoint         string // with --config: a served fabric
	svg              string
	vnet             []string
	subnets          []string
	podCIDR          []string
	serviceCIDR      []string
	dnsServiceIP     string
	nodes            int
	maxPods          int
	surge            string
	onPrem           []string
	peered           []string
	plugins          []string
	routeLimit       int
	platform         string
	nodeCIDRMaskSize int
	nodeCIDRMask6    int
}

// ipplanFlags maps a Plan field (as ipplan.FieldError names it) to its flag.
var ipplanFlags = map[string]string{
	"vnet":             "vnet",
	"subnets":          "subnet",
	"podCIDR":          "pod-cidr",
	"serviceCIDR":      "service-cidr",
	"dnsServiceIP":     "dns-service-ip",
	"nodes":            "nodes",
	"maxPods":          "max-pods",
	"surge":            "surge",
	"onPrem":           "on-prem",
	"peered":           "peered",
	"plugins":          "plugin",
	"routeLimit":       "route-limit",
	"platform":         "platform",
	"nodeCIDRMaskSize": "node-cidr-mask-size",

	"nodeCIDRMaskSizeIPv6": "node-cidr-mask-size-ipv6",
}

func (a *shell) newIpplanCmd() *cobra.Command {
	var o ipplanOptions
	cmd := &cobra.Command{
		Use:   "ipplan",
		Short: "Check an address plan and show its capacity: kubenet vs Azure CNI vs CNI Overlay",
		Long: `ipplan checks a cluster's address plan before anything is created: forbidden
ranges, overlaps between the VNet, its subnets, the pod and service ranges and
on-premises or peered ranges, the DNS service IP, the size of the service range,
a pod CIDR or node subnet too small for the nodes plus upgrade surge, and the
two caps of kubenet, told apart: the route table's (Azure's limit of 1,000 routes
per route table; --route-limit) and, on AKS, AKS's own of 400 kubenet nodes
(--platform self-managed for Kubernetes on Azure VMs, which only the table caps).
It also shows, for each network plugin, how many nodes and pods the plan holds
and the smallest subnet for the requested nodes.

The plan comes from flags, from a plan file (-f, YAML or JSON with the fields
vnet, subnets, podCIDR, serviceCIDR, dnsServiceIP, nodes, maxPods, surge, onPrem,
peered, plugins, routeLimit, platform, nodeCIDRMaskSize, nodeCIDRMaskSizeIPv6), or from a live routekeeper config
(--config: ranges from the config, subnets and VNet address space read from the
cloud, plugin kubenet; platform self-managed when routekeeper writes the routes,
aks when it only observes them). Flags override either. The first subnet is the node
subnet. Unset values get Azure's defaults: pod CIDR 10.244.0.0/16, service CIDR
10.0.0.0/16, DNS service IP 10.0.0.10, max pods 110 (kubenet), 30 (Azure CNI) or
250 (Overlay), surge 1 node.

Without --plugin all three plugins are compared and problems that concern only
some of them are warnings; name the plugin(s) you will use to make them errors.
The command exits 3 when there is any error finding.

Dual-stack plans give one pod and one service range per IP family, comma
separated or repeated (as AKS's --pod-cidrs and --service-cidrs), and IPv6
prefixes on the VNet and its subnets (--subnet nodes=10.1.0.0/24,fd00:1::/64).
Each node then also gets an IPv6 pod range (/80 by default).`,
		Example: `  # Microsoft's kubenet article: a /24 node subnet, Azure's defaults
  routekeeper ipplan --vnet 192.168.0.0/16 --subnet myAKSSubnet=192.168.1.0/24

  # Microsoft's worked example: 50 nodes + 1 surge at 30 pods under Azure CNI
  routekeeper ipplan --plugin azure --nodes 50 --max-pods 30

  # A dual-stack Overlay cluster, AKS's IPv6 defaults
  routekeeper ipplan --plugin overlay --vnet 10.1.0.0/16,fd00:1::/48 --subnet nodes=10.1.0.0/22,fd00:1::/64 \
    --pod-cidr 10.244.0.0/16,fd12:3456:789a::/64 --nodes 100

  # A plan file, with a picture of the ranges
  routekeeper ipplan -f plan.yaml --svg plan.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runIpplan(cmd, &o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "plan file (YAML or JSON; - for stdin)")
	f.StringVar(&o.configPath, "config", "", "routekeeper config: plan the live cluster, reading its subnets and VNet from the cloud")
	f.StringVar(&o.endpoint, "endpoint", "", "with --config: base URL of a served fabric (routekeeper fabric serve) to read instead of the config's cloud")
	f.StringVar(&o.svg, "svg", "", "write a picture of the ranges on the address axis to this SVG file")
	f.StringSliceVar(&o.vnet, "vnet", nil, "VNet address space (repeatable)")
	f.StringSliceVar(&o.subnets, "subnet", nil, "subnet as NAME=CIDR or CIDR (repeatable; the first is the node subnet)")
	f.StringSliceVar(&o.podCIDR, "pod-cidr", nil, "pod CIDR, one per IP family (repeatable; one /24 per node for kubenet and Overlay; default "+ipplan.DefaultPodCIDR+")")
	f.StringSliceVar(&o.serviceCIDR, "service-cidr", nil, "Kubernetes service CIDR, one per IP family (repeatable; default "+ipplan.DefaultServiceCIDR+")")
	f.StringVar(&o.dnsServiceIP, "dns-service-ip", "", "cluster DNS service IP (default "+ipplan.DefaultDNSServiceIP+")")
	f.IntVar(&o.nodes, "nodes", 0, "number of nodes to plan for (without it only the capacity is shown)")
	f.IntVar(&o.maxPods, "max-pods", 0, "maximum pods per node (default 110 kubenet, 30 azure, 250 overlay)")
	f.StringVar(&o.surge, "surge", "", `extra nodes during upgrades: a count or a percentage such as "33%" (default 1)`)
	f.StringSliceVar(&o.onPrem, "on-prem", nil, "on-premises range the cluster must reach (repeatable)")
	f.StringSliceVar(&o.peered, "peered", nil, "address space of a peered VNet (repeatable)")
	f.StringSliceVar(&o.plugins, "plugin", nil, "network plugin: kubenet, azure or overlay (repeatable; default: compare all three)")
	f.IntVar(&o.routeLimit, "route-limit", 0, "routes a route table holds (default 1000, Azure's since May 2026)")
	f.StringVar(&o.platform, "platform", "", "who runs the cluster: aks (AKS caps a kubenet cluster at 400 nodes) or self-managed (only the route table caps kubenet) (default aks)")
	f.IntVar(&o.nodeCIDRMaskSize, "node-cidr-mask-size", 0, "prefix length of each node's pod range under kubenet (default 24)")
	f.IntVar(&o.nodeCIDRMask6, "node-cidr-mask-size-ipv6", 0, "prefix length of each node's IPv6 pod range (default 80, AKS's)")
	return cmd
}

// planSource says where the plan's base values came from, for error messages.
type planSource struct {
	kind string // "plan file" or "config file"
	path string
}

func (a *shell) runIpplan(cmd *cobra.Command, o *ipplanOptions) error {
	if o.file != "" && o.configPath != "" {
		return usageErrorf("flags -f and --config: give one of them, not both")
	}
	var plan ipplan.Plan
	var src *planSource
	switch {
	case o.file != "":
		p, err := a.readPlanFile(o.file)
		if err != nil {
			return err
		}
		plan, src = p, &planSource{kind: "plan file", path: o.file}
	case o.configPath != "":
		p, err := a.app.LivePlan(cmd.Context(), o.configPath, o.endpoint)
		if err != nil {
			return err
		}
		plan, src = p, &planSource{kind: "config file", path: o.configPath}
	}
	o.apply(cmd, &plan)

	report, err := ipplan.Analyze(plan)
	if err != nil {
		return a.planError(cmd, src, err)
	}
	if err := a.printPlanReport(report); err != nil {
		return err
	}
	if o.svg != "" {
		if err := os.WriteFile(o.svg, ipplan.SVG(report), 0o644); err != nil {
			return fmt.Errorf("writing the SVG picture: %w", err)
		}
	}
	if report.Errors() > 0 {
		return findings()
	}
	return nil
}

// apply overrides the plan with every flag that was given (on the command
// line or through its ROUTEKEEPER_* variable).
func (o *ipplanOptions) apply(cmd *cobra.Command, p *ipplan.Plan) {
	set := cmd.Flags().Changed
	if set("vnet") {
		p.VNet = o.vnet
	}
	if set("subnet") {
		p.Subnets = ipplan.ParseSubnets(o.subnets)
	}
	if set("pod-cidr") {
		p.PodCIDR = o.podCIDR
	}
	if set("service-cidr") {
		p.ServiceCIDR = o.serviceCIDR
	}
	if set("dns-service-ip") {
		p.DNSServiceIP = o.dnsServiceIP
	}
	if set("nodes") {
		p.Nodes = o.nodes
	}
	if set("max-pods") {
		mp := o.maxPods
		p.MaxPods = &mp
	}
	if set("surge") {
		p.Surge = ipplan.Surge(o.surge)
	}
	if set("on-prem") {
		p.OnPrem = o.onPrem
	}
	if set("peered") {
		p.Peered = o.peered
	}
	if set("node-cidr-mask-size-ipv6") {
		p.NodeCIDRMaskSizeIPv6 = o.nodeCIDRMask6
	}
	if set("plugin") {
		p.Plugins = nil
		for _, s := range o.plugins {
			p.Plugins = append(p.Plugins, ipplan.Plugin(s))
		}
	}
	if set("route-limit") {
		p.RouteLimit = o.routeLimit
	}
	if set("platform") {
		p.Platform = ipplan.Platform(o.platform)
	}
	if set("node-cidr-mask-size") {
		p.NodeCIDRMaskSize = o.nodeCIDRMaskSize
	}
}

// readPlanFile reads a plan file strictly: an unknown field is an error, so
// that a misspelt "podCidr" is not silently replaced by the default.
func (a *shell) readPlanFile(path string) (ipplan.Plan, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(a.stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return ipplan.Plan{}, usageErrorf("reading plan file: %w", err)
	}
	var p ipplan.Plan
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return ipplan.Plan{}, usageErrorf("plan file %s: %w", path, err)
	}
	return p, nil
}

// planError turns an invalid plan into a usage error that names the flag, or
// the file and field, that holds the bad value.
func (a *shell) planError(cmd *cobra.Command, src *planSource, err error) error {
	var fe *ipplan.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if flag, ok := ipplanFlags[fe.Field]; ok && (cmd.Flags().Changed(flag) || src == nil) {
		return usageErrorf("flag --%s: %q %s", flag, fe.Value, fe.Reason)
	}
	return usageErrorf("%s %s: %s", src.kind, src.path, fe.Error())
}

func (a *shell) printPlanReport(r ipplan.Report) error {
	if !a.humanOutput() {
		tool := finding.Tool{Name: "routekeeper ipplan", InformationURI: docsURL("ipplan.md")}
		return a.printFindings(findingsOutput{v: r, findings: r.Findings, tool: tool})
	}
	w := a.stdout
	if err := output.WriteTable(w, rangesTable(r)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := output.WriteTable(w, capacityTable(r)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if t, ok := ipv6Table(r); ok {
		if err := output.WriteTable(w, t); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintln(w, "No findings.")
		return err
	}
	return a.printFindings(findingsOutput{v: r, findings: r.Findings})
}

func rangesTable(r ipplan.Report) output.Table {
	t := output.Table{Header: []string{"Kind", "Name", "Prefix", "First", "Last", "Addresses", "Usable"}}
	for _, rg := range r.Ranges {
		usable := ""
		if rg.Kind == ipplan.KindSubnet && rg.Prefix.Addr().Is4() {
			usable = ipplan.Thousands(rg.Usable)
		}
		t.Rows = append(t.Rows, []string{string(rg.Kind), rg.Name, rg.Prefix.String(),
			rg.First.String(), rg.Last.String(), rg.Addresses.String(), usable})
	}
	return t
}

func capacityTable(r ipplan.Report) output.Table {
	t := output.Table{Header: []string{"Plugin", "PodsPerNode", "MaxNodes", "LimitedBy", "MaxPods"}}
	if r.Nodes > 0 {
		t.Header = append(t.Header, "NodesWithSurge", "SubnetIPs", "SmallestSubnet", "PodCIDRIPs", "SmallestPodCIDR", "Fits")
	}
	opt := func(n *int64) string {
		if n == nil {
			return "-"
		}
		return ipplan.Thousands(*n)
	}
	prefix := func(bits int) string {
		if bits == 0 {
			return "-"
		}
		return "/" + strconv.Itoa(bits)
	}
	for _, c := range r.Capacity {
		row := []string{string(c.Plugin), strconv.Itoa(c.MaxPodsPerNode), opt(c.MaxNodes), orDash(c.LimitedBy), opt(c.MaxPods)}
		if r.Nodes > 0 {
			podIPs := "-"
			if c.PodCIDRAddressesConsumed > 0 {
				podIPs = ipplan.Thousands(c.PodCIDRAddressesConsumed)
			}
			fits := "-"
			if c.Fits != nil {
				fits = map[bool]string{true: "yes", false: "NO"}[*c.Fits]
			}
			row = append(row, ipplan.Thousands(int64(c.NodesWithSurge)), ipplan.Thousands(c.AddressesConsumed),
				prefix(c.SmallestSubnetPrefix), podIPs, prefix(c.SmallestPodCIDRPrefix), fits)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// ipv6Table is the capacity of a dual-stack plan's IPv6 pod CIDR: its
// node ranges (one per node) under each plugin that uses it.
func ipv6Table(r ipplan.Report) (output.Table, bool) {
	t := output.Table{Header: []string{"Plugin", "IPv6PodCIDR", "NodeRange", "NodeRanges"}}
	if r.Nodes > 0 {
		t.Header = append(t.Header, "SmallestPodCIDR", "Fits")
	}
	for _, c := range r.Capacity {
		v := c.IPv6
		if v == nil {
			continue
		}
		row := []string{string(c.Plugin), v.PodCIDR.String(), "/" + strconv.Itoa(v.NodeCIDRMaskSize), v.NodeRanges.String()}
		if r.Nodes > 0 {
			fits := "-"
			if v.Fits != nil {
				fits = map[bool]string{true: "yes", false: "NO"}[*v.Fits]
			}
			row = append(row, "/"+strconv.Itoa(v.SmallestPodCIDRPrefix), fits)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, len(t.Rows) > 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
