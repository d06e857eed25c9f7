package azure

import (
	"context"
	"encoding/json"
	"fmt"
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
	scope, err := armScope("permissions", scope)
	if err != nil {
		return nil, err
	}
	var out azrbac.Set
	err = c.listPages(ctx, "reading the permissions at "+scope, scope,
		escapePath(scope)+"/providers/Microsoft.Authorization/permissions?api-version="+permissionsAPIVersion, func(raw json.RawMessage) error {
			var p azrbac.Permission
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	if err != nil {
		return nil, err
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
