package fabric

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// parentAs is a request of a client, as a provider that dispatches
// sub-requests receives it.
func parentAs(t *testing.T, client string) *api.Request {
	t.Helper()
	tok, err := Credential{ClientID: client}.GetToken(context.Background(), policy.TokenRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPut, "http://fabric.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+tok.Token)
	return &api.Request{HTTP: r, Base: "http://fabric.test"}
}

// TestDispatchRunsThePipeline: a sub-request is served as a direct call
// would be: a write answers with its long-running operation, a missing
// api-version is refused, and the caller's rights are checked (a reader
// may read but not write).
func TestDispatchRunsThePipeline(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newAuthzEnvOn(t, st, rbacTopology)
	admin := parentAs(t, "")
	table := "/subscriptions/" + sub0 + "/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/dispatched"

	resp, err := e.srv.Dispatch(ctx, admin, http.MethodPut, table+"?api-version=2024-05-01", []byte(`{"location":"eastus"}`))
	if err != nil {
		t.Fatalf("PUT as the administrator: %v", err)
	}
	if resp.Status != http.StatusCreated || resp.Header.Get("Azure-AsyncOperation") == "" || resp.Header.Get("ETag") == "" {
		t.Errorf("PUT = %d %v, want 201 with Azure-AsyncOperation and ETag", resp.Status, resp.Header)
	}

	var ae *api.Error
	if _, err := e.srv.Dispatch(ctx, admin, http.MethodGet, table, nil); !errors.As(err, &ae) || ae.Code != "MissingApiVersionParameter" {
		t.Errorf("GET without api-version: err = %v, want MissingApiVersionParameter", err)
	}

	reader := parentAs(t, "reader-app")
	if resp, err := e.srv.Dispatch(ctx, reader, http.MethodGet, table+"?api-version=2024-05-01", nil); err != nil || resp.Status != http.StatusOK {
		t.Errorf("GET as the reader: %v, %v; want 200", resp, err)
	}
	_, err = e.srv.Dispatch(ctx, reader, http.MethodPut, table+"?api-version=2024-05-01", []byte(`{"location":"eastus"}`))
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != "AuthorizationFailed" {
		t.Errorf("PUT as the reader: err = %v, want 403 AuthorizationFailed", err)
	}
}
