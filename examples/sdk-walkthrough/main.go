// Command sdk-walkthrough walks through the route table lab of Kubernetes
// the Hard Way on Azure ("Provisioning Pod Network Routes") with nothing
// but the Azure SDK for Go, against any Azure Resource Manager endpoint —
// meant for `routekeeper fabric serve` — and checks at every step that the
// endpoint behaves as Azure does. It imports no routekeeper package: it is
// the proof that the SDK cannot tell the fabric from Azure.
//
//	routekeeper fabric serve --memory --listen 127.0.0.1:8400 &
//	go run ./examples/sdk-walkthrough -endpoint http://127.0.0.1:8400
//
// With -check-state it only checks that the lab's result is there (after a
// restart of the server on the same state file). It exits 1 at the first
// deviation, saying what it expected and what it got.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

func main() {
	ctx := context.Background()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

// config is what the walkthrough needs to know.
type config struct {
	endpoint, subscription, group, location string
	checkState                              bool
}

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("sdk-walkthrough", flag.ContinueOnError)
	fs.SetOutput(out)
	var c config
	fs.StringVar(&c.endpoint, "endpoint", cmp.Or(getenv("ROUTEKEEPER_ENDPOINT"), "http://127.0.0.1:8400"), "Azure Resource Manager endpoint (default $ROUTEKEEPER_ENDPOINT)")
	fs.StringVar(&c.subscription, "subscription", "00000000-0000-0000-0000-000000000000", "subscription ID")
	fs.StringVar(&c.group, "resource-group", "kubernetes", "resource group of the lab")
	fs.StringVar(&c.location, "location", "eastus", "location of the lab")
	fs.BoolVar(&c.checkState, "check-state", false, "only check that the lab's result is there")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w, err := newWalk(c, out)
	if err != nil {
		return err
	}
	if c.checkState {
		return w.checkState(ctx)
	}
	return w.walk(ctx)
}

// staticToken is a credential with a fixed token; the emulator accepts any.
type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "walkthrough", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// counter is a transport that counts the requests whose path contains a
// given part: it shows that the SDK's poller really polled.
type counter struct {
	mu   sync.Mutex
	seen []string
}

func (c *counter) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.seen = append(c.seen, req.Method+" "+req.URL.Path)
	c.mu.Unlock()
	return http.DefaultClient.Do(req)
}

func (c *counter) count(part string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.seen {
		if strings.Contains(s, part) {
			n++
		}
	}
	return n
}

type walk struct {
	c       config
	out     io.Writer
	step    int
	wire    *counter
	pl      runtime.Pipeline
	tables  *armnetwork.RouteTablesClient
	routes  *armnetwork.RoutesClient
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
	usages  *armnetwork.UsagesClient
}

func newWalk(c config, out io.Writer) (*walk, error) {
	w := &walk{c: c, out: out, wire: &counter{}}
	opts := &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: cloud.Configuration{
				ActiveDirectoryAuthorityHost: "https://login.invalid/",
				Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
					cloud.ResourceManager: {Endpoint: c.endpoint, Audience: "https://management.azure.com"},
				},
			},
			Transport:                       w.wire,
			InsecureAllowCredentialWithHTTP: strings.HasPrefix(c.endpoint, "http:"),
			Retry:                           policy.RetryOptions{MaxRetryDelay: 10 * time.Second},
		},
		DisableRPRegistration: true,
	}
	cred := staticToken{}
	cl, err := arm.NewClient("sdk-walkthrough", "v1.0.0", cred, opts)
	if err != nil {
		return nil, err
	}
	w.pl = cl.Pipeline()
	if w.tables, err = armnetwork.NewRouteTablesClient(c.subscription, cred, opts); err != nil {
		return nil, err
	}
	if w.routes, err = armnetwork.NewRoutesClient(c.subscription, cred, opts); err != nil {
		return nil, err
	}
	if w.vnets, err = armnetwork.NewVirtualNetworksClient(c.subscription, cred, opts); err != nil {
		return nil, err
	}
	if w.subnets, err = armnetwork.NewSubnetsClient(c.subscription, cred, opts); err != nil {
		return nil, err
	}
	if w.usages, err = armnetwork.NewUsagesClient(c.subscription, cred, opts); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *walk) say(format string, args ...any) {
	w.step++
	fmt.Fprintf(w.out, "%2d. %s\n", w.step, fmt.Sprintf(format, args...))
}

func (w *walk) ok(format string, args ...any) {
	fmt.Fprintf(w.out, "    ok: %s\n", fmt.Sprintf(format, args...))
}

// poll is how the walkthrough waits for operations: the server's
// Retry-After paces it; 1 s is the SDK's floor.
var poll = &runtime.PollUntilDoneOptions{Frequency: time.Second}

