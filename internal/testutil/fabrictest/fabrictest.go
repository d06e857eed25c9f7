// Package fabrictest starts an in-memory local fabric with a cloud client
// on it, for tests that drive routekeeper through the real Azure SDK.
package fabrictest

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

// Sub is the subscription the test topologies use.
const Sub = fabric.DefaultSubscription

// Env is a running in-memory fabric and a client on it.
type Env struct {
	Server *fabric.Server
	Store  *fabric.Store
	// Client is routekeeper's ARM client, in process over the real SDK.
	Client *azure.Client
}

// KTHW is the network of Kubernetes the Hard Way's pod network routes lab:
// resource group kubernetes, VNet kubernetes-vnet 10.240.0.0/16, subnet
// kubernetes-subnet 10.240.0.0/24, no route table.
const KTHW = kthw.Topology

// KTHWTwoSubnets is the KTHW network with a second node subnet, pool-2
// (10.240.1.0/24), for tests of several subnets on one table.
const KTHWTwoSubnets = KTHW + `          - name: pool-2
            addressPrefix: 10.240.1.0/24
`

// The IDs of the KTHW network (kthw's).
const (
	KTHWTable  = kthw.TableID
	KTHWVNet   = kthw.VNetID
	KTHWSubnet = kthw.SubnetID
	// KTHWPool2 is KTHWTwoSubnets' second subnet.
	KTHWPool2 = kthw.Pool2ID
	// KTHWTable2 is the ID of a second route table in the same group, for
	// swaps and migrations.
	KTHWTable2 = kthw.Table2ID
)

// New starts a fabric in memory with opts, applies the topology (YAML in
// the fabric's topology format, "" for none) and returns a client on it.
func New(t testing.TB, opts fabric.Options, spec string) *Env {
	t.Helper()
	ctx := context.Background()
	store, err := fabric.OpenMemory(ctx)
	if err != nil {
		t.Fatalf("opening in-memory fabric: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	srv := fabric.New(store, opts)
	if spec != "" {
		topo, err := topology.ParseTopology([]byte(spec))
		if err != nil {
			t.Fatalf("test topology: %v", err)
		}
		if _, err := topology.Apply(ctx, topo, srv.ClientOptions(), fabric.Credential{}); err != nil {
			t.Fatalf("applying test topology: %v", err)
		}
	}
	c, err := azure.New(azure.Options{Credential: fabric.Credential{}, ClientOptions: srv.ClientOptions(), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("azure client: %v", err)
	}
	return &Env{Server: srv, Store: store, Client: c}
}

// RedeployKTHWVNet replays the IaC redeploy that detaches the table on the
// KTHW network: the VNet PUT an ARM template or Terraform redeploy sends,
// carrying its inline subnets without the routeTable the IaC code does not
// know about. subnets are name and prefix pairs; none means KTHW's one
// subnet. opts reach the fabric (for example Server.ClientOptions()).
func RedeployKTHWVNet(tb testing.TB, opts *arm.ClientOptions, subnets ...[2]string) {
	tb.Helper()
	if len(subnets) == 0 {
		subnets = [][2]string{{"kubernetes-subnet", "10.240.0.0/24"}}
	}
	v := armnetwork.VirtualNetwork{
		Location: to.Ptr("eastus"),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{to.Ptr("10.240.0.0/16")}},
		},
	}
	for _, sn := range subnets {
		v.Properties.Subnets = append(v.Properties.Subnets, &armnetwork.Subnet{Name: to.Ptr(sn[0]),
			Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr(sn[1])}})
	}
	f, err := armnetwork.NewClientFactory(Sub, fabric.Credential{}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	p, err := f.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", v, nil)
	if err != nil {
		tb.Fatalf("redeploying the VNet: %v", err)
	}
	if _, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}); err != nil {
		tb.Fatalf("redeploying the VNet: %v", err)
	}
}

// MustPoll waits for the operation p, begun with err, to end, polling
// every 5 ms; it fails tb when the operation could not begin or failed,
// and returns its result. Call it right after a Begin call:
//
//	p, err := tables.BeginDelete(ctx, rg, name, nil)
//	fabrictest.MustPoll(t, p, err)
func MustPoll[T any](tb testing.TB, p *runtime.Poller[T], err error) T {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := p.PollUntilDone(context.Background(), &runtime.PollUntilDoneOptions{Frequency: 5 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// As returns a client on the fabric that authenticates as the principal
// with clientID (a topology's authorization principals, checked by the
// fabric when role assignments exist).
func (e *Env) As(t testing.TB, clientID string) *azure.Client {
	t.Helper()
	c, err := azure.New(azure.Options{Credential: fabric.Credential{ClientID: clientID}, ClientOptions: e.Server.ClientOptions(), PollFrequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("azure client as %s: %v", clientID, err)
	}
	return c
}

// Apply applies more topology (YAML) to the fabric as its administrator:
// a role assignment granted, a lock added.
func (e *Env) Apply(t testing.TB, spec string) {
	t.Helper()
	topo, err := topology.ParseTopology([]byte(spec))
	if err != nil {
		t.Fatalf("topology: %v", err)
	}
	if _, err := topology.Apply(context.Background(), topo, e.Server.ClientOptions(), fabric.Credential{}); err != nil {
		t.Fatalf("applying topology: %v", err)
	}
}

// StartForeignTableWrite is another writer's PUT of the KTHW table
// kubernetes-routes, adding route to-firewall (0.0.0.0/0 to the appliance
// 10.240.0.4), through a second fabric on store whose operations take
// 30 s: the PUT returns at once and its operation stays in flight. It
// returns the writer's route tables client.
func StartForeignTableWrite(ctx context.Context, tb testing.TB, store *fabric.Store) *armnetwork.RouteTablesClient {
	tb.Helper()
	slow := fabric.New(store, fabric.Options{OperationDuration: 30 * time.Second})
	f, err := armnetwork.NewClientFactory(Sub, fabric.Credential{}, slow.ClientOptions())
	if err != nil {
		tb.Fatal(err)
	}
	tables := f.NewRouteTablesClient()
	got, err := tables.Get(ctx, "kubernetes", "kubernetes-routes", nil)
	if err != nil {
		tb.Fatalf("reading the table to write it: %v", err)
	}
	tbl := got.RouteTable
	tbl.Properties.Routes = append(tbl.Properties.Routes, &armnetwork.Route{Name: to.Ptr("to-firewall"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.4")}})
	if _, err := tables.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-routes", tbl, nil); err != nil {
		tb.Fatalf("starting the other writer's PUT: %v", err)
	}
	return tables
}
