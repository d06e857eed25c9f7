package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/source/inventory"
)

// FabricServer is `fabric serve`: the fabric on a state, optionally with
// its data plane, served on one address.
type FabricServer struct {
	// State is the state file; with Memory the state is in memory.
	State  string
	Memory bool
	Listen string
	// TLS serves HTTPS with a certificate of the fabric's own CA, made in
	// the state file's TLS directory (for az and the azurerm provider).
	TLS     bool
	Options fabric.Options
	// Dataplane, when set, builds the Linux data plane of the fabric's
	// state and keeps it in step with the writes.
	Dataplane *Dataplane
}

// Dataplane says how to build a fabric's data plane.
type Dataplane struct {
	// Nodes is the inventory file of the nodes to place (their pod CIDRs
	// are not in the fabric).
	Nodes            string
	Prefix           string // namespace prefix
	PodsPerNode      int
	PropagationDelay time.Duration
	Poll             time.Duration
}

// Serving is what a fabric server serves, once it listens.
type Serving struct {
	Endpoint string
	// Where is the state: its file, or "in memory".
	Where string
	// TLS are the CA and certificate files when it serves HTTPS.
	TLS identity.TLSFiles
}

// ServeFabric opens the state, starts the data plane, listens and serves
// until ctx ends (then shuts down within 5 s); ready is told, once, what
// it serves as soon as it listens.
func (a *App) ServeFabric(ctx context.Context, s FabricServer, ready func(Serving)) error {
	store, where, err := a.openFabricState(ctx, &s)
	if err != nil {
		return err
	}
	defer store.Close()
	if s.Dataplane != nil {
		stop, err := a.startDataplane(ctx, store, *s.Dataplane)
		if err != nil {
			return err
		}
		defer stop()
	}
	if s.Options.Logger == nil {
		s.Options.Logger = a.Log
	}
	hs := &http.Server{Handler: fabric.New(store, s.Options), ReadHeaderTimeout: 10 * time.Second}
	sv := Serving{Where: where}
	if s.TLS {
		if sv.TLS, err = a.fabricTLS(s); err != nil {
			return err
		}
		if hs.TLSConfig, err = sv.TLS.ServerConfig(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Listen, err)
	}
	sv.Endpoint = "http://" + ln.Addr().String()
	if s.TLS {
		sv.Endpoint = "https://" + ln.Addr().String()
	}
	served := make(chan error, 1)
	go func() {
		if s.TLS {
			served <- hs.ServeTLS(ln, "", "")
			return
		}
		served <- hs.Serve(ln)
	}()
	ready(sv)
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", sv.Endpoint, err)
	case <-ctx.Done():
	}
	a.Log.Info("stopping the fabric", "endpoint", sv.Endpoint)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", sv.Endpoint, err)
	}
	return nil
}

// openFabricState opens the server's state (the default state file when
// none is given) and says where it is.
func (a *App) openFabricState(ctx context.Context, s *FabricServer) (*fabric.Store, string, error) {
	if s.Memory {
		st, err := fabric.OpenMemory(ctx)
		return st, "in memory (lost when the server stops)", err
	}
	if s.State == "" {
		s.State = fabric.StatePath(a.Getenv)
	}
	st, err := fabric.Open(ctx, s.State)
	return st, s.State, err
}

// fabricTLS makes (or reuses) the certificate the server presents, for
// the host it listens on ("" for every interface), in the TLS directory
// of its state file (the default one for a state in memory).
func (a *App) fabricTLS(s FabricServer) (identity.TLSFiles, error) {
	host, _, _ := net.SplitHostPort(s.Listen)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = ""
	}
	state := s.State
	if state == "" {
		state = fabric.StatePath(a.Getenv)
	}
	return identity.EnsureTLS(identity.TLSDir(state), host)
}

// startDataplane builds the data plane of store and keeps it in step with
// the fabric's writes until the returned stop is called, which removes
// every namespace it made.
func (a *App) startDataplane(ctx context.Context, store *fabric.Store, o Dataplane) (stop func(), err error) {
	readNodes := func(context.Context) ([]source.Node, error) {
		b, err := os.ReadFile(o.Nodes)
		if err != nil {
			return nil, fmt.Errorf("flag --nodes: %w", err)
		}
		return inventory.Parse(o.Nodes, b, nil)
	}
	if _, err := readNodes(ctx); err != nil {
		return nil, BadInput(err)
	}
	plane, err := dataplane.New(o.Prefix, a.Log)
	if err != nil {
		return nil, fmt.Errorf("flag --dataplane: %w", err)
	}
	d := &dataplane.Driver{
		Fabric: network.NetworkReader{Store: store}, Plane: plane, Nodes: readNodes, PodsPerNode: o.PodsPerNode,
		PropagationDelay: o.PropagationDelay, Poll: o.Poll, Log: a.Log,
	}
	cleanup := func() {
		// Not ctx: it is cancelled by now (SIGINT, SIGTERM).
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := plane.Close(c); err != nil {
			a.Log.Error("removing the data plane", "prefix", o.Prefix, "err", err,
				"fix", "routekeeper fabric dataplane cleanup --dataplane-prefix "+o.Prefix)
		}
	}
	if err := d.Sync(ctx); err != nil {
		cleanup()
		return nil, fmt.Errorf("building the data plane: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(runCtx)
	}()
	return func() {
		cancel()
		<-done
		cleanup()
	}, nil
}
