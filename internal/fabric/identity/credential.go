package identity

import (
	"context"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Credential is an azcore.TokenCredential for the fabric: an unsigned JWT
// naming a client, as the fabric's token endpoint issues. The zero value is
// the fabric's administrator (AdminClientID); with ClientID set the token
// names that client and the fabric maps it to the object ID of the
// principal the topology declares for it.
type Credential struct {
	// ClientID is the client the token names; "" is AdminClientID.
	ClientID string
}

// GetToken returns a token for the client.
func (c Credential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	now := time.Now()
	exp := now.Add(24 * time.Hour)
	aud := api.ARMAudience
	if len(opts.Scopes) > 0 {
		aud = strings.TrimSuffix(opts.Scopes[0], "/.default")
	}
	client, oid := c.ClientID, ""
	if client == "" {
		client, oid = api.AdminClientID, api.AdminClientID
	}
	return azcore.AccessToken{Token: api.UnsignedJWT(api.TokenClaims(oid, client, aud, "https://login.fabric.invalid/"+api.DefaultTenant+"/", now, exp)), ExpiresOn: exp}, nil
}
