package topology

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

// Snapshot reads what a fabric holds through the SDK: the given
// subscriptions, or every subscription the fabric knows when none is given.
func Snapshot(ctx context.Context, opts *arm.ClientOptions, cred azcore.TokenCredential, subscriptions ...string) (*network.State, error) {
	c, err := newARMClient(cred, opts)
	if err != nil {
		return nil, err
	}
	if len(subscriptions) == 0 {
		var list struct {
			Value []network.Subscription `json:"value"`
		}
		if _, err := c.do(ctx, http.MethodGet, "/subscriptions", nil, &list); err != nil {
			return nil, fmt.Errorf("listing subscriptions: %w", err)
		}
		for _, s := range list.Value {
			subscriptions = append(subscriptions, s.SubscriptionID)
		}
	}
	st := &network.State{ResourceGroups: []network.StateResourceGroup{}, VirtualNetworks: []network.StateVirtualNetwork{}, RouteTables: []network.StateRouteTable{}}
	for _, sub := range subscriptions {
		if err := snapshotSubscription(ctx, c, sub, opts, cred, st); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(st.ResourceGroups, func(a, b network.StateResourceGroup) int {
		return cmp.Or(strings.Compare(api.Key(a.Subscription), api.Key(b.Subscription)), strings.Compare(api.Key(a.Name), api.Key(b.Name)))
	})
	slices.SortFunc(st.VirtualNetworks, func(a, b network.StateVirtualNetwork) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	slices.SortFunc(st.RouteTables, func(a, b network.StateRouteTable) int { return strings.Compare(api.Key(a.ID), api.Key(b.ID)) })
	return st, nil
}

func snapshotSubscription(ctx context.Context, c *armClient, sub string, opts *arm.ClientOptions, cred azcore.TokenCredential, st *network.State) error {
	var rgs struct {
		Value []network.ResourceGroup `json:"value"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/subscriptions/"+sub+"/resourcegroups", nil, &rgs); err != nil {
		return fmt.Errorf("listing resource groups of %s: %w", sub, err)
	}
	for _, rg := range rgs.Value {
		st.ResourceGroups = append(st.ResourceGroups, network.StateResourceGroup{
			Subscription: sub, Name: rg.Name, Location: rg.Location, Tags: rg.Tags, ProvisioningState: rg.Properties.ProvisioningState})
	}
	vnets, err := armnetwork.NewVirtualNetworksClient(sub, cred, opts)
	if err != nil {
		return err
	}
	err = eachPage(ctx, vnets.NewListAllPager(nil), "virtual networks of "+sub, func(page armnetwork.VirtualNetworksClientListAllResponse) {
		for _, v := range page.Value {
			st.VirtualNetworks = append(st.VirtualNetworks, network.StateVNet(sub, v))
		}
	})
	if err != nil {
		return err
	}
	tables, err := armnetwork.NewRouteTablesClient(sub, cred, opts)
	if err != nil {
		return err
	}
	return eachPage(ctx, tables.NewListAllPager(nil), "route tables of "+sub, func(page armnetwork.RouteTablesClientListAllResponse) {
		for _, t := range page.Value {
			st.RouteTables = append(st.RouteTables, network.StateTable(sub, t))
		}
	})
}

// eachPage hands every page of a pager to use; what names the list in the
// error of a page that could not be read.
func eachPage[T any](ctx context.Context, pg *runtime.Pager[T], what string, use func(T)) error {
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing %s: %w", what, describe(err))
		}
		use(page)
	}
	return nil
}
