package fabric

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

const (
	testSub = "11111111-2222-3333-4444-555555555555"
	testRG  = "kubernetes"
	testLoc = "eastus"
)

// env is a fabric under test with real armnetwork clients pointed at it.
type env struct {
	t        *testing.T
	srv      *Server
	store    *store.Store
	endpoint string
	opts     *arm.ClientOptions
	hc       *http.Client // raw HTTP, same transport as the SDK
	ca       string       // the server certificate's PEM file over TLS ("" otherwise)

	tables  *armnetwork.RouteTablesClient
	routes  *armnetwork.RoutesClient
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
}

// openStore opens the state file at path; the caller closes it.
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// transports are the two ways a client reaches the fabric; tests that
// exercise the wire run over both.
var transports = []string{"inprocess", "loopback"}

// await waits for the operation p, begun with err, to end, and returns
// its result; err when it could not begin. (poll is the same on the
// background context.)
func await[T any](ctx context.Context, p *runtime.Poller[T], err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return p.PollUntilDone(ctx, fastPoll)
}

// mustPoll is await, failing t when the operation could not begin or
// failed.
func mustPoll[T any](ctx context.Context, t *testing.T, p *runtime.Poller[T], err error) T {
	t.Helper()
	res, err := await(ctx, p, err)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// pageNames pages through a list and returns the name of each item, in
// order: every SDK list page marshals as {"value": [{"name": ...}, ...]}.
func pageNames[P any](ctx context.Context, t *testing.T, pg *runtime.Pager[P]) []string {
	t.Helper()
	var names []string
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Value []struct{ Name string } }
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Value {
			names = append(names, it.Name)
		}
	}
	return names
}

// eachTransport runs test once over each transport, each time on a new
// env with options o and the resource group testRG.
func eachTransport(t *testing.T, o Options, test func(ctx context.Context, t *testing.T, e *env)) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			e := newRGEnv(t, mode, o)
			test(context.Background(), t, e)
		})
	}
}

// getStatus GETs url with e's HTTP client and returns the status code;
// the body is discarded.
func (e *env) getStatus(t *testing.T, url string) int {
	t.Helper()
	r, err := e.hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r.StatusCode
}

func newEnv(t *testing.T, mode string, o Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOn(t, mode, st, o)
}

// newRGEnv is newEnv with the resource group testRG, where most tests
// work.
func newRGEnv(t *testing.T, mode string, o Options) *env {
	t.Helper()
	e := newEnv(t, mode, o)
	e.createRG(testRG)
	return e
}

