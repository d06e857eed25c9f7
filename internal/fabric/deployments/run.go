package deployments

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// operation is one operation of a deployment, as ARM lists them.
type operation struct {
	ID          string      `json:"id"`
	OperationID string      `json:"operationId"`
	Properties  opProps     `json:"properties"`
	deployment  string      // the (nested) deployment's name, lower case
	started     time.Time   // for the duration
	target      *targetInfo // what it wrote
}

type opProps struct {
	ProvisioningOperation string      `json:"provisioningOperation"`
	ProvisioningState     string      `json:"provisioningState"`
	Timestamp             string      `json:"timestamp"`
	Duration              string      `json:"duration"`
	TrackingID            string      `json:"trackingId"`
	ServiceRequestID      string      `json:"serviceRequestId,omitempty"`
	StatusCode            string      `json:"statusCode,omitempty"`
	StatusMessage         any         `json:"statusMessage,omitempty"`
	TargetResource        *targetInfo `json:"targetResource,omitempty"`
}

type targetInfo struct {
	ID           string `json:"id"`
	ResourceType string `json:"resourceType"`
	ResourceName string `json:"resourceName"`
}

// runner runs one deployment (and the deployments nested in it): it is
// the engine's Deployer, and keeps the operations.
type runner struct {
	p       *Provider
	c       *caller
	t       target
	rgKey   string
	mode    string
	ops     []*operation
	written []string          // IDs of the resources written, in order
	where   map[string]string // locations of the resources written, by key
	nested  map[string]bool   // nested deployments recorded, by lower-case name
}

// opID is an operation ID in ARM's form: 16 hex digits.
func opID() string {
	return strings.ToUpper(strings.ReplaceAll(uuid.NewString(), "-", "")[:16])
}

func (r *runner) deploymentID(name string) string {
	return target{sub: r.t.sub, rg: r.t.rg, name: name}.id()
}

// record adds an operation of deployment name that started at start.
func (r *runner) record(name, kind string, start time.Time, tgt *targetInfo, status int, failure error) *operation {
	now := r.p.c.Now()
	id := opID()
	o := &operation{ID: r.deploymentID(name) + "/operations/" + id, OperationID: id, deployment: strings.ToLower(name), started: start, target: tgt,
		Properties: opProps{ProvisioningOperation: kind, ProvisioningState: stateSucceeded, Timestamp: timestamp(now),
			Duration: isoDuration(now.Sub(start)), TrackingID: uuid.NewString(), ServiceRequestID: uuid.NewString(), TargetResource: tgt}}
	if status != 0 {
		o.Properties.StatusCode = strings.ReplaceAll(http.StatusText(status), " ", "")
	}
	if failure != nil {
		e := errorOf(failure, tgt.ID)
		o.Properties.ProvisioningState = stateFailed
		o.Properties.StatusMessage = map[string]any{"status": stateFailed, "error": e}
		if o.Properties.StatusCode == "" || o.Properties.StatusCode == "OK" || o.Properties.StatusCode == "Created" {
			o.Properties.StatusCode = "Conflict"
		}
	}
	r.ops = append(r.ops, o)
	return o
}

func targetOfResource(id, typ, name string) *targetInfo {
	return &targetInfo{ID: id, ResourceType: typ, ResourceName: name}
}

// resourceFailure is a template resource's failed write: the deployment
// fails with DeploymentFailed, its error among the details.
type resourceFailure struct{ err armError }

func (f *resourceFailure) Error() string { return f.err.Code + ": " + f.err.Message }

// Get is reference()'s read of a resource the deployment did not write.
func (r *runner) Get(ctx context.Context, id, apiVersion string) (map[string]any, bool, error) {
	return r.c.Get(ctx, id, apiVersion)
}

// Put writes one template resource through the pipeline, waits for its
// operation and reads it back for reference().
func (r *runner) Put(ctx context.Context, res *armtemplate.Resource) (map[string]any, error) {
	start := r.p.c.Now()
	tgt := targetOfResource(res.ID, res.Type, res.Name)
	body, err := putBody(res)
	if err != nil {
		return nil, err
	}
	path := escapeID(res.ID) + "?api-version=" + url.QueryEscape(res.APIVersion)
	status, err := r.c.write(ctx, http.MethodPut, path, body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		o := r.record(res.Deployment, "Create", start, tgt, status, err)
		return nil, &resourceFailure{err: o.Properties.StatusMessage.(map[string]any)["error"].(armError)}
	}
	r.record(res.Deployment, "Create", start, tgt, status, nil)
	r.written = append(r.written, res.ID)
	if res.Location != "" {
		r.where[api.Key(res.ID)] = res.Location
	}
	state, found, err := r.c.Get(ctx, res.ID, res.APIVersion)
	if err != nil || !found {
		return nil, err // nil state: the engine takes the body as written
	}
	return state, nil
}

