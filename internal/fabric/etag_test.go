package fabric

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

func TestEtagsAndPreconditions(t *testing.T) {
	eachTransport(t, Options{}, func(ctx context.Context, t *testing.T, e *env) {
		v1 := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")))

		// An identical write is a no-op: Azure keeps the etag.
		same := e.mustPutTable(withHeader(ctx, "If-Match", api.Str(v1.Etag)), testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")))
		if api.Str(same.Etag) != api.Str(v1.Etag) {
			t.Fatalf("etag after a no-op write = %s, want %s kept", api.Str(same.Etag), api.Str(v1.Etag))
		}
		// Every write that changes something makes a new etag.
		v2 := e.mustPutTable(withHeader(ctx, "If-Match", api.Str(v1.Etag)), testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.21")))
		if api.Str(v2.Etag) == api.Str(v1.Etag) || !etagRE.MatchString(api.Str(v2.Etag)) {
			t.Fatalf("etag after write = %s (was %s)", api.Str(v2.Etag), api.Str(v1.Etag))
		}
		// A stale If-Match: 412 PreconditionFailed, PreconditionFailedEtagMismatch.
		_, err := e.putTable(withHeader(ctx, "If-Match", api.Str(v1.Etag)), testRG, "rt", table())
		re := respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		if !strings.Contains(re.Error(), "PreconditionFailedEtagMismatch") {
			t.Errorf("412 body lacks the details code: %v", re)
		}
		if got := e.getTable(ctx, testRG, "rt"); api.Str(got.Etag) != api.Str(v2.Etag) || len(got.Properties.Routes) != 1 {
			t.Error("a refused write changed the table")
		}
		// The etag without W/ or quotes still matches (clients differ).
		bare := strings.Trim(strings.TrimPrefix(api.Str(v2.Etag), "W/"), `"`)
		v3 := e.mustPutTable(withHeader(ctx, "If-Match", bare), testRG, "rt", table())
		// If-Match: * needs the resource to exist.
		_, err = e.putTable(withHeader(ctx, "If-Match", "*"), testRG, "missing", table())
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		e.mustPutTable(withHeader(ctx, "If-Match", "*"), testRG, "rt", table(vaRoute("x", "10.1.0.0/24", "10.240.0.9")))
		// If-None-Match: * creates only.
		_, err = e.putTable(withHeader(ctx, "If-None-Match", "*"), testRG, "rt", table())
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		e.mustPutTable(withHeader(ctx, "If-None-Match", "*"), testRG, "fresh", table())
		// DELETE and PATCH honour If-Match too.
		_, err = e.tables.BeginDelete(withHeader(ctx, "If-Match", api.Str(v3.Etag)), testRG, "rt", nil)
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		_, err = e.tables.UpdateTags(withHeader(ctx, "If-Match", api.Str(v1.Etag)), testRG, "rt", armnetwork.TagsObject{}, nil)
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")

		// Routes: If-Match against the route's own etag.
		cur := e.getTable(ctx, testRG, "fresh")
		r, err := e.putRoute(ctx, testRG, "fresh", "a", *vaRoute("", "10.0.1.0/24", "10.240.0.4"))
		if err != nil {
			t.Fatal(err)
		}
		if api.Str(r.Etag) == "" || api.Str(e.getTable(ctx, testRG, "fresh").Etag) == api.Str(cur.Etag) {
			t.Error("a route write must change the route and the table etag")
		}
		_, err = e.putRoute(withHeader(ctx, "If-Match", api.Str(cur.Etag)), testRG, "fresh", "a", *vaRoute("", "10.0.1.0/24", "10.240.0.5"))
		respErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		if _, err := e.putRoute(withHeader(ctx, "If-Match", api.Str(r.Etag)), testRG, "fresh", "a", *vaRoute("", "10.0.1.0/24", "10.240.0.5")); err != nil {
			t.Errorf("route PUT with its current etag: %v", err)
		}
	})
}
