package fabric

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Who is asking. A token of the fabric's token endpoint names the client
// it was asked for as its principal: appid is the client ID; oid and sub
// are the principal's object ID, which a principal declared in the
// topology maps from its client ID (else the object ID is the client ID
// itself). Each ARM request's principal is read from its bearer token: the
// oid claim, else the object ID of the appid claim's client. The fabric
// signs nothing and checks no signature: identity here is fidelity, not
// security.

// callerOf reads the principal from a request's bearer token.
func (st *authzState) callerOf(r *http.Request) api.Caller {
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	claims, ok := jwtClaims(strings.TrimSpace(tok))
	if !ok {
		return api.Caller{}
	}
	str := func(k string) string { v, _ := claims[k].(string); return v }
	c := api.Caller{ObjectID: str("oid"), ClientID: cmp.Or(str("appid"), str("azp"))}
	if c.ObjectID == "" && c.ClientID != "" {
		c.ObjectID = st.objectID(c.ClientID)
	}
	if c.ObjectID == "" {
		c.ObjectID = str("sub")
	}
	c.Known = c.ObjectID != ""
	return c
}

// objectID is the object ID of a client: the declared principal's, else
// the client ID itself.
func (st *authzState) objectID(clientID string) string {
	if p, ok := st.principals[strings.ToLower(clientID)]; ok && p.ObjectID != "" {
		return p.ObjectID
	}
	return clientID
}

// jwtClaims decodes the payload of a JWT (signed or not, unchecked).
func jwtClaims(tok string) (map[string]any, bool) {
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

// tokenClaims are the claims of a token for client and audience; the
// token endpoints (issueToken) and Credential share them.
func tokenClaims(objectID, client, aud, issuer string, now, exp time.Time) map[string]any {
	c := map[string]any{
		"aud": aud, "iss": issuer, "iat": now.Unix(), "nbf": now.Unix(), "exp": exp.Unix(),
		"appid": client, "tid": api.DefaultTenant, "idtyp": "app",
		"upn": client, "unique_name": client, "ver": "1.0",
	}
	if objectID != "" {
		c["oid"], c["sub"] = objectID, objectID
	}
	return c
}

// principalObjectID is the object ID the token endpoint puts in a token for
// client: the declared principal's, else the client ID.
func (s *authzProvider) principalObjectID(ctx context.Context, client string) string {
	st, err := s.authzState(ctx)
	if err != nil {
		s.log.Warn("fabric token: reading principals", "err", err)
		return client
	}
	return st.objectID(client)
}

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
	aud := armAudience
	if len(opts.Scopes) > 0 {
		aud = strings.TrimSuffix(opts.Scopes[0], "/.default")
	}
	client, oid := c.ClientID, ""
	if client == "" {
		client, oid = api.AdminClientID, api.AdminClientID
	}
	return azcore.AccessToken{Token: unsignedJWT(tokenClaims(oid, client, aud, "https://login.fabric.invalid/"+api.DefaultTenant+"/", now, exp)), ExpiresOn: exp}, nil
}

// --- principals on the control endpoint ---

// principalsPath is where the control endpoint keeps principals:
// GET lists them, PUT /_fabric/principals/{clientId} declares one
// ({"objectId", "displayName", "principalType"}), DELETE forgets it.
// Topology files declare principals through it (Apply).
const principalsPath = api.ControlPrefix + "principals"

func (s *authzProvider) servePrincipals(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, principalsPath), "/")
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(status int, code, format string, args ...any) {
		reply(status, api.NewError(status, code, format, args...).Body())
	}
	ctx := r.Context()
	switch {
	case rest == "" && r.Method == http.MethodGet:
		st, err := s.authzState(ctx)
		if err != nil {
			fail(http.StatusInternalServerError, "InternalServerError", "%v", err)
			return
		}
		out := []principalDoc{}
		for _, p := range st.principals {
			out = append(out, p)
		}
		sortPrincipals(out)
		reply(http.StatusOK, map[string]any{"value": out})
	case rest != "" && !strings.Contains(rest, "/") && r.Method == http.MethodPut:
		var p principalDoc
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p); err != nil {
			fail(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and cannot be deserialized: %v.", err)
			return
		}
		p.ClientID = rest
		if err := checkPrincipal(p); err != nil {
			fail(http.StatusBadRequest, "InvalidPrincipal", "%v", err)
			return
		}
		if p.ObjectID == "" {
			p.ObjectID = p.ClientID
		}
		if p.PrincipalType == "" {
			p.PrincipalType = "ServicePrincipal"
		}
		doc, _ := json.Marshal(p)
		err := s.store.Write(ctx, func(tx *store.Txn) error {
			return tx.PutAuthz(&store.AuthzRow{Key: principalKey(p.ClientID), Kind: kindPrincipal, ID: p.ClientID, Scope: "/", Doc: doc})
		})
		if err != nil {
			fail(http.StatusInternalServerError, "InternalServerError", "%v", err)
			return
		}
		reply(http.StatusOK, p)
	case rest != "" && !strings.Contains(rest, "/") && r.Method == http.MethodDelete:
		err := s.store.Write(ctx, func(tx *store.Txn) error { return tx.DeleteAuthz(principalKey(rest)) })
		if err != nil {
			fail(http.StatusInternalServerError, "InternalServerError", "%v", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "InvalidRequestUri", "%s %s: the control endpoint serves GET %s and PUT/DELETE %s/{clientId}", r.Method, r.URL.Path, principalsPath, principalsPath)
	}
}

func sortPrincipals(ps []principalDoc) {
	slices.SortFunc(ps, func(a, b principalDoc) int {
		return strings.Compare(strings.ToLower(a.ClientID), strings.ToLower(b.ClientID))
	})
}

func principalKey(clientID string) string { return "principal:" + strings.ToLower(clientID) }

// checkPrincipal applies the rules of a declared principal.
func checkPrincipal(p principalDoc) error {
	if strings.TrimSpace(p.ClientID) == "" {
		return fmt.Errorf("a principal needs a client ID")
	}
	for _, id := range []string{p.ClientID, p.ObjectID} {
		if strings.EqualFold(id, api.AdminClientID) {
			return fmt.Errorf("%q is the fabric administrator's client and object ID; declare another", id)
		}
		if strings.ContainsAny(id, "/ '\"") {
			return fmt.Errorf("%q: client and object IDs may not contain '/', quotes or spaces", id)
		}
	}
	switch p.PrincipalType {
	case "", "ServicePrincipal", "User", "Group", "ForeignGroup", "Device":
	default:
		return fmt.Errorf("principalType %q is not one of ServicePrincipal, User, Group, ForeignGroup, Device", p.PrincipalType)
	}
	return nil
}
