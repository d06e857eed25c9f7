package azure_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// A virtual network's GET carries its side of each peering
// (properties.virtualNetworkPeerings), so the observer knows them without
// the list call or its right: the same peerings as ListPeerings, in one
// read.
func TestGetVirtualNetworkPeerings(t *testing.T) {
	env := hubSpoke(t)
	ctx := context.Background()
	r0, _ := env.Client.Calls()
	v, err := env.Client.GetVirtualNetwork(ctx, fabrictest.KTHWVNet)
	if err != nil {
		t.Fatal(err)
	}
	if r1, _ := env.Client.Calls(); r1-r0 != 1 {
		t.Errorf("%d reads, want 1", r1-r0)
	}
	listed, err := env.Client.ListPeerings(ctx, fabrictest.KTHWVNet)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Peerings) != 1 || v.Peerings[0].RemoteVNetID != hubVNet || v.Peerings[0].State != "Connected" {
		t.Errorf("peerings of the network's GET: %+v", v.Peerings)
	}
	if d := cmp.Diff(listed, v.Peerings); d != "" {
		t.Errorf("the GET's peerings differ from the list's (-list +get):\n%s", d)
	}
}