// wantARMError checks that err is Azure's error with status and code.
func wantARMError(err error, status int, code string) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("want HTTP %d %s, got %v", status, code, err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		return fmt.Errorf("want HTTP %d %s, got HTTP %d %s", status, code, re.StatusCode, re.ErrorCode)
	}
	return nil
}

// kthwVNet is KTHW's kubernetes-vnet (10.240.0.0/16) with its one subnet,
// kubernetes-subnet (10.240.0.0/24), on no route table: what the
// walkthrough creates, and what an IaC redeploy PUTs again.
func (w *walk) kthwVNet() armnetwork.VirtualNetwork {
	return armnetwork.VirtualNetwork{
		Location: to.Ptr(w.c.location),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{to.Ptr("10.240.0.0/16")}},
			Subnets: []*armnetwork.Subnet{{Name: to.Ptr("kubernetes-subnet"),
				Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr("10.240.0.0/24")}}},
		},
	}
}

func (w *walk) tableID(name string) string {
	return "/subscriptions/" + w.c.subscription + "/resourceGroups/" + w.c.group + "/providers/Microsoft.Network/routeTables/" + name
}

func (w *walk) walk(ctx context.Context) error {
	g := w.c.group

	w.say("az group create -n %s -l %s", g, w.c.location)
	if err := w.createGroup(ctx); err != nil {
		return err
	}
	if _, err := w.tables.Get(ctx, g, "kubernetes-routes", nil); err == nil {
		return errors.New("route table kubernetes-routes already exists: the walkthrough wants a fresh fabric (routekeeper fabric serve --memory, or a new --state)")
	}

	w.say("az network vnet create -g %s -n kubernetes-vnet --address-prefix 10.240.0.0/16 --subnet-name kubernetes-subnet --subnet-prefix 10.240.0.0/24", g)
	vp, err := w.vnets.BeginCreateOrUpdate(ctx, g, "kubernetes-vnet", w.kthwVNet(), nil)
	if err != nil {
		return fmt.Errorf("creating the VNet: %w", err)
	}
	vnet, err := vp.PollUntilDone(ctx, poll)
	if err != nil {
		return fmt.Errorf("creating the VNet: %w", err)
	}
	w.ok("%s, provisioningState %s", *vnet.ID, *vnet.Properties.ProvisioningState)

	w.say("az network route-table create -g %s -n kubernetes-routes", g)
	var first *http.Response
	before := w.wire.count("/operations/")
	tp, err := w.tables.BeginCreateOrUpdate(runtime.WithCaptureResponse(ctx, &first), g, "kubernetes-routes",
		armnetwork.RouteTable{Location: to.Ptr(w.c.location)}, nil)
	if err != nil {
		return fmt.Errorf("creating the route table: %w", err)
	}
	async := first.Header.Get("Azure-AsyncOperation")
	if first.StatusCode != http.StatusCreated || !strings.HasPrefix(async, "http") {
		return fmt.Errorf("creating the route table: want 201 with an absolute Azure-AsyncOperation URL, got %d %q", first.StatusCode, async)
	}
	w.ok("201 Created, Azure-AsyncOperation %s", async)
	rt, err := tp.PollUntilDone(ctx, poll)
	if err != nil {
		return fmt.Errorf("polling the route table creation: %w", err)
	}
	if polls := w.wire.count("/operations/") - before; polls < 1 || *rt.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
		return fmt.Errorf("want the poller to follow the operation URL to Succeeded, got %d polls and %s", polls, *rt.Properties.ProvisioningState)
	}
	w.ok("the SDK poller followed it to %s", *rt.Properties.ProvisioningState)

	w.say("az network vnet subnet update -g %s -n kubernetes-subnet --vnet-name kubernetes-vnet --route-table kubernetes-routes", g)
	if err := w.associate(ctx, *rt.ID); err != nil {
		return err
	}
	tbl, err := w.tables.Get(ctx, g, "kubernetes-routes", nil)
	if err != nil {
		return err
	}
	if len(tbl.Properties.Subnets) != 1 || !strings.EqualFold(*tbl.Properties.Subnets[0].ID, *vnet.Properties.Subnets[0].ID) {
		return fmt.Errorf("want the table's subnets to be [%s], got %d", *vnet.Properties.Subnets[0].ID, len(tbl.Properties.Subnets))
	}
	w.ok("the route table lists the subnet: %s", *tbl.Properties.Subnets[0].ID)

	for i := range 2 {
		name := fmt.Sprintf("kubernetes-route-10-200-%d-0-24", i)
		w.say("az network route-table route create -g %s -n %s --route-table-name kubernetes-routes --address-prefix 10.200.%d.0/24 --next-hop-ip-address 10.240.0.2%d --next-hop-type VirtualAppliance", g, name, i, i)
		rp, err := w.routes.BeginCreateOrUpdate(ctx, g, "kubernetes-routes", name, armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr(fmt.Sprintf("10.200.%d.0/24", i)), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance),
			NextHopIPAddress: to.Ptr(fmt.Sprintf("10.240.0.2%d", i))}}, nil)
		if err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		if _, err := rp.PollUntilDone(ctx, poll); err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
	}

	w.say("az network route-table route list -g %s --route-table-name kubernetes-routes -o table", g)
	fmt.Fprintf(w.out, "    %-15s  %-30s  %-16s  %-16s  %s\n", "AddressPrefix", "Name", "NextHopIpAddress", "NextHopType", "ProvisioningState")
	n := 0
	for pg := w.routes.NewListPager(g, "kubernetes-routes", nil); pg.More(); {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range page.Value {
			n++
			p := r.Properties
			fmt.Fprintf(w.out, "    %-15s  %-30s  %-16s  %-16s  %s\n", *p.AddressPrefix, *r.Name, *p.NextHopIPAddress, *p.NextHopType, *p.ProvisioningState)
		}
	}
	if n != 2 {
		return fmt.Errorf("want 2 routes, got %d", n)
	}

	w.say("a write with a stale If-Match is refused")
	stale, err := w.tables.Get(ctx, g, "kubernetes-routes", nil)
	if err != nil {
		return err
	}
	if _, err := w.tables.UpdateTags(ctx, g, "kubernetes-routes", armnetwork.TagsObject{Tags: map[string]*string{"lab": to.Ptr("kthw")}}, nil); err != nil {
		return fmt.Errorf("updating tags: %w", err)
	}
	_, err = w.tables.BeginCreateOrUpdate(policy.WithHTTPHeader(ctx, http.Header{"If-Match": {*stale.Etag}}), g, "kubernetes-routes", stale.RouteTable, nil)
	if err := wantARMError(err, http.StatusPreconditionFailed, "PreconditionFailed"); err != nil {
		return fmt.Errorf("PUT with a stale If-Match: %w", err)
	}
	w.ok("412 PreconditionFailed")

	w.say("a second route with the same prefix is refused")
	_, err = w.routes.BeginCreateOrUpdate(ctx, g, "kubernetes-routes", "duplicate", armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.200.0.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.240.0.22")}}, nil)
	if err := wantARMError(err, http.StatusBadRequest, "RouteConflict"); err != nil {
		return fmt.Errorf("duplicate prefix: %w", err)
	}
	w.ok("400 RouteConflict")

	w.say("az network route-table delete -n kubernetes-routes, while it is associated")
	_, err = w.tables.BeginDelete(ctx, g, "kubernetes-routes", nil)
	if err := wantARMError(err, http.StatusBadRequest, "InUseRouteTableCannotBeDeleted"); err != nil {
		return fmt.Errorf("deleting an associated table: %w", err)
	}
	w.ok("400 InUseRouteTableCannotBeDeleted")

	w.say("an IaC redeploy: PUT the VNet without the subnet's routeTable")
	vp, err = w.vnets.BeginCreateOrUpdate(ctx, g, "kubernetes-vnet", w.kthwVNet(), nil)
	if err == nil {
		_, err = vp.PollUntilDone(ctx, poll)
	}
	if err != nil {
		return fmt.Errorf("redeploying the VNet: %w", err)
	}
	sn, err := w.subnets.Get(ctx, g, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		return err
	}
	if tbl, err = w.tables.Get(ctx, g, "kubernetes-routes", nil); err != nil {
		return err
	}
	if sn.Properties.RouteTable != nil || len(tbl.Properties.Subnets) != 0 {
		return fmt.Errorf("want the association gone both ways, got subnet routeTable %v and %d table subnets", sn.Properties.RouteTable != nil, len(tbl.Properties.Subnets))
	}
	w.ok("the subnet has no route table and the table's subnets are empty")
	w.say("re-associate the table, as routekeeper's association guard would")
	if err := w.associate(ctx, *tbl.ID); err != nil {
		return err
	}

	w.say("Azure's limit of routes per route table, from the usages API, and one route more is refused")
	limit := 0
	for pager := w.usages.NewListPager(w.c.location, nil); pager.More() && limit == 0; {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the usages of %s: %w", w.c.location, err)
		}
		for _, u := range page.Value {
			if u != nil && u.Name != nil && u.Name.Value != nil && *u.Name.Value == "RoutesPerRouteTable" && u.Limit != nil {
				limit = int(*u.Limit)
			}
		}
	}
	if limit <= 0 || limit > 4096 {
		return fmt.Errorf("usages of %s: RoutesPerRouteTable limit %d", w.c.location, limit)
	}
	w.ok("RoutesPerRouteTable: %d", limit)
	var many []*armnetwork.Route
	for i := range limit {
		many = append(many, &armnetwork.Route{Name: to.Ptr(fmt.Sprintf("r%d", i)), Properties: &armnetwork.RoutePropertiesFormat{
			AddressPrefix: to.Ptr(fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeNone)}})
	}
	lp, err := w.tables.BeginCreateOrUpdate(ctx, g, "limit-check", armnetwork.RouteTable{Location: to.Ptr(w.c.location),
		Properties: &armnetwork.RouteTablePropertiesFormat{Routes: many}}, nil)
	if err == nil {
		_, err = lp.PollUntilDone(ctx, poll)
	}
	if err != nil {
		return fmt.Errorf("creating a table of %d routes: %w", limit, err)
	}
	_, err = w.routes.BeginCreateOrUpdate(ctx, g, "limit-check", "one-more", armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.250.0.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeNone)}}, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
		return fmt.Errorf("route %d: want HTTP 400, got %v", limit+1, err)
	}
	w.ok("400 %s", re.ErrorCode)
	dp, err := w.tables.BeginDelete(ctx, g, "limit-check", nil)
	if err == nil {
		_, err = dp.PollUntilDone(ctx, poll)
	}
	if err != nil {
		return fmt.Errorf("deleting limit-check: %w", err)
	}

	w.say("a missing route table")
	_, err = w.tables.Get(ctx, g, "no-such-table", nil)
	if err := wantARMError(err, http.StatusNotFound, "ResourceNotFound"); err != nil {
		return fmt.Errorf("GET of a missing table: %w", err)
	}
	w.ok("404 ResourceNotFound")

	fmt.Fprintln(w.out, "walkthrough complete: the endpoint behaved as Azure does")
	return nil
}

