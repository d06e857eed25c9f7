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

	"github.com/routekeeper/routekeeper/internal/cloud"
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
	code, message, status := re.ErrorCode, "", ""
	if re.RawResponse != nil {
		var c string
		c, message, status = errorBody(re.RawResponse)
		if code == "" {
			code = c
		}
	}
	// A long-running operation that ended Failed or Canceled comes back
	// from the poller as a ResponseError of the (successful) status poll.
	if re.StatusCode < 400 {
		if status == "" {
			status = "Failed"
		}
		return &cloud.OperationFailedError{Resource: resource, Status: status, Code: code, Message: message}
	}
	ae := &armError{op: op, status: re.StatusCode, code: code, message: message}
	switch {
	case re.StatusCode == http.StatusNotFound:
		ae.kind = cloud.ErrNotFound
	case re.StatusCode == http.StatusPreconditionFailed:
		ae.kind = cloud.ErrPreconditionFailed
	case re.StatusCode == http.StatusConflict && strings.EqualFold(code, "AnotherOperationInProgress"):
		ae.kind = cloud.ErrConflict
	case re.StatusCode == http.StatusTooManyRequests:
		var after time.Duration
		if re.RawResponse != nil {
			after = retryAfter(re.RawResponse.Header)
		}
		return &cloud.ThrottledError{RetryAfter: after, Err: ae}
	}
	return ae
}

// errorBody reads {"error":{"code":..,"message":..}}, and the status of a
// failed operation's status body, which has the same "error" member.
func errorBody(resp *http.Response) (code, message, status string) {
	if resp.Body == nil {
		return "", "", ""
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || len(b) == 0 {
		return "", "", ""
	}
	var body struct {
		Status string `json:"status"`
		Error  struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil {
		return "", strings.TrimSpace(string(b)), ""
	}
	return body.Error.Code, body.Error.Message, body.Status
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
