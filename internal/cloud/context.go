package cloud

import "context"

// tableKey is the context key of ForTable.
type tableKey struct{}

// ForTable returns ctx marked as working for the controller of the route
// table named table: every ARM request made with it is counted for that
// table (the back-end's observer, metric routekeeper_table_arm_requests_total),
// so that each table's share of ARM's request budget can be told apart
// when several tables (a mirror's, another cluster's) share one client.
func ForTable(ctx context.Context, table string) context.Context {
	return context.WithValue(ctx, tableKey{}, table)
}

// TableOf returns the table ctx was marked for with ForTable, "" when none.
func TableOf(ctx context.Context) string {
	t, _ := ctx.Value(tableKey{}).(string)
	return t
}