// associate sets the subnet's route table, keeping its other properties.
func (w *walk) associate(ctx context.Context, tableID string) error {
	sn, err := w.subnets.Get(ctx, w.c.group, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		return fmt.Errorf("reading the subnet: %w", err)
	}
	sn.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(tableID)}
	p, err := w.subnets.BeginCreateOrUpdate(ctx, w.c.group, "kubernetes-vnet", "kubernetes-subnet", sn.Subnet, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, poll)
	}
	if err != nil {
		return fmt.Errorf("associating the route table: %w", err)
	}
	return nil
}

// createGroup creates the resource group with a plain ARM request through
// the SDK's pipeline (armresources is not needed for one call).
func (w *walk) createGroup(ctx context.Context) error {
	req, err := runtime.NewRequest(ctx, http.MethodPut, w.c.endpoint+"/subscriptions/"+w.c.subscription+"/resourcegroups/"+w.c.group+"?api-version=2021-04-01")
	if err != nil {
		return err
	}
	if err := runtime.MarshalAsJSON(req, map[string]string{"location": w.c.location}); err != nil {
		return err
	}
	resp, err := w.pl.Do(req)
	if err != nil {
		return fmt.Errorf("creating the resource group: %w", err)
	}
	if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusCreated) {
		return fmt.Errorf("creating the resource group: %w", runtime.NewResponseError(resp))
	}
	w.ok("HTTP %d", resp.StatusCode)
	return nil
}

