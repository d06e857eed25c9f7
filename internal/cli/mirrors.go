package cli

import (
	"fmt"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/output"
)

// logMirrors logs each mirror's summary line, with its table.
func (a *shell) logMirrors(results []*controller.Result) {
	for _, r := range results {
		log := a.log.With("mirror", controller.TableName(r.TableID))
		for name, nr := range r.Nodes {
			if !nr.Routed {
				log.Warn("node not routed in the mirror table", "node", name, "reason", nr.Reason, "message", nr.Message)
			}
		}
		if r.Err != nil {
			log.Error(r.Summary(), "err", r.Err)
			continue
		}
		log.Info(r.Summary())
	}
}

// printMirrorDiffs prints each mirror's diff after the main table's, as a
// table of its own under a heading.
func (a *shell) printMirrorDiffs(ds []app.DiffResult) error {
	for _, d := range ds {
		if d.Empty() && d.Error == "" {
			if _, err := fmt.Fprintf(a.stdout, "\nMirror route table %s: no changes.\n", controller.TableName(d.RouteTable)); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(a.stdout, "\nMirror route table %s:\n", controller.TableName(d.RouteTable)); err != nil {
			return err
		}
		if err := a.print(d, func() output.Table { return diffTable(d) }); err != nil {
			return err
		}
		if d.Error != "" {
			if _, err := fmt.Fprintf(a.stdout, "error: %s\n", d.Error); err != nil {
				return err
			}
		}
	}
	return nil
}
