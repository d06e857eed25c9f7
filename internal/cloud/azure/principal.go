package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/observe"
)

// Principal reads who the client authenticates as from the claims of its
// ARM token (Microsoft Entra ID puts the object ID in oid, the client in
// appid or azp, the tenant in tid): doctor names it in the role
// assignment that fixes a missing permission. The token is the one the
// client uses anyway (the credential caches it).
func (c *Client) Principal(ctx context.Context) (observe.Principal, error) {
	aud := c.opts.Cloud.Services[azcloud.ResourceManager].Audience
	if aud == "" {
		aud = azcloud.AzurePublic.Services[azcloud.ResourceManager].Audience
	}
	tok, err := c.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{strings.TrimSuffix(aud, "/") + "/.default"}})
	if err != nil {
		return observe.Principal{}, fmt.Errorf("getting a token to read who routekeeper is: %w", err)
	}
	parts := strings.Split(tok.Token, ".")
	if len(parts) < 2 {
		return observe.Principal{}, fmt.Errorf("the ARM token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return observe.Principal{}, fmt.Errorf("decoding the ARM token's claims: %w", err)
	}
	var claims struct {
		OID   string `json:"oid"`
		AppID string `json:"appid"`
		AZP   string `json:"azp"`
		TID   string `json:"tid"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return observe.Principal{}, fmt.Errorf("decoding the ARM token's claims: %w", err)
	}
	p := observe.Principal{ObjectID: claims.OID, ClientID: claims.AppID, TenantID: claims.TID}
	if p.ClientID == "" {
		p.ClientID = claims.AZP
	}
	return p, nil
}
