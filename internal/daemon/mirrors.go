package daemon

import (
	"log/slog"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/kubestatus"
	"github.com/routekeeper/routekeeper/internal/metrics"
)

// mirrorSet builds the controllers of the main table and of each mirror
// table on one shared node source. The main controller has the main
// reporters (metrics, node conditions and events); each mirror its own
// metrics series and events on routekeeper's Pod, so that a node's
// NetworkUnavailable reflects the main table only.
func mirrorSet(o Options, src controller.Source, m *metrics.Metrics, rec kubestatus.Recorder, log *slog.Logger, reporters []controller.Reporter) *controller.Set {
	shared := controller.Share(src, log)
	set := &controller.Set{Main: controller.New(o.Controller, o.Cloud, shared, log, reporters...)}
	mm := metrics.NewMirrors(m)
	for _, mir := range o.Mirrors {
		name := controller.TableName(mir.RouteTableID)
		reps := []controller.Reporter{mm.ForTable(name)}
		if rec != nil && o.Pod != nil {
			reps = append(reps, kubestatus.NewMirrorReporter(rec, o.Pod, name, o.EventInterval, nil))
		}
		cfg := controller.MirrorConfig(o.Controller, mir)
		set.Mirrors = append(set.Mirrors, controller.New(cfg, o.Cloud, shared, log.With("mirror", name), reps...))
	}
	return set
}
