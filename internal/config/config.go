// Package config reads routekeeper's configuration: the YAML file given with
// --config, the flags and ROUTEKEEPER_* variables that override it, and
// cloud-provider-azure's azure.json, so that a self-managed cluster that
// already has one needs nothing new. It decodes strictly (unknown keys are
// errors), fills defaults, and validates; every problem names the file (or
// flag), the field and the value.
//
// The order of precedence is: flag > ROUTEKEEPER_* variable > config file >
// azure.json > default. The flags and variables are applied by the CLI with
// [Config.Set]; [Settings] lists every setting with its flag.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
)

// DefaultAzureJSONPath is where cloud-provider-azure keeps its configuration
// on a node. It is read when cloud.type is azure and cloud.azure.configFile is
// not set, if the file exists.
const DefaultAzureJSONPath = "/etc/kubernetes/azure.json"

// Defaults that are not the zero value.
const (
	DefaultNodeCIDRMaskSizeIPv4 = 24
	DefaultNodeCIDRMaskSizeIPv6 = 64
	// DefaultRouteLimit 0 keeps the table to Azure's limit, read from the
	// usages API of the table's region (internal/routelimit).
	DefaultRouteLimit              = 0
	DefaultAssociationInterval     = 5 * time.Second
	DefaultBatchWindow             = 200 * time.Millisecond
	DefaultMaxBatchDelay           = time.Second
	DefaultResync                  = 60 * time.Second
	DefaultLeaderElectionNamespace = "kube-system"
	DefaultLeaderElectionName      = "routekeeper"
	// DefaultMetricsAddress is where /metrics, /healthz and /readyz are
	// served outside a Kubernetes pod: loopback only, so a laptop or VM run
	// exposes nothing; port 10271 rather than Prometheus's own 9090.
	DefaultMetricsAddress = "127.0.0.1:10271"
	// InClusterMetricsAddress is the default in a Kubernetes pod (see
	// Config.SetInCluster), where Prometheus scrapes the pod's address.
	InClusterMetricsAddress = ":10271"
	DefaultLeaseDuration    = 15 * time.Second
	DefaultRenewDeadline    = 10 * time.Second
	DefaultRetryPeriod      = 2 * time.Second
	DefaultKubeQPS          = 50
	DefaultKubeBurst        = 1200
)

// AssociationPolicy says what the association guard does when a configured
// subnet is not associated with routekeeper's route table. The policies are
// declared once, in package assoc, which acts on them.
type AssociationPolicy = assoc.Policy

// The association policies, under the names the config has always used.
const (
	// PolicyEnforce re-associates routekeeper's table (the default).
	PolicyEnforce = assoc.Enforce
	// PolicyFollow adopts the table the subnet now points to, after copying
	// the owned routes into it.
	PolicyFollow = assoc.Follow
	// PolicyReport changes nothing and reports.
	PolicyReport = assoc.Report
)

// RoutesMode says whether routekeeper writes pod routes, only reports
// drift, or stands down from host routes.
type RoutesMode string

// The routes modes.
const (
	RoutesManage  RoutesMode = "manage"
	RoutesObserve RoutesMode = "observe"
	// RoutesStandDown: the cluster moved to an overlay CNI and needs no
	// host route; routekeeper removes its own routes once
	// controller.confirmStandDown confirms it (docs/aks-overlay.md).
	RoutesStandDown RoutesMode = "standDown"
)

// CloudType selects the cloud back-end.
type CloudType string

// The cloud back-ends.
const (
	// CloudLocal is the embedded fabric, an ARM emulator with a state file.
	CloudLocal CloudType = "local"
	// CloudAzure is Azure Resource Manager.
	CloudAzure CloudType = "azure"
)

// SourceType selects where the nodes come from.
type SourceType string

// The node sources.
const (
	SourceInventory SourceType = "inventory"
	SourceKube      SourceType = "kube"
)

