package fabric

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
)

func TestApplyInterconnect(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := New(st, Options{})
	top, err := topology.LoadTopology("testdata/topology/hub-spoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := topology.Apply(ctx, top, srv.ClientOptions(), identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Changes {
		switch c.Kind {
		case "virtualNetworkPeering", "virtualNetworkGateway", "localNetworkGateway", "connection", "bgpRoutes":
			got = append(got, c.Action+" "+c.Kind+" "+c.ID[strings.LastIndex(c.ID, "/")+1:]+": "+c.Detail)
		}
	}
	want := []string{
		"create virtualNetworkGateway hub-vpn: Vpn in hub-vnet/GatewaySubnet",
		"create localNetworkGateway datacenter: 203.0.113.10: 10.9.0.0/16",
		"create connection hub-to-datacenter: IPsec hub-vpn to datacenter",
		"update bgpRoutes hub-vpn: 192.168.50.0/24",
		"create virtualNetworkPeering to-kubernetes: to kubernetes/kubernetes-vnet, forwarded traffic true, gateway transit true, remote gateways false",
		"create virtualNetworkPeering to-hub: to hub/hub-vnet, forwarded traffic false, gateway transit false, remote gateways true",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}

	again, err := topology.Apply(ctx, top, srv.ClientOptions(), identity.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Writes != 0 || again.Count(topology.ActionCreate)+again.Count(topology.ActionUpdate) != 0 {
		t.Errorf("second apply: %d writes, changes %+v", again.Writes, again.Changes)
	}

	ns, err := network.Networks(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var peerings []string
	for _, v := range ns.VirtualNetworks {
		for _, p := range v.Peerings {
			peerings = append(peerings, v.Name+"/"+p.Name+" "+p.PeeringState+" "+strings.Join(p.RemoteAddressPrefixes, ","))
		}
	}
	if d := cmp.Diff([]string{"hub-vnet/to-kubernetes Connected 10.240.0.0/16", "kubernetes-vnet/to-hub Connected 10.250.0.0/16"}, peerings); d != "" {
		t.Errorf("peerings (-want +got):\n%s", d)
	}
	if len(ns.Gateways) != 1 || strings.Join(ns.Gateways[0].LearnedPrefixes, ",") != "10.9.0.0/16,192.168.50.0/24" {
		t.Errorf("gateways: %+v", ns.Gateways)
	}
}

func TestTopologyInterconnectErrors(t *testing.T) {
	const base = `location: eastus
resourceGroups:
  - name: hub
    virtualNetworks:
      - name: hub-vnet
        addressPrefixes: [10.250.0.0/16]
        peerings:
          - {name: to-k8s, remoteVirtualNetwork: kubernetes/kubernetes-vnet}
    virtualNetworkGateways:
      - {name: hub-vpn, gatewayType: Vpn, virtualNetwork: hub-vnet, bgpRoutes: [10.0.0.0/8]}
    localNetworkGateways:
      - {name: datacenter, gatewayIpAddress: 203.0.113.10, addressPrefixes: [10.9.0.0/16]}
    connections:
      - {name: hub-to-datacenter, virtualNetworkGateway: hub-vpn, localNetworkGateway: datacenter}
`
	if _, err := topology.ParseTopology([]byte(base)); err != nil {
		t.Fatalf("base topology: %v", err)
	}
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"peering to itself", "kubernetes/kubernetes-vnet", "hub-vnet", []string{"peerings[0].remoteVirtualNetwork", "own virtual network"}},
		{"peering to an unknown network", "kubernetes/kubernetes-vnet", "nope", []string{"peerings[0].remoteVirtualNetwork", `"nope"`, "<group>/<vnet>"}},
		{"bad peering name", "name: to-k8s", "name: to k8s", []string{"peerings[0].name"}},
		{"gateway type", "gatewayType: Vpn", "gatewayType: LocalGateway", []string{"virtualNetworkGateways[0].gatewayType", `"LocalGateway"`}},
		{"gateway network", "virtualNetwork: hub-vnet", "virtualNetwork: other", []string{"virtualNetworkGateways[0].virtualNetwork", `"other"`}},
		{"bgp route", "bgpRoutes: [10.0.0.0/8]", "bgpRoutes: [10.0.0.1/8]", []string{"virtualNetworkGateways[0].bgpRoutes[0]", "host bits"}},
		{"site address", "gatewayIpAddress: 203.0.113.10", "gatewayIpAddress: vpn.example", []string{"localNetworkGateways[0].gatewayIpAddress"}},
		{"site prefix", "addressPrefixes: [10.9.0.0/16]", "addressPrefixes: [10.9.0.0/33]", []string{"localNetworkGateways[0].addressPrefixes[0]"}},
		{"connection gateway", "virtualNetworkGateway: hub-vpn,", "virtualNetworkGateway: nope,", []string{"connections[0].virtualNetworkGateway", `"nope"`}},
		{"connection without site", ", localNetworkGateway: datacenter}", "}", []string{"connections[0]", "localNetworkGateway"}},
		{"connection site", "localNetworkGateway: datacenter}", "localNetworkGateway: nope}", []string{"connections[0].localNetworkGateway", `"nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(base, tc.old, tc.new, 1)
			if doc == base {
				t.Fatalf("%q not in the base topology", tc.old)
			}
			_, err := topology.ParseTopology([]byte(doc))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
