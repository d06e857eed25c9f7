package azure_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

func TestListNetworkInterfaces(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW+kthw.NICs)
	got, err := env.Client.ListNetworkInterfaces(context.Background(), fabrictest.Sub)
	if err != nil {
		t.Fatal(err)
	}
	nicID := func(n string) string {
		return "/subscriptions/" + fabrictest.Sub + "/resourceGroups/kubernetes/providers/Microsoft.Network/networkInterfaces/" + n
	}
	want := []azure.NetworkInterface{
		{ID: nicID("worker-0-nic"), Name: "worker-0-nic", IPForwarding: true, IPs: []netip.Addr{netip.MustParseAddr("10.240.0.20")}, SubnetIDs: []string{fabrictest.KTHWSubnet}},
		{ID: nicID("worker-1-nic"), Name: "worker-1-nic", IPs: []netip.Addr{netip.MustParseAddr("10.240.0.21")}, SubnetIDs: []string{fabrictest.KTHWSubnet}},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("ListNetworkInterfaces (-want +got):\n%s", d)
	}
}
