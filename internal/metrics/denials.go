package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// denials are the writes Azure refuses now, by resource: a pass says what
// became of the writes it judged (a reconcile the table's and the
// subnets', the guard the subnets'), and what it does not judge stays as
// the last pass that did left it.
type denials struct {
	mu sync.Mutex
	by map[string]verdict.Denial
}

func (d *denials) update(res *controller.Result) {
	v := res.Verdict
	if v == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[string]verdict.Denial{}
	}
	if !res.GuardOnly && v.Plan != nil {
		delete(d.by, armid.Key(v.Table))
	}
	for _, s := range res.Associations {
		delete(d.by, armid.Key(s.Subnet))
	}
	for _, dn := range v.Denials {
		d.by[armid.Key(dn.Resource)] = dn
	}
}

// set makes g count the refused writes by write and code.
func (d *denials) set(g *prometheus.GaugeVec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g.Reset()
	for _, dn := range d.by {
		g.WithLabelValues(dn.Write, dn.Code).Inc()
	}
}
