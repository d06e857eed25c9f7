package azure

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/observe"
)

// ListUsages lists Microsoft.Network's usages of a subscription in a
// region: each of Azure's limits there (RoutesPerRouteTable, RouteTables,
// ...) with its current value. One GET (a page of a few dozen entries);
// it needs Microsoft.Network/locations/usages/read on the subscription.
func (c *Client) ListUsages(ctx context.Context, subscription, location string) ([]observe.Usage, error) {
	sc, err := c.clients(subscription)
	if err != nil {
		return nil, err
	}
	var out []observe.Usage
	pager := sc.usages.NewListPager(location, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			scope := "/subscriptions/" + subscription
			return nil, classify("listing the usages of subscription "+subscription+" in "+location, scope, err)
		}
		for _, u := range page.Value {
			if u == nil || u.Name == nil {
				continue
			}
			ou := observe.Usage{Name: str(u.Name.Value)}
			if u.CurrentValue != nil {
				ou.Current = *u.CurrentValue
			}
			if u.Limit != nil {
				ou.Limit = *u.Limit
			}
			out = append(out, ou)
		}
	}
	return out, nil
}
