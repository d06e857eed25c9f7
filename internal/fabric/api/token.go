package api

// Bearer tokens: the fabric issues unsigned JWTs and reads the caller from
// their claims without checking them.

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// JWTClaims decodes the payload of a JWT (signed or not, unchecked).
func JWTClaims(tok string) (map[string]any, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, false
	}
	var claims map[string]any
	if json.Unmarshal(b, &claims) != nil {
		return nil, false
	}
	return claims, true
}

// TokenClaims are the claims of a token for client and audience; the
// token endpoints (issueToken) and Credential share them.
func TokenClaims(objectID, client, aud, issuer string, now, exp time.Time) map[string]any {
	c := map[string]any{
		"aud": aud, "iss": issuer, "iat": now.Unix(), "nbf": now.Unix(), "exp": exp.Unix(),
		"appid": client, "tid": DefaultTenant, "idtyp": "app",
		"upn": client, "unique_name": client, "ver": "1.0",
	}
	if objectID != "" {
		c["oid"], c["sub"] = objectID, objectID
	}
	return c
}

// UnsignedJWT is a JWT with "alg": "none": the fabric checks no token.
func UnsignedJWT(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// ARMAudience is the audience the SDK asks tokens for.
const ARMAudience = "https://management.azure.com"
