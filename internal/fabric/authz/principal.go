package authz

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

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
	claims, ok := api.JWTClaims(strings.TrimSpace(tok))
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

// PrincipalObjectID is the object ID the token endpoint puts in a token for
// client: the declared principal's, else the client ID.
func (s *Provider) PrincipalObjectID(ctx context.Context, client string) string {
	st, err := s.authzState(ctx)
	if err != nil {
		s.log.Warn("fabric token: reading principals", "err", err)
		return client
	}
	return st.objectID(client)
}

// --- principals on the control endpoint ---

// PrincipalsPath is where the control endpoint keeps principals:
// GET lists them, PUT /_fabric/principals/{clientId} declares one
// ({"objectId", "displayName", "principalType"}), DELETE forgets it.
// Topology files declare principals through it (Apply).
const PrincipalsPath = api.ControlPrefix + "principals"

func (s *Provider) ServePrincipals(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, PrincipalsPath), "/")
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
		out := []PrincipalDoc{}
		for _, p := range st.principals {
			out = append(out, p)
		}
		sortPrincipals(out)
		reply(http.StatusOK, map[string]any{"value": out})
	case rest != "" && !strings.Contains(rest, "/") && r.Method == http.MethodPut:
		var p PrincipalDoc
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p); err != nil {
			fail(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and cannot be deserialized: %v.", err)
			return
		}
		p.ClientID = rest
		if err := CheckPrincipal(p); err != nil {
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
		fail(http.StatusNotFound, "InvalidRequestUri", "%s %s: the control endpoint serves GET %s and PUT/DELETE %s/{clientId}", r.Method, r.URL.Path, PrincipalsPath, PrincipalsPath)
	}
}

func sortPrincipals(ps []PrincipalDoc) {
	slices.SortFunc(ps, func(a, b PrincipalDoc) int {
		return strings.Compare(strings.ToLower(a.ClientID), strings.ToLower(b.ClientID))
	})
}

func principalKey(clientID string) string { return "principal:" + strings.ToLower(clientID) }

// CheckPrincipal applies the rules of a declared principal.
func CheckPrincipal(p PrincipalDoc) error {
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
