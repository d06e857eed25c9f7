package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/routekeeper/routekeeper/internal/armid"
)

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	guid         = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	tenantDomain = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$`)
	// ARM naming rules (Microsoft.Network): route tables and subnets 1-80
	// characters, virtual networks 2-64; alphanumerics, '_', '.', '-';
	// starting with an alphanumeric, ending with an alphanumeric or '_'.
	networkName   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)
	resourceGroup = regexp.MustCompile(`^[-\w.()]+$`)
	location      = regexp.MustCompile(`^[A-Za-z0-9 ]+$`)
)

// maxNodeMaskBits is how much longer than the cluster CIDR's prefix the node
// mask may be: 2^16 node CIDRs per cluster CIDR, as in kube-controller-manager.
const maxNodeMaskBits = 16

// Validate checks the whole configuration and returns every problem (as
// Problems), each naming the file or flag, the field and the value.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.cluster()
	v.routeTable()
	v.association()
	v.cloud()
	v.source()
	v.controller()
	v.mirrors()
	return v.probs.err()
}

type validator struct {
	c     *Config
	probs Problems
}

// bad records a problem with the setting at path, or with its item idx
// when idx >= 0.
func (v *validator) bad(path string, idx int, val any, why string) {
	c := v.c
	field := path
	if idx >= 0 {
		field = fmt.Sprintf("%s[%d]", path, idx)
	}
	vs := formatValue(val)
	o, set := c.origins[path]
	switch {
	case set && o.via != "":
		field += " (from " + o.via + ")"
	case !set && vs != `""` && vs != "" && vs != "[]":
		vs += " (default)"
	}
	where, line := c.where(path, idx)
	v.probs.add(where, line, field, vs, why)
}

func formatValue(val any) string {
	switch x := val.(type) {
	case string:
		return strconv.Quote(x)
	case Secret:
		return strconv.Quote(x.String())
	case netip.Prefix:
		return strconv.Quote(x.String())
	case time.Duration:
		return formatDuration(x)
	case []string:
		if len(x) == 0 {
			return "[]"
		}
		return strconv.Quote(strings.Join(x, ","))
	default:
		return fmt.Sprint(x)
	}
}

func (v *validator) enum(path string, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		v.bad(path, -1, val, "must be one of "+strings.Join(allowed, ", "))
	}
}

func (v *validator) cluster() {
	cl := v.c.Cluster
	switch {
	case cl.Name == "":
		v.bad("cluster.name", -1, cl.Name, "required: the cluster's name, for example kthw")
	case len(cl.Name) > 63 || !dnsLabel.MatchString(cl.Name):
		v.bad("cluster.name", -1, cl.Name, "must be a DNS label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit")
	}

	if len(cl.ClusterCIDRs) == 0 {
		v.bad("cluster.clusterCIDRs", -1, []string{}, "required: the cluster's pod address range(s), for example [10.244.0.0/16]")
	}
	v.prefixes("cluster.clusterCIDRs", cl.ClusterCIDRs, "cluster CIDR")
	v.prefixes("cluster.serviceCIDRs", cl.ServiceCIDRs, "service CIDR")
	for i, s := range cl.ServiceCIDRs {
		for j, p := range cl.ClusterCIDRs {
			if s.Masked().Bits() <= p.Masked().Bits() && s.Masked().Contains(p.Addr()) {
				v.bad("cluster.serviceCIDRs", i, s,
					fmt.Sprintf("contains the whole cluster CIDR %s (cluster.clusterCIDRs[%d]): no pod CIDR could be handed out", p.Masked(), j))
			}
		}
	}

	v.nodeMask("cluster.nodeCIDRMaskSize", cl.NodeCIDRMaskSize, 32, true)
	v.nodeMask("cluster.nodeCIDRMaskSizeIPv6", cl.NodeCIDRMaskSizeIPv6, 128, false)
}

// prefixes checks a list of CIDRs: network addresses, no IPv4-mapped IPv6,
// at most one per IP family.
func (v *validator) prefixes(path string, ps []netip.Prefix, what string) {
	var seen4, seen6 bool
	for i, p := range ps {
		switch {
		case !p.IsValid():
			v.bad(path, i, p, "not a valid CIDR")
			continue
		case p.Addr().Is4In6():
			v.bad(path, i, p, "IPv4-mapped IPv6 addresses are not supported; write the IPv4 CIDR")
			continue
		case p != p.Masked():
			v.bad(path, i, p, fmt.Sprintf("has host bits set; did you mean %q?", p.Masked().String()))
		}
		if p.Addr().Is4() {
			if seen4 {
				v.bad(path, i, p, "a second IPv4 "+what+": give at most one IPv4 and one IPv6 "+what)
			}
			seen4 = true
		} else {
			if seen6 {
				v.bad(path, i, p, "a second IPv6 "+what+": give at most one IPv4 and one IPv6 "+what)
			}
			seen6 = true
		}
	}
}

func (v *validator) nodeMask(path string, mask, maxBits int, ipv4 bool) {
	if mask < 1 || mask > maxBits {
		v.bad(path, -1, mask, fmt.Sprintf("must be between 1 and %d", maxBits))
		return
	}
	for i, p := range v.c.Cluster.ClusterCIDRs {
		if !p.IsValid() || p.Addr().Is4() != ipv4 {
			continue
		}
		switch {
		case mask < p.Bits():
			v.bad(path, -1, mask, fmt.Sprintf("must be at least the prefix length of cluster.clusterCIDRs[%d] %s (%d)", i, p.Masked(), p.Bits()))
		case mask-p.Bits() > maxNodeMaskBits:
			v.bad(path, -1, mask, fmt.Sprintf("must be at most %d bits longer than the prefix length of cluster.clusterCIDRs[%d] %s (at most %d node CIDRs, as kube-controller-manager allows)",
				maxNodeMaskBits, i, p.Masked(), 1<<maxNodeMaskBits))
		}
	}
}

// armID parses id and checks its type (for example
// "Microsoft.Network/routeTables") and names; it returns the parsed ID, or
// nil and the reason it is wrong.
func armID(id, wantType, example string) (*arm.ResourceID, string) {
	want := "want " + example
	if !strings.HasPrefix(id, "/") {
		return nil, "not an ARM resource ID; " + want
	}
	r, err := arm.ParseResourceID(id)
	if err != nil {
		return nil, "not an ARM resource ID; " + want
	}
	if !strings.EqualFold(r.ResourceType.String(), wantType) || r.SubscriptionID == "" || r.ResourceGroupName == "" {
		return nil, fmt.Sprintf("an ARM ID of a %s, not of a %s; %s", wantType, r.ResourceType.String(), want)
	}
	if !guid.MatchString(r.SubscriptionID) {
		return nil, fmt.Sprintf("subscription %q is not a GUID", r.SubscriptionID)
	}
	if len(r.ResourceGroupName) > 90 || !resourceGroup.MatchString(r.ResourceGroupName) || strings.HasSuffix(r.ResourceGroupName, ".") {
		return nil, fmt.Sprintf("resource group %q is not a valid name (1 to 90 letters, digits, '_', '-', '.', '(' and ')', not ending with '.')", r.ResourceGroupName)
	}
	for n := r; n != nil && n.ResourceType.Namespace != "Microsoft.Resources"; n = n.Parent {
		if n.Name == "" {
			return nil, "a resource name is empty; " + want
		}
		limit := 80
		if strings.EqualFold(n.ResourceType.String(), "Microsoft.Network/virtualNetworks") {
			limit = 64
		}
		if len(n.Name) > limit || !networkName.MatchString(n.Name) {
			return nil, fmt.Sprintf("%s name %q is not valid (at most %d letters, digits, '_', '.' and '-', starting with a letter or digit and ending with a letter, digit or '_')",
				n.ResourceType.Types[len(n.ResourceType.Types)-1], n.Name, limit)
		}
	}
	return r, ""
}

const (
	routeTableIDExample = "/subscriptions/<subscription>/resourceGroups/<group>/providers/Microsoft.Network/routeTables/<name>"
	subnetIDExample     = "/subscriptions/<subscription>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<name>"
)

func (v *validator) routeTable() {
	c := v.c
	rt := c.RouteTable
	var table *arm.ResourceID
	if rt.ID == "" {
		v.bad("routeTable.id", -1, rt.ID, "required: the route table's ARM ID, "+routeTableIDExample+", or its name with --resource-group/-g")
	} else if _, err := c.Scope().RouteTableID(rt.ID); err != nil {
		v.bad("routeTable.id", -1, rt.ID, err.Error())
	} else if r, why := armID(rt.ID, "Microsoft.Network/routeTables", routeTableIDExample); why != "" {
		v.bad("routeTable.id", -1, rt.ID, why)
	} else {
		table = r
	}
	if rt.RouteLimit < 0 {
		v.bad("routeTable.routeLimit", -1, rt.RouteLimit, "must be 0 (Azure's limit, read from the usages API of the table's region) or a positive number that lowers it")
	}
	v.enum("routeTable.adopt", string(rt.Adopt), string(AdoptNone), string(AdoptMatching))
	if rt.Location != "" && !location.MatchString(rt.Location) {
		v.bad("routeTable.location", -1, rt.Location, "not an Azure location name (for example eastus)")
	}
	if rt.Create && len(c.Subnets) == 0 {
		v.bad("routeTable.create", -1, rt.Create, "needs at least one subnet in subnets: a created table must be associated, never left detached")
	}
	seen := map[string]int{}
	for i, s := range c.Subnets {
		if _, err := c.Scope().SubnetID(s); err != nil {
			v.bad("subnets", i, s, err.Error())
			continue
		}
		r, why := armID(s, "Microsoft.Network/virtualNetworks/subnets", subnetIDExample)
		if why != "" {
			v.bad("subnets", i, s, why)
			continue
		}
		key := armid.Key(s)
		if j, dup := seen[key]; dup {
			v.bad("subnets", i, s, fmt.Sprintf("the same subnet as subnets[%d]", j))
			continue
		}
		seen[key] = i
		if table != nil && !strings.EqualFold(r.SubscriptionID, table.SubscriptionID) {
			v.bad("subnets", i, s, fmt.Sprintf("in subscription %s, but the route table is in %s: Azure associates a route table only with subnets of its own subscription", r.SubscriptionID, table.SubscriptionID))
		}
	}
	if az := c.Cloud.Azure; c.Cloud.Type == CloudAzure && table != nil && az.SubscriptionID != "" && !strings.EqualFold(az.SubscriptionID, table.SubscriptionID) {
		v.bad("cloud.azure.subscriptionID", -1, az.SubscriptionID, "differs from the route table's subscription "+table.SubscriptionID)
	}
}

func (v *validator) association() {
	a := v.c.Association
	v.enum("association.policy", string(a.Policy), string(PolicyEnforce), string(PolicyFollow), string(PolicyReport))
	if a.Interval <= 0 {
		v.bad("association.interval", -1, a.Interval, "must be positive, for example 5s")
	}
	v.enum("routes", string(v.c.Routes), string(RoutesManage), string(RoutesObserve), string(RoutesStandDown))
}

func (v *validator) cloud() {
	cl := v.c.Cloud
	v.enum("cloud.type", string(cl.Type), string(CloudLocal), string(CloudAzure))
	if ep := cl.Local.Endpoint; ep != "" {
		u, err := url.Parse(ep)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.bad("cloud.local.endpoint", -1, ep, "not an http:// or https:// URL, for example https://127.0.0.1:8400")
		case cl.Type == CloudAzure:
			v.bad("cloud.local.endpoint", -1, ep, "a served fabric is cloud type local, but cloud.type is azure")
		}
	}
	if cl.Local.OperationDuration < 0 {
		v.bad("cloud.local.operationDuration", -1, cl.Local.OperationDuration, "must not be negative")
	}
	az := cl.Azure
	if az.SubscriptionID != "" && !guid.MatchString(az.SubscriptionID) {
		v.bad("cloud.azure.subscriptionID", -1, az.SubscriptionID, "not a GUID")
	}
	if az.TenantID != "" && !guid.MatchString(az.TenantID) && !tenantDomain.MatchString(az.TenantID) {
		v.bad("cloud.azure.tenantID", -1, az.TenantID, "not a tenant ID (a GUID, or a domain such as contoso.onmicrosoft.com)")
	}
	if az.ClientID != "" && !guid.MatchString(az.ClientID) {
		v.bad("cloud.azure.clientID", -1, az.ClientID, "not a GUID")
	}
	if v.c.secretConflict {
		v.bad("cloud.azure.clientSecretFile", -1, az.ClientSecretFile, "cloud.azure.clientSecret is set too: give only one")
	}
	if az.ClientSecret == redacted {
		v.bad("cloud.azure.clientSecret", -1, az.ClientSecret, "is the placeholder a dump shows; give the real secret, or leave it empty")
	}
	if az.ClientSecret != "" && az.ClientID == "" {
		v.bad("cloud.azure.clientSecret", -1, az.ClientSecret, "needs cloud.azure.clientID (azure.json: aadClientId)")
	}
	if az.ClientSecret != "" && az.TenantID == "" {
		v.bad("cloud.azure.clientSecret", -1, az.ClientSecret, "needs cloud.azure.tenantID (azure.json: tenantId)")
	}
	if id := az.UserAssignedIdentityID; id != "" && !guid.MatchString(id) {
		if _, why := armIDOf(id, "Microsoft.ManagedIdentity/userAssignedIdentities"); why != "" {
			v.bad("cloud.azure.userAssignedIdentityID", -1, id, "not a client ID (a GUID) nor a user-assigned identity's resource ID")
		}
	}
	if _, ok := canonicalCloud(az.Cloud); !ok || az.Cloud == "" {
		v.bad("cloud.azure.cloud", -1, az.Cloud, "must be one of "+AzurePublicCloud+", "+AzureChinaCloud+", "+AzureUSGovernmentCloud)
	}
}

// armIDOf parses id as an ARM ID of type wantType, without name rules.
func armIDOf(id, wantType string) (*arm.ResourceID, string) {
	r, err := arm.ParseResourceID(id)
	if err != nil || !strings.EqualFold(r.ResourceType.String(), wantType) {
		return nil, "not an ARM ID of a " + wantType
	}
	return r, ""
}

func (v *validator) source() {
	s := v.c.Source
	v.enum("source.type", string(s.Type), string(SourceInventory), string(SourceKube))
	if s.Type == SourceInventory && s.Inventory.File == "" {
		v.bad("source.inventory.file", -1, s.Inventory.File, "required with source.type inventory: the inventory file of nodes")
	}
}

func (v *validator) controller() {
	ct := v.c.Controller
	if ct.BatchWindow <= 0 {
		// The controller always batches: 0 would only be replaced by its
		// default, which is not what 0 seems to say.
		v.bad("controller.batchWindow", -1, ct.BatchWindow, "must be positive, for example 200ms (a change waits at most this long for more changes)")
	}
	if ct.Resync <= 0 {
		v.bad("controller.resync", -1, ct.Resync, "must be positive, for example 1m")
	}
	if ct.MaxBatchDelay < 0 {
		v.bad("controller.maxBatchDelay", -1, ct.MaxBatchDelay, "must not be negative")
	}
	if ct.MaxDeletes < -1 {
		v.bad("controller.maxDeletes", -1, ct.MaxDeletes, "must be -1 (no limit), 0 (the larger of 10 and 10% of the cluster's routes) or a positive number of routes")
	}
	if k := v.c.Source.Kube; v.c.Source.Type == SourceKube {
		if k.QPS <= 0 {
			v.bad("source.kube.qps", -1, k.QPS, "must be positive, for example 50")
		}
		if k.Burst < k.QPS {
			v.bad("source.kube.burst", -1, k.Burst, fmt.Sprintf("must be at least source.kube.qps (%d)", k.QPS))
		}
	}
	le := ct.LeaderElection
	if le.Enabled {
		// client-go's own rules (leaderelection.NewLeaderElector).
		switch {
		case le.RetryPeriod <= 0:
			v.bad("controller.leaderElection.retryPeriod", -1, le.RetryPeriod, "must be positive, for example 2s")
		case le.RenewDeadline <= time.Duration(1.2*float64(le.RetryPeriod)):
			v.bad("controller.leaderElection.renewDeadline", -1, le.RenewDeadline, fmt.Sprintf("must be more than 1.2 × retryPeriod (%s)", le.RetryPeriod))
		case le.LeaseDuration <= le.RenewDeadline:
			v.bad("controller.leaderElection.leaseDuration", -1, le.LeaseDuration, fmt.Sprintf("must be longer than renewDeadline (%s)", le.RenewDeadline))
		}
		if v.c.Source.Type != SourceKube {
			v.bad("controller.leaderElection.enabled", -1, le.Enabled, "needs source.type kube: the lease is kept in Kubernetes")
		}
		if len(le.Namespace) > 63 || !dnsLabel.MatchString(le.Namespace) {
			v.bad("controller.leaderElection.namespace", -1, le.Namespace, "not a valid namespace name (a DNS label)")
		}
		if len(le.Name) > 63 || !dnsLabel.MatchString(le.Name) {
			v.bad("controller.leaderElection.name", -1, le.Name, "not a valid lease name (a DNS label)")
		}
	}
	if addr := ct.MetricsAddress; addr != "" {
		_, port, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 0 || n > 65535 {
			v.bad("controller.metricsAddress", -1, addr, `not a listen address: want host:port or :port, for example ":10271" or "127.0.0.1:10271" ("" turns metrics off)`)
		}
	}
}
