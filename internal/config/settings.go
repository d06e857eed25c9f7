package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a setting's value.
type Kind int

// The kinds of settings.
const (
	KindString   Kind = iota
	KindStrings       // a list of strings; a flag repeats or separates with commas
	KindInt           // an integer
	KindBool          // true or false
	KindDuration      // a Go duration: 200ms, 5s, 1m
	KindCIDRs         // a list of CIDRs; a flag repeats or separates with commas
	KindEnum          // one of Setting.Values
	KindPath          // a file path; relative to the config file's directory when set there
	KindSecret        // a string that is never printed
)

// IsList reports whether the setting holds a list.
func (k Kind) IsList() bool { return k == KindStrings || k == KindCIDRs }

// Use says which commands read a setting, so that each command registers
// (and its --help lists) only the flags it uses. A command takes the union
// of the groups it needs; the config file may hold every setting whatever
// the command.
type Use uint

// The groups of settings.
const (
	// UseTarget: the cluster and the resources it keeps (cluster name and
	// CIDRs, resource group, route table, subnets). Every config command.
	UseTarget Use = 1 << iota
	// UsePlan: what planning the table's routes needs beyond the target
	// (create, location, route limit, routes mode).
	UsePlan
	// UseCloud: how to reach the cloud (local fabric state, Azure identity).
	UseCloud
	// UseWrites: how the local fabric carries out writes (operation
	// duration): commands that write.
	UseWrites
	// UseNodes: where the nodes come from (inventory and IPAM, kube).
	UseNodes
	// UseAssociation: what to do about a subnet without the table.
	UseAssociation
	// UseController: run only (batching, resync, guard interval, leader
	// election, metrics, the local topology it applies).
	UseController

	// UseAll is every group: run's settings.
	UseAll = UseTarget | UsePlan | UseCloud | UseWrites | UseNodes | UseAssociation | UseController
)

// UsedBy reports whether a command that reads the groups u registers s. A
// setting without a group is registered by every command.
func (s Setting) UsedBy(u Use) bool { return s.Use == 0 || s.Use&u != 0 }

// Setting describes one configuration setting: its place in the YAML file,
// its flag (whose ROUTEKEEPER_* variable the CLI derives) and its default.
type Setting struct {
	// Path is the setting's YAML path, for example "routeTable.routeLimit".
	Path string
	// Flag is the flag name without dashes, for example "route-limit".
	Flag string
	// Short is the one-letter flag, "" for none.
	Short string
	Kind  Kind
	// Values are the allowed values of an enum.
	Values []string
	// Default is the default as documented ("" for none).
	Default string
	// Usage is the one-line help.
	Usage string
	// Use is the group of commands that read the setting (0: all).
	Use Use

	ptr func(*Config) any
}

