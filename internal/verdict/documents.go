package verdict

import (
	"cmp"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
)

// writeDocuments are the ARM documents of the writes routekeeper makes
// for want, as ARM's policies see them (the request body, by resource):
// the route table as the next write sends it, and each subnet pointed to
// the table. Deny policies are evaluated against them.
func writeDocuments(o *observe.Observation, want Desired, v *Verdict) map[string]map[string]any {
	out := map[string]map[string]any{}
	t := v.write
	if t == nil {
		t = v.Current
	}
	if t == nil && v.Plan != nil {
		t = v.Plan.Desired
	}
	if t != nil && want.Mode != Observe {
		scope := v.Table
		if v.Current == nil {
			scope = armid.ResourceGroupID(v.Table)
		}
		if doc, err := azpolicy.Resource(v.Table, tableBody(t, want.Location)); err == nil {
			out[armid.Key(scope)] = doc
		}
	}
	for _, s := range o.Subnets() {
		if s.Subnet == nil {
			continue
		}
		props := map[string]any{"routeTable": map[string]any{"id": v.Table}}
		if ps := s.Subnet.AddressPrefixes; len(ps) == 1 {
			props["addressPrefix"] = ps[0]
		} else if len(ps) > 1 {
			props["addressPrefixes"] = ps
		}
		if id := s.Subnet.NetworkSecurityGroupID; id != "" {
			props["networkSecurityGroup"] = map[string]any{"id": id}
		}
		if id := s.Subnet.NATGatewayID; id != "" {
			props["natGateway"] = map[string]any{"id": id}
		}
		if doc, err := azpolicy.Resource(s.ID, map[string]any{"properties": props}); err == nil {
			out[armid.Key(s.ID)] = doc
		}
	}
	return out
}

// tableBody is a route table as the PUT that writes it.
func tableBody(t *route.Table, location string) map[string]any {
	routes := make([]any, 0, len(t.Routes))
	for _, r := range t.Routes {
		p := map[string]any{"addressPrefix": r.AddressPrefix, "nextHopType": string(r.NextHopType)}
		if r.NextHopIP.IsValid() {
			p["nextHopIpAddress"] = r.NextHopIP.String()
		}
		routes = append(routes, map[string]any{"name": r.Name, "properties": p})
	}
	tags := map[string]any{}
	for k, v := range t.Tags {
		tags[k] = v
	}
	return map[string]any{
		"location": cmp.Or(t.Location, location),
		"tags":     tags,
		"properties": map[string]any{
			"routes":                     routes,
			"disableBgpRoutePropagation": t.DisableBGPRoutePropagation,
		},
	}
}
