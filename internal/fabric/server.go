package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/authz"
	"github.com/routekeeper/routekeeper/internal/fabric/deployments"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// MaxRequestBody is the largest request body the fabric reads; ARM's own
// limit is 4 MiB. A larger body gets 413 RequestEntityTooLarge.
const MaxRequestBody = 4 << 20

// DefaultRouteLimit and DefaultTablesLimit are Azure's limits of routes
// per route table and route tables per subscription (in one region):
// 1,000 and 600 since May 2026 (network.DefaultRouteLimit says where from).
const (
	DefaultRouteLimit  = network.DefaultRouteLimit
	DefaultTablesLimit = network.DefaultTablesLimit
)

// DefaultPageSize is how many items a list returns before a nextLink.
const DefaultPageSize = 100

// Options configure a Server.
type Options struct {
	// OperationDuration is how long a long-running operation stays
	// Updating/Deleting. 0 finishes it at once, but the answer keeps
	// Azure's shape (201/202 with Azure-AsyncOperation).
	OperationDuration time.Duration
	// RouteLimit is the number of routes allowed per table; 0 means
	// DefaultRouteLimit (1,000). A lower one plays an older subscription.
	RouteLimit int
	// TablesLimit is the number of route tables a subscription may hold in
	// one location; 0 means DefaultTablesLimit (600).
	TablesLimit int
	// PageSize is the number of items per list page; 0 means 100.
	PageSize int
	// Faults are the initial fault settings; see SetFaults.
	Faults Faults
	// Logger receives one debug line per request and warnings; nil discards.
	Logger *slog.Logger
	// Clock returns the current time; nil means time.Now. Operations store
	// wall-clock end times, so processes sharing a state file must agree.
	Clock func() time.Time
	// Seed seeds the fault-injection randomness; 0 picks a random seed.
	Seed uint64
}

// Server is the fabric's http.Handler. It is safe for concurrent use, and
// several Servers (in several processes) may share one state file.
type Server struct {
	store      *store.Store
	opDuration time.Duration
	log        *slog.Logger
	now        func() time.Time

	inj *injector // fault injection (faults.go)

	az *authz.Provider  // authorization: the checks and Microsoft.Authorization
	id *identity.Server // the login authority, tokens and cloud metadata

	net *network.Provider     // Microsoft.Network, resource groups and operations
	dep *deployments.Provider // Microsoft.Resources/deployments
	// providers serve the resource provider namespaces, by key(namespace).
	providers map[string]provider
}

