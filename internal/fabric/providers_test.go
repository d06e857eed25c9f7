package fabric

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

func providerState(t *testing.T, e *env, ns string) string {
	t.Helper()
	resp, b := e.do("GET", "/subscriptions/"+testSub+"/providers/"+ns+"?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET provider %s = %d %s", ns, resp.StatusCode, b)
	}
	m := decodeJSON(t, b)
	if m["namespace"] == nil || m["id"] != "/subscriptions/"+testSub+"/providers/"+m["namespace"].(string) {
		t.Fatalf("provider %s = %v", ns, m)
	}
	return m["registrationState"].(string)
}

// TestProviderRegistration: the namespaces the azurerm provider's "core"
// set needs are listed; the ones Azure registers by default (and the two
// the fabric serves) are Registered, the others NotRegistered until a
// register POST, which answers Registering and is Registered once the
// operation duration has passed. The state is in the state file: a second
// server on it sees it.
func TestProviderRegistration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fabric.db")
	st := openStore(t, path)
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnvOn(t, "loopback", st, Options{OperationDuration: time.Second, Clock: clock})

	resp, b := e.do("GET", "/subscriptions/"+testSub+"/providers?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list = %d %s", resp.StatusCode, b)
	}
	states := map[string]string{}
	for _, v := range decodeJSON(t, b)["value"].([]any) {
		p := v.(map[string]any)
		states[p["namespace"].(string)] = p["registrationState"].(string)
	}
	for ns, want := range map[string]string{
		"Microsoft.Network": "Registered", "Microsoft.Resources": "Registered", "Microsoft.Authorization": "Registered",
		"Microsoft.CostManagement": "Registered", "Microsoft.MarketplaceOrdering": "Registered",
		"Microsoft.Compute": "NotRegistered", "Microsoft.ManagedIdentity": "NotRegistered", "Microsoft.Storage": "NotRegistered",
	} {
		if states[ns] != want {
			t.Errorf("%s is %q in the list, want %s", ns, states[ns], want)
		}
	}

	resp, b = e.do("POST", "/subscriptions/"+testSub+"/providers/microsoft.compute/register?api-version=2022-09-01", "{}")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register = %d %s", resp.StatusCode, b)
	}
	if m := decodeJSON(t, b); m["registrationState"] != "Registering" || m["namespace"] != "Microsoft.Compute" {
		t.Errorf("register answered %v", m)
	}
	if s := providerState(t, e, "Microsoft.Compute"); s != "Registering" {
		t.Errorf("right after register: %s", s)
	}
	now = now.Add(time.Second)
	if s := providerState(t, e, "Microsoft.Compute"); s != "Registered" {
		t.Errorf("after the operation duration: %s", s)
	}
	// Registering again is a no-op; another subscription is not affected.
	resp, b = e.do("POST", "/subscriptions/"+testSub+"/providers/Microsoft.Compute/register?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusOK || decodeJSON(t, b)["registrationState"] != "Registered" {
		t.Errorf("second register = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/subscriptions/22222222-2222-2222-2222-222222222222/providers/Microsoft.Compute?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusOK || decodeJSON(t, b)["registrationState"] != "NotRegistered" {
		t.Errorf("other subscription = %d %s", resp.StatusCode, b)
	}

	// Another process on the same file sees the registration.
	st2 := openStore(t, path)
	t.Cleanup(func() { st2.Close() })
	e2 := newEnvOn(t, "inprocess", st2, Options{Clock: clock})
	if s := providerState(t, e2, "Microsoft.Compute"); s != "Registered" {
		t.Errorf("second process sees %s", s)
	}

	// An unknown namespace is a 404, and a GET of register a 405.
	resp, b = e.do("POST", "/subscriptions/"+testSub+"/providers/Contoso.Nothing/register?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusNotFound || decodeJSON(t, b)["error"].(map[string]any)["code"] != "InvalidResourceNamespace" {
		t.Errorf("unknown namespace = %d %s", resp.StatusCode, b)
	}
	resp, _ = e.do("GET", "/subscriptions/"+testSub+"/providers/Microsoft.Compute/register?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET register = %d", resp.StatusCode)
	}
}

// TestProviderRegistrationAtOnce: with an operation duration of 0 a
// register POST answers Registered.
func TestProviderRegistrationAtOnce(t *testing.T) {
	e := newEnv(t, "inprocess", Options{})
	resp, b := e.do("POST", "/subscriptions/"+testSub+"/providers/Microsoft.Storage/register?api-version=2022-09-01", "")
	if resp.StatusCode != http.StatusOK || decodeJSON(t, b)["registrationState"] != "Registered" {
		t.Fatalf("register = %d %s", resp.StatusCode, b)
	}
}
