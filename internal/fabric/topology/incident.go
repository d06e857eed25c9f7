package topology

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Incidents on demand: the writes other people and tools make that break
// pod routing, replayed through the ARM API (in process or against a
// served fabric) so that routekeeper meets them as it would in Azure:
// here the writes that break the network, in incident_authz.go those that
// take away the right to repair it. Each returns what it changed.

// Actions of an incident's changes.
const (
	ActionRedeploy  = "redeploy"
	ActionDetach    = "detach"
	ActionAssociate = "associate"
	ActionDelete    = "delete"
)

// Incidents runs incidents against a fabric.
type Incidents struct {
	vnets   *armnetwork.VirtualNetworksClient
	subnets *armnetwork.SubnetsClient
	tables  *armnetwork.RouteTablesClient
	arm     *armClient // Microsoft.Authorization (incident_authz.go)
	sub     string
}

// NewIncidents returns an incident runner for subscription sub ("" for
// the default) over opts.
func NewIncidents(sub string, opts *arm.ClientOptions, cred azcore.TokenCredential) (*Incidents, error) {
	sub = cmp.Or(sub, api.DefaultSubscription)
	f, err := armnetwork.NewClientFactory(sub, cred, opts)
	if err != nil {
		return nil, err
	}
	c, err := newARMClient(cred, opts)
	if err != nil {
		return nil, err
	}
	return &Incidents{vnets: f.NewVirtualNetworksClient(), subnets: f.NewSubnetsClient(), tables: f.NewRouteTablesClient(), arm: c, sub: sub}, nil
}

// ResolveID turns what a user typed into an ARM ID: a full ID is kept
// (its type must match), else name is the resource's name (for a subnet,
// VNET/SUBNET) in resource group rg.
func (in *Incidents) ResolveID(typ, rg, name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		a, ok := api.ParseNetworkID(name)
		want := typ
		child := ""
		if typ == api.ChildSubnets {
			want, child = api.TypeVirtualNetworks, api.ChildSubnets
		}
		if !ok || a.Type != want || a.Child != child {
			return "", fmt.Errorf("%q is not the ID of a %s", name, strings.TrimSuffix(typ, "s"))
		}
		return name, nil
	}
	if rg == "" {
		return "", fmt.Errorf("%q is a name: give the resource group (-g) or a full resource ID", name)
	}
	switch typ {
	case api.ChildSubnets:
		vnet, sn, ok := strings.Cut(name, "/")
		if !ok || vnet == "" || sn == "" || strings.Contains(sn, "/") {
			return "", fmt.Errorf("subnet %q: write VNET/SUBNET, for example kubernetes-vnet/kubernetes-subnet, or a full subnet ID", name)
		}
		return api.ChildID(api.ResourceID(in.sub, rg, api.TypeVirtualNetworks, vnet), api.ChildSubnets, sn), nil
	default:
		if name == "" || strings.Contains(name, "/") {
			return "", fmt.Errorf("%q is not a %s name", name, strings.TrimSuffix(typ, "s"))
		}
		return api.ResourceID(in.sub, rg, typ, name), nil
	}
}

// pollOpts is how the incident verbs wait for their operations: the SDK
// refuses a frequency under one second outside tests (it skips that check
// when the test flags are defined, so only a built binary shows it), and
// the fabric's Retry-After says how long is really left.
func pollOpts() *runtime.PollUntilDoneOptions { return pollOptions }

// Redeploy replays the missing route table assignment: a VNet PUT from an ARM template or Terraform
// that carries its subnets inline without the route tables it does not
// know about, so every subnet loses its table.
func (in *Incidents) Redeploy(ctx context.Context, vnetID string) ([]Change, error) {
	a, _ := api.ParseNetworkID(vnetID)
	cur, err := in.vnets.Get(ctx, a.RG, a.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("reading virtual network %s: %w", vnetID, err)
	}
	v := armnetwork.VirtualNetwork{Location: cur.Location, Tags: cur.Tags, Properties: &armnetwork.VirtualNetworkPropertiesFormat{}}
	var changes []Change
	if cur.Properties != nil {
		v.Properties.AddressSpace = cur.Properties.AddressSpace
		v.Properties.DhcpOptions = cur.Properties.DhcpOptions
		for _, sn := range cur.Properties.Subnets {
			if sn == nil || sn.Properties == nil {
				continue
			}
			p := sn.Properties
			v.Properties.Subnets = append(v.Properties.Subnets, &armnetwork.Subnet{Name: sn.Name, Properties: &armnetwork.SubnetPropertiesFormat{
				AddressPrefix: p.AddressPrefix, AddressPrefixes: p.AddressPrefixes, NetworkSecurityGroup: p.NetworkSecurityGroup,
				Delegations: p.Delegations, ServiceEndpoints: p.ServiceEndpoints,
			}})
			if p.RouteTable != nil && p.RouteTable.ID != nil {
				changes = append(changes, Change{Action: ActionDetach, Kind: "subnet", ID: *sn.ID, Detail: "route table " + armid.Name(*p.RouteTable.ID) + " dropped"})
			}
		}
	}
	p, err := in.vnets.BeginCreateOrUpdate(ctx, a.RG, a.Name, v, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOpts())
	}
	if err != nil {
		return nil, fmt.Errorf("redeploying virtual network %s: %w", vnetID, err)
	}
	detail := "PUT with its subnets inline and no route tables, as an ARM/Terraform redeploy sends"
	return append([]Change{{Action: ActionRedeploy, Kind: "virtualNetwork", ID: api.Str(cur.ID), Detail: detail}}, changes...), nil
}

