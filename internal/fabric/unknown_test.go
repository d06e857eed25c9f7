package fabric

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// TestUnknownRequestsAreLogged: what the fabric does not know is refused or
// dropped, and always logged at WARN with the method, the path and what
// was unknown; what it knows (the SDK's own requests) logs no warning.
func TestUnknownRequestsAreLogged(t *testing.T) {
	ctx := context.Background()
	var logs syncbuf.Buffer
	e := newRGEnv(t, "inprocess", Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	logs.Take() // the helper's api-version is not checked here

	e.seedVNet(ctx, testRG)
	e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")))
	if l := logs.Take(); l != "" {
		t.Fatalf("the SDK's own requests logged warnings:\n%s", l)
	}

	rgPath := "/subscriptions/" + testSub + "/resourceGroups/" + testRG
	for _, tc := range []struct {
		name, method, path, body string
		want                     []string
	}{
		{"unknown path", "GET", "/subscriptions/" + testSub + "/whatever?api-version=2022-09-01", "",
			[]string{"unknown request: path", "method=GET", "/whatever"}},
		{"unknown resource type", "GET", rgPath + "/providers/Microsoft.Network/loadBalancers/lb?api-version=2025-05-01", "",
			[]string{"unknown request: resource type", "loadBalancers"}},
		{"unknown namespace", "PUT", rgPath + "/providers/Microsoft.Compute/virtualMachines/vm?api-version=2024-07-01", `{}`,
			[]string{"unknown request: resource provider namespace", "Microsoft.Compute"}},
		{"unknown method", "PATCH", rgPath + "/providers/Microsoft.Network/routeTables/rt/routes/r?api-version=2025-05-01", `{}`,
			[]string{"unknown request: method", "method=PATCH"}},
		{"unknown api-version", "GET", rgPath + "/providers/Microsoft.Network/routeTables/rt?api-version=2099-01-01", "",
			[]string{"unknown request: api-version", "apiVersion=2099-01-01", "namespace=Microsoft.Network"}},
		{"unknown property", "PUT", rgPath + "/providers/Microsoft.Network/routeTables/rt?api-version=2025-01-01",
			`{"location":"eastus","properties":{"routes":[{"name":"r","properties":{"addressPrefix":"10.200.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.240.0.20","colour":"red"}}],"bgpMagic":true}}`,
			[]string{"properties the fabric does not know", "properties.bgpMagic", "properties.routes[0].properties.colour"}},
		{"unknown identity path", "POST", "/adfs/" + DefaultTenant + "/oauth2/v2.0/devicecode", "",
			[]string{"unknown request: path", "devicecode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.do(tc.method, tc.path, tc.body)
			l := logs.Take()
			if !strings.Contains(l, "level=WARN") {
				t.Fatalf("no warning:\n%s", l)
			}
			for _, w := range tc.want {
				if !strings.Contains(l, w) {
					t.Errorf("the warning lacks %q:\n%s", w, l)
				}
			}
		})
	}

	// Property names compare without regard to case, and tags are free-form.
	e.do("PUT", rgPath+"/providers/Microsoft.Network/routeTables/rt2?api-version=2025-01-01",
		`{"Location":"eastus","tags":{"any-tag":"x"},"Properties":{"DisableBgpRoutePropagation":true}}`)
	if l := logs.Take(); l != "" {
		t.Errorf("a known body in other case logged:\n%s", l)
	}

	// An extension resource on a network resource is its own provider's:
	// a lock on the route table is not checked as a Microsoft.Network
	// request (api-version, body).
	e.do("PUT", rgPath+"/providers/Microsoft.Network/routeTables/rt/providers/Microsoft.Authorization/locks/l?api-version=2016-09-01",
		`{"properties":{"level":"CanNotDelete","notes":"kept"}}`)
	if l := logs.Take(); l != "" {
		t.Errorf("a lock on a route table logged:\n%s", l)
	}
}
