package network

// The answers of long-running operations: the Azure-AsyncOperation and
// Location headers of a write, and the endpoints a poller reads.

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// asyncURL is the Azure-AsyncOperation URL of an operation.
func asyncURL(q *api.Request, o *store.Operation) string {
	return q.Base + "/subscriptions/" + url.PathEscape(o.Sub) + "/providers/Microsoft.Network/locations/" +
		url.PathEscape(o.Location) + "/operations/" + o.ID + "?api-version=" + url.QueryEscape(q.APIVersion)
}

// locationURL is the Location URL of an operation (operationResults).
func locationURL(q *api.Request, o *store.Operation) string {
	if o.Kind == opRGDelete {
		return q.Base + "/subscriptions/" + url.PathEscape(o.Sub) + "/operationresults/" + o.ID +
			"?api-version=" + url.QueryEscape(q.APIVersion)
	}
	return q.Base + "/subscriptions/" + url.PathEscape(o.Sub) + "/providers/Microsoft.Network/locations/" +
		url.PathEscape(o.Location) + "/operationResults/" + o.ID + "?api-version=" + url.QueryEscape(q.APIVersion)
}

// setRetryAfter tells a poller when to come back: Retry-After in whole
// seconds as Azure sends it, and retry-after-ms (which azcore prefers) with
// the exact remaining time, so short operations are not polled 1 s late.
func setRetryAfter(h http.Header, remaining time.Duration) {
	if remaining <= 0 {
		return
	}
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(remaining.Seconds()))))
	h.Set("retry-after-ms", strconv.FormatInt(int64(math.Ceil(float64(remaining)/float64(time.Millisecond))), 10))
}

// lroHeaders are the headers of a long-running write's first answer.
func (s *Provider) lroHeaders(q *api.Request, o *store.Operation, withLocation bool) http.Header {
	h := http.Header{}
	h.Set("Azure-AsyncOperation", asyncURL(q, o))
	if withLocation {
		h.Set("Location", locationURL(q, o))
	}
	setRetryAfter(h, time.Duration(o.EndsAt-s.now().UnixNano()))
	return h
}

// polledOp is the operation a poll of endpoint (operations,
// operationResults) asks for, when the caller may see it.
func (s *Provider) polledOp(ctx context.Context, q *api.Request, endpoint string) (*store.Operation, error) {
	o, err := s.loadOp(ctx, q.Segs[7])
	if err != nil {
		return nil, err
	}
	if err := s.polls.AuthorizePoll(q, o, endpoint); err != nil {
		return nil, err
	}
	return o, nil
}

// getOperation serves the Azure-AsyncOperation status endpoint.
func (s *Provider) getOperation(ctx context.Context, q *api.Request) (*api.Response, error) {
	o, err := s.polledOp(ctx, q, "operations")
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if o.Status == statusInProgress {
		setRetryAfter(h, time.Duration(o.EndsAt-s.now().UnixNano()))
	}
	return &api.Response{Status: http.StatusOK, Body: opBody(o), Header: h}, nil
}

// getOperationResult serves the Location URL of a DELETE: 202 while it
// runs, 204 when it succeeded, the operation's error when it failed.
func (s *Provider) getOperationResult(ctx context.Context, q *api.Request) (*api.Response, error) {
	o, err := s.polledOp(ctx, q, "operationResults")
	if err != nil {
		return nil, err
	}
	return s.operationResult(q, o)
}

func (s *Provider) GetRGOperationResult(ctx context.Context, q *api.Request) (*api.Response, error) {
	o, err := s.loadOp(ctx, q.Segs[3])
	if err != nil {
		return nil, err
	}
	return s.operationResult(q, o)
}

func (s *Provider) operationResult(q *api.Request, o *store.Operation) (*api.Response, error) {
	if o.Kind == opAction && o.Status == statusSucceeded {
		return s.actionResult(q.HTTP.Context(), o)
	}
	switch o.Status {
	case statusInProgress:
		h := http.Header{}
		h.Set("Location", locationURL(q, o))
		setRetryAfter(h, time.Duration(o.EndsAt-s.now().UnixNano()))
		return &api.Response{Status: http.StatusAccepted, Header: h}, nil
	case statusSucceeded:
		if o.Kind == opRGDelete {
			return &api.Response{Status: http.StatusOK}, nil
		}
		return &api.Response{Status: http.StatusNoContent}, nil
	}
	return nil, api.BadRequest(o.ErrorCode, "%s", o.ErrorMessage)
}

func (s *Provider) loadOp(ctx context.Context, id string) (*store.Operation, error) {
	var o *store.Operation
	err := s.View(ctx, func(tx *store.Txn) error {
		var err error
		o, err = tx.GetOp(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, api.NewError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", id)
	}
	return o, nil
}

func opBody(o *store.Operation) map[string]any {
	b := map[string]any{
		"id":        "/subscriptions/" + o.Sub + "/providers/Microsoft.Network/locations/" + o.Location + "/operations/" + o.ID,
		"name":      o.ID,
		"status":    o.Status,
		"startTime": time.Unix(0, o.StartedAt).UTC().Format(time.RFC3339Nano),
	}
	if o.Status != statusInProgress {
		b["endTime"] = time.Unix(0, o.EndsAt).UTC().Format(time.RFC3339Nano)
	}
	if o.Status == statusFailed {
		b["error"] = map[string]any{"code": o.ErrorCode, "message": o.ErrorMessage}
	}
	return b
}
