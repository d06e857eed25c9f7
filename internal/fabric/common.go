package fabric

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
)

// requireRG returns the resource group of a request: 404 when it does not
// exist, 409 for a write while it is being deleted.
func requireRG(tx *txn, sub, rg string, write bool) (*rgRow, error) {
	row, err := tx.getRG(sub, rg)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, errResourceGroupNotFound(rg)
	}
	if write && row.State == "Deleting" {
		return nil, errResourceGroupBeingDeleted(row.Name)
	}
	return row, nil
}

// newRow makes the row of a new top-level resource.
func newRow(rg *rgRow, typ, name string) *resourceRow {
	id := resourceID(rg.Sub, rg.Name, typ, name)
	return &resourceRow{
		Key: key(id), ID: id, RGKey: rg.Key, SubKey: key(rg.Sub), Type: typ,
		SortKey: key(rg.Name) + "/" + key(name),
	}
}

// listTop lists top-level resources of a type, in a group (rg != "") or
// the whole subscription, one page at a time; the skip token is the sort
// key of the last item served.
func (s *Server) listTop(ctx context.Context, q *request, typ string, render renderFunc) (*response, error) {
	sub := q.segs[1]
	rgKey := ""
	page := listPage{Value: []json.RawMessage{}}
	err := s.view(ctx, func(tx *txn) error {
		if len(q.segs) > 3 && len(q.segs) >= 7 {
			rg, err := requireRG(tx, sub, q.segs[3], false)
			if err != nil {
				return err
			}
			rgKey = rg.Key
		}
		rows, err := tx.listResources(key(sub), rgKey, typ, q.query.Get("$skiptoken"), s.pageSize+1)
		if err != nil {
			return err
		}
		if len(rows) > s.pageSize {
			rows = rows[:s.pageSize]
			page.NextLink = pageURL(q, rows[len(rows)-1].SortKey)
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
	return &response{status: http.StatusOK, body: page}, nil
}

// pageChildren cuts a page out of a list of children; the skip token is
// the offset of the next item.
func (s *Server) pageChildren(q *request, items []json.RawMessage) listPage {
	off, _ := strconv.Atoi(q.query.Get("$skiptoken"))
	if off < 0 || off > len(items) {
		off = len(items)
	}
	page := listPage{Value: []json.RawMessage{}}
	end := min(off+s.pageSize, len(items))
	page.Value = append(page.Value, items[off:end]...)
	if end < len(items) {
		page.NextLink = pageURL(q, strconv.Itoa(end))
	}
	return page
}