// settings is the table of every setting, in documentation order. The
// decoder, the flags, the dump and docs/configuration.md follow it.
var settings = []Setting{
	{Path: "cluster.name", Use: UseTarget, Flag: "cluster-name", Kind: KindString,
		Usage: "cluster name (a DNS label); the value of the route table's claim tag",
		ptr:   func(c *Config) any { return &c.Cluster.Name }},
	{Path: "cluster.clusterCIDRs", Use: UseTarget, Flag: "cluster-cidr", Kind: KindCIDRs,
		Usage: "pod address range of the cluster, at most one IPv4 and one IPv6 (repeat or separate with commas)",
		ptr:   func(c *Config) any { return &c.Cluster.ClusterCIDRs }},
	{Path: "cluster.serviceCIDRs", Use: UseNodes, Flag: "service-cidr", Kind: KindCIDRs,
		Usage: "service address range(s); IPAM never hands out a pod CIDR overlapping them",
		ptr:   func(c *Config) any { return &c.Cluster.ServiceCIDRs }},
	{Path: "cluster.nodeCIDRMaskSize", Use: UseNodes, Flag: "node-cidr-mask-size", Kind: KindInt, Default: "24",
		Usage: "prefix length of the IPv4 pod CIDR IPAM gives each node",
		ptr:   func(c *Config) any { return &c.Cluster.NodeCIDRMaskSize }},
	{Path: "cluster.nodeCIDRMaskSizeIPv6", Use: UseNodes, Flag: "node-cidr-mask-size-ipv6", Kind: KindInt, Default: "64",
		Usage: "prefix length of the IPv6 pod CIDR IPAM gives each node",
		ptr:   func(c *Config) any { return &c.Cluster.NodeCIDRMaskSizeIPv6 }},

	{Path: "resourceGroup", Use: UseTarget, Flag: "resource-group", Short: "g", Kind: KindString,
		Usage: "resource group of a route table or subnets given by name (default: azure.json's resourceGroup)",
		ptr:   func(c *Config) any { return &c.ResourceGroup }},
	{Path: "routeTable.id", Use: UseTarget, Flag: "route-table", Short: "n", Kind: KindString,
		Usage: "the route table that holds the pod routes: its ARM ID, or its name with --resource-group/-g",
		ptr:   func(c *Config) any { return &c.RouteTable.ID }},
	{Path: "routeTable.create", Use: UsePlan, Flag: "create-route-table", Kind: KindBool, Default: "false",
		Usage: "create the route table (tagged with the cluster name) when it is missing",
		ptr:   func(c *Config) any { return &c.RouteTable.Create }},
	{Path: "routeTable.location", Use: UsePlan, Flag: "location", Kind: KindString,
		Usage: "location of a created route table (default: azure.json's, else the first subnet's virtual network's)",
		ptr:   func(c *Config) any { return &c.RouteTable.Location }},
	{Path: "routeTable.routeLimit", Use: UsePlan, Flag: "route-limit", Kind: KindInt, Default: "0",
		Usage: "most routes the table may hold, custom routes included: 0 is Azure's limit, read from the usages API of the table's region (1,000 per route table by default); a positive number lowers it, never raises it",
		ptr:   func(c *Config) any { return &c.RouteTable.RouteLimit }},
	{Path: "routeTable.adopt", Use: UsePlan, Flag: "adopt", Kind: KindEnum, Default: "none",
		Values: []string{string(AdoptNone), string(AdoptMatching)},
		Usage:  "none, or matching: take over a route routekeeper does not own that has exactly a node's pod CIDR and next hop, renaming it in one write (no outage)",
		ptr:    func(c *Config) any { return (*string)(&c.RouteTable.Adopt) }},
	{Path: "routeTable.claim", Use: UsePlan, Flag: "claim-route-table", Kind: KindBool, Default: "false",
		Usage: "write the cluster's claim tag to an existing unclaimed table, after which routes of nodes the cluster does not have are deleted (a created table is always claimed)",
		ptr:   func(c *Config) any { return &c.RouteTable.Claim }},

	{Path: "subnets", Use: UseTarget, Flag: "subnet", Kind: KindStrings,
		Usage: "a subnet the route table must stay associated with: its ARM ID, or <vnet>/<subnet> with --resource-group/-g (repeat or separate with commas)",
		ptr:   func(c *Config) any { return &c.Subnets }},

	{Path: "association.policy", Use: UseAssociation, Flag: "association-policy", Kind: KindEnum, Default: "enforce",
		Values: []string{string(PolicyEnforce), string(PolicyFollow), string(PolicyReport)},
		Usage:  "what to do when a subnet is not associated with the route table: enforce, follow or report",
		ptr:    func(c *Config) any { return (*string)(&c.Association.Policy) }},
	{Path: "association.restore", Use: UseAssociation, Flag: "association-restore", Kind: KindBool, Default: "false",
		Usage: "under enforce, re-associate the route table even when another table is on the subnet",
		ptr:   func(c *Config) any { return &c.Association.Restore }},
	{Path: "association.interval", Use: UseController, Flag: "association-interval", Kind: KindDuration, Default: "5s",
		Usage: "how often the subnet associations are checked",
		ptr:   func(c *Config) any { return &c.Association.Interval }},

	{Path: "routes", Use: UsePlan, Flag: "routes", Kind: KindEnum, Default: "manage",
		Values: []string{string(RoutesManage), string(RoutesObserve), string(RoutesStandDown)},
		Usage:  "manage: write pod routes; observe: only report what would change; standDown: the cluster moved to an overlay CNI, remove routekeeper's own routes once confirmed (--confirm-stand-down)",
		ptr:    func(c *Config) any { return (*string)(&c.Routes) }},

	{Path: "cloud.type", Use: UseCloud, Flag: "cloud", Kind: KindEnum, Default: "local",
		Values: []string{string(CloudLocal), string(CloudAzure)},
		Usage:  "cloud back-end: local (the embedded fabric) or azure (default: azure when an azure.json is given, else local)",
		ptr:    func(c *Config) any { return (*string)(&c.Cloud.Type) }},
	{Path: "cloud.local.state", Use: UseCloud, Flag: "state", Kind: KindPath,
		Usage: "state file of the local fabric (default: the fabric's default state file)",
		ptr:   func(c *Config) any { return &c.Cloud.Local.State }},
	{Path: "cloud.local.endpoint", Use: UseCloud, Flag: "endpoint", Kind: KindString,
		Usage: "base URL of a served fabric (routekeeper fabric serve) to use instead of the state file; https is trusted with the fabric's CA",
		ptr:   func(c *Config) any { return &c.Cloud.Local.Endpoint }},
	{Path: "cloud.local.clientID", Use: UseCloud, Flag: "local-client-id", Kind: KindString,
		Usage: "client ID routekeeper's token names to the local fabric: it acts as the principal the topology declares for it, with its role assignments (default: the fabric's administrator, who may do anything)",
		ptr:   func(c *Config) any { return &c.Cloud.Local.ClientID }},
	{Path: "cloud.local.topology", Use: UseController, Flag: "topology", Kind: KindPath,
		Usage: "topology file applied when the local fabric state is empty, i.e. new (resource groups, virtual networks, subnets); a state that holds anything is left as it is",
		ptr:   func(c *Config) any { return &c.Cloud.Local.Topology }},
	{Path: "cloud.local.operationDuration", Use: UseWrites, Flag: "operation-duration", Kind: KindDuration, Default: "0s",
		Usage: "how long the local fabric's long-running operations take",
		ptr:   func(c *Config) any { return &c.Cloud.Local.OperationDuration }},
	{Path: "cloud.azure.configFile", Use: UseCloud, Flag: "azure-config", Kind: KindPath,
		Usage: "cloud-provider-azure azure.json to read (default with --cloud azure: " + DefaultAzureJSONPath + " if it exists)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.ConfigFile }},
	{Path: "cloud.azure.subscriptionID", Use: UseCloud, Flag: "subscription", Kind: KindString,
		Usage: "Azure subscription ID (azure.json: subscriptionId)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.SubscriptionID }},
	{Path: "cloud.azure.tenantID", Use: UseCloud, Flag: "tenant", Kind: KindString,
		Usage: "Microsoft Entra tenant ID (azure.json: tenantId)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.TenantID }},
	{Path: "cloud.azure.clientID", Use: UseCloud, Flag: "client-id", Kind: KindString,
		Usage: "service principal client ID (azure.json: aadClientId)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.ClientID }},
	{Path: "cloud.azure.clientSecret", Use: UseCloud, Flag: "client-secret", Kind: KindSecret,
		Usage: "service principal secret (azure.json: aadClientSecret); prefer --client-secret-file or the environment variable",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.ClientSecret }},
	{Path: "cloud.azure.clientSecretFile", Use: UseCloud, Flag: "client-secret-file", Kind: KindPath,
		Usage: "file holding the service principal secret",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.ClientSecretFile }},
	{Path: "cloud.azure.useManagedIdentity", Use: UseCloud, Flag: "use-managed-identity", Kind: KindBool, Default: "false",
		Usage: "authenticate with the VM's managed identity (azure.json: useManagedIdentityExtension)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.UseManagedIdentity }},
	{Path: "cloud.azure.userAssignedIdentityID", Use: UseCloud, Flag: "user-assigned-identity-id", Kind: KindString,
		Usage: "client ID or resource ID of the user-assigned identity to use (azure.json: userAssignedIdentityID)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.UserAssignedIdentityID }},
	{Path: "cloud.azure.cloud", Use: UseCloud, Flag: "azure-cloud", Kind: KindString, Default: AzurePublicCloud,
		Usage: "Azure cloud: AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud (azure.json: cloud)",
		ptr:   func(c *Config) any { return &c.Cloud.Azure.Cloud }},

	{Path: "source.type", Use: UseNodes, Flag: "source", Kind: KindEnum,
		Values: []string{string(SourceInventory), string(SourceKube)},
		Usage:  "node source: inventory or kube (default: inventory when an inventory file is given, else kube)",
		ptr:    func(c *Config) any { return (*string)(&c.Source.Type) }},
	{Path: "source.inventory.file", Use: UseNodes, Flag: "inventory", Kind: KindPath,
		Usage: "inventory file: a YAML list of nodes",
		ptr:   func(c *Config) any { return &c.Source.Inventory.File }},
	{Path: "source.inventory.allocations", Use: UseNodes, Flag: "allocations", Kind: KindPath,
		Usage: "where IPAM records the pod CIDRs it handed out (default: <inventory>.allocations.json beside the inventory)",
		ptr:   func(c *Config) any { return &c.Source.Inventory.Allocations }},
	{Path: "source.kube.kubeconfig", Use: UseNodes, Flag: "kubeconfig", Kind: KindPath,
		Usage: "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)",
		ptr:   func(c *Config) any { return &c.Source.Kube.Kubeconfig }},
	{Path: "source.kube.qps", Use: UseNodes, Flag: "kube-api-qps", Kind: KindInt, Default: "50",
		Usage: "steady rate of Kubernetes API requests per second (node status patches, events)",
		ptr:   func(c *Config) any { return &c.Source.Kube.QPS }},
	{Path: "source.kube.burst", Use: UseNodes, Flag: "kube-api-burst", Kind: KindInt, Default: "1200",
		Usage: "Kubernetes API requests allowed at once above the steady rate (a burst of node registrations: the condition patches of a full table of 1,000 nodes)",
		ptr:   func(c *Config) any { return &c.Source.Kube.Burst }},

	{Path: "controller.batchWindow", Use: UseController, Flag: "batch-window", Kind: KindDuration, Default: "200ms",
		Usage: "quiet time after a node change before a reconcile; each further change extends it (up to maxBatchDelay)",
		ptr:   func(c *Config) any { return &c.Controller.BatchWindow }},
	{Path: "controller.maxBatchDelay", Use: UseController, Flag: "max-batch-delay", Kind: KindDuration, Default: "1s",
		Usage: "longest a node change waits while further changes keep extending the batch window",
		ptr:   func(c *Config) any { return &c.Controller.MaxBatchDelay }},
	{Path: "controller.maxDeletes", Use: UsePlan, Flag: "max-deletes", Kind: KindInt, Default: "0",
		Usage: "most routes one reconcile deletes; above it none is deleted (creates and updates go on). 0: the larger of 10 and 10% of the cluster's routes; -1: no limit",
		ptr:   func(c *Config) any { return &c.Controller.MaxDeletes }},
	{Path: "controller.allowEmptySource", Use: UsePlan, Flag: "allow-empty-source", Kind: KindBool, Default: "false",
		Usage: "let a node source that returns no nodes delete the cluster's routes (by default it deletes nothing)",
		ptr:   func(c *Config) any { return &c.Controller.AllowEmptySource }},
	{Path: "controller.confirmStandDown", Use: UsePlan, Flag: "confirm-stand-down", Kind: KindBool, Default: "false",
		Usage: "confirm the stand-down from host routes: with routes: standDown, or when no node has a pod CIDR any more, remove every route of this cluster in one write (past the deletion guards); routes routekeeper does not own, the claim and the associations stay",
		ptr:   func(c *Config) any { return &c.Controller.ConfirmStandDown }},
	{Path: "controller.resync", Use: UseController, Flag: "resync", Kind: KindDuration, Default: "1m",
		Usage: "how often the route table is re-read to catch changes made by others",
		ptr:   func(c *Config) any { return &c.Controller.Resync }},
	{Path: "controller.leaderElection.enabled", Use: UseController, Flag: "leader-elect", Kind: KindBool, Default: "false",
		Usage: "elect a leader among replicas (kube source only)",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.Enabled }},
	{Path: "controller.leaderElection.namespace", Use: UseController, Flag: "leader-election-namespace", Kind: KindString, Default: DefaultLeaderElectionNamespace,
		Usage: "namespace of the leader election lease",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.Namespace }},
	{Path: "controller.leaderElection.name", Use: UseController, Flag: "leader-election-name", Kind: KindString, Default: DefaultLeaderElectionName,
		Usage: "name of the leader election lease",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.Name }},
	{Path: "controller.leaderElection.leaseDuration", Use: UseController, Flag: "leader-election-lease-duration", Kind: KindDuration, Default: "15s",
		Usage: "how long followers wait before taking over a lease the leader stopped renewing",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.LeaseDuration }},
	{Path: "controller.leaderElection.renewDeadline", Use: UseController, Flag: "leader-election-renew-deadline", Kind: KindDuration, Default: "10s",
		Usage: "how long the leader keeps trying to renew its lease before it stops",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.RenewDeadline }},
	{Path: "controller.leaderElection.retryPeriod", Use: UseController, Flag: "leader-election-retry-period", Kind: KindDuration, Default: "2s",
		Usage: "time between tries to acquire or renew the lease",
		ptr:   func(c *Config) any { return &c.Controller.LeaderElection.RetryPeriod }},
	{Path: "controller.metricsAddress", Use: UseController, Flag: "metrics-address", Kind: KindString, Default: DefaultMetricsAddress,
		Usage: `address /metrics, /healthz and /readyz are served on ("" turns them off; default in a Kubernetes pod: ` + InClusterMetricsAddress + `)`,
		ptr:   func(c *Config) any { return &c.Controller.MetricsAddress }},
}

