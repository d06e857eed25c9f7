package network

import (
	"context"
	"net/http"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// The usages API: GET /subscriptions/{sub}/providers/Microsoft.Network/
// locations/{location}/usages lists, for the subscription in that region,
// each limit with what is used of it. Its shape is the REST API spec's
// (Azure/azure-rest-api-specs, specification/network, usage.json:
// Usages_List, example UsageList.json; armnetwork's UsagesClient.NewListPager):
//
//	{"value": [{"id": "/subscriptions/{sub}/providers/Microsoft.Network/locations/{location}/usages/RoutesPerRouteTable",
//	            "name": {"value": "RoutesPerRouteTable", "localizedValue": "Routes per Route Table"},
//	            "currentValue": 0, "limit": 1000, "unit": "Count"}, ...],
//	 "nextLink": ...}
//
// The fabric serves the two limits it enforces, under the names and
// localized names of that example. RouteTables' currentValue is how many
// route tables the subscription holds in the region; RoutesPerRouteTable's
// is the most routes one of them holds (a limit per table has no one
// current value: the spec's example shows 0).
const (
	UsageRoutesPerRouteTable = "RoutesPerRouteTable"
	UsageRouteTables         = "RouteTables"
)

// usage is one entry of the usages list.
type usage struct {
	ID           string    `json:"id"`
	Name         usageName `json:"name"`
	CurrentValue int64     `json:"currentValue"`
	Limit        int64     `json:"limit"`
	Unit         string    `json:"unit"`
}

type usageName struct {
	Value          string `json:"value"`
	LocalizedValue string `json:"localizedValue"`
}

// getUsages serves the usages of the subscription in the path's location.
func (s *Provider) getUsages(ctx context.Context, q *api.Request) (*api.Response, error) {
	sub, loc := q.Segs[1], strings.ToLower(q.Segs[5])
	var c store.LocationCount
	err := s.View(ctx, func(tx *store.Txn) error {
		var err error
		c, err = tx.ResourcesInLocation(api.Key(sub), api.TypeRouteTables, loc, "routes")
		return err
	})
	if err != nil {
		return nil, err
	}
	base := "/subscriptions/" + sub + "/providers/Microsoft.Network/locations/" + loc + "/usages/"
	list := []usage{
		{ID: base + UsageRouteTables, Name: usageName{UsageRouteTables, "Route Tables"},
			CurrentValue: int64(c.Resources), Limit: int64(s.tablesLimit), Unit: "Count"},
		{ID: base + UsageRoutesPerRouteTable, Name: usageName{UsageRoutesPerRouteTable, "Routes per Route Table"},
			CurrentValue: int64(c.MostChildren), Limit: int64(s.routeLimit), Unit: "Count"},
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": list}}, nil
}

// checkTablesLimit refuses to create a route table in a location where the
// subscription already holds as many as it may. The refusal has the shape
// of Azure's documented per-region count limits of Microsoft.Network,
// which answer 400 with code <Resource>CountLimitReached and "Cannot create
// more than N <resources> for this subscription in this region." (for
// public IP addresses: PublicIPCountLimitReached, quoted in Azure
// Databricks' troubleshooting guide and in Terraform's logs of azurerm).
// The code for route tables is not in public material; the fabric names it
// after that pattern: RouteTableCountLimitReached.
func (s *Provider) checkTablesLimit(tx *store.Txn, subKey, location string) error {
	c, err := tx.ResourcesInLocation(subKey, api.TypeRouteTables, location, "routes")
	if err != nil {
		return err
	}
	if c.Resources >= s.tablesLimit {
		return api.BadRequest("RouteTableCountLimitReached",
			"Cannot create more than %d route tables for this subscription in this region.", s.tablesLimit)
	}
	return nil
}