// Nested keeps a nested deployment that ran as a deployment of its own,
// with its operations, and adds its operation to its parent's.
func (r *runner) Nested(ctx context.Context, n *armtemplate.NestedDeployment) error {
	r.nested[strings.ToLower(n.Name)] = true
	start := r.p.c.Now()
	for _, o := range r.ops {
		if o.deployment == strings.ToLower(n.Name) && o.started.Before(start) {
			start = o.started
		}
	}
	r.record(n.Parent, "Create", start, targetOfResource(n.ID, armTypeDeployments, n.Name), http.StatusOK, nil)
	doc := r.newDoc(n.Name, n.Mode, start)
	doc.Properties.ProvisioningState = stateSucceeded
	doc.Properties.Outputs = n.Outputs
	for _, id := range n.Resources {
		doc.Properties.OutputResources = append(doc.Properties.OutputResources, resourceRef{ID: id})
	}
	return r.save(ctx, doc, n.Name, nil)
}

// newDoc is a deployment document started at start.
func (r *runner) newDoc(name, mode string, start time.Time) *deployment {
	now := r.p.c.Now()
	return &deployment{ID: r.deploymentID(name), Name: name, Type: armTypeDeployments,
		Properties: properties{Mode: mode, ProvisioningState: stateRunning, Timestamp: timestamp(now), Duration: isoDuration(now.Sub(start)),
			CorrelationID: r.c.parent.HTTP.Header.Get("x-ms-correlation-request-id"), Providers: []providerTypes{}, Dependencies: []dependency{}}}
}

// save stores a (nested) deployment's document and its operations; a
// template is stored with a new deployment only.
func (r *runner) save(ctx context.Context, doc *deployment, name string, template []byte) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	key := api.Key(doc.ID)
	return r.p.c.Store.Write(ctx, func(tx *store.Txn) error {
		cur, err := getRow(tx, key)
		if err != nil {
			return err
		}
		if cur == nil {
			if template == nil {
				template = []byte("{}")
			}
			cur = &row{Key: key, RGKey: r.rgKey, SortKey: doc.Properties.Timestamp, Template: template}
		}
		cur.Doc = b
		if err := putRow(tx, cur); err != nil {
			return err
		}
		if err := clearOps(tx, key); err != nil {
			return err
		}
		seq := 0
		for _, o := range r.ops {
			if o.deployment != strings.ToLower(name) {
				continue
			}
			ob, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if err := addOp(tx, key, seq, o.OperationID, ob); err != nil {
				return err
			}
			seq++
		}
		return nil
	})
}

// completeMode deletes, through the pipeline, the group's resources the
// template does not declare: those that reference others first (network
// interfaces, gateways, virtual networks), then the rest (route tables,
// security groups). declared holds lower-case IDs.
func (r *runner) completeMode(ctx context.Context, declared map[string]bool) error {
	others, err := groupResources(ctx, r.c, r.t)
	if err != nil {
		return fmt.Errorf("listing the group's resources for Complete mode: %w", err)
	}
	var ids []string
	for _, o := range others {
		if id, _ := o["id"].(string); id != "" && !declared[api.Key(id)] {
			ids = append(ids, id)
		}
	}
	slices.SortStableFunc(ids, func(a, b string) int { return deleteRank(a) - deleteRank(b) })
	var failed []armError
	for _, id := range ids {
		typ, name := typeAndName(id)
		if !strings.HasPrefix(strings.ToLower(typ), "microsoft.network/") {
			continue
		}
		start := r.p.c.Now()
		tgt := targetOfResource(id, typ, name)
		status, err := r.c.write(ctx, http.MethodDelete, escapeID(id)+"?api-version="+deleteAPIVersion, nil)
		o := r.record(r.t.name, "Delete", start, tgt, status, err)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed = append(failed, o.Properties.StatusMessage.(map[string]any)["error"].(armError))
		}
	}
	if len(failed) > 0 {
		return deploymentFailed(failed)
	}
	return nil
}

// deleteAPIVersion is the api-version Complete mode deletes with.
const deleteAPIVersion = "2024-05-01"

// deleteRank orders Complete mode's deletions: what references comes
// before what is referenced.
func deleteRank(id string) int {
	typ, _ := typeAndName(id)
	switch strings.ToLower(typ) {
	case "microsoft.network/connections":
		return 0
	case "microsoft.network/networkinterfaces":
		return 1
	case "microsoft.network/virtualnetworkgateways", "microsoft.network/localnetworkgateways":
		return 2
	case "microsoft.network/virtualnetworks":
		return 3
	}
	return 4
}

// typeAndName are a top-level resource ID's type and name.
func typeAndName(id string) (string, string) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	for i := 0; i+3 < len(segs); i++ {
		if strings.EqualFold(segs[i], "providers") {
			return segs[i+1] + "/" + segs[i+2], segs[i+3]
		}
	}
	return "", ""
}
