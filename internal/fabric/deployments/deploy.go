package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// prepared is a deployment request validated against its group: the
// engine's plan of it, ready to run.
type prepared struct {
	t     target
	rg    *store.RGRow
	req   *request
	scope armtemplate.Scope
	plan  *armtemplate.Deployment
}

// prepare reads and validates a deployment request: the body, the group
// (which must exist), the template against its parameters (ARM's
// validation: 400 InvalidTemplate with the line and column).
func (p *Provider) prepare(ctx context.Context, q *api.Request, write bool) (*prepared, error) {
	t := targetOf(q)
	if !validName(t.name) {
		return nil, invalidName(t.name)
	}
	req, err := parseRequest(q.Body)
	if err != nil {
		return nil, asAPI(err)
	}
	var rg *store.RGRow
	err = p.c.Store.Read(ctx, func(tx *store.Txn) error {
		rg, err = p.c.Groups.Require(tx, t.sub, t.rg, write)
		return err
	})
	if err != nil {
		return nil, err
	}
	scope := armtemplate.Scope{TenantID: api.DefaultTenant, SubscriptionID: rg.Sub, ResourceGroup: rg.Name,
		ResourceGroupLocation: rg.Location, DeploymentName: t.name, Mode: req.mode}
	plan, err := armtemplate.Prepare(ctx, req.tmpl, scope, req.params, armtemplate.Options{Now: p.c.Now})
	if err != nil {
		return nil, asAPI(err)
	}
	return &prepared{t: t, rg: rg, req: req, scope: scope, plan: plan}, nil
}

// asAPI is an engine or request error as the API answers it: an ARM
// error with status 400 (InvalidTemplate with its TemplateViolation).
func asAPI(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	var te *armtemplate.Error
	if errors.As(err, &te) {
		e := templateError(te)
		return &api.Error{Status: http.StatusBadRequest, Code: e.Code, Message: e.Message, AdditionalInfo: e.AdditionalInfo}
	}
	return err
}

// doc is the deployment's document as first stored (Accepted).
func (pr *prepared) doc(q *api.Request, now time.Time) *deployment {
	d := &deployment{ID: pr.t.id(), Name: pr.t.name, Type: armTypeDeployments, Tags: pr.req.tags,
		Properties: properties{
			TemplateHash: templateHash(canonical(pr.req.template)), Parameters: pr.plan.Parameters(), Mode: pr.req.mode,
			ProvisioningState: stateAccepted, Timestamp: timestamp(now), Duration: "PT0S",
			CorrelationID: q.Out.Get("x-ms-correlation-request-id"),
			Providers:     providersOf(pr.plan.Steps(), nil), Dependencies: dependenciesOf(pr.plan.Steps()),
		}}
	if d.Properties.CorrelationID == "" {
		d.Properties.CorrelationID = uuid.NewString()
	}
	return d
}

