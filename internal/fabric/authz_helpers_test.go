package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

const sub0 = api.DefaultSubscription

// authzEnv is a fabric (in process, operations finishing at once) with a
// topology applied by the administrator, and clients that authenticate as
// any client ID.
type authzEnv struct {
	t   *testing.T
	srv *Server
}

func newAuthzEnv(t *testing.T, spec string) *authzEnv {
	t.Helper()
	st, err := store.OpenMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newAuthzEnvOn(t, st, spec)
}

func newAuthzEnvOn(t *testing.T, st *store.Store, spec string) *authzEnv {
	t.Helper()
	e := &authzEnv{t: t, srv: New(st, Options{})}
	if spec != "" {
		topo, err := topology.ParseTopology([]byte(spec))
		if err != nil {
			t.Fatalf("topology: %v", err)
		}
		if _, err := topology.Apply(context.Background(), topo, e.srv.ClientOptions(), identity.Credential{}); err != nil {
			t.Fatalf("applying the topology: %v", err)
		}
	}
	return e
}

// clients are armnetwork clients of one principal.
type clients struct {
	tables  *armnetwork.RouteTablesClient
	routes  *armnetwork.RoutesClient
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
	nats    *armnetwork.NatGatewaysClient
	nics    *armnetwork.InterfacesClient
}

// as returns the clients of a client ID ("" for the administrator).
func (e *authzEnv) as(client string) *clients {
	e.t.Helper()
	f, err := armnetwork.NewClientFactory(sub0, identity.Credential{ClientID: client}, e.srv.ClientOptions())
	if err != nil {
		e.t.Fatal(err)
	}
	return &clients{tables: f.NewRouteTablesClient(), routes: f.NewRoutesClient(), vnets: f.NewVirtualNetworksClient(),
		subnets: f.NewSubnetsClient(), nats: f.NewNatGatewaysClient(), nics: f.NewInterfacesClient()}
}

// raw sends a request as client through the SDK's pipeline and returns
// the status and decoded body.
func (e *authzEnv) raw(client, method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	c, err := arm.NewClient("test", "v1.0.0", identity.Credential{ClientID: client}, e.srv.ClientOptions())
	if err != nil {
		e.t.Fatal(err)
	}
	if !strings.Contains(path, "api-version=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "api-version=2022-04-01"
	}
	req, err := runtime.NewRequest(context.Background(), method, InProcessEndpoint+path)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		if err := runtime.MarshalAsJSON(req, body); err != nil {
			e.t.Fatal(err)
		}
	}
	resp, err := c.Pipeline().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// armErr returns the status, code and message of an SDK error.
func armErr(t *testing.T, err error) (int, string, string, map[string]any) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want an ARM error answer", err)
	}
	b, _ := runtime.Payload(re.RawResponse)
	var body struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(b, &body)
	msg, _ := body.Error["message"].(string)
	return re.StatusCode, re.ErrorCode, msg, body.Error
}

var authzPoll = &runtime.PollUntilDoneOptions{Frequency: 10 * 1e6}

// done waits for the long-running operation a Begin call started: the
// error of the call, else of the operation.
func done[T any](p *runtime.Poller[T], err error) error {
	if err == nil {
		_, err = p.PollUntilDone(context.Background(), authzPoll)
	}
	return err
}

func putTable(c *clients, rg, name string, routes ...*armnetwork.Route) error {
	p, err := c.tables.BeginCreateOrUpdate(context.Background(), rg, name, armnetwork.RouteTable{
		Location: to.Ptr("eastus"), Properties: &armnetwork.RouteTablePropertiesFormat{Routes: routes}}, nil)
	if err == nil {
		_, err = p.PollUntilDone(context.Background(), authzPoll)
	}
	return err
}

func deleteTable(c *clients, rg, name string) error {
	err := done(c.tables.BeginDelete(context.Background(), rg, name, nil))
	return err
}

func putSubnet(c *clients, rg, vnet, name, prefix string, props func(*armnetwork.SubnetPropertiesFormat)) error {
	p := &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr(prefix)}
	if props != nil {
		props(p)
	}
	err := done(c.subnets.BeginCreateOrUpdate(context.Background(), rg, vnet, name, armnetwork.Subnet{Properties: p}, nil))
	return err
}

func netID(rg, typ, name string) string { return api.ResourceID(sub0, rg, typ, name) }
