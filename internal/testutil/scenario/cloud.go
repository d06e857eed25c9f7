package scenario

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/route"
)

// errUnreadable is what a read of an unreadable resource fails with.
var errUnreadable = errors.New("500 InternalServerError")

// ParseCloud reads a script's cloud block: the whole cloud.
func ParseCloud(lines []string) (*memcloud.Cloud, error) {
	c := memcloud.New()
	var cur *route.Table
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "vnet":
			if len(f) != 3 {
				return nil, fmt.Errorf("%q: want vnet NAME PREFIXES", l)
			}
			id := VNetID(f[1])
			c.VNets[armid.Key(id)] = &observe.VirtualNetwork{ID: id, Name: f[1], Location: "eastus", AddressPrefixes: strings.Split(f[2], ",")}
		case "subnet":
			if len(f) < 3 {
				return nil, fmt.Errorf("%q: want subnet NAME PREFIX [vnet=V] [table=T]", l)
			}
			vnet, del, unreadable := DefaultVNet, false, false
			var tbl string
			for _, x := range f[3:] {
				k, v, _ := strings.Cut(x, "=")
				switch k {
				case "vnet":
					vnet = v
				case "table":
					tbl = TableID(v)
				case "missing":
					del = true
				case "unreadable":
					unreadable = true
				default:
					return nil, fmt.Errorf("%q: unknown %q", l, x)
				}
			}
			id := SubnetID(vnet, f[1])
			if unreadable {
				c.Unreadable[armid.Key(id)] = errUnreadable
			}
			if !del {
				c.Subnets[armid.Key(id)] = &observe.Subnet{ID: id, Name: f[1], AddressPrefixes: strings.Split(f[2], ","), RouteTableID: tbl, Etag: `W/"` + f[1] + `"`}
			}
		case "table":
			if len(f) < 2 {
				return nil, fmt.Errorf("%q: want table NAME", l)
			}
			id := TableID(f[1])
			cur = &route.Table{ID: id, Name: f[1], Location: "eastus", ResourceGroup: "rg", Etag: `W/"` + f[1] + `"`, Tags: map[string]string{}}
			keep := true
			for _, x := range f[2:] {
				k, v, _ := strings.Cut(x, "=")
				switch k {
				case "claim":
					cur.Tags[route.ClaimTag] = v
				case "tag":
					tk, tv, _ := strings.Cut(v, ":")
					cur.Tags[tk] = strings.ReplaceAll(tv, "@", TableID(""))
				case "missing":
					keep = false
				case "unreadable":
					c.Unreadable[armid.Key(id)] = errUnreadable
				default:
					return nil, fmt.Errorf("%q: unknown %q", l, x)
				}
			}
			if keep {
				c.Tables[armid.Key(id)] = cur
			}
		case "route":
			if cur == nil || len(f) < 4 {
				return nil, fmt.Errorf("%q: want route NAME PREFIX HOP|TYPE [state=S] under a table", l)
			}
			r := route.Route{Name: f[1], AddressPrefix: f[2], ProvisioningState: "Succeeded"}
			if p, err := netip.ParsePrefix(f[2]); err == nil {
				r.Prefix = p
			}
			if a, err := netip.ParseAddr(f[3]); err == nil {
				r.NextHopType, r.NextHopIP = route.VirtualAppliance, a
			} else {
				r.NextHopType = route.NextHopType(f[3])
			}
			for _, x := range f[4:] {
				if v, ok := strings.CutPrefix(x, "state="); ok {
					r.ProvisioningState = v
				}
			}
			cur.Routes = append(cur.Routes, r)
		case "peering":
			// peering NAME vnet=V remote=R space=PREFIX[,PREFIX] [state=S]:
			// V's side of a peering with R (Connected by default).
			if len(f) < 2 {
				return nil, fmt.Errorf("%q: want peering NAME vnet=V remote=R space=PREFIXES [state=S]", l)
			}
			p := observe.Peering{Name: f[1], State: "Connected"}
			vnet := DefaultVNet
			for _, x := range f[2:] {
				k, v, _ := strings.Cut(x, "=")
				switch k {
				case "vnet":
					vnet = v
				case "remote":
					p.RemoteVNetID = VNetID(v)
				case "space":
					p.RemoteAddressPrefixes = strings.Split(v, ",")
				case "state":
					p.State = v
				default:
					return nil, fmt.Errorf("%q: unknown %q", l, x)
				}
			}
			v := c.VNets[armid.Key(VNetID(vnet))]
			if v == nil {
				return nil, fmt.Errorf("%q: no vnet %s above it", l, vnet)
			}
			v.Peerings = append(v.Peerings, p)
		case "nic":
			// nic NAME IP[,IP] [forwarding=false]: a node's NIC, in the
			// subnet that holds its first address, IP forwarding on by
			// default.
			if len(f) < 3 {
				return nil, fmt.Errorf("%q: want nic NAME IP[,IP] [forwarding=false]", l)
			}
			n := observe.NetworkInterface{ID: Prefix + "networkInterfaces/" + f[1], Name: f[1], IPForwarding: true}
			for _, ip := range strings.Split(f[2], ",") {
				a, err := netip.ParseAddr(ip)
				if err != nil {
					return nil, fmt.Errorf("%q: %w", l, err)
				}
				n.IPs = append(n.IPs, a)
			}
			for _, x := range f[3:] {
				v, ok := strings.CutPrefix(x, "forwarding=")
				if !ok {
					return nil, fmt.Errorf("%q: unknown %q", l, x)
				}
				on, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("%q: %w", l, err)
				}
				n.IPForwarding = on
			}
			c.NICs = append(c.NICs, n)
		default:
			return nil, fmt.Errorf("cloud line %q", l)
		}
	}
	// A NIC is in the subnet that holds its first address.
	for i := range c.NICs {
		n := &c.NICs[i]
		for _, k := range slices.Sorted(maps.Keys(c.Subnets)) {
			if sn := c.Subnets[k]; holds(sn.AddressPrefixes, n.IPs[0]) {
				n.SubnetIDs = []string{sn.ID}
				break
			}
		}
		if len(n.SubnetIDs) == 0 {
			return nil, fmt.Errorf("nic %s: no subnet holds %s", n.Name, n.IPs[0])
		}
	}
	return c, nil
}

// holds reports whether one of prefixes (CIDRs) holds a.
func holds(prefixes []string, a netip.Addr) bool {
	for _, s := range prefixes {
		if p, err := netip.ParsePrefix(s); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}