func newEnvOn(t *testing.T, mode string, st *store.Store, o Options) *env {
	t.Helper()
	srv := New(st, o)
	e := &env{t: t, srv: srv, store: st}
	switch mode {
	case "inprocess":
		e.endpoint = InProcessEndpoint
		e.opts = srv.ClientOptions()
		e.hc = &http.Client{Transport: srv.RoundTripper()}
	case "loopback":
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		e.endpoint = ts.URL
		e.opts = ClientOptions(nil, ts.URL)
		e.hc = ts.Client()
	case "tls", "tls-h2":
		// HTTPS over loopback, as fabric serve --tls: HTTP/1.1 (az's
		// Python client), or HTTP/2 (what Go's clients negotiate).
		ts := httptest.NewUnstartedServer(srv)
		ts.EnableHTTP2 = mode == "tls-h2"
		ts.StartTLS()
		t.Cleanup(ts.Close)
		e.endpoint = ts.URL
		e.hc = ts.Client()
		e.opts = ClientOptions(e.hc, ts.URL)
		e.ca = filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(e.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	e.opts.Retry.RetryDelay = 10 * time.Millisecond
	var errs []error
	var err error
	e.tables, err = armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, e.opts)
	errs = append(errs, err)
	e.routes, err = armnetwork.NewRoutesClient(testSub, identity.Credential{}, e.opts)
	errs = append(errs, err)
	e.vnets, err = armnetwork.NewVirtualNetworksClient(testSub, identity.Credential{}, e.opts)
	errs = append(errs, err)
	e.subnets, err = armnetwork.NewSubnetsClient(testSub, identity.Credential{}, e.opts)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return e
}

// do sends a raw request (with a bearer token and api-version) and returns
// the response with its body read.
func (e *env) do(method, path, body string, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	resp, b, err := e.send(method, path, body, hdr...)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

// send is do returning the transport's error instead of failing the test.
func (e *env) send(method, path, body string, hdr ...string) (*http.Response, []byte, error) {
	e.t.Helper()
	u := e.endpoint + path
	if !strings.Contains(path, "api-version=") {
		if strings.Contains(path, "?") {
			u += "&api-version=2024-05-01"
		} else {
			u += "?api-version=2024-05-01"
		}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer test")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return resp, b, nil
}

// createRG creates a resource group with plain HTTP (armresources is not a
// dependency).
func (e *env) createRG(name string) {
	e.t.Helper()
	resp, b := e.do("PUT", "/subscriptions/"+testSub+"/resourcegroups/"+name, `{"location":"`+testLoc+`"}`)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		e.t.Fatalf("creating resource group %s: %d %s", name, resp.StatusCode, b)
	}
}

var fastPoll = &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}

func (e *env) putTable(ctx context.Context, rg, name string, t armnetwork.RouteTable) (armnetwork.RouteTable, error) {
	p, err := e.tables.BeginCreateOrUpdate(ctx, rg, name, t, nil)
	res, err := await(ctx, p, err)
	return res.RouteTable, err
}

func (e *env) mustPutTable(ctx context.Context, rg, name string, t armnetwork.RouteTable) armnetwork.RouteTable {
	e.t.Helper()
	res, err := e.putTable(ctx, rg, name, t)
	if err != nil {
		e.t.Fatalf("creating route table %s: %v", name, err)
	}
	return res
}

func (e *env) getTable(ctx context.Context, rg, name string) armnetwork.RouteTable {
	e.t.Helper()
	res, err := e.tables.Get(ctx, rg, name, nil)
	if err != nil {
		e.t.Fatalf("getting route table %s: %v", name, err)
	}
	return res.RouteTable
}

func (e *env) putVNet(ctx context.Context, rg, name string, v armnetwork.VirtualNetwork) (armnetwork.VirtualNetwork, error) {
	p, err := e.vnets.BeginCreateOrUpdate(ctx, rg, name, v, nil)
	res, err := await(ctx, p, err)
	return res.VirtualNetwork, err
}

func (e *env) putSubnet(ctx context.Context, rg, vnet, name string, sn armnetwork.Subnet) (armnetwork.Subnet, error) {
	p, err := e.subnets.BeginCreateOrUpdate(ctx, rg, vnet, name, sn, nil)
	res, err := await(ctx, p, err)
	return res.Subnet, err
}

func (e *env) putRoute(ctx context.Context, rg, table, name string, r armnetwork.Route) (armnetwork.Route, error) {
	p, err := e.routes.BeginCreateOrUpdate(ctx, rg, table, name, r, nil)
	res, err := await(ctx, p, err)
	return res.Route, err
}

// seedVNet creates kubernetes-vnet 10.240.0.0/16 with kubernetes-subnet
// 10.240.0.0/24, as Kubernetes the Hard Way on Azure has before its pod
// network routes lab.
func (e *env) seedVNet(ctx context.Context, rg string) armnetwork.VirtualNetwork {
	e.t.Helper()
	v, err := e.putVNet(ctx, rg, "kubernetes-vnet", armnetwork.VirtualNetwork{
		Location: api.Ptr(testLoc),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
			Subnets: []*armnetwork.Subnet{{
				Name:       api.Ptr("kubernetes-subnet"),
				Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24")},
			}},
		},
	})
	if err != nil {
		e.t.Fatalf("creating vnet: %v", err)
	}
	return v
}

func vaRoute(name, prefix, ip string) *armnetwork.Route {
	return &armnetwork.Route{Name: api.Ptr(name), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: api.Ptr(prefix), NextHopType: api.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: api.Ptr(ip),
	}}
}

func table(routes ...*armnetwork.Route) armnetwork.RouteTable {
	return armnetwork.RouteTable{Location: api.Ptr(testLoc), Properties: &armnetwork.RouteTablePropertiesFormat{Routes: routes}}
}

// respErr asserts err is an ARM error with status and code.
func respErr(t *testing.T, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v, want an ARM %d %s", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("error = %d %s, want %d %s\n%v", re.StatusCode, re.ErrorCode, status, code, err)
	}
	return re
}

// withHeader adds a request header to one SDK call (the SDK has no If-Match
// option on these operations).
func withHeader(ctx context.Context, k, v string) context.Context {
	return policy.WithHTTPHeader(ctx, http.Header{k: {v}})
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return m
}

func routeNames(t armnetwork.RouteTable) []string {
	var out []string
	for _, r := range t.Properties.Routes {
		out = append(out, api.Str(r.Name))
	}
	return out
}

func sdkRoute(t armnetwork.RouteTable, name string) *armnetwork.Route {
	for _, r := range t.Properties.Routes {
		if strings.EqualFold(api.Str(r.Name), name) {
			return r
		}
	}
	return nil
}
