package fabric

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/testutil/kthw"
)

const nicTopology = kthw.Topology + kthw.NICs

func TestApplyNICs(t *testing.T) {
	ctx := context.Background()
	e := newNICEnv(t, "inprocess", Options{})
	path := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(path, []byte(nicTopology), 0o644); err != nil {
		t.Fatal(err)
	}
	res := applyFile(t, e.env, path)
	if res.Count(topology.ActionCreate) != 2 {
		t.Errorf("first apply: %+v", res.Changes)
	}
	n, err := e.nics.Get(ctx, "kubernetes", "worker-1-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *n.Properties.EnableIPForwarding || api.Str(n.Properties.IPConfigurations[0].Properties.PrivateIPAddress) != "10.240.0.21" {
		t.Errorf("worker-1-nic = %+v", n.Properties)
	}
	if res := applyFile(t, e.env, path); res.Writes != 0 {
		t.Errorf("second apply wrote %d times: %+v", res.Writes, res.Changes)
	}
	// Turning IP forwarding on for worker-1 is one update.
	fixed := strings.Replace(nicTopology, "privateIPAddress: 10.240.0.21\n", "privateIPAddress: 10.240.0.21\n        enableIPForwarding: true\n", 1)
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := applyFile(t, e.env, path); res.Writes != 1 || res.Count(topology.ActionUpdate) != 1 {
		t.Errorf("forwarding apply: %d writes %+v", res.Writes, res.Changes)
	}
	n, _ = e.nics.Get(ctx, "kubernetes", "worker-1-nic", nil)
	if !*n.Properties.EnableIPForwarding {
		t.Error("IP forwarding still off")
	}
}

func TestNICTopologyErrors(t *testing.T) {
	tests := []struct{ replace, with, want string }{
		{"subnet: kubernetes-vnet/kubernetes-subnet\n        privateIPAddress: 10.240.0.20", "subnet: kubernetes-subnet\n        privateIPAddress: 10.240.0.20",
			`resourceGroups[0].networkInterfaces[0].subnet: "kubernetes-subnet" is neither <virtual network>/<subnet> nor a subnet ID`},
		{"privateIPAddress: 10.240.0.21", "privateIPAddress: 10.240.0.321", `resourceGroups[0].networkInterfaces[1].privateIPAddress: "10.240.0.321" is not an IP address`},
		{"name: worker-1-nic", "name: worker-0-nic", `resourceGroups[0].networkInterfaces[1].name: "worker-0-nic" is declared twice`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := topology.ParseTopology([]byte(strings.Replace(nicTopology, tt.replace, tt.with, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}