// Settings returns every setting, in documentation order.
func Settings() []Setting {
	out := make([]Setting, len(settings))
	copy(out, settings)
	return out
}

func lookupSetting(path string) (Setting, bool) {
	for _, s := range settings {
		if s.Path == path {
			return s, true
		}
	}
	return Setting{}, false
}

// Set sets the setting at path (see Settings) from text, as flags and
// environment variables give it: one value, or several for a list. where
// names the source in error messages, for example "--route-limit". A value
// that cannot be parsed (a CIDR, an integer, a duration) is an error naming
// where, the field and the value; a list replaces the previous list.
func (c *Config) Set(path string, values []string, where string) error {
	s, ok := lookupSetting(path)
	if !ok {
		return fmt.Errorf("unknown setting %q", path)
	}
	if c.origins == nil {
		c.origins = map[string]origin{}
	}
	var vals []value
	for _, v := range values {
		vals = append(vals, value{text: v})
	}
	var probs Problems
	s.assign(c, vals, origin{where: where}, "", &probs)
	if len(probs) > 0 {
		return probs
	}
	c.origins[path] = origin{where: where}
	return nil
}

// value is one value of a setting as it arrives from a file or a flag.
type value struct {
	text string
	line int // in the file, 0 for a flag
	// bad is set when the YAML type was wrong; assign then reports it.
	bad string
}