// put serves PUT: the request validated, the deployment stored Accepted
// and run (within the request with a zero operation duration, else in the
// background); 201 (200 for an existing name) with Azure-AsyncOperation.
func (p *Provider) put(ctx context.Context, q *api.Request) (*api.Response, error) {
	pr, err := p.prepare(ctx, q, true)
	if err != nil {
		return nil, err
	}
	key := pr.t.key()
	parent, err := parentOf(q)
	if err != nil {
		return nil, err
	}
	doc := pr.doc(q, p.c.Now())
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	status := http.StatusCreated
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	err = p.c.Store.Write(ctx, func(tx *store.Txn) error {
		cur, err := getRow(tx, key)
		if err != nil {
			return err
		}
		if cur != nil {
			status = http.StatusOK
			var old deployment
			if json.Unmarshal(cur.Doc, &old) == nil && active(old.Properties.ProvisioningState) {
				return deploymentActive(pr.t.name, old.Properties.Timestamp)
			}
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.running[key] != nil {
			return deploymentActive(pr.t.name, doc.Properties.Timestamp)
		}
		if err := putRow(tx, &row{Key: key, RGKey: api.Key(api.RGID(pr.rg.Sub, pr.rg.Name)), SortKey: doc.Properties.Timestamp,
			Doc: body, Template: canonical(pr.req.template)}); err != nil {
			return err
		}
		if err := clearOps(tx, key); err != nil {
			return err
		}
		p.running[key] = cancel
		return nil
	})
	if err != nil {
		cancel()
		return nil, err
	}
	r := &runner{p: p, c: &caller{d: p.c.Dispatch, parent: parent, now: p.c.Now}, t: pr.t, rgKey: api.Key(api.RGID(pr.rg.Sub, pr.rg.Name)),
		mode: pr.req.mode, where: map[string]string{}, nested: map[string]bool{}}
	run := func() {
		defer cancel()
		defer p.done(key)
		p.execute(runCtx, r, pr, doc)
	}
	if p.c.OpDuration == 0 {
		run()
	} else {
		go run()
	}
	h := http.Header{}
	h.Set("Azure-AsyncOperation", q.Base+escapeID(pr.t.id())+"/operationStatuses/"+opID()+"?api-version="+url.QueryEscape(q.APIVersion))
	return &api.Response{Status: status, Body: json.RawMessage(body), Header: h}, nil
}

func (p *Provider) done(key string) {
	p.mu.Lock()
	delete(p.running, key)
	p.mu.Unlock()
}

func active(state string) bool { return state == stateAccepted || state == stateRunning }

func deploymentActive(name, since string) *api.Error {
	return api.NewError(http.StatusConflict, "DeploymentActive",
		"Unable to edit or replace deployment '%s': previous deployment from '%s' is still active (expiration time is '%s'). Please see https://aka.ms/arm-deploy for usage details.",
		name, since, since)
}

// execute runs a deployment to its end and stores what it came to.
func (p *Provider) execute(ctx context.Context, r *runner, pr *prepared, doc *deployment) {
	start := p.c.Now()
	doc.Properties.ProvisioningState = stateRunning
	if err := r.save(ctx, doc, pr.t.name, nil); err != nil {
		p.c.Log.Error("fabric: deployment could not be stored", "deployment", pr.t.id(), "err", err)
		return
	}
	res, err := armtemplate.Deploy(ctx, pr.req.tmpl, pr.scope, pr.req.params, armtemplate.Options{Now: p.c.Now}, r)
	if err == nil && pr.req.mode == modeComplete {
		declared := map[string]bool{}
		for _, x := range res.Resources {
			declared[api.Key(x.ID)] = true
		}
		for _, id := range res.Skipped {
			declared[api.Key(id)] = true
		}
		err = r.completeMode(ctx, declared)
	}
	now := p.c.Now()
	doc.Properties.Duration = isoDuration(now.Sub(start))
	doc.Properties.Providers = providersOf(pr.plan.Steps(), r.where)
	switch {
	case ctx.Err() != nil:
		doc.Properties.ProvisioningState = stateCanceled
	case err != nil:
		doc.Properties.ProvisioningState = stateFailed
		doc.Properties.Error = failureOf(err, r)
	default:
		doc.Properties.ProvisioningState = stateSucceeded
		doc.Properties.Outputs = res.Outputs
		if len(res.Outputs) > 0 {
			r.record(pr.t.name, "EvaluateDeploymentOutput", now, nil, http.StatusOK, nil)
		}
	}
	for _, id := range r.written {
		doc.Properties.OutputResources = append(doc.Properties.OutputResources, resourceRef{ID: id})
	}
	// Nested deployments a failure cut short are kept, failed.
	for _, o := range r.ops {
		if o.deployment != strings.ToLower(pr.t.name) && !r.nested[o.deployment] {
			r.nested[o.deployment] = true
			nd := r.newDoc(nameOf(r.ops, o.deployment), pr.req.mode, o.started)
			nd.Properties.ProvisioningState = doc.Properties.ProvisioningState
			nd.Properties.Error = doc.Properties.Error
			if err := r.save(context.WithoutCancel(ctx), nd, nd.Name, nil); err != nil {
				p.c.Log.Error("fabric: nested deployment could not be stored", "deployment", nd.ID, "err", err)
			}
		}
	}
	if err := r.save(context.WithoutCancel(ctx), doc, pr.t.name, nil); err != nil {
		p.c.Log.Error("fabric: deployment could not be stored", "deployment", pr.t.id(), "err", err)
	}
}

// nameOf is the name of the nested deployment whose lower-case name is
// lower, as its operations' IDs spell it.
func nameOf(ops []*operation, lower string) string {
	for _, o := range ops {
		if o.deployment == lower {
			_, rest, _ := strings.Cut(o.ID, "/deployments/")
			name, _, _ := strings.Cut(rest, "/")
			return name
		}
	}
	return lower
}

// failureOf is a failed deployment's error: DeploymentFailed with the
// failed operations' errors for a resource that failed, the template's
// own error (InvalidTemplate, ResourceNotFound of reference()) otherwise.
func failureOf(err error, r *runner) *armError {
	var rf *resourceFailure
	var df *armError
	switch {
	case errors.As(err, &df) && df.Code == "DeploymentFailed":
		return df
	case errors.As(err, &rf):
		var details []armError
		for _, o := range r.ops {
			if o.Properties.ProvisioningState == stateFailed {
				details = append(details, o.Properties.StatusMessage.(map[string]any)["error"].(armError))
			}
		}
		return deploymentFailed(details)
	}
	var te *armtemplate.Error
	if errors.As(err, &te) {
		e := templateError(te)
		return &e
	}
	return &armError{Code: "InternalServerError", Message: fmt.Sprintf("The deployment failed: %v", err)}
}
