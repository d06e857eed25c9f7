package fabric

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// routesN is n distinct VirtualAppliance routes r0..r{n-1}.
func routesN(n int) []*armnetwork.Route {
	routes := make([]*armnetwork.Route, n)
	for i := range routes {
		routes[i] = vaRoute(fmt.Sprintf("r%d", i), fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256), "10.240.0.4")
	}
	return routes
}

// TestRouteLimit: a table holds the limit (Azure's 1,000 by default, or
// the one the fabric was started with) and not one route more, whether the
// extra route comes inline or as a child; the refusal carries the number.
func TestRouteLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{{"default is Azure's 1,000", 0, 1000}, {"an older subscription's 400", 400, 400}, {"configured", 10, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newRGEnv(t, "inprocess", Options{RouteLimit: tc.limit})
			routes := routesN(tc.want + 1)
			// A full table is fine, in one write.
			e.mustPutTable(ctx, testRG, "rt", table(routes[:tc.want]...))
			// One more inline: 400, with the limit in the message.
			_, err := e.putTable(ctx, testRG, "rt", table(routes...))
			re := respErr(t, err, http.StatusBadRequest, "RouteTableRouteLimitExceeded")
			if want := fmt.Sprintf("more than the limit of %d routes per route table", tc.want); !strings.Contains(re.Error(), want) {
				t.Errorf("refusal does not say %q:\n%v", want, re)
			}
			// One more as a child: 400 too, and the table is unchanged.
			_, err = e.putRoute(ctx, testRG, "rt", "one-too-many", *routes[tc.want])
			respErr(t, err, http.StatusBadRequest, "RouteTableRouteLimitExceeded")
			if n := len(e.getTable(ctx, testRG, "rt").Properties.Routes); n != tc.want {
				t.Errorf("routes = %d, want %d", n, tc.want)
			}
			// Replacing a route of a full table is allowed.
			if _, err := e.putRoute(ctx, testRG, "rt", "r0", *vaRoute("", "10.100.0.0/24", "10.240.0.5")); err != nil {
				t.Errorf("updating a route of a full table: %v", err)
			}
		})
	}
}

// TestTablesLimit: a subscription holds at most the limit of route tables
// in one location; updating one of them, or creating one in another
// location, is still allowed, and deleting one frees a place.
func TestTablesLimit(t *testing.T) {
	ctx := context.Background()
	e := newRGEnv(t, "inprocess", Options{TablesLimit: 2})
	e.mustPutTable(ctx, testRG, "a", table())
	e.mustPutTable(ctx, testRG, "b", table())
	_, err := e.putTable(ctx, testRG, "c", table())
	re := respErr(t, err, http.StatusBadRequest, "RouteTableCountLimitReached")
	if want := "Cannot create more than 2 route tables for this subscription in this region."; !strings.Contains(re.Error(), want) {
		t.Errorf("refusal does not say %q:\n%v", want, re)
	}
	e.mustPutTable(ctx, testRG, "a", table(routesN(1)...)) // an update is not a new table
	elsewhere := table()
	elsewhere.Location = api.Ptr("westus2")
	e.mustPutTable(ctx, testRG, "c", elsewhere)
	p, err := e.tables.BeginDelete(ctx, testRG, "b", nil)
	if _, err := await(ctx, p, err); err != nil {
		t.Fatal(err)
	}
	e.mustPutTable(ctx, testRG, "d", table())
}

// TestUsages: the usages API of a location reports both limits, with what
// the subscription uses of them there, in the REST API spec's shape, to
// the SDK's UsagesClient; it needs Microsoft.Network/locations/usages/read.
func TestUsages(t *testing.T) {
	eachTransport(t, Options{RouteLimit: 400, TablesLimit: 200}, func(ctx context.Context, t *testing.T, e *env) {
		e.mustPutTable(ctx, testRG, "a", table(routesN(3)...))
		e.mustPutTable(ctx, testRG, "b", table(routesN(7)...))
		other := table()
		other.Location = api.Ptr("westus2")
		e.mustPutTable(ctx, testRG, "c", other)

		uc, err := armnetwork.NewUsagesClient(testSub, identity.Credential{}, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]armnetwork.Usage{}
		for pager := uc.NewListPager(testLoc, nil); pager.More(); {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range page.Value {
				got[*u.Name.Value] = *u
			}
		}
		for _, want := range []struct {
			name, localized string
			current, limit  int64
		}{{"RoutesPerRouteTable", "Routes per Route Table", 7, 400}, {"RouteTables", "Route Tables", 2, 200}} {
			u, ok := got[want.name]
			if !ok {
				t.Fatalf("usages lack %s: %v", want.name, got)
			}
			if *u.CurrentValue != want.current || *u.Limit != want.limit || *u.Unit != armnetwork.UsageUnitCount || *u.Name.LocalizedValue != want.localized {
				t.Errorf("%s = current %d limit %d unit %s %q, want %d %d Count %q", want.name, *u.CurrentValue, *u.Limit, *u.Unit, *u.Name.LocalizedValue, want.current, want.limit, want.localized)
			}
			if wantID := "/subscriptions/" + testSub + "/providers/Microsoft.Network/locations/" + testLoc + "/usages/" + want.name; !strings.EqualFold(*u.ID, wantID) {
				t.Errorf("%s id = %s, want %s", want.name, *u.ID, wantID)
			}
		}
	})
}

// TestUsagesNeedTheirRight: reading the usages needs
// Microsoft.Network/locations/usages/read on the subscription: a reader of
// the subscription has it, a role assigned on a resource group does not.
func TestUsagesNeedTheirRight(t *testing.T) {
	e := newAuthzEnv(t, rbacTopology)
	path := "/subscriptions/" + sub0 + "/providers/Microsoft.Network/locations/eastus/usages"
	if status, body := e.raw("reader-app", "GET", path, nil); status != http.StatusOK {
		t.Errorf("a reader of the subscription: %d %v", status, body)
	}
	status, body := e.raw("routekeeper-app", "GET", path, nil)
	if msg := fmt.Sprint(body); status != http.StatusForbidden || !strings.Contains(msg, "AuthorizationFailed") ||
		!strings.Contains(msg, "'Microsoft.Network/locations/usages/read' over scope '/subscriptions/"+sub0+"'") {
		t.Errorf("a role on a resource group: %d %v, want 403 AuthorizationFailed on Microsoft.Network/locations/usages/read over the subscription", status, body)
	}
}
