package fabric

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	for _, mode := range transports {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mode, Options{OperationDuration: 30 * 1e6})
			ctx := context.Background()
			e.createRG(testRG)
			e.seedVNet(ctx, testRG)
			rt := e.mustPutTable(ctx, testRG, "kubernetes-routes", table(vaRoute("r0", "10.200.0.0/24", "10.240.0.20")))
			t.Logf("%s %s %v", *rt.ID, *rt.Etag, *rt.Properties.ProvisioningState)
			got := e.getTable(ctx, testRG, "kubernetes-routes")
			t.Logf("%v", routeNames(got))
		})
	}
}
