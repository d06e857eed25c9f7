package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// armError is a short, one-line error for an ARM error answer; azcore's own
// message is a multi-line dump meant for humans debugging the SDK.
type armError struct {
	op      string // e.g. "PUT route table /subscriptions/..."
	status  int
	code    string
	message string
	kind    error // cloud sentinel, or nil
}

func (e *armError) Error() string {
	msg := e.message
	if msg == "" {
		msg = http.StatusText(e.status)
	}
	return fmt.Sprintf("%s: %d %s: %s", e.op, e.status, e.code, msg)
}

func (e *armError) Unwrap() error { return e.kind }

// classify turns an SDK error into routekeeper's cloud errors, keeping the
// ARM status, code and message.
func classify(op, resource string, err error) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := re.ErrorCode
	var body armErrorBody
	if re.RawResponse != nil {
		body = errorBody(re.RawResponse)
		if code == "" {
			code = body.Error.Code
		}
	}
	message, status := body.Error.Message, body.Status
	// A long-running operation that ended Failed or Canceled comes back
	// from the poller as a ResponseError of the (successful) status poll.
	if re.StatusCode < 400 {
		if status == "" {
			status = "Failed"
		}
		of := &armerr.OperationFailedError{Resource: resource, Status: status, Code: code, Message: message}
		if d := denied(0, code, &body); d != nil {
			d.Err = of
			return d
		}
		if limit, ok := armerr.RouteLimitOf(code, message); ok {
			return &armerr.RouteLimitError{Limit: limit, Code: code, Message: message, Err: of}
		}
		return of
	}
	ae := &armError{op: op, status: re.StatusCode, code: code, message: message}
	if d := denied(re.StatusCode, code, &body); d != nil {
		d.Err = ae
		return d
	}
	if re.StatusCode == http.StatusBadRequest {
		// Too many routes is RouteTableFull with Azure's number, never a
		// write that merely failed.
		if limit, ok := armerr.RouteLimitOf(code, message); ok {
			return &armerr.RouteLimitError{Limit: limit, Code: code, Message: message, Err: ae}
		}
	}
	switch {
	case re.StatusCode == http.StatusNotFound:
		ae.kind = armerr.ErrNotFound
	case re.StatusCode == http.StatusPreconditionFailed:
		ae.kind = armerr.ErrPreconditionFailed
	case re.StatusCode == http.StatusConflict && strings.EqualFold(code, "AnotherOperationInProgress"):
		ae.kind = armerr.ErrConflict
	case re.StatusCode == http.StatusTooManyRequests:
		var after time.Duration
		if re.RawResponse != nil {
			after = retryAfter(re.RawResponse.Header)
		}
		return &armerr.ThrottledError{RetryAfter: after, Err: ae}
	}
	return ae
}

// armErrorBody is ARM's error answer, and the status body of a failed
// long-running operation, which has the same "error" member.
type armErrorBody struct {
	Status string `json:"status"`
	Error  struct {
		Code           string              `json:"code"`
		Message        string              `json:"message"`
		Target         string              `json:"target"`
		AdditionalInfo []armAdditionalInfo `json:"additionalInfo"`
	} `json:"error"`
}

// armAdditionalInfo is one entry of error.additionalInfo; a deny policy
// puts its assignment and definition there (type PolicyViolation).
type armAdditionalInfo struct {
	Type string `json:"type"`
	Info struct {
		PolicyAssignmentID string `json:"policyAssignmentId"`
		PolicyDefinitionID string `json:"policyDefinitionId"`
	} `json:"info"`
}

// errorBody reads an error answer; a body that is not JSON becomes the
// message.
func errorBody(resp *http.Response) armErrorBody {
	var body armErrorBody
	if resp.Body == nil {
		return body
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || len(b) == 0 {
		return body
	}
	if json.Unmarshal(b, &body) != nil {
		body = armErrorBody{}
		body.Error.Message = strings.TrimSpace(string(b))
	}
	return body
}

// retryAfter reads the delay ARM asked for: retry-after-ms,
// x-ms-retry-after-ms or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	for _, k := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if v := h.Get(k); v != "" {
			if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t), 0)
		}
	}
	return 0
}
