package fabric

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

func TestBaseURLFromForwardedHeaders(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   string
	}{
		{"direct", nil, "http://127.0.0.1:8400"},
		{"X-Forwarded-Proto", http.Header{"X-Forwarded-Proto": {"https"}}, "https://127.0.0.1:8400"},
		{"X-Forwarded-Proto and Host, several hops", http.Header{"X-Forwarded-Proto": {"https, http"}, "X-Forwarded-Host": {"fabric.test:443, inner"}}, "https://fabric.test:443"},
		{"Forwarded", http.Header{"Forwarded": {`for=127.0.0.1;proto=https;host="fabric.test:8443", proto=http`}}, "https://fabric.test:8443"},
		{"Forwarded wins", http.Header{"Forwarded": {"proto=https"}, "X-Forwarded-Proto": {"http"}}, "https://127.0.0.1:8400"},
		{"unknown proto ignored", http.Header{"X-Forwarded-Proto": {"gopher"}}, "http://127.0.0.1:8400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://127.0.0.1:8400/subscriptions", nil)
			r.URL.Scheme = "" // as a server sees it
			for k, v := range tc.header {
				r.Header[k] = v
			}
			if got := api.BaseURL(r); got != tc.want {
				t.Errorf("baseURL = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLinksBehindTLSProxy: a reverse proxy terminates TLS in front of a
// plain HTTP fabric; Azure-AsyncOperation, Location and nextLink must
// point at the proxy's https URL, so the SDK polls and pages through it.
func TestLinksBehindTLSProxy(t *testing.T) {
	st, err := store.OpenMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	backend := httptest.NewServer(New(st, Options{OperationDuration: 100 * time.Millisecond, PageSize: 1}))
	t.Cleanup(backend.Close)
	target, _ := url.Parse(backend.URL)
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.SetXForwarded()
	}})
	t.Cleanup(proxy.Close)

	opts := ClientOptions(proxy.Client(), proxy.URL)
	opts.Retry.RetryDelay = 10 * time.Millisecond
	e := &env{t: t, endpoint: proxy.URL, hc: proxy.Client()}
	e.createRG(testRG)
	tables, err := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		p, err := tables.BeginCreateOrUpdate(ctx, testRG, name, table(vaRoute("r", "10.244.0.0/24", "10.240.0.20")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.PollUntilDone(ctx, nil); err != nil {
			t.Fatalf("polling through the proxy: %v", err)
		}
	}
	resp, _ := e.do("PUT", tablePath(testRG, "c"), `{"location":"eastus"}`)
	if got := resp.Header.Get("Azure-AsyncOperation"); !strings.HasPrefix(got, proxy.URL+"/") {
		t.Errorf("Azure-AsyncOperation = %s, want under %s", got, proxy.URL)
	}
	resp, _ = e.do("DELETE", tablePath(testRG, "a"), "")
	if got := resp.Header.Get("Location"); !strings.HasPrefix(got, proxy.URL+"/") {
		t.Errorf("Location = %s, want under %s", got, proxy.URL)
	}
	_, body := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/"+testRG+"/providers/Microsoft.Network/routeTables", "")
	if next, _ := decodeJSON(t, body)["nextLink"].(string); !strings.HasPrefix(next, proxy.URL+"/") {
		t.Errorf("nextLink = %q, want under %s", next, proxy.URL)
	}
	n := 0
	for pg := tables.NewListPager(testRG, nil); pg.More(); {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatalf("paging through the proxy: %v", err)
		}
		n += len(page.Value)
	}
	if n < 2 {
		t.Errorf("listed %d tables through the proxy, want at least 2", n)
	}
}

// TestServeTLSWithOwnCA: EnsureTLS makes a CA once; a server with its
// certificate is trusted by EndpointClientOptions given the CA file.
func TestServeTLSWithOwnCA(t *testing.T) {
	dir := t.TempDir()
	f, err := identity.EnsureTLS(dir, "fabric.test")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Issued {
		t.Error("first EnsureTLS issued no certificate")
	}
	again, err := identity.EnsureTLS(dir, "fabric.test")
	if err != nil || again.Issued {
		t.Errorf("second EnsureTLS: issued %v, err %v; want the files kept", again.Issued, err)
	}
	more, err := identity.EnsureTLS(dir, "127.0.0.2")
	if err != nil || !more.Issued {
		t.Errorf("EnsureTLS for a new host: issued %v, err %v; want a new certificate", more.Issued, err)
	}
	cfg, err := more.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := httptest.NewUnstartedServer(New(st, Options{}))
	ts.TLS = cfg
	ts.StartTLS()
	t.Cleanup(ts.Close)
	endpoint := strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)

	if _, err := EndpointClientOptions(endpoint, dir+"/missing.pem"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ca      string
		wantErr bool
	}{{"trusting the CA", more.CA, false}, {"without the CA", dir + "/missing.pem", true}} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := EndpointClientOptions(endpoint, tc.ca)
			if err != nil {
				t.Fatal(err)
			}
			opts.Retry.MaxRetries = -1
			tables, _ := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, opts)
			_, err = tables.Get(context.Background(), testRG, "rt", nil)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "certificate") {
					t.Errorf("err = %v, want a certificate error", err)
				}
				return
			}
			respErr(t, err, http.StatusNotFound, "ResourceGroupNotFound")
		})
	}
}
