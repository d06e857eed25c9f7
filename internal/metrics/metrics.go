// Package metrics is routekeeper's Prometheus instrumentation. A Metrics is
// a controller.Reporter (reconciles, routes, nodes not routed, the
// association guard) and an azure.TableObserver (every ARM request, and the
// table it was made for), on its own
// registry: nothing is registered globally, so tests and several
// controllers in one process do not collide.
//
// The metrics (all prefixed routekeeper_):
//
//	reconciles_total{result}                  reconciles by result: success, error
//	reconcile_duration_seconds                histogram of reconcile durations
//	last_successful_reconcile_timestamp_seconds  Unix time of the last successful reconcile
//	arm_requests_total{method,code}           ARM HTTP requests (every attempt, retries and LRO polls included)
//	table_arm_requests_total{table,method}    the same, made for one route table's controller (main or mirror): its reconciles and guard cycles
//	arm_request_duration_seconds{method}      histogram of ARM request durations
//	arm_throttled_total                       ARM answers 429 (throttled)
//	arm_precondition_failed_total             ARM answers 412 (someone else wrote the table first)
//	write_outcome_unknown_total{op}           writes whose answer was lost (outcome unknown; read back, never re-sent blind), by operation (route table write, subnet association)
//	routes{kind}                              routes after the last reconcile: desired, present, missing, owned, foreign, stale
//	nodes{state}                              nodes after the last reconcile: routed, not_routed
//	nodes_not_routed{reason}                  nodes without their route, by reason
//	association_repairs_total                 subnets re-associated (or swaps followed) by the guard
//	association_problems{state}               subnets not on routekeeper's table, by state
//	leader                                    1 while this replica runs the controller (holds the lease, or runs without leader election)
//	deletes_held{reason}                      route deletions held back in the last reconcile (TooManyDeletes, EmptySource, StandDownUnconfirmed)
//	routes_unclaimed                          routes of unknown nodes left in an unclaimed table (never deleted until it is claimed)
//	nodes_unmanaged_route                     nodes whose traffic a route routekeeper does not own carries (routeTable.adopt matching takes it over)
//	route_limit{source}                       the most routes routekeeper keeps in the table, by where the number came from: azure (the usages API, or ARM's refusal), config (routeTable.routeLimit, lower), default (Azure's 1,000: its own could not be read)
//	requests_denied{op,code}                  requests Azure refuses now (a missing role or join, a lock, a deny policy), by operation (route table write, subnet association, reads) and ARM error code
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

const namespace = "routekeeper"

// Metrics holds routekeeper's metrics and their registry.
type Metrics struct {
	reg *prometheus.Registry

	reconciles        *prometheus.CounterVec
	reconcileDuration prometheus.Histogram
	lastSuccess       prometheus.Gauge
	armRequests       *prometheus.CounterVec
	tableRequests     *prometheus.CounterVec
	armDuration       *prometheus.HistogramVec
	armThrottled      prometheus.Counter
	armPrecondition   prometheus.Counter
	// Writes whose answer was lost (outcome unknown).
	outcomeUnknown *prometheus.CounterVec
	routes         *prometheus.GaugeVec
	nodes          *prometheus.GaugeVec
	notRouted      *prometheus.GaugeVec
	repairs        prometheus.Counter
	assocProblems  *prometheus.GaugeVec
	leader         prometheus.Gauge
	leading        atomic.Bool
	// The planner's guards: deletions held back, routes left in an
	// unclaimed table, nodes routed by a route routekeeper does not own.
	deletesHeld *prometheus.GaugeVec
	unclaimed   prometheus.Gauge
	unmanaged   prometheus.Gauge
	// The route limit in force, by where it came from.
	routeLimit *prometheus.GaugeVec
	// Writes Azure refuses (RBAC, locks, policy), by resource (denials.go).
	requestsDenied *prometheus.GaugeVec
	denied         denials
}