// New returns a Server over store.
func New(st *store.Store, opts Options) *Server {
	s := &Server{
		store:      st,
		opDuration: max(opts.OperationDuration, 0),
		log:        opts.Logger,
		now:        opts.Clock,
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s.inj = newInjector(opts.Faults, seed, s.now)
	// The policy check of a write reads the resource as stored through the
	// network provider's view, which settles due operations first.
	view := func(ctx context.Context, fn func(*store.Txn) error) error { return s.net.View(ctx, fn) }
	s.az = authz.New(authz.Config{Store: s.store, Log: s.log, Now: s.now, View: view, Groups: network.Groups{}})
	s.id = &identity.Server{Now: s.now, Log: s.log, Principals: s.az}
	s.net = network.New(network.Config{Store: s.store, OpDuration: s.opDuration, RouteLimit: opts.RouteLimit, TablesLimit: opts.TablesLimit, PageSize: pageSize,
		Log: s.log, Now: s.now, Faults: s.inj, Polls: s.az})
	// Each resource of a template goes through the whole pipeline
	// (Dispatch), as the deploying principal.
	s.dep = deployments.New(deployments.Config{Store: s.store, Dispatch: s, Groups: network.Groups{}, OpDuration: s.opDuration,
		Log: s.log, Now: s.now})
	s.providers = map[string]provider{api.Key(s.net.Namespace()): s.net, api.Key(s.dep.Namespace()): s.dep}
	return s
}

// ServeHTTP serves the ARM paths of Microsoft.Network (see docs/fabric.md)
// and the control endpoint under /_fabric/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if strings.HasPrefix(r.URL.Path, api.ControlPrefix) {
		s.serveControl(w, r)
		return
	}
	if s.id.Serve(w, r) {
		s.log.Debug("fabric request", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
		return
	}
	reqID := uuid.NewString()
	h := w.Header()
	h.Set("x-ms-request-id", reqID)
	corr := r.Header.Get("x-ms-correlation-request-id")
	if corr == "" {
		corr = reqID
	}
	h.Set("x-ms-correlation-request-id", corr)
	if c := r.Header.Get("x-ms-client-request-id"); c != "" {
		h.Set("x-ms-client-request-id", c)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", "-1")

	resp, err := s.serveARM(r, h)
	s.warnUnknownRequest(r, err)
	if err == nil && api.IsWrite(r.Method) && resp.Status >= 200 && resp.Status < 300 && s.inj.loseAnswer(r.URL.Path) {
		// The write took effect; its answer is lost (lostanswer.go). The
		// lines are logged first: once the connection is reset, the
		// client may already be reading the resource back.
		s.logRequest(r, start, resp.Status, true)
		s.log.Info("fabric lost the answer to a write it carried out (fault loseAnswers)", "method", r.Method, "path", r.URL.Path, "status", resp.Status)
		dropAnswer(w)
		return
	}
	status := s.write(w, r, resp, err)
	s.logRequest(r, start, status, false)
}

// logRequest writes the debug line of an ARM request: its method, path,
// the preconditions it carries (so that a conditional write sent twice
// with the same If-Match shows), its status, whether its answer was lost,
// and how long it took.
func (s *Server) logRequest(r *http.Request, start time.Time, status int, lost bool) {
	if !s.log.Enabled(r.Context(), slog.LevelDebug) {
		return
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path}
	if v := r.Header.Get("If-Match"); v != "" {
		attrs = append(attrs, "ifMatch", v)
	}
	if v := r.Header.Get("If-None-Match"); v != "" {
		attrs = append(attrs, "ifNoneMatch", v)
	}
	attrs = append(attrs, "status", status)
	if lost {
		attrs = append(attrs, "lost", true)
	}
	s.log.Debug("fabric request", append(attrs, "duration", time.Since(start))...)
}

// serveARM runs the ARM pipeline: body limit, authentication, api-version,
// injected faults and throttling, then the resource handler.
func (s *Server) serveARM(r *http.Request, out http.Header) (*api.Response, error) {
	q := &api.Request{HTTP: r, Method: r.Method, Base: api.BaseURL(r), Query: r.URL.Query(), Out: out}
	segs, err := api.PathSegments(r.URL)
	if err != nil {
		return nil, err
	}
	q.Segs = segs
	write := api.IsWrite(r.Method)
	// Every answer carries the remaining quota, even a refused one.
	s.inj.quotaHeaders(q, write)
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
		if err != nil {
			return nil, api.InvalidContent(err)
		}
		if len(b) > MaxRequestBody {
			return nil, api.NewError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
				"The request content size exceeds the maximum size of %d bytes.", MaxRequestBody)
		}
		q.Body = b
	}
	if err := checkAuth(r); err != nil {
		return nil, err
	}
	q.APIVersion = q.Query.Get("api-version")
	if q.APIVersion == "" {
		return nil, api.BadRequest("MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.")
	}
	s.checkKnown(q)
	if err := s.inj.injectFaults(r.Context(), q, write); err != nil {
		return nil, err
	}
	if err := s.az.Authorize(r.Context(), q); err != nil {
		return nil, err
	}
	return s.route(r.Context(), q)
}

func checkAuth(r *http.Request) error {
	a := r.Header.Get("Authorization")
	if a == "" {
		return api.Unauthenticated("The 'Authorization' header is missing.")
	}
	scheme, token, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return api.Unauthenticated("The 'Authorization' header is provided in an invalid format.")
	}
	return nil
}

