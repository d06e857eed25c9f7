package deployments

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// read runs fn on the stored deployment a request names: 404
// ResourceGroupNotFound or DeploymentNotFound when it is not there.
func (p *Provider) read(ctx context.Context, q *api.Request, fn func(tx *store.Txn, r *row) error) error {
	t := targetOf(q)
	return p.c.Store.Read(ctx, func(tx *store.Txn) error {
		if _, err := p.c.Groups.Require(tx, t.sub, t.rg, false); err != nil {
			return err
		}
		r, err := getRow(tx, t.key())
		if err != nil {
			return err
		}
		if r == nil {
			return notFound(t.name)
		}
		return fn(tx, r)
	})
}

func (p *Provider) get(ctx context.Context, q *api.Request) (*api.Response, error) {
	var body []byte
	err := p.read(ctx, q, func(_ *store.Txn, r *row) error {
		body = r.Doc
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: json.RawMessage(body)}, nil
}

// head is CheckExistence: 204 or 404, no body.
func (p *Provider) head(ctx context.Context, q *api.Request) (*api.Response, error) {
	if _, err := p.get(ctx, q); err != nil {
		return &api.Response{Status: http.StatusNotFound}, nil
	}
	return &api.Response{Status: http.StatusNoContent}, nil
}

// list serves GET .../deployments: newest first; $filter on
// provisioningState (az deployment group list --filter "provisioningState
// eq 'Failed'") and $top.
func (p *Provider) list(ctx context.Context, q *api.Request) (*api.Response, error) {
	t := targetOf(q)
	state := filterState(q.Query.Get("$filter"))
	page := struct {
		Value []json.RawMessage `json:"value"`
	}{Value: []json.RawMessage{}}
	err := p.c.Store.Read(ctx, func(tx *store.Txn) error {
		rg, err := p.c.Groups.Require(tx, t.sub, t.rg, false)
		if err != nil {
			return err
		}
		rows, err := listRows(tx, api.Key(api.RGID(rg.Sub, rg.Name)))
		for _, r := range rows {
			if state != "" {
				var d deployment
				if json.Unmarshal(r.Doc, &d) != nil || !strings.EqualFold(d.Properties.ProvisioningState, state) {
					continue
				}
			}
			page.Value = append(page.Value, r.Doc)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if top, err := strconv.Atoi(q.Query.Get("$top")); err == nil && top > 0 && top < len(page.Value) {
		page.Value = page.Value[:top]
	}
	return &api.Response{Status: http.StatusOK, Body: page}, nil
}

// filterState reads "provisioningState eq 'X'" from a $filter.
func filterState(f string) string {
	k, v, ok := strings.Cut(f, " eq ")
	if !ok || !strings.EqualFold(strings.TrimSpace(k), "provisioningState") {
		return ""
	}
	return strings.Trim(strings.TrimSpace(v), "'")
}

// delete removes the deployment's record (its resources stay): 202 with
// Location, whose poll answers 204; 204 when there is none; 409
// DeploymentActive while it runs.
func (p *Provider) delete(ctx context.Context, q *api.Request) (*api.Response, error) {
	t := targetOf(q)
	gone := false
	err := p.c.Store.Write(ctx, func(tx *store.Txn) error {
		if _, err := p.c.Groups.Require(tx, t.sub, t.rg, true); err != nil {
			return err
		}
		r, err := getRow(tx, t.key())
		if err != nil || r == nil {
			gone = true
			return err
		}
		var d deployment
		if json.Unmarshal(r.Doc, &d) == nil && active(d.Properties.ProvisioningState) {
			return deploymentActive(t.name, d.Properties.Timestamp)
		}
		return deleteRow(tx, t.key())
	})
	if err != nil {
		return nil, err
	}
	if gone {
		return &api.Response{Status: http.StatusNoContent}, nil
	}
	h := http.Header{}
	h.Set("Location", resultURL(q, t.sub, resultToken{Kind: kindDelete, ID: opID()}))
	return &api.Response{Status: http.StatusAccepted, Header: h}, nil
}

// cancel stops a deployment this process runs: 204, then Canceled.
func (p *Provider) cancel(ctx context.Context, q *api.Request) (*api.Response, error) {
	t := targetOf(q)
	if _, err := p.get(ctx, q); err != nil {
		return nil, err
	}
	p.mu.Lock()
	stop := p.running[t.key()]
	p.mu.Unlock()
	if stop == nil {
		return nil, api.NewError(http.StatusConflict, "DeploymentCannotBeCancelled",
			"The deployment '%s' cannot be cancelled: it is not running in this fabric process.", t.name)
	}
	stop()
	return &api.Response{Status: http.StatusNoContent}, nil
}

func (p *Provider) exportTemplate(ctx context.Context, q *api.Request) (*api.Response, error) {
	var tmpl []byte
	err := p.read(ctx, q, func(_ *store.Txn, r *row) error {
		tmpl = r.Template
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"template": json.RawMessage(tmpl)}}, nil
}

func (p *Provider) listOperations(ctx context.Context, q *api.Request) (*api.Response, error) {
	page := struct {
		Value []json.RawMessage `json:"value"`
	}{Value: []json.RawMessage{}}
	err := p.read(ctx, q, func(tx *store.Txn, r *row) error {
		docs, _, err := listOps(tx, r.Key)
		for _, d := range docs {
			page.Value = append(page.Value, d)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: page}, nil
}

func (p *Provider) getOperation(ctx context.Context, q *api.Request) (*api.Response, error) {
	var body []byte
	err := p.read(ctx, q, func(tx *store.Txn, r *row) error {
		docs, ids, err := listOps(tx, r.Key)
		for i, id := range ids {
			if strings.EqualFold(id, q.Segs[len(q.Segs)-1]) {
				body = docs[i]
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, api.NewError(http.StatusNotFound, "DeploymentOperationNotFound", "The deployment operation '%s' could not be found.", q.Segs[len(q.Segs)-1])
	}
	return &api.Response{Status: http.StatusOK, Body: json.RawMessage(body)}, nil
}

// getStatus is the Azure-AsyncOperation of a PUT: the deployment's
// provisioning state, with its error once it failed.
func (p *Provider) getStatus(ctx context.Context, q *api.Request) (*api.Response, error) {
	var d deployment
	err := p.read(ctx, q, func(_ *store.Txn, r *row) error { return json.Unmarshal(r.Doc, &d) })
	if err != nil {
		return nil, err
	}
	body := map[string]any{"status": d.Properties.ProvisioningState}
	if d.Properties.Error != nil {
		body["error"] = d.Properties.Error
	}
	h := http.Header{}
	if active(d.Properties.ProvisioningState) {
		h.Set("Retry-After", "1")
		h.Set("retry-after-ms", "100")
	}
	return &api.Response{Status: http.StatusOK, Body: body, Header: h}, nil
}