// New makes the metrics on a new registry that also holds the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		reconciles: counterVec("reconciles_total", "Reconciles of the route table, by result (success, error).", "result"),
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "reconcile_duration_seconds",
			Help:    "Duration of reconciles: node list, table read, plan, write and read-back.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
		lastSuccess:   gauge("last_successful_reconcile_timestamp_seconds", "Unix time of the end of the last successful reconcile."),
		armRequests:   counterVec("arm_requests_total", "Azure Resource Manager HTTP requests, every attempt (retries and long-running operation polls included), by method and status code (0: no answer).", "method", "code"),
		tableRequests: counterVec("table_arm_requests_total", "Azure Resource Manager HTTP requests made for one route table's controller (its reconciles and association guard cycles; every attempt, retries and long-running operation polls included), by table name and method. 60*rate(...{method=\"GET\"}[5m]) is the table's reads per minute; rate(...{method=\"GET\"}[5m])/25 its share of ARM's read bucket refill (25 per second per principal and subscription).", "table", "method"),
		armDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "arm_request_duration_seconds",
			Help:    "Duration of Azure Resource Manager HTTP requests, by method.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"method"}),
		armThrottled:    counter("arm_throttled_total", "Azure Resource Manager answers 429 Too Many Requests."),
		armPrecondition: counter("arm_precondition_failed_total", "Azure Resource Manager answers 412 Precondition Failed: the table changed since it was read; routekeeper re-read and re-planned."),
		routes:          gaugeVec("routes", "Routes after the last reconcile: desired (one per node pod CIDR), present (desired and correct in the table), missing (desired - present), owned (this cluster's in the table), foreign (every other route in the table), stale (owned but wanted by no node).", "kind"),
		nodes:           gaugeVec("nodes", "Nodes after the last reconcile, by state (routed, not_routed).", "state"),
		notRouted:       gaugeVec("nodes_not_routed", "Nodes without their correct route after the last reconcile, by reason.", "reason"),
		repairs:         counter("association_repairs_total", "Subnets the association guard re-associated with the route table, or whose swapped table it followed."),
		assocProblems:   gaugeVec("association_problems", "Configured subnets not on routekeeper's route table after the last check, by state.", "state"),
		leader:          gauge("leader", "1 while this replica runs the controller: it holds the leader election lease, or runs without leader election; else 0."),
		deletesHeld:     gaugeVec("deletes_held", "Route deletions the deletion guard held back in the last reconcile, by reason: TooManyDeletes (over controller.maxDeletes), EmptySource (the source returned no nodes), StandDownUnconfirmed (routes: standDown without controller.confirmStandDown).", "reason"),
		unclaimed:       gauge("routes_unclaimed", "Routes in the naming scheme for nodes this cluster does not have, left in a route table not claimed yet: never deleted until routeTable.claim."),
		unmanaged:       gauge("nodes_unmanaged_route", "Nodes whose traffic flows through a route routekeeper does not own (routeTable.adopt matching takes it over with no outage)."),
	}
	m.outcomeUnknown = counterVec("write_outcome_unknown_total", "Writes whose answer was lost (a connection reset or timeout after sending, or a 5xx from a front that may have forwarded it), by operation (route table write, subnet association): each was followed by a fresh read of the resource and a new plan, never sent again as it was.", "op")
	m.requestsDenied = gaugeVec("requests_denied", "Requests Azure refuses now for who routekeeper is or what governs the scope (a missing role or join, a lock, a deny policy), by operation and ARM error code; doctor and the log say what to grant.", "op", "code")
	m.routeLimit = gaugeVec("route_limit", "The most routes routekeeper keeps in the route table, custom routes included, by where the number came from: azure (Azure's limit for the table's region, read from the usages API or named in ARM's refusal of a write), config (routeTable.routeLimit, lower than Azure's), default (Azure's default of 1,000: its own could not be read; doctor and the log say why).", "source")
	m.reg.MustRegister(m.deletesHeld, m.unclaimed, m.unmanaged, m.requestsDenied, m.outcomeUnknown, m.routeLimit)
	m.reg.MustRegister(m.reconciles, m.reconcileDuration, m.lastSuccess, m.armRequests, m.tableRequests, m.armDuration,
		m.armThrottled, m.armPrecondition, m.routes, m.nodes, m.notRouted, m.repairs, m.assocProblems, m.leader,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Known label values start at 0, so that rate() and alerts work from
	// the first scrape.
	for _, r := range []string{"success", "error"} {
		m.reconciles.WithLabelValues(r)
	}
	for _, op := range []string{verdict.OpTableWrite, verdict.OpSubnetWrite} {
		m.outcomeUnknown.WithLabelValues(op)
	}
	return m
}