// setSubnetTable writes a subnet with tableID as its route table ("" for
// none), keeping the rest of it.
func (in *Incidents) setSubnetTable(ctx context.Context, subnetID, tableID string) (old string, err error) {
	a, _ := api.ParseNetworkID(subnetID)
	cur, err := in.subnets.Get(ctx, a.RG, a.Name, a.ChildName, nil)
	if err != nil {
		return "", fmt.Errorf("reading subnet %s: %w", subnetID, err)
	}
	sn := cur.Subnet
	if sn.Properties == nil {
		sn.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	if sn.Properties.RouteTable != nil {
		old = api.Str(sn.Properties.RouteTable.ID)
	}
	if tableID == "" {
		sn.Properties.RouteTable = nil
	} else {
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: &tableID}
	}
	// Read-only parts are not sent back.
	sn.Properties.IPConfigurations, sn.Properties.ProvisioningState = nil, nil
	p, err := in.subnets.BeginCreateOrUpdate(ctx, a.RG, a.Name, a.ChildName, armnetwork.Subnet{Properties: sn.Properties}, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOpts())
	}
	if err != nil {
		return old, fmt.Errorf("writing subnet %s: %w", subnetID, err)
	}
	return old, nil
}

// Detach removes a subnet's route table association, as someone in the
// portal does.
func (in *Incidents) Detach(ctx context.Context, subnetID string) ([]Change, error) {
	old, err := in.setSubnetTable(ctx, subnetID, "")
	if err != nil {
		return nil, err
	}
	if old == "" {
		return []Change{{Action: ActionUnchanged, Kind: "subnet", ID: subnetID, Detail: "had no route table"}}, nil
	}
	return []Change{{Action: ActionDetach, Kind: "subnet", ID: subnetID, Detail: "route table " + armid.Name(old) + " removed"}}, nil
}

// Swap replays the route table swap of an AKS kubenet cluster: the subnet
// is pointed at another table; with
// deleteOld the table it had is deleted afterwards.
func (in *Incidents) Swap(ctx context.Context, subnetID, tableID string, deleteOld bool) ([]Change, error) {
	old, err := in.setSubnetTable(ctx, subnetID, tableID)
	if err != nil {
		return nil, err
	}
	detail := "route table " + armid.Name(tableID)
	if old != "" {
		detail += " instead of " + armid.Name(old)
	}
	changes := []Change{{Action: ActionAssociate, Kind: "subnet", ID: subnetID, Detail: detail}}
	if !deleteOld || old == "" || strings.EqualFold(old, tableID) {
		return changes, nil
	}
	if err := in.deleteTable(ctx, old); err != nil {
		return changes, err
	}
	return append(changes, Change{Action: ActionDelete, Kind: "routeTable", ID: old, Detail: "the old table"}), nil
}

// DeleteTable deletes a route table as its owner would: detached from
// every subnet first (Azure refuses to delete a table in use), then gone.
func (in *Incidents) DeleteTable(ctx context.Context, tableID string) ([]Change, error) {
	a, _ := api.ParseNetworkID(tableID)
	cur, err := in.tables.Get(ctx, a.RG, a.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("reading route table %s: %w", tableID, err)
	}
	var changes []Change
	if cur.Properties != nil {
		for _, sn := range cur.Properties.Subnets {
			if sn == nil || sn.ID == nil {
				continue
			}
			if _, err := in.setSubnetTable(ctx, *sn.ID, ""); err != nil {
				return changes, err
			}
			changes = append(changes, Change{Action: ActionDetach, Kind: "subnet", ID: *sn.ID, Detail: "route table " + a.Name + " removed"})
		}
	}
	if err := in.deleteTable(ctx, api.Str(cur.ID)); err != nil {
		return changes, err
	}
	n := 0
	if cur.Properties != nil {
		n = len(cur.Properties.Routes)
	}
	return append(changes, Change{Action: ActionDelete, Kind: "routeTable", ID: api.Str(cur.ID), Detail: fmt.Sprintf("with its %d routes", n)}), nil
}

func (in *Incidents) deleteTable(ctx context.Context, tableID string) error {
	a, ok := api.ParseNetworkID(tableID)
	if !ok {
		return errors.New("not a route table ID: " + tableID)
	}
	p, err := in.tables.BeginDelete(ctx, a.RG, a.Name, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOpts())
	}
	if err != nil {
		return fmt.Errorf("deleting route table %s: %w", tableID, err)
	}
	return nil
}
