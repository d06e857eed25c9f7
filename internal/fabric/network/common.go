package network

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// RequireRG returns the resource group of a request: 404 when it does not
// exist, 409 for a write while it is being deleted.
func RequireRG(tx *store.Txn, sub, rg string, write bool) (*store.RGRow, error) {
	row, err := tx.GetRG(sub, rg)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, api.ResourceGroupNotFound(rg)
	}
	if write && row.State == "Deleting" {
		return nil, api.ResourceGroupBeingDeleted(row.Name)
	}
	return row, nil
}

// newRow makes the row of a new top-level resource.
func newRow(rg *store.RGRow, typ, name string) *store.ResourceRow {
	id := api.ResourceID(rg.Sub, rg.Name, typ, name)
	return &store.ResourceRow{
		Key: api.Key(id), ID: id, RGKey: rg.Key, SubKey: api.Key(rg.Sub), Type: typ,
		SortKey: api.Key(rg.Name) + "/" + api.Key(name),
	}
}

// listTop lists top-level resources of a type, in a group (rg != "") or
// the whole subscription, one page at a time; the skip token is the sort
// key of the last item served.
func (s *Provider) listTop(ctx context.Context, q *api.Request, typ string, render renderFunc) (*api.Response, error) {
	sub := q.Segs[1]
	rgKey := ""
	page := api.ListPage{Value: []json.RawMessage{}}
	err := s.View(ctx, func(tx *store.Txn) error {
		if len(q.Segs) > 3 && len(q.Segs) >= 7 {
			rg, err := RequireRG(tx, sub, q.Segs[3], false)
			if err != nil {
				return err
			}
			rgKey = rg.Key
		}
		rows, err := tx.ListResources(api.Key(sub), rgKey, typ, q.Query.Get("$skiptoken"), s.pageSize+1)
		if err != nil {
			return err
		}
		if len(rows) > s.pageSize {
			rows = rows[:s.pageSize]
			page.NextLink = api.PageURL(q, rows[len(rows)-1].SortKey)
		}
		for _, row := range rows {
			b, err := render(tx, row)
			if err != nil {
				return err
			}
			page.Value = append(page.Value, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: page}, nil
}

// pageChildren cuts a page out of a list of children; the skip token is
// the offset of the next item.
func (s *Provider) pageChildren(q *api.Request, items []json.RawMessage) api.ListPage {
	off, _ := strconv.Atoi(q.Query.Get("$skiptoken"))
	if off < 0 || off > len(items) {
		off = len(items)
	}
	page := api.ListPage{Value: []json.RawMessage{}}
	end := min(off+s.pageSize, len(items))
	page.Value = append(page.Value, items[off:end]...)
	if end < len(items) {
		page.NextLink = api.PageURL(q, strconv.Itoa(end))
	}
	return page
}
