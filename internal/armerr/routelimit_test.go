package armerr

import "testing"

func TestRouteLimitOf(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		limit         int
		ok            bool
	}{
		{"RouteTableRouteLimitExceeded", "Route table /subscriptions/s/resourceGroups/g/providers/Microsoft.Network/routeTables/rt has 1001 routes, more than the limit of 1000 routes per route table.", 1000, true},
		{"RoutesPerRouteTableLimitReached", "Cannot create more than 400 routes per route table.", 400, true},
		{"QuotaExceeded", "The route table may hold a maximum of 1,000 user-defined routes per route table.", 1000, true},
		{"RouteTableRouteLimitExceeded", "too many", 0, true},
		{"RouteTableCountLimitReached", "Cannot create more than 600 route tables for this subscription in this region.", 0, false},
		{"RouteConflict", "Route: a conflicts with Route: b. Routes cannot have the same AddressPrefix.", 0, false},
		{"InvalidRequestFormat", "Cannot parse the request.", 0, false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			limit, ok := RouteLimitOf(tc.code, tc.message)
			if limit != tc.limit || ok != tc.ok {
				t.Errorf("RouteLimitOf(%q, %q) = %d %v, want %d %v", tc.code, tc.message, limit, ok, tc.limit, tc.ok)
			}
		})
	}
}
