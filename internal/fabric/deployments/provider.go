package deployments

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Dispatcher runs a sub-request through the fabric's whole pipeline as
// the principal of parent (see fabric.Server.Dispatch).
type Dispatcher interface {
	Dispatch(ctx context.Context, parent *api.Request, method, path string, body []byte) (*api.Response, error)
}

// Groups are the resource groups as the fabric keeps them.
type Groups interface {
	// Require returns the group, or ARM's ResourceGroupNotFound (and,
	// for a write, ResourceGroupBeingDeleted).
	Require(tx *store.Txn, sub, rg string, write bool) (*store.RGRow, error)
}

// Config is what a Provider is made of.
type Config struct {
	Store    *store.Store
	Dispatch Dispatcher
	Groups   Groups
	// OpDuration is the fabric's operation duration: 0 runs a deployment
	// within its PUT and makes what-if results ready at once.
	OpDuration time.Duration
	Log        *slog.Logger
	Now        func() time.Time
}

// Provider serves Microsoft.Resources/deployments in resource groups.
type Provider struct {
	c      Config
	tables tables
	// running are the deployments this process runs, by key: a PUT of a
	// running deployment is DeploymentActive; cancel stops one.
	mu      sync.Mutex
	running map[string]context.CancelFunc
}

// New returns the deployments provider.
func New(c Config) *Provider {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Provider{c: c, running: map[string]context.CancelFunc{}}
}

// Namespace is the namespace served.
func (p *Provider) Namespace() string { return api.ResourcesNamespace }

// typeDeployments is the type served, as paths and bodies spell it.
const (
	typeDeployments    = "deployments"
	armTypeDeployments = "Microsoft.Resources/deployments"
)

// ServeSubscription answers deployments at subscription scope (and any
// other Microsoft.Resources path below a subscription) as a type the
// fabric does not serve: it deploys to resource groups only.
func (p *Provider) ServeSubscription(_ context.Context, q *api.Request) (*api.Response, error) {
	return nil, api.NewError(http.StatusNotFound, "InvalidResourceType",
		"The resource type '%s' at subscription scope is not served by the routekeeper fabric: it deploys templates to resource groups only (az deployment group).", q.Segs[4])
}

// ServeGroup serves .../resourceGroups/{rg}/providers/Microsoft.Resources/deployments/...
// and ARM's older form of the operations paths,
// .../resourcegroups/{rg}/deployments/{name}/operations[/{id}], which the
// SDKs' DeploymentOperations clients (and az) call.
func (p *Provider) ServeGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	seg := q.Segs
	n := len(seg)
	d := base(q)
	is := func(i int, want string) bool { return i < n && strings.EqualFold(seg[i], want) }
	if !is(d, typeDeployments) {
		return nil, api.NewError(http.StatusNotFound, "InvalidResourceType",
			"The resource type '%s' could not be found in the namespace 'Microsoft.Resources' for api version '%s'.", seg[d], q.APIVersion)
	}
	if err := p.tables.ensure(ctx, p.c.Store); err != nil {
		return nil, err
	}
	legacy := d == 4
	switch {
	case n == d+1 && !legacy:
		return api.Methods(q, map[string]api.Handler{"GET": p.list})(ctx, q)
	case n == d+2 && !legacy:
		return api.Methods(q, map[string]api.Handler{"GET": p.get, "HEAD": p.head, "PUT": p.put, "DELETE": p.delete})(ctx, q)
	case n == d+3 && is(d+2, "validate") && !legacy:
		return api.Methods(q, map[string]api.Handler{"POST": p.validate})(ctx, q)
	case n == d+3 && is(d+2, "whatIf") && !legacy:
		return api.Methods(q, map[string]api.Handler{"POST": p.whatIf})(ctx, q)
	case n == d+3 && is(d+2, "cancel") && !legacy:
		return api.Methods(q, map[string]api.Handler{"POST": p.cancel})(ctx, q)
	case n == d+3 && is(d+2, "exportTemplate") && !legacy:
		return api.Methods(q, map[string]api.Handler{"POST": p.exportTemplate})(ctx, q)
	case n == d+3 && is(d+2, "operations"):
		return api.Methods(q, map[string]api.Handler{"GET": p.listOperations})(ctx, q)
	case n == d+4 && is(d+2, "operations"):
		return api.Methods(q, map[string]api.Handler{"GET": p.getOperation})(ctx, q)
	case n == d+4 && is(d+2, "operationStatuses") && !legacy:
		return api.Methods(q, map[string]api.Handler{"GET": p.getStatus})(ctx, q)
	}
	if n >= d+3 {
		return nil, api.NewError(http.StatusNotFound, "InvalidResourceType",
			"The resource type 'deployments/%s' could not be found in the namespace 'Microsoft.Resources' for api version '%s'.", seg[d+2], q.APIVersion)
	}
	return nil, api.NoRoute(q)
}

// base is the index of the "deployments" segment: 6 below
// .../providers/Microsoft.Resources, 4 in the older operations paths.
func base(q *api.Request) int {
	if len(q.Segs) > 4 && strings.EqualFold(q.Segs[4], "providers") {
		return 6
	}
	return 4
}

// target is the deployment a request names.
type target struct {
	sub, rg, name string
}

func (t target) id() string {
	return api.RGID(t.sub, t.rg) + "/providers/" + armTypeDeployments + "/" + t.name
}

func (t target) key() string { return api.Key(t.id()) }

func targetOf(q *api.Request) target {
	t := target{sub: q.Segs[1], rg: q.Segs[3]}
	if d := base(q); len(q.Segs) > d+1 {
		t.name = q.Segs[d+1]
	}
	return t
}

// notFound is ARM's answer for a deployment that does not exist.
func notFound(name string) *api.Error {
	return api.NewError(http.StatusNotFound, "DeploymentNotFound", "Deployment '%s' could not be found.", name)
}

// validName is ARM's rule for deployment names: 1-64 characters of
// letters, digits, '-', '.', '_', '(' and ')'.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-._()", r):
		default:
			return false
		}
	}
	return true
}

func invalidName(name string) *api.Error {
	return api.BadRequest("InvalidDeploymentName",
		"The deployment name '%s' is invalid. It can contain only alphanumeric characters, '-', '.', '_', '(' and ')', and must be 1 to 64 characters long.", name)
}
