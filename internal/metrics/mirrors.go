package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Mirrors are the metrics of the mirror tables (config mirrors:), one
// series per table (label `table`, the table's name). They are apart from
// the main table's metrics, which stay what a node's status is made of:
// a mirror's problem never shows as a node not routed.
//
//	mirror_reconciles_total{table,result}                      reconciles of a mirror table: success, error
//	mirror_last_successful_reconcile_timestamp_seconds{table}  Unix time of its last successful reconcile
//	mirror_routes{table,kind}                                  routes after its last reconcile: desired, present, missing, owned, foreign, stale
//	mirror_nodes_not_routed{table,reason}                      nodes without their route in the mirror, by reason
//	mirror_association_repairs_total{table}                    its subnets re-associated (or swaps followed)
//	mirror_association_problems{table,state}                   its subnets not on it, by state
type Mirrors struct {
	reconciles    *prometheus.CounterVec
	lastSuccess   *prometheus.GaugeVec
	routes        *prometheus.GaugeVec
	notRouted     *prometheus.GaugeVec
	repairs       *prometheus.CounterVec
	assocProblems *prometheus.GaugeVec
}

// NewMirrors makes the mirror metrics on m's registry. Call it once per
// Metrics.
func NewMirrors(m *Metrics) *Mirrors {
	mm := &Mirrors{
		reconciles:    counterVec("mirror_reconciles_total", "Reconciles of a mirror route table, by table and result (success, error).", "table", "result"),
		lastSuccess:   gaugeVec("mirror_last_successful_reconcile_timestamp_seconds", "Unix time of the end of the last successful reconcile of a mirror route table.", "table"),
		routes:        gaugeVec("mirror_routes", "Routes of a mirror route table after its last reconcile, by kind (as routekeeper_routes).", "table", "kind"),
		notRouted:     gaugeVec("mirror_nodes_not_routed", "Nodes without their correct route in a mirror route table after its last reconcile, by reason.", "table", "reason"),
		repairs:       counterVec("mirror_association_repairs_total", "Subnets the association guard re-associated with a mirror route table, or whose swapped table it followed.", "table"),
		assocProblems: gaugeVec("mirror_association_problems", "A mirror's subnets not on its route table after the last check, by state.", "table", "state"),
	}
	m.reg.MustRegister(mm.reconciles, mm.lastSuccess, mm.routes, mm.notRouted, mm.repairs, mm.assocProblems)
	return mm
}

// ForTable returns the reporter of the mirror table named table.
func (mm *Mirrors) ForTable(table string) controller.Reporter {
	for _, r := range []string{"success", "error"} {
		mm.reconciles.WithLabelValues(table, r)
	}
	mm.repairs.WithLabelValues(table)
	return mirrorReporter{mm: mm, table: table}
}

type mirrorReporter struct {
	mm    *Mirrors
	table string
}

// Report implements controller.Reporter.
func (r mirrorReporter) Report(_ context.Context, res *controller.Result) {
	mm, t := r.mm, prometheus.Labels{"table": r.table}
	mm.repairs.WithLabelValues(r.table).Add(float64(res.Repairs()))
	if res.Associations != nil || (res.Err == nil && !res.GuardOnly) {
		mm.assocProblems.DeletePartialMatch(t)
		for _, a := range res.Associations {
			if a.Problem() {
				mm.assocProblems.WithLabelValues(r.table, string(a.State)).Inc()
			}
		}
	}
	if res.GuardOnly {
		return
	}
	result := "success"
	if res.Err != nil {
		result = "error"
	}
	mm.reconciles.WithLabelValues(r.table, result).Inc()
	if res.Err == nil {
		mm.lastSuccess.WithLabelValues(r.table).Set(float64(res.Start.Add(res.Duration).UnixNano()) / 1e9)
	}
	if rc := res.Routes; rc != nil {
		for kind, v := range map[string]int{"desired": rc.Desired, "present": rc.Present, "missing": rc.Missing(), "owned": rc.Owned, "foreign": rc.Foreign, "stale": rc.Stale} {
			mm.routes.WithLabelValues(r.table, kind).Set(float64(v))
		}
	}
	if len(res.Nodes) > 0 || res.Routes != nil {
		mm.notRouted.DeletePartialMatch(t)
		for why, n := range verdict.CountNodes(res.Nodes).ByReason {
			mm.notRouted.WithLabelValues(r.table, string(why)).Set(float64(n))
		}
	}
}
