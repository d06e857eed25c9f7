// Package promtest reads the series of a Prometheus registry back, for
// tests that assert on what routekeeper's metrics say.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Each calls f with the labels and the value (a gauge's, else a
// counter's) of every series of the metric name in g.
func Each(tb testing.TB, g prometheus.Gatherer, name string, f func(labels map[string]string, v float64)) {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("gathering metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue()
			if gv := m.GetGauge(); gv != nil {
				v = gv.GetValue()
			}
			f(labels, v)
		}
	}
}

// Sum adds the values of the series of the metric name whose label is
// value.
func Sum(tb testing.TB, g prometheus.Gatherer, name, label, value string) float64 {
	tb.Helper()
	var n float64
	Each(tb, g, name, func(labels map[string]string, v float64) {
		if labels[label] == value {
			n += v
		}
	})
	return n
}

// Value returns the value of the first series of the metric name whose
// label is value, and false when there is none.
func Value(tb testing.TB, g prometheus.Gatherer, name, label, value string) (float64, bool) {
	tb.Helper()
	var out float64
	found := false
	Each(tb, g, name, func(labels map[string]string, v float64) {
		if !found && labels[label] == value {
			out, found = v, true
		}
	})
	return out, found
}
