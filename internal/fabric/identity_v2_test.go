package fabric

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// TestCloudMetadata2022: the document go-azure-sdk's
// environments.FromEndpoint reads (api-version 2022-09-01): it refuses one
// without name, resourceManager or microsoftGraphResourceId, and takes the
// login endpoint, audiences, tenant and identity provider from
// authentication (identity provider AAD, tenant common). 2019-05-01 is a list of such clouds; the old flat shape
// stays for az; an unknown api-version is a 400 and a warning.
func TestCloudMetadata2022(t *testing.T) {
	var logs bytes.Buffer
	e := newEnv(t, "loopback", Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	get := func(v string) (int, []byte) {
		resp, err := e.hc.Get(e.endpoint + "/metadata/endpoints?api-version=" + v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	code, b := get("2022-09-01")
	if code != http.StatusOK {
		t.Fatalf("2022-09-01 = %d %s", code, b)
	}
	var doc struct {
		Name            string `json:"name"`
		ResourceManager string `json:"resourceManager"`
		Graph           string `json:"microsoftGraphResourceId"`
		Authentication  struct {
			LoginEndpoint    string   `json:"loginEndpoint"`
			Audiences        []string `json:"audiences"`
			Tenant           string   `json:"tenant"`
			IdentityProvider string   `json:"identityProvider"`
		} `json:"authentication"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name == "" || doc.ResourceManager != e.endpoint+"/" || doc.Graph == "" {
		t.Errorf("required fields: %s", b)
	}
	a := doc.Authentication
	// Anything but AAD/common is Azure Stack to go-azure-sdk, and the azurerm
	// provider refuses Azure Stack.
	if a.LoginEndpoint != e.endpoint+"/adfs" || len(a.Audiences) == 0 || a.Tenant != "common" || a.IdentityProvider != "AAD" {
		t.Errorf("authentication: %+v", a)
	}
	code, b = get("2019-05-01")
	var list []map[string]any
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil || len(list) != 1 || list[0]["name"] != doc.Name {
		t.Errorf("2019-05-01 = %d %s", code, b)
	}
	code, b = get("2015-01-01")
	if m := decodeJSON(t, b); code != http.StatusOK || m["authentication"].(map[string]any)["loginEndpoint"] != e.endpoint+"/adfs" || m["name"] != nil {
		t.Errorf("2015-01-01 = %d %s", code, b)
	}
	code, _ = get("2099-01-01")
	if code != http.StatusBadRequest {
		t.Errorf("unknown api-version = %d, want 400", code)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "2099-01-01") {
		t.Errorf("no warning for the unknown api-version:\n%s", logs.String())
	}
}

// TestTokenV2: {loginEndpoint}/{tenant}/oauth2/v2.0/token as go-azure-sdk's
// client-secret login calls it, and the AADSTS refusals of what Entra ID
// would refuse.
func TestTokenV2(t *testing.T) {
	e := newEnv(t, "loopback", Options{})
	post := func(u string, form url.Values) (int, map[string]any) {
		t.Helper()
		resp, err := e.hc.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	good := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"terraform"}, "client_secret": {"s"},
		"scope": {"https://graph.microsoft.com/.default"},
	}
	code, tok := post(identity.TokenV2URL(e.endpoint), good)
	if code != http.StatusOK || tok["token_type"] != "Bearer" || tok["expires_in"] == nil {
		t.Fatalf("token = %d %v", code, tok)
	}
	if _, ok := tok["resource"]; ok {
		t.Errorf("a v2 answer has no resource: %v", tok)
	}
	parts := strings.Split(tok["access_token"].(string), ".")
	if len(parts) != 3 {
		t.Fatalf("access_token %v is not a JWT", tok["access_token"])
	}
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	// go-azure-sdk reads the claims: tenant, object and application IDs.
	if claims["tid"] != DefaultTenant || claims["oid"] == nil || claims["aud"] != "https://graph.microsoft.com" {
		t.Errorf("claims = %v", claims)
	}
	for _, tc := range []struct {
		name, path string
		change     func(url.Values)
		want       string
	}{
		{"other tenant", e.endpoint + "/adfs/common/oauth2/v2.0/token", nil, "invalid_request"},
		{"no client id", "", func(v url.Values) { v.Del("client_id") }, "invalid_request"},
		{"no secret", "", func(v url.Values) { v.Del("client_secret") }, "invalid_client"},
		{"password grant", "", func(v url.Values) { v.Set("grant_type", "password") }, "unsupported_grant_type"},
		{"scope without .default", "", func(v url.Values) { v.Set("scope", "https://graph.microsoft.com") }, "invalid_scope"},
	} {
		form := url.Values{}
		for k, v := range good {
			form[k] = append([]string(nil), v...)
		}
		if tc.change != nil {
			tc.change(form)
		}
		u := tc.path
		if u == "" {
			u = identity.TokenV2URL(e.endpoint)
		}
		code, m := post(u, form)
		if code != http.StatusBadRequest || m["error"] != tc.want || !strings.HasPrefix(m["error_description"].(string), "AADSTS") {
			t.Errorf("%s: %d %v, want 400 %s", tc.name, code, m, tc.want)
		}
	}
	if code := e.getStatus(t, identity.TokenV2URL(e.endpoint)); code != http.StatusMethodNotAllowed {
		t.Errorf("GET token = %d", code)
	}
}
