package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// caller is a deployment's view of the world through the pipeline: every
// read, write and poll is a sub-request as the deploying principal.
type caller struct {
	d      Dispatcher
	parent *api.Request
	now    func() time.Time
}

// parentOf copies what a sub-request needs of the deploying request (its
// base URL and the headers that name the caller), so a deployment that
// runs after the request was answered holds nothing of it.
func parentOf(q *api.Request) (*api.Request, error) {
	r, err := http.NewRequest(http.MethodGet, q.Base+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("copying the deploying request: %w", err)
	}
	for _, h := range []string{"Authorization", "x-ms-correlation-request-id", "x-ms-client-request-id"} {
		if v := q.HTTP.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	return &api.Request{HTTP: r, Base: q.Base, Caller: q.Caller}, nil
}

// retryable are the refusals ARM's deployment engine waits out and sends
// again: throttling, and another operation running on the resource.
func retryable(err error) (time.Duration, bool) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return 0, false
	}
	switch {
	case ae.Status == http.StatusTooManyRequests:
		if s, err := strconv.Atoi(ae.Header.Get("Retry-After")); err == nil && s > 0 {
			return time.Duration(s) * time.Second, true
		}
		return time.Second, true
	case ae.Code == "AnotherOperationInProgress":
		return 200 * time.Millisecond, true
	}
	return 0, false
}

// retryBudget is how long a sub-request is sent again while refused as
// retryable.
const retryBudget = 60 * time.Second

// send runs one sub-request, sending it again while it is refused as
// retryable.
func (c *caller) send(ctx context.Context, method, path string, body []byte) (*api.Response, error) {
	deadline := c.now().Add(retryBudget)
	for {
		resp, err := c.d.Dispatch(ctx, c.parent, method, path, body)
		wait, again := retryable(err)
		if !again || c.now().Add(wait).After(deadline) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Get reads a resource for reference() and what-if: found false on 404.
func (c *caller) Get(ctx context.Context, id, apiVersion string) (map[string]any, bool, error) {
	resp, err := c.send(ctx, http.MethodGet, escapeID(id)+"?api-version="+url.QueryEscape(apiVersion), nil)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m, err := bodyMap(resp)
	return m, err == nil, err
}

// escapeID escapes each segment of an ID for a path.
func escapeID(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// bodyMap is a response's body as a JSON object.
func bodyMap(resp *api.Response) (map[string]any, error) {
	if resp == nil || resp.Body == nil {
		return nil, nil
	}
	var b []byte
	switch v := resp.Body.(type) {
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encoding a sub-request's answer: %w", err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding a sub-request's answer: %w", err)
	}
	return m, nil
}

// write sends a write (a PUT or a DELETE) and waits for its operation; the
// status is the answer's, or the error's when the request was refused (0
// when there was no answer).
func (c *caller) write(ctx context.Context, method, path string, body []byte) (status int, err error) {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			status = ae.Status
		}
		return status, err
	}
	return resp.Status, c.wait(ctx, resp)
}

// wait follows a write's long-running operation to its end, through the
// pipeline: the Azure-AsyncOperation URL, else Location. It returns the
// operation's error when it failed.
func (c *caller) wait(ctx context.Context, resp *api.Response) error {
	link := resp.Header.Get("Azure-AsyncOperation")
	async := link != ""
	if !async {
		link = resp.Header.Get("Location")
	}
	if link == "" || (resp.Status != http.StatusCreated && resp.Status != http.StatusAccepted && !async) {
		return nil
	}
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("the operation URL %q: %w", link, err)
	}
	path := u.RequestURI()
	next := resp
	for {
		if d := pollDelay(next); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		r, err := c.send(ctx, http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		if !async {
			if r.Status == http.StatusAccepted {
				next = r
				continue
			}
			return nil
		}
		m, err := bodyMap(r)
		if err != nil {
			return err
		}
		switch status, _ := m["status"].(string); status {
		case "InProgress", "Running", "Accepted", "Updating", "Deleting", "":
			next = r
			continue
		case "Succeeded":
			return nil
		default:
			e := &armError{Code: "ResourceOperationFailure", Message: fmt.Sprintf("The resource operation completed with terminal provisioning state '%s'.", status)}
			if inner, ok := m["error"].(map[string]any); ok {
				code, _ := inner["code"].(string)
				msg, _ := inner["message"].(string)
				e = &armError{Code: code, Message: msg}
			}
			return e
		}
	}
}

// pollDelay is how long to wait before polling again: what the answer
// asks (retry-after-ms, Retry-After), at least 10 ms and at most 1 s, so a
// deployment sees its operations end promptly.
func pollDelay(resp *api.Response) time.Duration {
	d := 10 * time.Millisecond
	if ms, err := strconv.Atoi(resp.Header.Get("retry-after-ms")); err == nil {
		d = time.Duration(ms) * time.Millisecond
	} else if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		d = time.Duration(s) * time.Second
	}
	return min(max(d, 10*time.Millisecond), time.Second)
}

// putBody is what a template resource's PUT carries: the evaluated
// resource without the members that steer the template (apiVersion goes
// in the query).
func putBody(r *armtemplate.Resource) ([]byte, error) {
	body := map[string]any{}
	for k, v := range r.Body {
		switch strings.ToLower(k) {
		case "apiversion", "scope", "condition", "copy", "dependson", "resources", "comments":
			continue
		}
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", r.ID, err)
	}
	return b, nil
}
