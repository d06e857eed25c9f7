package fabric

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// The ARM metadata of a subscription: tenants, locations, providers and
// generic resource listings.

// Locations are the Azure regions the fabric lists, as name and display
// name; -l "East US" resolves through them.
var Locations = [][2]string{
	{"eastus", "East US"}, {"eastus2", "East US 2"}, {"southcentralus", "South Central US"},
	{"westus2", "West US 2"}, {"westus3", "West US 3"}, {"australiaeast", "Australia East"},
	{"southeastasia", "Southeast Asia"}, {"northeurope", "North Europe"}, {"swedencentral", "Sweden Central"},
	{"uksouth", "UK South"}, {"westeurope", "West Europe"}, {"centralus", "Central US"},
	{"southafricanorth", "South Africa North"}, {"centralindia", "Central India"}, {"eastasia", "East Asia"},
	{"japaneast", "Japan East"}, {"koreacentral", "Korea Central"}, {"canadacentral", "Canada Central"},
	{"francecentral", "France Central"}, {"germanywestcentral", "Germany West Central"},
	{"norwayeast", "Norway East"}, {"switzerlandnorth", "Switzerland North"}, {"uaenorth", "UAE North"},
	{"brazilsouth", "Brazil South"}, {"northcentralus", "North Central US"}, {"westus", "West US"},
	{"westcentralus", "West Central US"}, {"japanwest", "Japan West"}, {"ukwest", "UK West"},
	{"canadaeast", "Canada East"}, {"southindia", "South India"}, {"australiasoutheast", "Australia Southeast"},
}

func (s *Server) listTenants(_ context.Context, _ *api.Request) (*api.Response, error) {
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": []any{map[string]any{
		"id": "/tenants/" + api.DefaultTenant, "tenantId": api.DefaultTenant, "tenantCategory": "Home",
		"displayName": "routekeeper fabric", "defaultDomain": "fabric.invalid", "domains": []string{"fabric.invalid"},
	}}}}, nil
}

func (s *Server) listLocations(_ context.Context, q *api.Request) (*api.Response, error) {
	sub := q.Segs[1]
	value := make([]any, 0, len(Locations))
	for _, l := range Locations {
		value = append(value, map[string]any{
			"id": "/subscriptions/" + sub + "/locations/" + l[0], "name": l[0], "type": "Region",
			"displayName": l[1], "regionalDisplayName": l[1],
			"metadata": map[string]any{"regionType": "Physical", "regionCategory": "Recommended"},
		})
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": value}}, nil
}

// networkAPIVersions are the api-versions the provider listing offers; the
// fabric accepts any.
var networkAPIVersions = []string{"2025-05-01", "2025-01-01", "2024-05-01", "2023-09-01", "2023-05-01", "2022-07-01", "2022-01-01", "2021-08-01", "2021-05-01", "2020-11-01"}

func providerBody(sub, namespace string) map[string]any {
	var locs []string
	for _, l := range Locations {
		locs = append(locs, l[1])
	}
	var types []any
	add := func(t string, withLocations bool) {
		rt := map[string]any{"resourceType": t, "apiVersions": networkAPIVersions, "locations": []string{}}
		if withLocations {
			rt["locations"] = locs
		}
		types = append(types, rt)
	}
	switch {
	case strings.EqualFold(namespace, api.NetworkNamespace):
		namespace = api.NetworkNamespace
		add("virtualNetworks", true)
		add("virtualNetworks/subnets", false)
		add("routeTables", true)
		add("routeTables/routes", false)
		add("locations", false)
		add("locations/operations", false)
		add("locations/operationResults", false)
	case strings.EqualFold(namespace, api.ResourcesNamespace):
		namespace = api.ResourcesNamespace
		add("resourceGroups", true)
		add("subscriptions", false)
		add("tenants", false)
	default:
		return nil
	}
	return map[string]any{
		"id": "/subscriptions/" + sub + "/providers/" + namespace, "namespace": namespace,
		"registrationState": "Registered", "registrationPolicy": "RegistrationRequired", "resourceTypes": types,
	}
}

// genericResource is a resource as /resources lists it.
type genericResource struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Location string            `json:"location"`
	Tags     map[string]string `json:"tags,omitempty"`
}

// listGenericResources lists the top-level resources of a subscription
// (segs: subscriptions/{sub}/resources) or of a resource group
// (subscriptions/{sub}/resourceGroups/{rg}/resources).
func (s *Server) listGenericResources(ctx context.Context, q *api.Request) (*api.Response, error) {
	sub := q.Segs[1]
	out := []genericResource{}
	err := s.net.View(ctx, func(tx *store.Txn) error {
		var rows []*store.ResourceRow
		if len(q.Segs) == 5 {
			rg, err := network.RequireRG(tx, sub, q.Segs[3], false)
			if err != nil {
				return err
			}
			if rows, err = tx.ResourcesInRG(rg.Key); err != nil {
				return err
			}
		} else {
			for _, typ := range []string{api.TypeRouteTables, api.TypeVirtualNetworks} {
				r, err := tx.ListResources(api.Key(sub), "", typ, "", 1<<30)
				if err != nil {
					return err
				}
				rows = append(rows, r...)
			}
		}
		for _, row := range rows {
			var d genericResource
			if err := json.Unmarshal(row.Doc, &d); err != nil {
				return err
			}
			out = append(out, genericResource{ID: row.ID, Name: d.Name, Type: d.Type, Location: d.Location, Tags: d.Tags})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f := q.Query.Get("$filter"); f != "" {
		out = filterResources(out, f)
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": out}}, nil
}

// filterResources applies the simple $filter az sends: resourceType eq
// 'T' and name eq 'N', joined by "and".
func filterResources(in []genericResource, filter string) []genericResource {
	type cond struct{ field, value string }
	var conds []cond
	for _, part := range strings.Split(filter, " and ") {
		f, v, ok := strings.Cut(strings.TrimSpace(part), " eq ")
		if !ok {
			continue
		}
		v, _ = url.QueryUnescape(strings.Trim(strings.TrimSpace(v), "'"))
		conds = append(conds, cond{strings.ToLower(strings.TrimSpace(f)), v})
	}
	out := []genericResource{}
	for _, r := range in {
		keep := true
		for _, c := range conds {
			switch c.field {
			case "resourcetype":
				keep = keep && strings.EqualFold(r.Type, c.value)
			case "name":
				keep = keep && strings.EqualFold(r.Name, c.value)
			case "location":
				keep = keep && strings.EqualFold(r.Location, c.value)
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}
