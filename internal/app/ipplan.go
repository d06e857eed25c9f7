package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/ipplan"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// subnetReader is what `ipplan --config` reads from the cloud.
type subnetReader interface {
	GetSubnet(ctx context.Context, id string) (*observe.Subnet, error)
	GetVirtualNetwork(ctx context.Context, id string) (*azure.VirtualNetwork, error)
}

// LivePlan builds a plan from a live routekeeper config file: the
// cluster's pod and service ranges, its route limit and node range size
// from the config, and the subnets and their VNets' address spaces read
// from the cloud (endpoint, when set, is a served fabric's).
func (a *App) LivePlan(ctx context.Context, path, endpoint string) (ipplan.Plan, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return ipplan.Plan{}, BadInput(err)
	}
	if endpoint != "" {
		cfg.Cloud.Type, cfg.Cloud.Local.State, cfg.Cloud.Local.Endpoint = config.CloudLocal, "", endpoint
	}
	if len(cfg.Subnets) == 0 {
		return ipplan.Plan{}, BadInputf("config file %s: subnets: none configured; ipplan --config reads the node subnet and its VNet from the cloud", path)
	}
	conn, err := a.Connect(ctx, cfg, ConnectOptions{ReadOnly: true})
	if err != nil {
		return ipplan.Plan{}, err
	}
	defer conn.Close()
	return livePlanFrom(ctx, cfg, conn.Client, a.Log)
}

// livePlanFrom maps a config and what the cloud says about its subnets to a
// plan. Routes in a route table are kubenet's model, so the plugin is
// kubenet unless a flag says otherwise. The first configured subnet is the
// node subnet. IPv6 ranges come along: a dual-stack cluster plans as dual-stack.
func livePlanFrom(ctx context.Context, cfg *config.Config, r subnetReader, log *slog.Logger) (ipplan.Plan, error) {
	p := ipplan.Plan{
		Plugins:          []ipplan.Plugin{ipplan.Kubenet},
		RouteLimit:       cfg.RouteTable.RouteLimit,
		NodeCIDRMaskSize: cfg.Cluster.NodeCIDRMaskSize,
		// routekeeper writes the routes of a self-managed cluster; it only
		// observes those AKS writes.
		Platform: ipplan.PlatformSelfManaged,
	}
	if cfg.Routes == config.RoutesObserve {
		p.Platform = ipplan.PlatformAKS
	}
	p.PodCIDR = firstPerFamily(cfg.Cluster.ClusterCIDRs)
	p.ServiceCIDR = firstPerFamily(cfg.Cluster.ServiceCIDRs)
	if len(cfg.Cluster.ServiceCIDRs) > 0 {
		// The cluster DNS service is conventionally the .10 address of the
		// first service range (the IPv4 one of a dual-stack cluster).
		svc, _ := netip.ParsePrefix(p.ServiceCIDR[0])
		dns := svc.Masked().Addr()
		for range 10 {
			dns = dns.Next()
		}
		p.DNSServiceIP = dns.String()
	}
	var vnetIDs []string
	names := map[string]bool{}
	for i, id := range cfg.Subnets {
		s, err := r.GetSubnet(ctx, id)
		if err != nil {
			return p, fmt.Errorf("config subnets[%d]: %w", i, err)
		}
		vnetID, err := armid.VNetOfSubnet(id)
		if err != nil {
			return p, BadInputf("config %s: subnets[%d]: %w", cfg.File, i, err)
		}
		if !armid.Contains(vnetIDs, vnetID) {
			vnetIDs = append(vnetIDs, vnetID)
		}
		name := s.Name
		if names[name] { // same name in another VNet
			name = path.Base(vnetID) + "/" + s.Name
		}
		names[name] = true
		// One subnet per IPv4 prefix (name, name#2, ...); the first IPv6
		// prefix joins the first of them, as a dual-stack subnet.
		var first *ipplan.Subnet
		var v6 []string
		n := 0
		for _, prefix := range s.AddressPrefixes {
			if isIPv6(prefix) {
				v6 = append(v6, prefix)
				continue
			}
			n++
			sn := ipplan.Subnet{Name: name, Prefix: prefix}
			if n > 1 {
				sn.Name = fmt.Sprintf("%s#%d", name, n)
			}
			p.Subnets = append(p.Subnets, sn)
			if n == 1 {
				first = &p.Subnets[len(p.Subnets)-1]
			}
		}
		for k, prefix := range v6 {
			switch {
			case k == 0 && first != nil:
				first.Prefix += "," + prefix
			default:
				sn := ipplan.Subnet{Name: fmt.Sprintf("%s#%d", name, n+k+1), Prefix: prefix}
				if k == 0 {
					sn.Name = name
				}
				p.Subnets = append(p.Subnets, sn)
			}
		}
		if len(v6) > 0 {
			log.Debug("ipplan: a dual-stack subnet", "subnet", id, "ipv6", v6)
		}
	}
	for _, id := range vnetIDs {
		v, err := r.GetVirtualNetwork(ctx, id)
		if err != nil {
			return p, err // it names the operation and the network
		}
		for _, prefix := range v.AddressPrefixes {
			if !slices.Contains(p.VNet, prefix) {
				p.VNet = append(p.VNet, prefix)
			}
		}
	}
	return p, nil
}

// firstPerFamily is the first range of each IP family, IPv4 first.
func firstPerFamily(ps []netip.Prefix) ipplan.StringList {
	var out ipplan.StringList
	for _, v4 := range []bool{true, false} {
		for _, p := range ps {
			if p.Addr().Is4() == v4 {
				out = append(out, p.String())
				break
			}
		}
	}
	return out
}

func isIPv6(prefix string) bool { return strings.Contains(prefix, ":") }
