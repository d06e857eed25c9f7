package fabric

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// backrefEnv is the network of the back-reference cases: route tables a
// and b in group kubernetes; in group network, virtual network vnet with
// subnets s1 (on a) and s2 (on no table). The network is in a group of
// its own so that deleting the group is one of the cases.
type backrefEnv struct {
	*env
	a, b string // route table IDs
}

func newBackrefEnv(t *testing.T, o Options) *backrefEnv {
	t.Helper()
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", o)
	e.createRG("network")
	a := e.mustPutTable(ctx, testRG, "a", table())
	b := e.mustPutTable(ctx, testRG, "b", table())
	be := &backrefEnv{env: e, a: api.Str(a.ID), b: api.Str(b.ID)}
	be.putVNet(t, map[string]string{"s1": be.a, "s2": ""})
	return be
}

// backrefPrefixes are the address prefixes of the subnets of vnet.
var backrefPrefixes = map[string]string{"s1": "10.240.0.0/24", "s2": "10.240.1.0/24", "s3": "10.240.2.0/24"}

// putVNet PUTs vnet with its inline subnets, each on the table given (""
// none): what an ARM template or Terraform sends.
func (e *backrefEnv) putVNet(t *testing.T, subnets map[string]string) {
	t.Helper()
	v := armnetwork.VirtualNetwork{Location: api.Ptr(testLoc), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{api.Ptr("10.240.0.0/16")}},
	}}
	for _, name := range slices.Sorted(maps.Keys(subnets)) {
		p := &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr(backrefPrefixes[name])}
		if subnets[name] != "" {
			p.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(subnets[name])}
		}
		v.Properties.Subnets = append(v.Properties.Subnets, &armnetwork.Subnet{Name: api.Ptr(name), Properties: p})
	}
	if _, err := e.env.putVNet(context.Background(), "network", "vnet", v); err != nil {
		t.Fatalf("PUT of the virtual network: %v", err)
	}
}

// setTable is `az network vnet subnet update --route-table` (tableID ""
// removes it): GET the subnet, PUT it back with the change.
func (e *backrefEnv) setTable(t *testing.T, subnet, tableID string) error {
	t.Helper()
	ctx := context.Background()
	sn, err := e.subnets.Get(ctx, "network", "vnet", subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	sn.Properties.RouteTable = nil
	if tableID != "" {
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: api.Ptr(tableID)}
	}
	_, err = e.putSubnet(ctx, "network", "vnet", subnet, sn.Subnet)
	return err
}

// wait polls a long-running operation's Location (the SDK's own
// pollers are used everywhere else) until it ends, and returns its status.
func (e *backrefEnv) wait(t *testing.T, resp *http.Response) int {
	t.Helper()
	loc := strings.TrimPrefix(resp.Header.Get("Location"), e.endpoint)
	for range 100 {
		r, _ := e.do("GET", loc, "")
		if r.StatusCode != http.StatusAccepted {
			return r.StatusCode
		}
	}
	t.Fatalf("operation %s did not end", loc)
	return 0
}

// listed returns the names of the subnets each table's GET lists, through
// the SDK, and checks them against the subnets' own routeTable: each
// listed ID must be the subnet's ID exactly as the subnet's GET spells it,
// and every subnet that points to a table must be listed by it.
func (e *backrefEnv) listed(t *testing.T) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	byID := map[string]string{} // subnet ID as listed -> table name
	for _, name := range []string{"a", "b"} {
		tb, err := e.tables.Get(ctx, testRG, name, nil)
		if err != nil {
			t.Fatalf("GET of route table %s: %v", name, err)
		}
		out[name] = []string{}
		for _, s := range tb.Properties.Subnets {
			id := api.Str(s.ID)
			out[name] = append(out[name], id[strings.LastIndex(id, "/")+1:])
			byID[id] = name
		}
	}
	pager := e.subnets.NewListPager("network", "vnet", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if strings.Contains(err.Error(), "NotFound") {
				break // the network (or its group) is gone
			}
			t.Fatal(err)
		}
		for _, s := range page.Value {
			want := ""
			if s.Properties.RouteTable != nil {
				want = api.Str(s.Properties.RouteTable.ID)
				want = want[strings.LastIndex(want, "/")+1:]
			}
			if got := byID[api.Str(s.ID)]; got != want {
				t.Errorf("subnet %s points to route table %q, but the table listing its ID %s is %q", api.Str(s.Name), want, api.Str(s.ID), got)
			}
		}
	}
	return out
}