// write sends resp, or err as an ARM error body, and returns the status.
func (s *Server) write(w http.ResponseWriter, r *http.Request, resp *api.Response, err error) int {
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				ae = api.NewError(http.StatusRequestTimeout, "RequestTimeout", "The request was canceled: %v", err)
			} else {
				s.log.Error("fabric internal error", "method", r.Method, "path", r.URL.Path, "err", err)
				ae = api.Internal(err)
			}
		}
		for k, v := range ae.Header {
			w.Header()[k] = v
		}
		resp = &api.Response{Status: ae.Status, Body: ae.Body()}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if resp.Body == nil {
		w.WriteHeader(resp.Status)
		return resp.Status
	}
	var b []byte
	switch v := resp.Body.(type) {
	case json.RawMessage:
		b = v
	default:
		var merr error
		b, merr = json.Marshal(v)
		if merr != nil {
			s.log.Error("fabric encoding response", "err", merr)
			w.WriteHeader(http.StatusInternalServerError)
			return http.StatusInternalServerError
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(resp.Status)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
	return resp.Status
}

// route dispatches on the path. Fixed segments compare case-insensitively.
func (s *Server) route(ctx context.Context, q *api.Request) (*api.Response, error) {
	seg := q.Segs
	is := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	n := len(seg)
	if is(0, "tenants") && n == 1 {
		return api.Methods(q, map[string]api.Handler{"GET": s.listTenants})(ctx, q)
	}
	if authz.AuthorizationIndex(seg) >= 0 {
		return s.az.AuthorizationAPI(ctx, q) // Microsoft.Authorization at any scope: authz_api.go
	}
	if !is(0, "subscriptions") {
		return nil, api.NoRoute(q)
	}
	switch {
	case n == 1:
		return api.Methods(q, map[string]api.Handler{"GET": s.net.ListSubscriptions})(ctx, q)
	case n == 2:
		return api.Methods(q, map[string]api.Handler{"GET": s.net.GetSubscription})(ctx, q)
	case n == 3 && is(2, "locations"):
		return api.Methods(q, map[string]api.Handler{"GET": s.listLocations})(ctx, q)
	case n == 3 && is(2, "resources"):
		return api.Methods(q, map[string]api.Handler{"GET": s.listGenericResources})(ctx, q)
	case n == 3 && is(2, "providers"):
		return api.Methods(q, map[string]api.Handler{"GET": s.listProviders})(ctx, q)
	case n == 4 && is(2, "providers"):
		return api.Methods(q, map[string]api.Handler{"GET": s.getProvider})(ctx, q)
	case n == 5 && is(2, "providers") && is(4, "register"):
		return api.Methods(q, map[string]api.Handler{"POST": s.registerProvider})(ctx, q)
	case n == 5 && is(2, "resourcegroups") && is(4, "resources"):
		return api.Methods(q, map[string]api.Handler{"GET": s.listGenericResources})(ctx, q)
	case is(2, "resourcegroups") && n == 3:
		return api.Methods(q, map[string]api.Handler{"GET": s.net.ListResourceGroups})(ctx, q)
	case is(2, "resourcegroups") && n == 4:
		return api.Methods(q, map[string]api.Handler{
			"GET": s.net.GetResourceGroup, "HEAD": s.net.HeadResourceGroup, "PUT": s.net.PutResourceGroup,
			"PATCH": s.net.PatchResourceGroup, "DELETE": s.net.DeleteResourceGroup,
		})(ctx, q)
	case is(2, "operationresults") && n == 4 && s.dep.OwnsResult(seg[3]):
		return api.Methods(q, map[string]api.Handler{"GET": s.dep.GetResult})(ctx, q) // what-if, deployment delete
	case is(2, "operationresults") && n == 4:
		return api.Methods(q, map[string]api.Handler{"GET": s.net.GetRGOperationResult})(ctx, q)
	case is(2, "providers") && n >= 4:
		p, ok := s.provider(seg[3])
		if !ok {
			return nil, api.InvalidNamespace(q, seg[3])
		}
		return p.ServeSubscription(ctx, q)
	case is(2, "resourcegroups") && is(4, "deployments") && n >= 7:
		return s.dep.ServeGroup(ctx, q) // ARM's older deployment operations paths
	case is(2, "resourcegroups") && is(4, "providers") && n >= 6:
		p, ok := s.provider(seg[5])
		if !ok {
			return nil, api.InvalidNamespace(q, seg[5])
		}
		if n < 7 || seg[1] == "" || seg[3] == "" {
			return nil, api.NoRoute(q)
		}
		return p.ServeGroup(ctx, q)
	}
	return nil, api.NoRoute(q)
}

// DefaultSubscription is the subscription ID used when none is given. The
// fabric accepts any subscription ID; this one is only a convention.
const DefaultSubscription = api.DefaultSubscription

// AdminClientID is the client the fabric's own tools authenticate as: the
// fabric's administrator (see api.AdminClientID).
const AdminClientID = api.AdminClientID

// Store is the fabric's state (see package store).
type Store = store.Store

// Open opens (creating if needed) the state file at path.
func Open(ctx context.Context, path string) (*Store, error) { return store.Open(ctx, path) }

// OpenMemory opens an empty in-memory state, for tests.
func OpenMemory(ctx context.Context) (*Store, error) { return store.OpenMemory(ctx) }

// DefaultTenant is the tenant every subscription of the fabric belongs to.
const DefaultTenant = api.DefaultTenant

// provider serves one resource provider namespace below a subscription
// and below a resource group. The pipeline (body limit, authentication,
// api-version, faults, authorization) has run when it is called, and the
// namespace segment matched.
type provider interface {
	// Namespace is the namespace served, e.g. Microsoft.Network.
	Namespace() string
	// ServeSubscription serves /subscriptions/{sub}/providers/{namespace}/...
	ServeSubscription(ctx context.Context, q *api.Request) (*api.Response, error)
	// ServeGroup serves /subscriptions/{sub}/resourceGroups/{rg}/providers/{namespace}/{type}/...
	ServeGroup(ctx context.Context, q *api.Request) (*api.Response, error)
}

// provider finds the provider of a namespace, without regard to case.
func (s *Server) provider(namespace string) (provider, bool) {
	p, ok := s.providers[api.Key(namespace)]
	return p, ok
}
