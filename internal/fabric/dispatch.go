package fabric

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Dispatch runs an internal request through the whole pipeline, as if the
// caller of parent had sent it: the body limit, authentication with
// parent's bearer token (so the sub-request is checked as the same
// principal), the api-version, injected faults and throttling,
// authorization (role assignments, the join actions of what it references,
// locks, deny policies), then the provider of its namespace, with the
// long-running operation a write starts. path is the request's path and
// query (api-version included); the answer is what a client would get,
// an *api.Error for an ARM error.
//
// It is the seam of providers that act for their caller on other
// providers' resources: a Microsoft.Resources/deployments provider sends
// each resource of a template through it, so a deployment is validated,
// authorized and run exactly as the direct calls would be. Such a provider
// declares the interface it needs (Dispatch's signature) in its own
// package; *Server satisfies it.
func (s *Server) Dispatch(ctx context.Context, parent *api.Request, method, path string, body []byte) (*api.Response, error) {
	r, err := http.NewRequestWithContext(ctx, method, parent.Base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("dispatching %s %s: %w", method, path, err)
	}
	for _, h := range []string{"Authorization", "x-ms-correlation-request-id", "x-ms-client-request-id"} {
		if v := parent.HTTP.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	if len(body) > 0 {
		r.Header.Set("Content-Type", "application/json")
	}
	out := http.Header{}
	resp, err := s.serveARM(r, out)
	if err != nil {
		return nil, err
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	for k, v := range out {
		if _, set := resp.Header[k]; !set {
			resp.Header[k] = v
		}
	}
	return resp, nil
}