// TestTableSubnetsBackReference: a route table's read-only subnets list
// (properties.subnets) is exact after every change that makes or breaks
// an association, read through the SDK, and agrees with the subnets' own
// routeTable. routekeeper's association guard trusts it: a subnet the
// table lists is not read (one read per table in steady state).
func TestTableSubnetsBackReference(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		change func(t *testing.T, e *backrefEnv)
		want   map[string][]string
	}{
		{"as set up", Options{}, func(*testing.T, *backrefEnv) {}, map[string][]string{"a": {"s1"}, "b": {}}},
		{"associate (subnet PUT)", Options{}, func(t *testing.T, e *backrefEnv) {
			if err := e.setTable(t, "s2", e.a); err != nil {
				t.Fatal(err)
			}
		}, map[string][]string{"a": {"s1", "s2"}, "b": {}}},
		{"associate with a table ID in other letter case", Options{}, func(t *testing.T, e *backrefEnv) {
			if err := e.setTable(t, "s2", strings.ToUpper(e.b)); err != nil {
				t.Fatal(err)
			}
		}, map[string][]string{"a": {"s1"}, "b": {"s2"}}},
		{"dissociate (subnet PUT without routeTable)", Options{}, func(t *testing.T, e *backrefEnv) {
			if err := e.setTable(t, "s1", ""); err != nil {
				t.Fatal(err)
			}
		}, map[string][]string{"a": {}, "b": {}}},
		{"swap (subnet PUT with another table)", Options{}, func(t *testing.T, e *backrefEnv) {
			if err := e.setTable(t, "s1", e.b); err != nil {
				t.Fatal(err)
			}
		}, map[string][]string{"a": {}, "b": {"s1"}}},
		{"VNet PUT with inline subnets moving both", Options{}, func(t *testing.T, e *backrefEnv) {
			e.putVNet(t, map[string]string{"s1": e.b, "s2": e.a})
		}, map[string][]string{"a": {"s2"}, "b": {"s1"}}},
		{"VNet PUT without the association (IaC redeploy)", Options{}, func(t *testing.T, e *backrefEnv) {
			e.putVNet(t, map[string]string{"s1": "", "s2": ""})
		}, map[string][]string{"a": {}, "b": {}}},
		{"VNet PUT adding an associated subnet", Options{}, func(t *testing.T, e *backrefEnv) {
			e.putVNet(t, map[string]string{"s1": e.a, "s2": "", "s3": e.a})
		}, map[string][]string{"a": {"s1", "s3"}, "b": {}}},
		{"VNet PUT without an associated subnet (it is removed)", Options{}, func(t *testing.T, e *backrefEnv) {
			e.putVNet(t, map[string]string{"s2": e.b})
		}, map[string][]string{"a": {}, "b": {"s2"}}},
		{"subnet delete", Options{}, func(t *testing.T, e *backrefEnv) {
			p, err := e.subnets.BeginDelete(context.Background(), "network", "vnet", "s1", nil)
			mustPoll(context.Background(), t, p, err)
		}, map[string][]string{"a": {}, "b": {}}},
		{"VNet delete", Options{}, func(t *testing.T, e *backrefEnv) {
			if err := e.setTable(t, "s2", e.b); err != nil {
				t.Fatal(err)
			}
			p, err := e.vnets.BeginDelete(context.Background(), "network", "vnet", nil)
			mustPoll(context.Background(), t, p, err)
		}, map[string][]string{"a": {}, "b": {}}},
		{"resource group of the VNet deleted", Options{}, func(t *testing.T, e *backrefEnv) {
			resp, _ := e.do("DELETE", "/subscriptions/"+testSub+"/resourcegroups/network", "")
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("DELETE of the resource group: %d", resp.StatusCode)
			}
			if st := e.wait(t, resp); st != http.StatusOK {
				t.Fatalf("deleting the resource group ended %d", st)
			}
		}, map[string][]string{"a": {}, "b": {}}},
		{"table delete refused while associated", Options{}, func(t *testing.T, e *backrefEnv) {
			_, err := e.tables.BeginDelete(context.Background(), testRG, "a", nil)
			respErr(t, err, http.StatusBadRequest, "InUseRouteTableCannotBeDeleted")
		}, map[string][]string{"a": {"s1"}, "b": {}}},
		{"table PUT carrying a subnets list (read-only: ignored)", Options{}, func(t *testing.T, e *backrefEnv) {
			tb := e.getTable(context.Background(), testRG, "b")
			tb.Properties.Subnets = []*armnetwork.Subnet{{ID: api.Ptr("/subscriptions/" + testSub + "/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s2")}}
			e.mustPutTable(context.Background(), testRG, "b", tb)
		}, map[string][]string{"a": {"s1"}, "b": {}}},
		{"failed subnet update (the association stays as it was)", Options{}, func(t *testing.T, e *backrefEnv) {
			e.srv.SetFaults(Faults{FailNextOperations: 1})
			respErr(t, e.setTable(t, "s1", e.b), http.StatusOK, "InternalServerError")
		}, map[string][]string{"a": {"s1"}, "b": {}}},
		// A table delete accepted while the table was free, and a subnet
		// associated with it before the delete ends: the delete fails
		// (InUseRouteTableCannotBeDeleted) and the table lists the subnet.
		{"table delete that meets an association made meanwhile", Options{OperationDuration: 100 * time.Millisecond}, func(t *testing.T, e *backrefEnv) {
			ctx := context.Background()
			p, err := e.tables.BeginDelete(ctx, testRG, "b", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.setTable(t, "s2", e.b); err != nil {
				t.Fatal(err)
			}
			_, err = p.PollUntilDone(ctx, fastPoll)
			respErr(t, err, http.StatusOK, "InUseRouteTableCannotBeDeleted")
		}, map[string][]string{"a": {"s1"}, "b": {"s2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBackrefEnv(t, tc.opts)
			tc.change(t, e)
			got := e.listed(t)
			for name, want := range tc.want {
				if !slices.Equal(got[name], want) {
					t.Errorf("route table %s lists %v, want %v", name, got[name], want)
				}
			}
		})
	}
}