// The Azure clouds, spelled as azure.json's "cloud" spells them.
const (
	AzurePublicCloud       = "AzurePublicCloud"
	AzureChinaCloud        = "AzureChinaCloud"
	AzureUSGovernmentCloud = "AzureUSGovernmentCloud"
)

// Config is routekeeper's configuration after loading. Use [Load] (or
// [Read], [Config.Set] and [Config.Complete]) to make one and
// [Config.Validate] to check it.
type Config struct {
	// File is the configuration file the settings were read from, "" when
	// there is none.
	File string

	Cluster Cluster
	// ResourceGroup is where route tables and subnets given by name (not
	// by ARM ID) live; "" falls back to azure.json's resourceGroup.
	ResourceGroup string
	RouteTable    RouteTable
	// Subnets are the IDs of the subnets the route table must stay
	// associated with.
	Subnets     []string
	Association Association
	Routes      RoutesMode
	Cloud       Cloud
	Source      Source
	Controller  Controller
	// Mirrors are other route tables kept with the pod routes (mirrors.go);
	// config file only.
	Mirrors []Mirror

	// AzureJSON is the azure.json that was merged, nil when none was read.
	AzureJSON *AzureJSON

	// origins records where each setting that is not a default came from,
	// by setting path.
	origins map[string]origin
	// secretConflict: both clientSecret and clientSecretFile were given.
	secretConflict bool
	// inCluster: routekeeper runs in a Kubernetes pod (SetInCluster).
	inCluster bool
}

// SetInCluster tells Complete that routekeeper runs in a Kubernetes pod
// (KUBERNETES_SERVICE_HOST is set): the metrics address then defaults to
// every interface of the pod rather than loopback. Call it before Complete.
func (c *Config) SetInCluster(in bool) { c.inCluster = in }

// Cluster describes the Kubernetes cluster.
type Cluster struct {
	// Name identifies the cluster; it is the value of the route table's
	// claim tag (route.ClaimTag).
	Name string
	// ClusterCIDRs are the pod address ranges, at most one per IP family.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs are the service ranges; IPAM never hands out a pod CIDR
	// that overlaps them.
	ServiceCIDRs []netip.Prefix
	// NodeCIDRMaskSize is the prefix length of an IPv4 node pod CIDR.
	NodeCIDRMaskSize int
	// NodeCIDRMaskSizeIPv6 is the prefix length of an IPv6 node pod CIDR.
	NodeCIDRMaskSizeIPv6 int
}

// RouteTable says which route table holds the pod routes.
type RouteTable struct {
	// ID is the route table's ARM resource ID.
	ID string
	// Create allows routekeeper to create the table when it is missing.
	Create bool
	// Location is where a created table goes; "" lets the caller use the
	// first subnet's virtual network's location.
	Location string
	// RouteLimit is the most routes routekeeper lets the table hold, when
	// it is below Azure's limit; 0 (the default) is Azure's limit, read
	// from the usages API.
	RouteLimit int
	// Adopt says whether routes routekeeper does not own that match a
	// node's route exactly are taken over (plan.Input.Adopt).
	Adopt AdoptPolicy
	// Claim writes the claim tag to an existing unclaimed table
	// (plan.Input.Claim).
	Claim bool
}

// AdoptPolicy says which routes routekeeper does not own it takes over.
type AdoptPolicy string

// The adoption policies.
const (
	// AdoptNone takes nothing over (the default): a matching route is
	// reported, its node routed by it.
	AdoptNone AdoptPolicy = "none"
	// AdoptMatching renames a route with exactly a node's prefix and next
	// hop to the node's route, in one write.
	AdoptMatching AdoptPolicy = "matching"
)

// Association configures the subnet association guard.
type Association struct {
	Policy AssociationPolicy
	// Restore: under enforce, re-associate routekeeper's table even when
	// another table is associated with the subnet.
	Restore  bool
	Interval time.Duration
}

