package routelimit

import (
	"errors"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/observe"
)

func TestEffective(t *testing.T) {
	read := FromUsage(observe.UsageRead{Subscription: "sub", Location: "westeurope", Routes: 1000, Tables: 600, TablesUsed: 3})
	older := FromUsage(observe.UsageRead{Subscription: "sub", Location: "westeurope", Routes: 400})
	denied := FromUsage(observe.UsageRead{Subscription: "sub", Location: "westeurope", Err: errors.New("403"), Refused: &observe.Refusal{Code: "AuthorizationFailed"}})
	for _, tc := range []struct {
		name       string
		configured int
		azure      Known
		value      int
		source     Source
		from       []string
		ignored    string
	}{
		{"Azure's, read", 0, read, 1000, Azure, []string{"Azure's limit in westeurope of 1,000 routes per route table, read from the usages API"}, ""},
		{"an older subscription's", 0, older, 400, Azure, []string{"of 400 routes"}, ""},
		{"configured lowers it", 300, read, 300, Config, []string{"routeTable.routeLimit, below Azure's limit in westeurope of 1,000"}, ""},
		{"configured above Azure's is not kept", 1000, older, 400, Azure, []string{"of 400 routes"}, "routeTable.routeLimit 1,000 is above Azure's limit in westeurope of 400"},
		{"not read: Azure's default, and the permission that would let it read", 0, denied, 1000, DefaultSource,
			[]string{"Azure's default of 1,000 routes per route table", "grant Microsoft.Network/locations/usages/read on subscription sub"}, ""},
		{"not read, configured lower", 250, denied, 250, Config, []string{"routeTable.routeLimit, below Azure's default of 1,000"}, ""},
		{"named by a refusal", 0, Known{Routes: 400, Refusal: true}, 400, Azure, []string{"Azure's limit of 400 routes per route table, named in its refusal of a write"}, ""},
		{"the cloud has no usages API", 0, FromUsage(observe.UsageRead{Unsupported: true}), 1000, DefaultSource, []string{"the cloud has no usages API"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Effective(tc.configured, tc.azure)
			if l.Value != tc.value || l.Source != tc.source {
				t.Errorf("Effective = %d %s, want %d %s", l.Value, l.Source, tc.value, tc.source)
			}
			for _, w := range tc.from {
				if !strings.Contains(l.From(), w) {
					t.Errorf("From() = %q, want it to say %q", l.From(), w)
				}
			}
			if got := l.Ignored(); (tc.ignored == "") != (got == "") || !strings.Contains(got, tc.ignored) {
				t.Errorf("Ignored() = %q, want %q", got, tc.ignored)
			}
		})
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 400: "400", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
