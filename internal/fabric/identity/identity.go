package identity

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Enough of Azure's identity and metadata surface for the Azure CLI to log
// in offline: an ADFS-style authority under the fabric (MSAL validates no
// ADFS authority against Microsoft's instance discovery), a token endpoint
// that issues an unsigned JWT to any client, and the cloud metadata
// document `az cloud register` reads. Nothing is checked: any client and
// secret get a token, which names the client as its principal
// (principal.go); what the principal may do is the authorization state's
// business (authorize.go).

// ADFSPath is the path of the fabric's login authority.
const ADFSPath = "/adfs"

// Audiences of the tokens az asks for.
const (
	managementAudience = "https://management.core.windows.net/"
	graphAudience      = "https://graph.windows.net/"
)

// Serve answers the identity and metadata paths, which take no
// bearer token; it reports false for any other path.
func (s *Server) Serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimRight(strings.ToLower(r.URL.Path), "/")
	base := api.BaseURL(r)
	authority := base + ADFSPath
	var body any
	switch p {
	case "/metadata/endpoints":
		return s.serveMetadata(w, r, base, authority)
	case ADFSPath + "/.well-known/openid-configuration":
		body = map[string]any{
			"issuer":                                authority,
			"authorization_endpoint":                authority + "/oauth2/authorize",
			"token_endpoint":                        authority + "/oauth2/token",
			"device_authorization_endpoint":         authority + "/oauth2/devicecode",
			"end_session_endpoint":                  authority + "/oauth2/logout",
			"jwks_uri":                              authority + "/discovery/keys",
			"response_types_supported":              []string{"code", "id_token", "code id_token", "token"},
			"subject_types_supported":               []string{"pairwise"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid", "profile", "offline_access"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials", "password"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
		}
	case ADFSPath + "/discovery/keys":
		body = map[string]any{"keys": []any{}}
	case ADFSPath + "/oauth2/token":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return true
		}
		body = s.issueToken(r, authority)
	default:
		return s.serveTokenV2(w, r, p, authority)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(body)
	return true
}

// issueToken answers any token request with an unsigned JWT for the
// requested resource or scope, naming the client: appid is the client ID,
// oid and sub the object ID of the principal declared for it (else the
// client ID).
func (s *Server) issueToken(r *http.Request, authority string) map[string]any {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	_ = r.ParseForm()
	client := r.PostForm.Get("client_id")
	if client == "" {
		client, _, _ = r.BasicAuth()
	}
	if client == "" {
		client = "routekeeper-fabric-client"
	}
	aud := r.PostForm.Get("resource")
	if sc := r.PostForm.Get("scope"); aud == "" && sc != "" {
		first, _, _ := strings.Cut(sc, " ")
		aud = strings.TrimSuffix(first, "/.default")
	}
	if aud == "" {
		aud = managementAudience
	}
	now := s.Now()
	exp := now.Add(24 * time.Hour)
	// The token names the client as its principal (principal.go).
	tok := api.UnsignedJWT(api.TokenClaims(s.Principals.PrincipalObjectID(r.Context(), client), client, aud, authority, now, exp))
	out := map[string]any{
		"token_type": "Bearer", "access_token": tok, "expires_in": int64(exp.Sub(now).Seconds()),
		"ext_expires_in": int64(exp.Sub(now).Seconds()), "expires_on": exp.Unix(), "resource": aud,
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		out["id_token"] = tok
		out["refresh_token"] = "routekeeper-fabric-refresh"
		out["client_info"] = base64.RawURLEncoding.EncodeToString([]byte(`{"uid":"` + client + `","utid":"` + api.DefaultTenant + `"}`))
	}
	if sc := r.PostForm.Get("scope"); sc != "" {
		out["scope"] = sc
	}
	return out
}