// checkState checks that the lab's result is there: the table with its two
// routes, associated with the subnet.
func (w *walk) checkState(ctx context.Context) error {
	g := w.c.group
	w.say("the route table kubernetes-routes and its routes are there")
	tbl, err := w.tables.Get(ctx, g, "kubernetes-routes", nil)
	if err != nil {
		return fmt.Errorf("reading the route table: %w", err)
	}
	if n := len(tbl.Properties.Routes); n != 2 {
		return fmt.Errorf("want 2 routes, got %d", n)
	}
	if *tbl.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
		return fmt.Errorf("want provisioningState Succeeded, got %s", *tbl.Properties.ProvisioningState)
	}
	w.ok("%d routes, etag %s", len(tbl.Properties.Routes), *tbl.Etag)
	w.say("the subnet is associated with it, both ways")
	sn, err := w.subnets.Get(ctx, g, "kubernetes-vnet", "kubernetes-subnet", nil)
	if err != nil {
		return fmt.Errorf("reading the subnet: %w", err)
	}
	if sn.Properties.RouteTable == nil || !strings.EqualFold(*sn.Properties.RouteTable.ID, w.tableID("kubernetes-routes")) ||
		len(tbl.Properties.Subnets) != 1 || !strings.EqualFold(*tbl.Properties.Subnets[0].ID, *sn.ID) {
		return errors.New("want the subnet associated with kubernetes-routes and listed by it")
	}
	w.ok("%s -> %s", *sn.ID, *sn.Properties.RouteTable.ID)
	fmt.Fprintln(w.out, "state check complete")
	return nil
}