// counter, counterVec, gauge and gaugeVec make a routekeeper_ metric.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leading bool) {
	m.leading.Store(leading)
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// Leading reports what SetLeader last recorded.
func (m *Metrics) Leading() bool { return m.leading.Load() }

// ObserveARMCall implements azure.Observer.
func (m *Metrics) ObserveARMCall(method string, status int, d time.Duration) {
	m.armRequests.WithLabelValues(method, strconv.Itoa(status)).Inc()
	m.armDuration.WithLabelValues(method).Observe(d.Seconds())
	switch status {
	case http.StatusTooManyRequests:
		m.armThrottled.Inc()
	case http.StatusPreconditionFailed:
		m.armPrecondition.Inc()
	}
}

// ObserveTableARMCall implements azure.TableObserver: a request made for
// the controller of the route table named table.
func (m *Metrics) ObserveTableARMCall(table, method string) {
	m.tableRequests.WithLabelValues(table, method).Inc()
}

// Report implements controller.Reporter.
func (m *Metrics) Report(_ context.Context, res *controller.Result) {
	for op, n := range res.LostAnswers {
		m.outcomeUnknown.WithLabelValues(op).Add(float64(n))
	}
	m.denied.update(res)
	m.denied.set(m.requestsDenied)
	m.repairs.Add(float64(res.Repairs()))
	if res.Associations != nil || (res.Err == nil && !res.GuardOnly) {
		m.assocProblems.Reset()
		for _, a := range res.Associations {
			if a.Problem() {
				m.assocProblems.WithLabelValues(string(a.State)).Inc()
			}
		}
	}
	if res.GuardOnly {
		// The guard judges the last known nodes by the table each subnet
		// uses now: the gauges follow an outage between reconciles.
		if len(res.Nodes) > 0 {
			m.setNodes(res)
		}
		return
	}
	if l := res.RouteLimit; l.Value > 0 {
		m.routeLimit.Reset()
		m.routeLimit.WithLabelValues(string(l.Source)).Set(float64(l.Value))
	}
	result := "success"
	if res.Err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(result).Inc()
	m.reconcileDuration.Observe(res.Duration.Seconds())
	if res.Err == nil {
		m.lastSuccess.Set(float64(res.Start.Add(res.Duration).UnixNano()) / 1e9)
	}
	if rc := res.Routes; rc != nil {
		m.routes.WithLabelValues("desired").Set(float64(rc.Desired))
		m.routes.WithLabelValues("present").Set(float64(rc.Present))
		m.routes.WithLabelValues("missing").Set(float64(rc.Missing()))
		m.routes.WithLabelValues("owned").Set(float64(rc.Owned))
		m.routes.WithLabelValues("foreign").Set(float64(rc.Foreign))
		m.routes.WithLabelValues("stale").Set(float64(rc.Stale))
	}
	if len(res.Nodes) > 0 || res.Routes != nil {
		// The nodes were planned: the per-node results are current.
		m.setNodes(res)
	}
	if p := res.Plan; p != nil && res.Err == nil {
		m.deletesHeld.Reset()
		if len(p.HeldDeletes) > 0 {
			m.deletesHeld.WithLabelValues(string(p.HeldReason)).Set(float64(len(p.HeldDeletes)))
		}
		m.unclaimed.Set(float64(len(p.Unclaimed)))
		m.unmanaged.Set(float64(verdict.CountNodes(res.Nodes).Unmanaged))
	}
}

// setNodes sets the node gauges from a result's node results.
func (m *Metrics) setNodes(res *controller.Result) {
	c := verdict.CountNodes(res.Nodes)
	m.notRouted.Reset()
	for r, n := range c.ByReason {
		m.notRouted.WithLabelValues(string(r)).Set(float64(n))
	}
	m.nodes.WithLabelValues("routed").Set(float64(c.Routed))
	m.nodes.WithLabelValues("not_routed").Set(float64(c.NotRouted))
}
