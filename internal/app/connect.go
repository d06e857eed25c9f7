package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// Conn is a connection to the configured cloud: real Azure Resource
// Manager, or the local fabric (embedded, reached in process, or served).
type Conn struct {
	Client *azure.Client
	// Fabric is the embedded server when the cloud is the local state
	// file, else nil.
	Fabric *fabric.Server
	close  func()
}

// Close releases what the connection holds (the embedded fabric's state).
func (c *Conn) Close() { c.close() }

// ConnectOptions say what a command needs of the cloud.
type ConnectOptions struct {
	// ReadOnly: the command only reads; a local state file that does not
	// exist yet is an error rather than a new empty state.
	ReadOnly bool
	// ApplyTopology: apply cloud.local.topology when the local state is
	// empty, so that a new state holds the network the config names.
	ApplyTopology bool
	// Observer sees every ARM call (metrics).
	Observer azure.Observer
}

// Connect builds the cloud client of cfg. The caller must Close it.
func (a *App) Connect(ctx context.Context, cfg *config.Config, o ConnectOptions) (*Conn, error) {
	if cfg.Cloud.Type == config.CloudAzure {
		return a.connectAzure(ctx, cfg, o)
	}
	if ep := cfg.Cloud.Local.Endpoint; ep != "" {
		return a.connectEndpoint(cfg, ep, o)
	}
	state := cfg.Cloud.Local.State
	if state == "" {
		state = fabric.StatePath(a.Getenv)
	}
	if o.ReadOnly {
		if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("local fabric state %s does not exist yet: run `routekeeper run` (or `routekeeper fabric apply`) first", state)
		}
	}
	store, err := fabric.Open(ctx, state)
	if err != nil {
		return nil, fmt.Errorf("opening the local fabric state %s: %w", state, err)
	}
	// The embedded fabric plays Azure as it is, with Azure's limits (the
	// usages API reports them); routeTable.routeLimit is routekeeper's own,
	// which may only lower Azure's.
	srv := fabric.New(store, fabric.Options{
		OperationDuration: cfg.Cloud.Local.OperationDuration,
		Logger:            a.Log.With("component", "fabric"),
	})
	c, err := a.client(identity.Credential{ClientID: cfg.Cloud.Local.ClientID}, srv.ClientOptions(), o)
	if err != nil {
		store.Close()
		return nil, err
	}
	conn := &Conn{Client: c, Fabric: srv, close: func() { store.Close() }}
	if o.ApplyTopology && cfg.Cloud.Local.Topology != "" {
		if err := a.applyTopology(ctx, cfg.Cloud.Local.Topology, srv.ClientOptions()); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// connectAzure connects to Azure Resource Manager with the configured
// credential, which must give a token first.
func (a *App) connectAzure(ctx context.Context, cfg *config.Config, o ConnectOptions) (*Conn, error) {
	az := cfg.Cloud.Azure
	cc := azure.CredentialConfig{
		Cloud: az.Cloud, TenantID: az.TenantID, ClientID: az.ClientID, ClientSecret: az.ClientSecret.Reveal(),
		UseManagedIdentity: az.UseManagedIdentity, UserAssignedIdentityID: az.UserAssignedIdentityID,
	}
	cred, err := azure.NewCredential(cc)
	if err != nil {
		return nil, fmt.Errorf("azure credential: %w", err)
	}
	opts, err := azure.ClientOptionsFor(az.Cloud)
	if err != nil {
		return nil, BadInputf("config %s: cloud.azure.cloud: %w", cfg.File, err)
	}
	scope, err := azure.TokenScope(az.Cloud)
	if err != nil {
		return nil, BadInputf("config %s: cloud.azure.cloud: %w", cfg.File, err)
	}
	if err := a.firstToken(ctx, cred, azure.DescribeCredential(cc), scope, CredentialTimeout); err != nil {
		return nil, err
	}
	c, err := azure.New(azure.Options{Credential: cred, ClientOptions: opts, Logger: a.Log, Observer: o.Observer, Wait: a.waitProgress})
	if err != nil {
		return nil, err
	}
	return &Conn{Client: c, close: func() {}}, nil
}

// client is the cloud client of a local fabric.
func (a *App) client(cred azcore.TokenCredential, opts *arm.ClientOptions, o ConnectOptions) (*azure.Client, error) {
	return azure.New(azure.Options{
		Credential:    cred,
		ClientOptions: opts,
		// The SDK polls no faster than once a second outside tests; the
		// fabric answers Retry-After for the real wait.
		PollFrequency: time.Second,
		Logger:        a.Log,
		Observer:      o.Observer,
		Wait:          a.waitProgress,
	})
}

// applyTopology makes an empty local fabric state (a new state file, or
// one another process just created) hold the network of a topology file.
// A state that holds anything is left alone, so that what routekeeper (or
// anyone) changed since, a stale route run deleted, stays changed.
func (a *App) applyTopology(ctx context.Context, path string, opts *arm.ClientOptions) error {
	t, err := topology.LoadTopology(path)
	if err != nil {
		return BadInputf("cloud.local.topology: %w", err)
	}
	st, err := topology.Snapshot(ctx, opts, identity.Credential{})
	if err != nil {
		return fmt.Errorf("reading the local fabric state before applying topology %s: %w", path, err)
	}
	if len(st.ResourceGroups) > 0 || len(st.VirtualNetworks) > 0 || len(st.RouteTables) > 0 {
		a.Log.Debug("local fabric: state not empty; topology not applied", "file", path)
		return nil
	}
	res, err := topology.Apply(ctx, t, opts, identity.Credential{})
	if err != nil {
		return fmt.Errorf("applying topology %s to the local fabric: %w", path, err)
	}
	if res.Writes > 0 {
		a.Log.Info("local fabric: applied topology", "file", path,
			"created", res.Count(topology.ActionCreate), "updated", res.Count(topology.ActionUpdate), "writes", res.Writes)
	}
	return nil
}

// FabricCA is the CA file of the fabric's default TLS directory: a served
// fabric's https endpoint is trusted with it (besides the system's roots
// and SSL_CERT_FILE) without any install.
func (a *App) FabricCA() string {
	return filepath.Join(identity.TLSDir(fabric.StatePath(a.Getenv)), "ca.pem")
}

// connectEndpoint connects to a served fabric (cloud type local with
// cloud.local.endpoint): its faults and intruder reach the command, and
// nothing is opened locally.
func (a *App) connectEndpoint(cfg *config.Config, endpoint string, o ConnectOptions) (*Conn, error) {
	opts, err := fabric.EndpointClientOptions(endpoint, a.FabricCA())
	if err != nil {
		return nil, BadInputf("cloud.local.endpoint: %w", err)
	}
	c, err := a.client(identity.Credential{ClientID: cfg.Cloud.Local.ClientID}, opts, o)
	if err != nil {
		return nil, err
	}
	if o.ApplyTopology && cfg.Cloud.Local.Topology != "" {
		// A served fabric holds what its users built (with az, or
		// `fabric apply --endpoint`); merging a file into it could
		// change their network.
		a.Log.Info("served fabric: cloud.local.topology is not applied; use routekeeper fabric apply -f FILE --endpoint URL for that",
			"endpoint", endpoint, "topology", cfg.Cloud.Local.Topology)
	}
	return &Conn{Client: c, close: func() {}}, nil
}

// CredentialTimeout is how long the first Azure token may take. On Azure
// the identity endpoint answers in milliseconds; off Azure a managed
// identity request is retried for minutes, so a short limit turns that into
// a clear error in seconds.
const CredentialTimeout = 10 * time.Second

// firstToken gets an ARM token before any ARM call, showing progress, so
// that a credential that cannot work fails within timeout with the
// credential source named, rather than as the error of the first read.
func (a *App) firstToken(ctx context.Context, cred azcore.TokenCredential, source, scope string, timeout time.Duration) error {
	done := a.progress("getting an Azure token from " + source)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := cred.GetToken(tctx, policy.TokenRequestOptions{Scopes: []string{scope}})
	done(err)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || tctx.Err() != nil:
		return fmt.Errorf("azure credential: no token from %s within %s: not on Azure, or that identity is not available here (a managed identity needs an Azure VM or pod with it assigned; a service principal needs --client-id, --tenant and a secret; DefaultAzureCredential also tries 'az login')", source, timeout)
	default:
		return fmt.Errorf("azure credential: %s: %s", source, oneLine(err.Error()))
	}
}

// oneLine keeps the first paragraph of the Azure Identity library's
// multi-line messages (the rest is a troubleshooting link).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

// waitProgress is the cloud client's Wait hook: long-running operations
// show as progress.
func (a *App) waitProgress(what string) func(error) {
	if i := strings.Index(what, "/subscriptions/"); i >= 0 {
		what = what[:i] + armid.Short(what[i:])
	}
	return a.progress("waiting for " + what)
}