// Cloud selects and configures the cloud back-end.
type Cloud struct {
	Type  CloudType
	Local LocalCloud
	Azure AzureCloud
}

// LocalCloud configures the embedded fabric.
type LocalCloud struct {
	// State is the fabric's state file; "" means the fabric's default.
	State string
	// Endpoint is the base URL of a served fabric to use instead of State;
	// "" for the state file.
	Endpoint string
	// Topology is a fabric topology file applied (idempotently) at start;
	// "" for none.
	Topology string
	// OperationDuration is how long the fabric's long-running operations
	// take.
	OperationDuration time.Duration
	// ClientID is the client routekeeper's token names to the fabric: it
	// then acts as the principal a topology declares for it, with that
	// principal's role assignments; "" is the fabric's administrator.
	ClientID string
}

// AzureCloud configures Azure Resource Manager access. Values come from the
// config file, flags, and azure.json, in that order of precedence.
type AzureCloud struct {
	// ConfigFile is the azure.json that was (or is to be) read.
	ConfigFile     string
	SubscriptionID string
	TenantID       string
	// ClientID and ClientSecret are a service principal's.
	ClientID     string
	ClientSecret Secret
	// ClientSecretFile is a file holding the client secret; Complete reads
	// it into ClientSecret.
	ClientSecretFile string
	// UseManagedIdentity selects the VM's managed identity;
	// UserAssignedIdentityID picks a user-assigned one by client ID or
	// resource ID.
	UseManagedIdentity     bool
	UserAssignedIdentityID string
	// Cloud is AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud.
	Cloud string
}

// Source selects and configures the node source.
type Source struct {
	Type      SourceType
	Inventory InventorySource
	Kube      KubeSource
}

// InventorySource configures the inventory file source.
type InventorySource struct {
	// File is the inventory (a YAML list of nodes).
	File string
	// Allocations is where IPAM records the pod CIDRs it handed out.
	Allocations string
}

// KubeSource configures the Kubernetes source.
type KubeSource struct {
	// Kubeconfig is the kubeconfig file; "" means in-cluster, then
	// $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// QPS and Burst limit the Kubernetes API requests (client-go's rate
	// limiter).
	QPS, Burst int
}

// Controller configures the reconcile loop.
type Controller struct {
	BatchWindow time.Duration
	// MaxBatchDelay caps how long changes keep extending the batch window.
	MaxBatchDelay time.Duration
	Resync        time.Duration
	// MaxDeletes caps the routes one reconcile deletes; 0 means the
	// planner's default, negative no cap (plan.Input.MaxDeletes).
	MaxDeletes int
	// AllowEmptySource lets an empty node source delete routes.
	AllowEmptySource bool
	// ConfirmStandDown confirms the stand-down from host routes: routes:
	// standDown, or every node without a pod CIDR, removes the cluster's
	// routes in one write (plan.Input.ConfirmStandDown).
	ConfirmStandDown bool
	LeaderElection   LeaderElection
	// MetricsAddress is where metrics are served; "" turns them off.
	MetricsAddress string
}

// LeaderElection configures leader election among replicas.
type LeaderElection struct {
	Enabled   bool
	Namespace string
	Name      string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Secret is a string that is never printed: fmt, slog and JSON show
// "<redacted>" instead. Use Reveal to get the value.
type Secret string

const redacted = "<redacted>"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns "<redacted>", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// LogValue hides the secret from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON hides the secret from JSON (and YAML) output.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", s.String())), nil }

// origin says where a setting's value came from.
type origin struct {
	// where is a file path or a flag description ("--route-limit").
	where string
	// line is the line in the file (0 if unknown); items are the lines of a
	// list's items.
	line  int
	items []int
	// via names the azure.json keys a derived value came from, or
	// "clientSecretFile" for a secret read from a file.
	via string
	// file is true when where is a file rather than a flag.
	file bool
}

// New returns an empty configuration, as if read from an empty file: set
// values with Set, then call Complete.
func New() *Config {
	return &Config{origins: map[string]origin{}}
}

// Load reads the configuration file at path, decodes it strictly, merges
// azure.json and fills the defaults. It does not validate: call Validate.
func Load(path string) (*Config, error) {
	c, err := Read(path)
	if err != nil {
		return nil, err
	}
	if err := c.Complete(); err != nil {
		return nil, err
	}
	return c, nil
}

// Read reads and strictly decodes the configuration file at path, resolving
// relative paths against the file's directory. It fills no defaults and
// reads no azure.json: apply overrides with Set, then call Complete. Every
// decoding problem (unknown key, wrong type, unparsable value) is reported,
// each naming the file, the field and the value.
func Read(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("config file %s does not exist", path)
		}
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	c := New()
	c.File = path
	if err := c.decode(path, data); err != nil {
		return nil, err
	}
	return c, nil
}

