package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// The handlers every top-level resource type shares: reads (readTop,
// getTop), writes in one transaction (writeTop), DELETE (deleteTop) and
// PATCH of the tags (patchTags). PUT is the pipeline of put.go.

// renderFunc is a stored top-level resource as a GET answers it.
type renderFunc = func(*store.Txn, *store.ResourceRow) (json.RawMessage, error)

// readTop reads one top-level resource for a GET: 404 when it or its group
// is missing. fn must not modify the row's Doc (it may be cached).
func (s *Provider) readTop(ctx context.Context, q *api.Request, typ, armType string, fn func(*store.Txn, *store.ResourceRow) error) error {
	t := q.Target()
	return s.View(ctx, func(tx *store.Txn) error {
		rg, err := RequireRG(tx, t.Sub, t.RG, false)
		if err != nil {
			return err
		}
		row, err := tx.GetResourceForRead(api.Key(api.ResourceID(rg.Sub, rg.Name, typ, t.Name)))
		if err != nil {
			return err
		}
		if row == nil {
			return api.ResourceNotFound(armType, t.Name, t.RG)
		}
		return fn(tx, row)
	})
}

// getTop serves GET of a top-level resource: the document render makes
// of it, with its etag.
func (s *Provider) getTop(ctx context.Context, q *api.Request, typ, armType string, render renderFunc) (*api.Response, error) {
	var resp *api.Response
	err := s.readTop(ctx, q, typ, armType, func(tx *store.Txn, row *store.ResourceRow) error {
		body, err := render(tx, row)
		resp = &api.Response{Status: http.StatusOK, Body: body, Header: api.WithEtag(row.Etag)}
		return err
	})
	return resp, err
}

// writeTop runs a write of a top-level resource (or of one of its
// children) in one transaction: due operations settle first, the resource
// group must exist and not be deleting, and no operation may be running on
// the resource.
func (s *Provider) writeTop(ctx context.Context, q *api.Request, typ string, fn func(tx *store.Txn, rg *store.RGRow, row *store.ResourceRow, fresh *store.ResourceRow) error) error {
	t := q.Target()
	return s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.settleTx(tx); err != nil {
			return err
		}
		rg, err := RequireRG(tx, t.Sub, t.RG, true)
		if err != nil {
			return err
		}
		fresh := newRow(rg, typ, t.Name)
		row, err := tx.GetResource(fresh.Key)
		if err != nil {
			return err
		}
		if row != nil {
			if err := s.checkRunning(tx, q, row.Key); err != nil {
				return err
			}
		}
		return fn(tx, rg, row, fresh)
	})
}

// deleteTop starts the deletion of a top-level resource: 204 when it does
// not exist, else 202 with the operation's URLs; check may refuse (nil:
// never).
func (s *Provider) deleteTop(ctx context.Context, q *api.Request, typ string, check func(*store.Txn, *store.ResourceRow) error) (*api.Response, error) {
	var resp *api.Response
	err := s.writeTop(ctx, q, typ, func(tx *store.Txn, rg *store.RGRow, row, _ *store.ResourceRow) error {
		if row == nil {
			if err := api.CheckPreconditions(q, api.ResourceID(rg.Sub, rg.Name, typ, q.Target().Name), false, ""); err != nil {
				return err
			}
			resp = &api.Response{Status: http.StatusNoContent}
			return nil
		}
		if err := api.CheckPreconditions(q, row.ID, true, row.Etag); err != nil {
			return err
		}
		if check != nil {
			if err := check(tx, row); err != nil {
				return err
			}
		}
		loc, doc, err := markDeleting(row)
		if err != nil {
			return err
		}
		row.Doc = doc
		if err := s.StoreRow(tx, row); err != nil {
			return err
		}
		o := s.newOp(opDelete, rg.Sub, loc, row.Key, row.ID, "", nil)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusAccepted, Header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}

// patchTags serves PATCH of a top-level resource: ARM's UpdateTags, which
// replaces the tags at once (no long-running operation).
func (s *Provider) patchTags(ctx context.Context, q *api.Request, typ, armType string, render renderFunc) (*api.Response, error) {
	tags, err := api.DecodeTags(q.Body)
	if err != nil {
		return nil, err
	}
	var resp *api.Response
	err = s.writeTop(ctx, q, typ, func(tx *store.Txn, rg *store.RGRow, row, _ *store.ResourceRow) error {
		if row == nil {
			if err := api.CheckPreconditions(q, api.ResourceID(rg.Sub, rg.Name, typ, q.Target().Name), false, ""); err != nil {
				return err
			}
			return api.ResourceNotFound(armType, q.Target().Name, q.Target().RG)
		}
		if err := api.CheckPreconditions(q, row.ID, true, row.Etag); err != nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(row.Doc, &m); err != nil {
			return fmt.Errorf("decoding stored %s: %w", row.ID, err)
		}
		etag := api.NewEtag()
		if tags == nil {
			delete(m, "tags")
		} else if m["tags"], err = json.Marshal(api.TagsOf(tags)); err != nil {
			return err
		}
		m["etag"], _ = json.Marshal(etag)
		doc, err := json.Marshal(m)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.StoreRow(tx, row); err != nil {
			return err
		}
		body, err := render(tx, row)
		if err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusOK, Body: body, Header: api.WithEtag(etag)}
		return nil
	})
	return resp, err
}
