package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// denials are the requests Azure refuses now, by operation and resource: a
// pass says what became of the requests it made (a reconcile all of them,
// the guard the reads of the table and the subnets and the subnets'
// writes), and what it does not make stays as the last pass that did left
// it.
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
	if d.by == nil || !res.GuardOnly {
		// A reconcile covers every request routekeeper makes.
		d.by = map[string]verdict.Denial{}
	} else {
		// The guard reads the table and the subnets and writes subnets.
		delete(d.by, key(verdict.OpTableRead, v.Table))
		for _, s := range res.Associations {
			delete(d.by, key(verdict.OpSubnetRead, s.Subnet))
			delete(d.by, key(verdict.OpSubnetWrite, s.Subnet))
		}
	}
	for _, dn := range v.Denials {
		d.by[key(dn.Op, dn.Resource)] = dn
	}
}

func key(op, resource string) string { return op + " " + armid.Key(resource) }

// set makes g count the refused writes by write and code.
func (d *denials) set(g *prometheus.GaugeVec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g.Reset()
	for _, dn := range d.by {
		g.WithLabelValues(dn.Op, dn.Code).Inc()
	}
}