// Complete merges azure.json (when configured), infers the cloud and source
// types, fills the defaults and reads the client secret file. Call it once,
// after every Set.
func (c *Config) Complete() error {
	return c.complete(DefaultAzureJSONPath)
}

func (c *Config) complete(defaultAzureJSON string) error {
	if c.origins == nil {
		c.origins = map[string]origin{}
	}
	// The cloud: azure when an azure.json is named, else the local fabric.
	if !c.isSet("cloud.type") && c.Cloud.Type == "" {
		if c.Cloud.Azure.ConfigFile != "" {
			c.Cloud.Type = CloudAzure
		} else {
			c.Cloud.Type = CloudLocal
		}
	}
	if c.Cloud.Azure.ConfigFile == "" && c.Cloud.Type == CloudAzure && defaultAzureJSON != "" {
		if _, err := os.Stat(defaultAzureJSON); err == nil {
			c.Cloud.Azure.ConfigFile = defaultAzureJSON
		}
	}
	if c.Cloud.Azure.ConfigFile != "" {
		aj, err := LoadAzureJSON(c.Cloud.Azure.ConfigFile)
		if err != nil {
			return err
		}
		c.mergeAzureJSON(aj)
	}
	if c.Cloud.Azure.ClientSecretFile != "" {
		b, err := os.ReadFile(c.Cloud.Azure.ClientSecretFile)
		if err != nil {
			return Problems{{Where: c.Origin("cloud.azure.clientSecretFile"), Field: "cloud.azure.clientSecretFile", Value: strconv.Quote(c.Cloud.Azure.ClientSecretFile), Reason: "cannot be read: " + errors.Unwrap(err).Error()}}
		}
		if c.Cloud.Azure.ClientSecret != "" {
			// Both given: Validate reports it; keep the explicit one.
			c.secretConflict = true
		} else {
			c.Cloud.Azure.ClientSecret = Secret(strings.TrimSpace(string(b)))
			c.origins["cloud.azure.clientSecret"] = origin{where: c.Cloud.Azure.ClientSecretFile, via: "clientSecretFile", file: true}
		}
	}
	// The source: inventory when an inventory file is named, else kube.
	if c.Source.Type == "" {
		if c.Source.Inventory.File != "" {
			c.Source.Type = SourceInventory
		} else {
			c.Source.Type = SourceKube
		}
	}
	if c.Source.Inventory.File != "" && c.Source.Inventory.Allocations == "" {
		c.Source.Inventory.Allocations = inventory.DefaultAllocationsFile(c.Source.Inventory.File)
	}
	c.fillDefaults()
	c.resolveNames()
	return nil
}

