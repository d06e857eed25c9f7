package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

// cloudConn is a connection to the configured cloud: real Azure Resource
// Manager, or the embedded local fabric reached in process.
type cloudConn struct {
	client *azure.Client
	// fabric is the embedded server when the cloud is local, else nil.
	fabric *fabric.Server
	close  func()
}

// connectOptions say what a command needs of the cloud.
type connectOptions struct {
	// readOnly: the command only reads; a local state file that does not
	// exist yet is an error rather than a new empty state.
	readOnly bool
	// applyTopology: apply cloud.local.topology when the local state is
	// empty, so that a new state holds the network the config names.
	applyTopology bool
	// observer sees every ARM call (metrics).
	observer azure.Observer
}

// loadConfig reads a command's configuration: --config, then flags and
// ROUTEKEEPER_* variables; errors are usage errors (exit 2).
func (a *app) loadConfig(cmd *cobra.Command, cf *configFlags) (*config.Config, error) {
	cf.getenv = a.getenv
	return cf.load(cmd.Flags())
}

// session is loadConfig and a connection to the configured cloud. The
// caller must close the connection.
func (a *app) session(cmd *cobra.Command, cf *configFlags, o connectOptions) (*config.Config, *cloudConn, error) {
	cfg, err := a.loadConfig(cmd, cf)
	if err != nil {
		return nil, nil, err
	}
	conn, err := a.connect(cmd.Context(), cfg, o)
	if err != nil {
		return nil, nil, err
	}
	return cfg, conn, nil
}

// connect builds the cloud client of cfg. The caller must call close.
func (a *app) connect(ctx context.Context, cfg *config.Config, o connectOptions) (*cloudConn, error) {
	if cfg.Cloud.Type == config.CloudAzure {
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
			return nil, usageErrorf("config %s: cloud.azure.cloud: %w", cfg.File, err)
		}
		scope, err := azure.TokenScope(az.Cloud)
		if err != nil {
			return nil, usageErrorf("config %s: cloud.azure.cloud: %w", cfg.File, err)
		}
		if err := a.firstToken(ctx, cred, azure.DescribeCredential(cc), scope, credentialTimeout); err != nil {
			return nil, err
		}
		c, err := azure.New(azure.Options{Credential: cred, ClientOptions: opts, Logger: a.log, Observer: o.observer, Wait: a.waitProgress})
		if err != nil {
			return nil, err
		}
		return &cloudConn{client: c, close: func() {}}, nil
	}

	if ep := cfg.Cloud.Local.Endpoint; ep != "" {
		return a.connectEndpoint(ctx, cfg, ep, o)
	}
	state := cfg.Cloud.Local.State
	if state == "" {
		state = fabric.StatePath(a.getenv)
	}
	if o.readOnly {
		if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("local fabric state %s does not exist yet: run `routekeeper run` (or `routekeeper fabric apply`) first", state)
		}
	}
	store, err := fabric.Open(ctx, state)
	if err != nil {
		return nil, fmt.Errorf("opening the local fabric state %s: %w", state, err)
	}
	srv := fabric.New(store, fabric.Options{
		OperationDuration: cfg.Cloud.Local.OperationDuration,
		RouteLimit:        cfg.RouteTable.RouteLimit,
		Logger:            a.log.With("component", "fabric"),
	})
	c, err := azure.New(azure.Options{
		Credential:    identity.Credential{ClientID: cfg.Cloud.Local.ClientID},
		ClientOptions: srv.ClientOptions(),
		// The SDK polls no faster than once a second outside tests; the
		// fabric answers Retry-After for the real wait.
		PollFrequency: time.Second,
		Logger:        a.log,
		Observer:      o.observer,
		Wait:          a.waitProgress,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	conn := &cloudConn{client: c, fabric: srv, close: func() { store.Close() }}
	if o.applyTopology && cfg.Cloud.Local.Topology != "" {
		if err := a.applyTopology(ctx, cfg.Cloud.Local.Topology, srv.ClientOptions()); err != nil {
			conn.close()
			return nil, err
		}
	}
	return conn, nil
}

// applyTopology makes an empty local fabric state (a new state file, or
// one another process just created) hold the network of a topology file.
// A state that holds anything is left alone, so that what routekeeper (or
// anyone) changed since, a stale route run deleted, stays changed.
func (a *app) applyTopology(ctx context.Context, path string, opts *arm.ClientOptions) error {
	t, err := topology.LoadTopology(path)
	if err != nil {
		return usageErrorf("cloud.local.topology: %w", err)
	}
	st, err := topology.Snapshot(ctx, opts, identity.Credential{})
	if err != nil {
		return fmt.Errorf("reading the local fabric state before applying topology %s: %w", path, err)
	}
	if len(st.ResourceGroups) > 0 || len(st.VirtualNetworks) > 0 || len(st.RouteTables) > 0 {
		a.log.Debug("local fabric: state not empty; topology not applied", "file", path)
		return nil
	}
	res, err := topology.Apply(ctx, t, opts, identity.Credential{})
	if err != nil {
		return fmt.Errorf("applying topology %s to the local fabric: %w", path, err)
	}
	if res.Writes > 0 {
		a.log.Info("local fabric: applied topology", "file", path,
			"created", res.Count(topology.ActionCreate), "updated", res.Count(topology.ActionUpdate), "writes", res.Writes)
	}
	return nil
}

// fabricCA is the CA file of the fabric's default TLS directory: a served
// fabric's https endpoint is trusted with it (besides the system's roots
// and SSL_CERT_FILE) without any install.
func (a *app) fabricCA() string {
	return filepath.Join(identity.TLSDir(fabric.StatePath(a.getenv)), "ca.pem")
}

// connectEndpoint connects to a served fabric (cloud type local with
// cloud.local.endpoint): its faults and intruder reach the command, and
// nothing is opened locally.
func (a *app) connectEndpoint(_ context.Context, cfg *config.Config, endpoint string, o connectOptions) (*cloudConn, error) {
	opts, err := fabric.EndpointClientOptions(endpoint, a.fabricCA())
	if err != nil {
		return nil, usageErrorf("cloud.local.endpoint: %w", err)
	}
	c, err := azure.New(azure.Options{
		Credential:    identity.Credential{ClientID: cfg.Cloud.Local.ClientID},
		ClientOptions: opts,
		PollFrequency: time.Second,
		Logger:        a.log,
		Observer:      o.observer,
		Wait:          a.waitProgress,
	})
	if err != nil {
		return nil, err
	}
	if o.applyTopology && cfg.Cloud.Local.Topology != "" {
		// A served fabric holds what its users built (with az, or
		// `fabric apply --endpoint`); merging a file into it could
		// change their network.
		a.log.Info("served fabric: cloud.local.topology is not applied; use routekeeper fabric apply -f FILE --endpoint URL for that",
			"endpoint", endpoint, "topology", cfg.Cloud.Local.Topology)
	}
	return &cloudConn{client: c, close: func() {}}, nil
}
