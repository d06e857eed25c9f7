package deployments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Results of what-if and of a deployment's DELETE are polled at ARM's
// subscription-level Location, /subscriptions/{sub}/operationresults/{token}:
// the token is base64url JSON naming what it is, so the server can tell
// these from the network provider's operation results (OwnsResult).

type resultToken struct {
	Kind string `json:"deploymentsJob"`
	ID   string `json:"id"`
}

const (
	kindWhatIf = "WhatIf"
	kindDelete = "Delete"
)

func (t resultToken) encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (resultToken, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return resultToken{}, false
	}
	var t resultToken
	if json.Unmarshal(b, &t) != nil || (t.Kind != kindWhatIf && t.Kind != kindDelete) || t.ID == "" {
		return resultToken{}, false
	}
	return t, true
}

func resultURL(q *api.Request, sub string, t resultToken) string {
	return q.Base + "/subscriptions/" + url.PathEscape(sub) + "/operationresults/" + t.encode() + "?api-version=" + url.QueryEscape(q.APIVersion)
}

// OwnsResult reports whether /subscriptions/{sub}/operationresults/{token}
// is one of this provider's.
func (p *Provider) OwnsResult(token string) bool {
	_, ok := decodeToken(token)
	return ok
}

// whatIfRetention is how long a what-if result can be read.
const whatIfRetention = time.Hour

// GetResult serves the Location of a what-if (202 until it is ready, then
// 200 with the WhatIfOperationResult) or of a deployment's DELETE (204).
func (p *Provider) GetResult(ctx context.Context, q *api.Request) (*api.Response, error) {
	t, ok := decodeToken(q.Segs[3])
	if !ok {
		return nil, api.NewError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", q.Segs[3])
	}
	if t.Kind == kindDelete {
		return &api.Response{Status: http.StatusNoContent}, nil
	}
	if err := p.tables.ensure(ctx, p.c.Store); err != nil {
		return nil, err
	}
	var at int64
	var doc []byte
	err := p.c.Store.Read(ctx, func(tx *store.Txn) error {
		var err error
		at, doc, err = getWhatIf(tx, t.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, api.NewError(http.StatusNotFound, "OperationNotFound", "The what-if operation '%s' could not be found (results are kept for an hour).", t.ID)
	}
	if remaining := time.Duration(at - p.c.Now().UnixNano()); remaining > 0 {
		h := http.Header{}
		h.Set("Location", q.Base+q.HTTP.URL.RequestURI())
		h.Set("Retry-After", "1")
		h.Set("retry-after-ms", strconv.FormatInt(int64(remaining/time.Millisecond)+1, 10))
		return &api.Response{Status: http.StatusAccepted, Header: h}, nil
	}
	return &api.Response{Status: http.StatusOK, Body: json.RawMessage(doc)}, nil
}