func (c *Config) fillDefaults() {
	setInt := func(path string, p *int, v int) {
		if !c.isSet(path) && *p == 0 {
			*p = v
		}
	}
	setDur := func(path string, p *time.Duration, v time.Duration) {
		if !c.isSet(path) && *p == 0 {
			*p = v
		}
	}
	setStr := func(path string, p *string, v string) {
		if !c.isSet(path) && *p == "" {
			*p = v
		}
	}
	setInt("cluster.nodeCIDRMaskSize", &c.Cluster.NodeCIDRMaskSize, DefaultNodeCIDRMaskSizeIPv4)
	setInt("cluster.nodeCIDRMaskSizeIPv6", &c.Cluster.NodeCIDRMaskSizeIPv6, DefaultNodeCIDRMaskSizeIPv6)
	setInt("routeTable.routeLimit", &c.RouteTable.RouteLimit, DefaultRouteLimit)
	if c.Association.Policy == "" {
		c.Association.Policy = PolicyEnforce
	}
	if c.RouteTable.Adopt == "" {
		c.RouteTable.Adopt = AdoptNone
	}
	setDur("association.interval", &c.Association.Interval, DefaultAssociationInterval)
	if c.Routes == "" {
		c.Routes = RoutesManage
	}
	if name, ok := canonicalCloud(c.Cloud.Azure.Cloud); ok {
		c.Cloud.Azure.Cloud = name // "" becomes AzurePublicCloud; a bad name is left for Validate
	}
	setDur("controller.batchWindow", &c.Controller.BatchWindow, DefaultBatchWindow)
	setDur("controller.maxBatchDelay", &c.Controller.MaxBatchDelay, DefaultMaxBatchDelay)
	setDur("controller.resync", &c.Controller.Resync, DefaultResync)
	setDur("controller.leaderElection.leaseDuration", &c.Controller.LeaderElection.LeaseDuration, DefaultLeaseDuration)
	setDur("controller.leaderElection.renewDeadline", &c.Controller.LeaderElection.RenewDeadline, DefaultRenewDeadline)
	setDur("controller.leaderElection.retryPeriod", &c.Controller.LeaderElection.RetryPeriod, DefaultRetryPeriod)
	setInt("source.kube.qps", &c.Source.Kube.QPS, DefaultKubeQPS)
	setInt("source.kube.burst", &c.Source.Kube.Burst, DefaultKubeBurst)
	setStr("controller.leaderElection.namespace", &c.Controller.LeaderElection.Namespace, DefaultLeaderElectionNamespace)
	setStr("controller.leaderElection.name", &c.Controller.LeaderElection.Name, DefaultLeaderElectionName)
	metrics := DefaultMetricsAddress
	if c.inCluster {
		metrics = InClusterMetricsAddress
	}
	setStr("controller.metricsAddress", &c.Controller.MetricsAddress, metrics)
	c.fillMirrorDefaults()
}

// isSet reports whether the setting at path was given (file, flag or
// azure.json) rather than defaulted.
func (c *Config) isSet(path string) bool {
	_, ok := c.origins[path]
	return ok
}

// Origin says where the setting at path (for example
// "routeTable.routeLimit") came from: the config file, a flag, azure.json
// (with the keys it was derived from), or "default".
func (c *Config) Origin(path string) string {
	o, ok := c.origins[path]
	if !ok {
		return "default"
	}
	w := o.where
	if o.line > 0 {
		w = fmt.Sprintf("%s:%d", w, o.line)
	}
	if o.via != "" {
		return fmt.Sprintf("%s (%s)", w, o.via)
	}
	return w
}

// where returns the file or flag to blame for the setting at path (or its
// item idx, -1 for none) and the line: where it was set, else the config
// file, else "config".
func (c *Config) where(path string, idx int) (string, int) {
	if o, ok := c.origins[path]; ok {
		if idx >= 0 && idx < len(o.items) && o.items[idx] > 0 {
			return o.where, o.items[idx]
		}
		return o.where, o.line
	}
	if c.File != "" {
		return c.File, 0
	}
	return "config", 0
}

// expandPath resolves a path setting: "~/" is the home directory, and a
// relative path from a file is relative to that file's directory.
func expandPath(p, relativeTo string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	if relativeTo != "" && !filepath.IsAbs(p) {
		p = filepath.Join(relativeTo, p)
	}
	return p
}