// assign parses vals into the setting of c, adding a problem per bad value.
// at is where the setting was written; relativeTo is the directory relative
// paths are resolved against ("" for flags).
func (s Setting) assign(c *Config, vals []value, at origin, relativeTo string, probs *Problems) {
	field := func(i int) string {
		if s.Kind.IsList() {
			return fmt.Sprintf("%s[%d]", s.Path, i)
		}
		return s.Path
	}
	bad := func(i int, v, why string) {
		line := at.line
		if vals[i].line > 0 {
			line = vals[i].line
		}
		probs.add(at.where, line, field(i), strconv.Quote(v), why)
	}
	for i, v := range vals {
		if v.bad != "" {
			// the wrong YAML type: text is the value as YAML shows it
			line := at.line
			if v.line > 0 {
				line = v.line
			}
			probs.add(at.where, line, field(i), v.text, v.bad)
		}
	}
	if len(*probs) > 0 {
		return
	}
	if !s.Kind.IsList() && len(vals) != 1 {
		probs.add(at.where, at.line, s.Path, fmt.Sprintf("%d values", len(vals)), "takes exactly one value")
		return
	}
	switch p := s.ptr(c).(type) {
	case *string:
		v := strings.TrimSpace(vals[0].text)
		switch s.Kind {
		case KindEnum:
			v = canonicalEnum(s.Values, v)
		case KindPath:
			v = expandPath(v, relativeTo)
		}
		*p = v
	case *Secret:
		*p = Secret(vals[0].text)
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(vals[0].text))
		if err != nil {
			bad(0, vals[0].text, "not an integer")
			return
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(strings.TrimSpace(vals[0].text))
		if err != nil {
			bad(0, vals[0].text, "not true or false")
			return
		}
		*p = b
	case *time.Duration:
		t := strings.TrimSpace(vals[0].text)
		d, err := time.ParseDuration(t)
		if err != nil {
			why := "not a duration (for example 500ms, 5s, 1m)"
			if _, nerr := strconv.ParseFloat(t, 64); nerr == nil {
				why = "a duration needs a unit (for example " + t + "s)"
			}
			bad(0, vals[0].text, why)
			return
		}
		*p = d
	case *[]string:
		out := make([]string, 0, len(vals))
		for _, v := range vals {
			out = append(out, strings.TrimSpace(v.text))
		}
		*p = out
	case *[]netip.Prefix:
		out := make([]netip.Prefix, 0, len(vals))
		for i, v := range vals {
			pf, err := netip.ParsePrefix(strings.TrimSpace(v.text))
			if err != nil {
				bad(i, v.text, "not a valid CIDR")
				continue
			}
			out = append(out, pf)
		}
		if len(*probs) == 0 {
			*p = out
		}
	default:
		panic(fmt.Sprintf("config: setting %s has unsupported type %T", s.Path, p))
	}
}

// render returns the setting's current value for the dump: a string, an
// int, a bool or a []string. Secrets are redacted.
func (s Setting) render(c *Config) any {
	switch p := s.ptr(c).(type) {
	case *string:
		return *p
	case *Secret:
		return p.String()
	case *int:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return formatDuration(*p)
	case *[]string:
		return append([]string{}, *p...)
	case *[]netip.Prefix:
		out := make([]string, 0, len(*p))
		for _, pf := range *p {
			out = append(out, pf.String())
		}
		return out
	default:
		panic(fmt.Sprintf("config: setting %s has unsupported type %T", s.Path, p))
	}
}

// formatDuration prints a duration the way people write it: 1m, not 1m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// canonicalEnum spells v as the allowed value it equals ignoring case
// (standdown, STANDDOWN: standDown); a value that is none of them is
// lower-cased, for the validation to name.
func canonicalEnum(values []string, v string) string {
	for _, a := range values {
		if strings.EqualFold(a, v) {
			return a
		}
	}
	return strings.ToLower(v)
}
