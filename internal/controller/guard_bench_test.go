package controller

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// BenchmarkGuardCycle measures one association guard cycle against the
// in-process fabric through the real SDK: "steady" (the subnet is on the
// table: the cost paid every interval) and "repair-seed001" (a VNet
// redeploy detached the table before each cycle; the redeploy is not
// timed). reads/op and writes/op are routekeeper's ARM calls per cycle.
func BenchmarkGuardCycle(b *testing.B) {
	for _, repair := range []bool{false, true} {
		name := "steady"
		if repair {
			name = "repair-seed001"
		}
		b.Run(name, func(b *testing.B) {
			env := fabrictest.New(b, fabric.Options{}, fabrictest.KTHW)
			cfg := scenarioConfig()
			c := New(cfg, env.Client, &staticSource{nodes: workers(3)}, nil)
			ctx := context.Background()
			if r := c.Reconcile(ctx); r.Err != nil || r.AssociationProblems() > 0 {
				b.Fatalf("set-up: %s %v", r.Summary(), r.Err)
			}
			f, err := armnetwork.NewClientFactory(fabrictest.Sub, fabric.Credential{}, env.Server.ClientOptions())
			if err != nil {
				b.Fatal(err)
			}
			vnets := f.NewVirtualNetworksClient()
			redeploy := func() {
				p, err := vnets.BeginCreateOrUpdate(ctx, "kubernetes", "kubernetes-vnet", armnetwork.VirtualNetwork{
					Location: to.Ptr("eastus"),
					Properties: &armnetwork.VirtualNetworkPropertiesFormat{
						AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{to.Ptr("10.240.0.0/16")}},
						Subnets: []*armnetwork.Subnet{{Name: to.Ptr("kubernetes-subnet"),
							Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr("10.240.0.0/24")}}},
					},
				}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.PollUntilDone(ctx, sdkPoll); err != nil {
					b.Fatal(err)
				}
			}
			var reads, writes int64
			b.ResetTimer()
			for b.Loop() {
				if repair {
					b.StopTimer()
					redeploy()
					b.StartTimer()
				}
				g := c.Guard(ctx)
				if repair && g.Repairs() != 1 || !repair && g.AssociationProblems() != 0 {
					b.Fatalf("guard: %s", g.Summary())
				}
				reads += g.Reads
				writes += g.Writes
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		})
	}
}
