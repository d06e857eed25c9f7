package fabric

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// target is the resource a request names: segs are
// subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/{type}/{name}[/{child}/{childName}].
type target struct {
	sub, rg, name, childName string
}

func (q *request) target() target {
	t := target{sub: q.segs[1], rg: q.segs[3]}
	if len(q.segs) > 7 {
		t.name = q.segs[7]
	}
	if len(q.segs) > 9 {
		t.childName = q.segs[9]
	}
	return t
}

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

// listPage is one page of a list: {"value": [...], "nextLink": ...}.
type listPage struct {
	Value    []json.RawMessage `json:"value"`
	NextLink *string           `json:"nextLink,omitempty"`
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

// withEtag adds the ETag header of a resource to a response.
func withEtag(etag string) http.Header {
	h := http.Header{}
	if etag != "" {
		h.Set("ETag", etag)
	}
	return h
}

func encode(v any) ([]byte, error) { return json.Marshal(v) }

// locationOf normalises a requested location: 400 LocationRequired when
// it is missing, 400 InvalidResourceLocation when it differs from the
// location of the existing resource.
func locationOf(loc *string, existing, name, rg string) (string, error) {
	l := normalizeLocation(str(loc))
	if l == "" {
		if existing != "" {
			return existing, nil
		}
		return "", badRequest("LocationRequired", "The location property is required for this definition.")
	}
	if existing != "" && l != existing {
		return "", newError(http.StatusConflict, "InvalidResourceLocation",
			"The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
			name, existing, rg, l)
	}
	return l, nil
}

func tagsOf(in map[string]*string) map[string]*string {
	if in == nil {
		return nil
	}
	out := make(map[string]*string, len(in))
	for k, v := range in {
		out[k] = ptr(str(v))
	}
	return out
}

// Azure's tag rules: at most 50 tags; names up to 512 characters without
// < > % & \ ? / or control characters; values up to 256 characters.
const (
	maxTags           = 50
	maxTagNameLength  = 512
	maxTagValueLength = 256
)

// checkTags applies Azure's tag rules to the tags of a write.
func checkTags(tags map[string]*string) error {
	if len(tags) > maxTags {
		return badRequest("InvalidTagCount", "A resource can have at most %d tags; the request has %d.", maxTags, len(tags))
	}
	var bad []string
	for k, v := range tags {
		switch {
		case k == "" || len(k) > maxTagNameLength:
			return badRequest("InvalidTagNameLength", "Tag name '%s' must be 1 to %d characters long.", k, maxTagNameLength)
		case len(str(v)) > maxTagValueLength:
			return badRequest("InvalidTagValueLength", "The value of tag '%s' is %d characters long; at most %d are allowed.", k, len(str(v)), maxTagValueLength)
		case strings.ContainsAny(k, "<>%&\\?/") || strings.ContainsFunc(k, unicode.IsControl):
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badRequest("InvalidTagNameCharacters", "The tag names '%s' have reserved characters '<,>,%%,&,\\,?,/' or control characters.", strings.Join(bad, ","))
	}
	return nil
}

// sameContent reports whether a stored document and the one a PUT would
// store differ only in etags and provisioning states: such a PUT is a
// no-op, and Azure answers it 200 Succeeded with the resource as it is.
func sameContent(stored []byte, next any) bool {
	b, err := json.Marshal(next)
	if err != nil {
		return false
	}
	var x, y any
	if json.Unmarshal(stored, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(stripVolatile(x), stripVolatile(y))
}

func stripVolatile(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		delete(d, "etag")
		delete(d, "provisioningState")
		for _, v := range d {
			stripVolatile(v)
		}
	case []any:
		for _, v := range d {
			stripVolatile(v)
		}
	}
	return doc
}

// unchanged is the answer to a no-op PUT: 200 with the resource as stored
// (provisioningState Succeeded) and its etag, and no operation to poll.
func unchanged(body any, etag string) *response {
	return &response{status: http.StatusOK, body: body, header: withEtag(etag)}
}
