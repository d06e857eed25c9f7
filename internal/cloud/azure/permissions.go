package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/routekeeper/routekeeper/internal/azrbac"
)

// permissionsAPIVersion is the api-version of Microsoft.Authorization's
// permissions API the client asks for.
const permissionsAPIVersion = "2022-04-01"

// Permissions asks ARM what the caller may do at scope (a subscription,
// resource group or resource ID, a subnet included): GET
// {scope}/providers/Microsoft.Authorization/permissions. ARM answers one
// permission block per role assignment that applies there (at the scope
// or above); azrbac.Set.Missing on the result names the actions the
// caller lacks. The request goes through the same pipeline (credential,
// retries, transport) as every other call of the client.
//
// The armauthorization module's PermissionsClient has list operations for
// a resource group and for a resource given as namespace, parent path,
// type and name, none for a subscription or a plain ID; one request on
// azcore's pipeline serves every scope.
func (c *Client) Permissions(ctx context.Context, scope string) (azrbac.Set, error) {
	scope = "/" + strings.Trim(strings.TrimSpace(scope), "/")
	if !strings.HasPrefix(strings.ToLower(scope), "/subscriptions/") {
		return nil, fmt.Errorf("permissions at %q: the scope must be a subscription, resource group or resource ID", scope)
	}
	pl, endpoint, err := c.armPipeline()
	if err != nil {
		return nil, err
	}
	op := "reading the permissions at " + scope
	next := endpoint + escapePath(scope) + "/providers/Microsoft.Authorization/permissions?api-version=" + permissionsAPIVersion
	var out azrbac.Set
	for pages := 0; next != ""; pages++ {
		if pages == 100 {
			return nil, fmt.Errorf("%s: more than 100 pages", op)
		}
		req, err := runtime.NewRequest(ctx, http.MethodGet, next)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		resp, err := pl.Do(req)
		if err != nil {
			return nil, classify(op, scope, err)
		}
		if !runtime.HasStatusCode(resp, http.StatusOK) {
			return nil, classify(op, scope, runtime.NewResponseError(resp))
		}
		var page struct {
			Value    []azrbac.Permission `json:"value"`
			NextLink string              `json:"nextLink"`
		}
		if err := runtime.UnmarshalAsJSON(resp, &page); err != nil {
			return nil, fmt.Errorf("%s: decoding the answer: %w", op, err)
		}
		out = append(out, page.Value...)
		next = page.NextLink
	}
	return out, nil
}

// armPipeline is the SDK's pipeline for plain ARM requests, made on first
// use with the client's options.
func (c *Client) armPipeline() (runtime.Pipeline, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arm == nil {
		ac, err := arm.NewClient("routekeeper", "v1.0.0", c.cred, &c.opts)
		if err != nil {
			return runtime.Pipeline{}, "", fmt.Errorf("making the ARM client: %w", err)
		}
		c.arm = ac
	}
	return c.arm.Pipeline(), strings.TrimRight(c.arm.Endpoint(), "/"), nil
}

// escapePath escapes each segment of an ARM path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
