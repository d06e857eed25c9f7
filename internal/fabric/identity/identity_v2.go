package identity

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// The cloud metadata document and the Microsoft identity platform (v2)
// token endpoint, as hashicorp/go-azure-sdk reads them: the azurerm
// provider with `metadata_host` fetches
// https://{metadata_host}/metadata/endpoints?api-version=2022-09-01, builds
// its environment from it (name, resourceManager, microsoftGraphResourceId
// and authentication are required) and asks
// {authentication.loginEndpoint}/{tenant}/oauth2/v2.0/token for
// client-credentials tokens, one per audience (Microsoft Graph first, to
// read the token's claims; then Resource Manager).

// metadataAPIVersions are the api-versions of /metadata/endpoints the
// fabric answers, by the shape each has: 2015-01-01 (and 2018-01-01)
// is the old flat document az reads, 2019-05-01 a list of clouds, and
// 2022-09-01 one cloud in the newer shape go-azure-sdk reads.
var metadataAPIVersions = []string{"1.0", "2015-01-01", "2018-01-01", "2019-05-01", "2022-09-01"}

// fabricCloudName is the cloud's name in the metadata document.
const fabricCloudName = "RoutekeeperFabric"

// graphResource is Microsoft Graph's resource ID; the fabric serves no Graph
// API, but go-azure-sdk needs the identifier to ask for a token.
const graphResource = "https://graph.microsoft.com/"

// serveMetadata answers GET /metadata/endpoints in the shape of its
// api-version; an api-version it does not know gets 400 and a warning.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request, base, authority string) bool {
	v := r.URL.Query().Get("api-version")
	var body any
	switch v {
	case "", "1.0", "2015-01-01", "2018-01-01":
		// The flat document `az cloud register` reads.
		body = map[string]any{
			"galleryEndpoint": "",
			"graphEndpoint":   graphAudience,
			"portalEndpoint":  base + "/",
			"authentication": map[string]any{
				"loginEndpoint": authority,
				"audiences":     []string{managementAudience, api.ARMAudience + "/"},
			},
		}
	case "2019-05-01":
		body = []any{cloudDocument(base, authority)}
	case "2022-09-01":
		body = cloudDocument(base, authority)
	default:
		s.Log.Warn("fabric: unknown request: api-version of the cloud metadata document",
			"method", r.Method, "path", r.URL.Path, "apiVersion", v, "known", strings.Join(metadataAPIVersions, ","))
		writeIdentityJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code":    "InvalidApiVersionParameter",
			"message": "The api-version '" + v + "' is invalid. The supported versions are '" + strings.Join(metadataAPIVersions, ",") + "'.",
		}})
		return true
	}
	writeIdentityJSON(w, http.StatusOK, body)
	return true
}

// cloudDocument is one cloud of the newer metadata shape (2019-05-01 and
// later). The fabric serves Resource Manager only, but the azurerm provider
// refuses to start without a storage and a Key Vault suffix (it builds their
// authorizers up front): those two are advertised under the reserved .invalid
// domain, so a request a client might build for them fails at its DNS
// lookup rather than reaching anything. The identity provider is "AAD" with tenant
// "common", as for Azure's own clouds, although the login endpoint is the
// fabric's ADFS-style authority: go-azure-sdk takes any other pair for Azure
// Stack, which the azurerm provider refuses to configure.
func cloudDocument(base, authority string) map[string]any {
	return map[string]any{
		"name":            fabricCloudName,
		"portal":          base + "/",
		"resourceManager": base + "/",
		"authentication": map[string]any{
			"loginEndpoint":    authority,
			"audiences":        []string{managementAudience, api.ARMAudience + "/"},
			"tenant":           "common",
			"identityProvider": "AAD",
		},
		"graph":                    graphAudience,
		"graphAudience":            graphAudience,
		"microsoftGraphResourceId": graphResource,
		"suffixes": map[string]any{
			"storage":     "storage.fabric.invalid",
			"keyVaultDns": "vault.fabric.invalid",
		},
	}
}

// serveTokenV2 answers POST {authority}/{tenant}/oauth2/v2.0/token, the
// endpoint go-azure-sdk's client-secret (and client-assertion) login uses.
// It reports false for any other path. Like Microsoft Entra ID it wants a
// client_credentials grant with a client_id, a secret or an assertion,
// and a ".default" scope, and answers AADSTS errors otherwise; it issues
// the same unsigned JWT as the v1 endpoint (issueToken).
func (s *Server) serveTokenV2(w http.ResponseWriter, r *http.Request, path, authority string) bool {
	rest, ok := strings.CutPrefix(path, strings.ToLower(ADFSPath)+"/")
	if !ok {
		return false
	}
	tenant, tail, ok := strings.Cut(rest, "/")
	if !ok || tail != "oauth2/v2.0/token" {
		return false
	}
	if r.Method != http.MethodPost {
		s.Log.Warn("fabric: unknown request: method of the v2 token endpoint", "method", r.Method, "path", r.URL.Path)
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return true
	}
	fail := func(code, desc string) bool {
		s.Log.Warn("fabric: token request refused", "method", r.Method, "path", r.URL.Path, "error", code, "description", desc)
		writeIdentityJSON(w, http.StatusBadRequest, map[string]any{"error": code, "error_description": desc})
		return true
	}
	if !strings.EqualFold(tenant, api.DefaultTenant) {
		return fail("invalid_request", "AADSTS90002: Tenant '"+tenant+"' not found. The routekeeper fabric has one tenant, "+api.DefaultTenant+".")
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		return fail("invalid_request", "AADSTS900144: the request body must be form-encoded: "+err.Error())
	}
	form := r.PostForm
	switch {
	case form.Get("grant_type") != "client_credentials":
		return fail("unsupported_grant_type", "AADSTS70003: the fabric's v2 endpoint supports the client_credentials grant only, got '"+form.Get("grant_type")+"'.")
	case form.Get("client_id") == "":
		return fail("invalid_request", "AADSTS900144: The request body must contain the following parameter: 'client_id'.")
	case form.Get("client_secret") == "" && form.Get("client_assertion") == "":
		return fail("invalid_client", "AADSTS7000216: 'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.")
	case !strings.HasSuffix(form.Get("scope"), "/.default"):
		return fail("invalid_scope", "AADSTS1002012: The provided value for scope '"+form.Get("scope")+"' is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).")
	}
	// issueToken reads the form again; give it the parsed values.
	r.Body = http.NoBody
	r.PostForm = form
	tok := s.issueToken(r, authority+"/"+tenant+"/v2.0")
	// A v2 answer carries no v1 fields (resource, expires_on).
	delete(tok, "resource")
	delete(tok, "expires_on")
	writeIdentityJSON(w, http.StatusOK, tok)
	return true
}

func writeIdentityJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// TokenV2URL is the v2 token endpoint of the fabric's tenant under base.
func TokenV2URL(base string) string {
	return base + ADFSPath + "/" + url.PathEscape(api.DefaultTenant) + "/oauth2/v2.0/token"
}
