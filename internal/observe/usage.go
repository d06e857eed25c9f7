package observe

import (
	"context"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
)

// Usage is one entry of Microsoft.Network's usages list of a region
// (GET /subscriptions/{sub}/providers/Microsoft.Network/locations/{location}/usages):
// one of Azure's limits for the subscription there, and how much of it is
// used.
type Usage struct {
	// Name is the limit's name: UsageRoutesPerRouteTable, UsageRouteTables...
	Name    string
	Current int64
	Limit   int64
}

// The usages routekeeper reads.
const (
	// UsageRoutesPerRouteTable is the routes one route table may hold.
	UsageRoutesPerRouteTable = "RoutesPerRouteTable"
	// UsageRouteTables is the route tables the subscription may hold in
	// the region.
	UsageRouteTables = "RouteTables"
)

// UsagesAction is the Azure action that reading the usages needs, on the
// subscription.
const UsagesAction = "Microsoft.Network/locations/usages/read"

// UsageReader is a Reader that can list a region's usages (the Azure
// client can; a cloud that cannot is reported as such, and routekeeper
// goes on with Azure's default limits).
type UsageReader interface {
	ListUsages(ctx context.Context, subscription, location string) ([]Usage, error)
}

// UsageRead is the usages of the region of our table as read
// (Scope.Usage): Azure's limit of routes per route table, and of route
// tables per subscription there.
type UsageRead struct {
	Subscription, Location string
	// Routes is RoutesPerRouteTable's limit; Tables and TablesUsed are
	// RouteTables' limit and current value. 0 when the list lacked them.
	Routes             int
	Tables, TablesUsed int
	// Err is why the usages could not be read; Refused what ARM's refusal
	// named (no Microsoft.Network/locations/usages/read), if it refused.
	Err     error
	Refused *Refusal
	// Unsupported: the cloud has no usages API (not an Azure client).
	Unsupported bool
}

// Read reports whether the usages were read and list the route limit.
func (u UsageRead) Read() bool { return u.Err == nil && !u.Unsupported && u.Routes > 0 }

// readUsage reads the usages of the region of our table: where the table
// read says it is, else Scope.Location.
func (o *Observation) readUsage(ctx context.Context, c Reader) {
	r := UsageRead{Subscription: armid.Subscription(o.scope.Table), Location: o.scope.Location}
	if t, ok := o.tables[armid.Key(o.scope.Table)]; ok && t.Table != nil && t.Table.Location != "" {
		r.Location = t.Table.Location
	}
	ur, ok := c.(UsageReader)
	switch {
	case !ok:
		r.Unsupported = true
	case r.Location == "" || r.Subscription == "":
		r.Err = fmt.Errorf("the route table's region is not known (the table could not be read and routeTable.location is not set)")
	default:
		list, err := ur.ListUsages(ctx, r.Subscription, r.Location)
		if err != nil {
			_, r.Err, r.Refused = failed(err)
			if r.Err == nil {
				r.Err = err
			}
			break
		}
		for _, u := range list {
			switch {
			case strings.EqualFold(u.Name, UsageRoutesPerRouteTable):
				r.Routes = int(u.Limit)
			case strings.EqualFold(u.Name, UsageRouteTables):
				r.Tables, r.TablesUsed = int(u.Limit), int(u.Current)
			}
		}
		if r.Routes <= 0 {
			r.Err = fmt.Errorf("the usages of %s list no %s limit", r.Location, UsageRoutesPerRouteTable)
		}
	}
	o.usage, o.usageRead = r, true
}

// Usage returns the usages read (Scope.Usage); ok is false when the scope
// did not ask for them.
func (o *Observation) Usage() (UsageRead, bool) { return o.usage, o.usageRead }
