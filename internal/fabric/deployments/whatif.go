package deployments

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Change types of what-if (ChangeType).
const (
	changeCreate   = "Create"
	changeDelete   = "Delete"
	changeModify   = "Modify"
	changeNoChange = "NoChange"
	changeIgnore   = "Ignore"
	changeDeploy   = "Deploy"
)

// validate serves POST .../validate: 200 with the deployment as it would
// start and the resources it validated, or 400 with the template's error.
func (p *Provider) validate(ctx context.Context, q *api.Request) (*api.Response, error) {
	pr, err := p.prepare(ctx, q, false)
	if err != nil {
		return nil, err
	}
	d := pr.doc(q, p.c.Now())
	d.Properties.ProvisioningState = stateSucceeded
	d.Properties.ValidatedResources = []resourceRef{}
	for _, s := range pr.plan.Steps() {
		d.Properties.ValidatedResources = append(d.Properties.ValidatedResources, resourceRef{ID: s.ID})
	}
	return &api.Response{Status: http.StatusOK, Body: d}, nil
}

// whatIf serves POST .../whatIf: the template evaluated without deploying
// and compared, resource by resource, with what the group holds (read
// through the pipeline as the caller); 202 with Location, whose poll
// answers 202 until the result is ready (the operation duration), then
// 200 with the WhatIfOperationResult.
func (p *Provider) whatIf(ctx context.Context, q *api.Request) (*api.Response, error) {
	pr, err := p.prepare(ctx, q, false)
	if err != nil {
		return nil, err
	}
	parent, err := parentOf(q)
	if err != nil {
		return nil, err
	}
	c := &caller{d: p.c.Dispatch, parent: parent, now: p.c.Now}
	result := map[string]any{"status": stateSucceeded}
	changes, err := p.changes(ctx, c, pr)
	if err != nil {
		e := errorOf(err, "")
		result = map[string]any{"status": stateFailed, "error": e}
	} else {
		if strings.EqualFold(pr.req.resultFormat, "ResourceIdOnly") {
			for _, ch := range changes {
				delete(ch, "before")
				delete(ch, "after")
				delete(ch, "delta")
			}
		}
		result["properties"] = map[string]any{"changes": changes}
	}
	doc, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	tok := resultToken{Kind: kindWhatIf, ID: uuid.NewString()}
	now := p.c.Now()
	err = p.c.Store.Write(ctx, func(tx *store.Txn) error {
		if err := pruneWhatIf(tx, now.Add(-whatIfRetention).UnixNano()); err != nil {
			return err
		}
		return putWhatIf(tx, tok.ID, now.Add(p.c.OpDuration).UnixNano(), doc)
	})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Location", resultURL(q, pr.t.sub, tok))
	if p.c.OpDuration > 0 {
		h.Set("Retry-After", "1")
		h.Set("retry-after-ms", strconv.FormatInt(int64(p.c.OpDuration/time.Millisecond), 10))
	}
	return &api.Response{Status: http.StatusAccepted, Header: h}, nil
}

// changes compares the evaluated template with the group: Create,
// Modify or NoChange for the template's resources, Deploy for nested
// deployments, and for the group's other resources Ignore (Incremental)
// or Delete (Complete).
func (p *Provider) changes(ctx context.Context, c *caller, pr *prepared) ([]map[string]any, error) {
	res, err := armtemplate.WhatIf(ctx, pr.req.tmpl, pr.scope, pr.req.params, armtemplate.Options{Now: p.c.Now}, c)
	if err != nil {
		return nil, err
	}
	declared := map[string]bool{}
	var out []map[string]any
	for _, r := range res.Resources {
		declared[api.Key(r.ID)] = true
		after := predicted(r)
		before, found, err := c.Get(ctx, r.ID, r.APIVersion)
		if err != nil {
			return nil, err
		}
		ch := map[string]any{"resourceId": r.ID, "after": after}
		switch {
		case !found:
			ch["changeType"] = changeCreate
		default:
			ch["before"] = before
			if delta := diffResource(r.Type, before, after); len(delta) > 0 {
				ch["changeType"], ch["delta"] = changeModify, delta
			} else {
				ch["changeType"] = changeNoChange
			}
		}
		out = append(out, ch)
	}
	for _, id := range res.Skipped {
		declared[api.Key(id)] = true
	}
	for _, n := range res.Nested {
		declared[api.Key(n.ID)] = true
		out = append(out, map[string]any{"resourceId": n.ID, "changeType": changeDeploy,
			"after": map[string]any{"id": n.ID, "name": n.Name, "type": armTypeDeployments, "properties": map[string]any{"mode": n.Mode}}})
	}
	others, err := groupResources(ctx, c, pr.t)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		id, _ := o["id"].(string)
		if id == "" || declared[api.Key(id)] {
			continue
		}
		if pr.req.mode != modeComplete {
			out = append(out, map[string]any{"resourceId": id, "changeType": changeIgnore})
			continue
		}
		before := o
		if typ, _ := typeAndName(id); strings.HasPrefix(strings.ToLower(typ), "microsoft.network/") {
			if full, found, err := c.Get(ctx, id, deleteAPIVersion); err == nil && found {
				before = full
			}
		}
		out = append(out, map[string]any{"resourceId": id, "changeType": changeDelete, "before": before})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.ToLower(out[i]["resourceId"].(string)) < strings.ToLower(out[j]["resourceId"].(string))
	})
	return out, nil
}

// predicted is a template resource as what-if's after shows it: the
// evaluated body with its ID; a value that needs reference() to a
// resource not yet deployed stays the expression.
func predicted(r *armtemplate.Resource) map[string]any {
	after := map[string]any{"id": r.ID}
	for k, v := range r.Body {
		switch strings.ToLower(k) {
		case "scope", "condition", "copy", "dependson", "resources", "comments":
			continue
		}
		after[k] = v
	}
	return after
}

// groupResources lists the group's resources through the pipeline.
func groupResources(ctx context.Context, c *caller, t target) ([]map[string]any, error) {
	path := escapeID(api.RGID(t.sub, t.rg)) + "/resources?api-version=2021-04-01"
	var out []map[string]any
	for path != "" {
		resp, err := c.send(ctx, http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		m, err := bodyMap(resp)
		if err != nil {
			return nil, err
		}
		values, _ := m["value"].([]any)
		for _, v := range values {
			if o, ok := v.(map[string]any); ok {
				out = append(out, o)
			}
		}
		path = ""
		if next, _ := m["nextLink"].(string); next != "" {
			if u, err := url.Parse(next); err == nil {
				path = u.RequestURI()
			}
		}
	}
	return out, nil
}
